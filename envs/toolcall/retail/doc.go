// Package retail is the tau2-retail-v1 env kind: tau2-bench's retail
// customer-service domain on the shared tool-call env (envs/toolcall). An
// agent serves a customer of an online store under the store's policy:
// it finds the user, looks up orders and products, and cancels, modifies,
// returns or exchanges orders through tools that read and change a mock
// database. Import the package for its side effect (cmd/nextstate does):
// it registers the kind with gym and the "tau2-retail" folder format with
// tau2.RegisterDomain. What tau2's domains share (the task format, the
// simulated user, the COMMUNICATE and ACTION checks, Python's renderings)
// is package tau2's.
//
// # Data
//
// A tau2 retail folder holds db.json (products, users and orders, each an
// object of records keyed by id), tasks.json (tau2 tasks of the retail
// domain, or of no named domain), policy.md (the agent's policy) and
// optionally split_tasks.json (split name to task ids).
// `nextstate serve --tasks DIR` and `nextstate tasks list DIR` read such a
// folder (IsRetailDir, LoadDir); tau2's own is in the tau2-bench
// repository under data/tau2/domains/retail:
//
//	nextstate serve --tasks ../shared/data/tau2-retail \
//	    --set tau2.user_model=gpt-4.1 --set tau2.user_base_url=https://api.openai.com/v1
//
// Each task becomes a gym.Task: ID "tau2-retail-<tau2 id>", Env
// tau2-retail-v1, Split "train" or "test" (or another split that lists it,
// tau2's "base" last), Dir the folder, Labels "suite" and "tau2_id". Data
// is TaskData: the user_scenario and the initial_state, if any
// (initialization_data.agent_data merged into the records, then
// initialization_actions run; a message_history is refused). Verifier is
// the evaluation_criteria as tau2 has it (Criteria): gold actions,
// reward_basis, communicate_info, nl_assertions. Instruction is the
// scenario as solo mode shows it. A folder's database and policy are
// parsed once and shared by its episodes (read again when the files
// change); an episode copies only the records it changes (copy on write),
// so a reset costs no copy of the database.
//
// The built-in tasks (SmokeTasks, "tau2-retail-smoke-1" to "-5") use a
// small invented store embedded in the binary (smoke/): their Data says
// "builtin": "smoke" instead of having a Dir.
//
// # Tools
//
// The agent gets tau2's sixteen retail tools, with tau2's names and
// parameters and strict schemas (every parameter required, no others; the
// shared env answers a call that breaks them with an is_error result):
// calculate, cancel_pending_order, exchange_delivered_order_items,
// find_user_id_by_name_zip, find_user_id_by_email, get_order_details,
// get_product_details, get_item_details, get_user_details,
// list_all_product_types, modify_pending_order_address,
// modify_pending_order_items, modify_pending_order_payment,
// modify_user_address, return_delivered_order_items and
// transfer_to_human_agents. Their results are byte for byte tau2's:
// the changed record as Python's json.dumps writes it (model field order,
// ", " separators, Python float repr), a plain string for a user id, and
// tau2's errors as is_error results ("Error: Non-pending order cannot be
// cancelled"), checked in tau2's order; that includes tau2's quirks (a
// modify of items gives each changed item the last new item's price and
// options). calculate evaluates Python's arithmetic with Python's errors.
// transfer_to_human_agents ends the episode. tau2 leaves its think tool out
// of the retail domain; the reset option "think": true adds it.
//
// # Episodes
//
// A step is tool calls (several run in order) and/or a text part, a
// message to the user. The reset option "user" picks who answers it:
//
//   - "simulated" (the default when a user simulator is configured): an
//     LLM plays the task's user_scenario, through any OpenAI-compatible
//     chat completions endpoint, with tau2's user guidelines in its system
//     prompt. The opening is the agent's instructions, the policy, and the
//     user's first message (the answer to tau2's greeting "Hi! How can I
//     help you today?"). Each message of the agent's is answered by the
//     user's; the episode terminates when the user writes ###STOP###,
//     ###TRANSFER### or ###OUT-OF-SCOPE### (or the agent ###STOP###). A
//     failed or empty reply is a gym.InfraFault "user_simulator".
//   - "solo" (the default otherwise): no user; the opening gives the
//     scenario and says plainly that the agent acts for the user, whose
//     instructions count as their confirmation. The agent's first message
//     ends the episode.
//
// The shared env's reset option "max_tool_errors" (default 10, as tau2's
// max_errors) truncates an episode after that many rejected calls.
//
// # Settings
//
// Domain implements toolcall.Configurer, so its kind implements
// gym.Configurer (`nextstate serve --set key=value`):
//
//	tau2.user_model        the model that plays the user; unset: solo only
//	tau2.user_base_url     the endpoint (default https://api.openai.com/v1)
//	tau2.user_api_key_env  the env var with the API key (default OPENAI_API_KEY;
//	                       may be empty for an endpoint other than OpenAI's)
//	tau2.user_temperature  0 to 2 (default 0, as tau2's)
//	tau2.user_timeout      per request, a Go duration (default 2m)
//
// The requests carry the reset's seed. Each Manager's Configure reads its
// own settings (tau2.WithUser): two Managers of one process may play the
// user with different models.
//
// # The reward
//
// The episode's Verify (gym.Verifier), after it terminated, computes
// tau2's reward: the product of the components the task's reward_basis
// names (default DB and COMMUNICATE):
//
//   - DB: the gold actions are replayed on a fresh copy of the database
//     (gold actions that fail are skipped, as tau2 does), which must equal
//     the episode's: every record, every float to the bit (as tau2's hash
//     sees them). The info lists the records that differ, at most 20.
//   - COMMUNICATE: each communicate_info string, lower-cased, is in a
//     message of the agent's, lower-cased with commas removed.
//   - ACTION: each gold action matches a call of the agent's: the same
//     tool and equal values of the arguments compare_args names (all of
//     the call's when it names none).
//   - NL_ASSERTION needs an LLM judge: it is not evaluated here, the
//     reward leaves it out, and the info says "nl_assertions":
//     "not_evaluated". (All 114 tau2 retail tasks list it, with DB.)
//
// The verifier info (recorded, never sent to the agent) has each
// component's result under "db", "communicate", "action" and
// "reward_breakdown".
//
// # Oracle
//
// Domain implements gym.OracleKind: a task's gold actions as tool calls,
// one per step, then a closing message that states the communicate_info;
// in solo mode (the oracle's reset options, gym.OracleOptions), where that
// message ends the episode. Every tau2 retail task's oracle scores 1.
//
// Env is used by one goroutine at a time (its gym.Session's); Domain is
// safe for concurrent use.
package retail

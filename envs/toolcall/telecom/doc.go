// Package telecom is the tau2-telecom-v1 env kind: tau2-bench's telecom
// domain on the shared tool-call env (envs/toolcall). An agent of a mobile
// carrier helps a user whose phone has no service, slow or no mobile data,
// or cannot send MMS, and with overdue bills and suspended lines, under
// the carrier's policy and tech-support manual. The domain is of dual
// control: the agent's tools read and change the carrier's database, and
// the user has a simulated phone with tools of its own, which the user
// (simulated, or the agent in solo mode) works. Import the package for its
// side effect (cmd/nextstate does): it registers the kind with gym and the
// "tau2-telecom" folder format with tau2.RegisterDomain.
//
// # Data
//
// A tau2 telecom folder holds db.toml (the carrier's plans, customers,
// lines, bills and devices), user_db.toml (the phone and the user's
// surroundings), main_policy.md and main_policy_solo.md, the
// tech_support_manual.md (and optionally the workflow policies,
// tech_support_workflow.md and tech_support_workflow_solo.md), a tasks
// file (tasks.json, else tasks_full.json, else tasks_small.json) and
// optionally split_tasks.json. tau2's own is in the tau2-bench repository
// under data/tau2/domains/telecom:
//
//	nextstate serve --tasks ../shared/data/tau2-telecom \
//	    --set tau2.user_model=gpt-4.1 --set tau2.user_base_url=https://api.openai.com/v1
//
// Each task becomes a gym.Task: ID "tau2-telecom-<tau2 id>", Env
// tau2-telecom-v1, Split the first split that lists it ("train" or "test"
// first, "base" and "full" last), Dir the folder, Labels "suite" and
// "tau2_id". Data is TaskData: the user_scenario, the ticket, and the
// initial_state (its initialization_actions, functions of either side;
// initialization_data and a message_history are refused: no tau2 telecom
// task has them, and tau2 itself cannot run initialization_data there).
// Verifier is the evaluation_criteria as tau2 has it: gold actions of the
// agent and of the user, env_assertions, reward_basis. Instruction is the
// ticket, as solo mode shows it. A folder's data is parsed once and shared
// by its episodes (read again when a file changes); an episode works on
// its own copy, a few kilobytes.
//
// The built-in tasks (SmokeTasks, "tau2-telecom-smoke-1" to "-5") use a
// small invented carrier embedded in the binary (smoke/): their Data says
// "builtin": "smoke" instead of having a Dir.
//
// # The world
//
// An episode's world is tau2's TelecomEnvironment: the agent's database,
// the phone (SIM, airplane mode, signal and network type, mobile data,
// roaming, Data Saver, APN, Wi-Fi, Wi-Fi calling, VPN, apps and their
// permissions, battery) and the user's surroundings (where they are,
// whether their line is active and allows roaming, whether their data is
// used up, the agent's payment request). After every call that returns
// (not one that fails), the world is synced as tau2 syncs it: the
// surroundings follow the line of the user's number, a payment the user
// made marks its bill paid, and a bill awaiting payment becomes the
// user's payment request. The phone's network follows from a network
// search, which the phone's own actions run.
//
// # Tools
//
// The agent gets tau2's thirteen TelecomTools: get_customer_by_phone,
// get_customer_by_id, get_customer_by_name, get_details_by_id,
// suspend_line, resume_line, get_bills_for_customer, send_payment_request,
// get_data_usage, enable_roaming, disable_roaming,
// transfer_to_human_agents and refuel_data. The phone has tau2's thirty
// TelecomUserTools: check_status_bar, check_network_status,
// check_network_mode_preference, set_network_mode_preference,
// run_speed_test, toggle_airplane_mode, check_sim_status,
// reseat_sim_card, toggle_data, toggle_roaming,
// check_data_restriction_status, toggle_data_saver_mode,
// check_apn_settings, set_apn_settings, reset_apn_settings,
// check_wifi_status, toggle_wifi, check_wifi_calling_status,
// toggle_wifi_calling, check_vpn_status, connect_vpn, disconnect_vpn,
// check_installed_apps, check_app_status, check_app_permissions,
// grant_app_permission, can_send_mms, reboot_device,
// check_payment_request and make_payment. Their names and parameters are
// tau2's, their schemas strict (the shared env answers a call that breaks
// them with an is_error result). Their results are byte for byte tau2's:
// a record as json.dumps writes its model_dump (model field order, ", "
// separators, ASCII only, Python float repr, a datetime as str writes it,
// "2025-01-20 14:30:00"), a dict a tool returns with its numbers as
// strings ("data_used_gb": "8.7"), a number argument echoed as Python
// reads the JSON ("2 GB" for 2, "2.0 GB" for 2.0), the phone's messages
// with their status bar, and tau2's errors as is_error results ("Error:
// Line L1009 not found for customer C1001"), checked in tau2's order.
// transfer_to_human_agents ends the episode. The tasks' helpers (the
// functions initialization_actions break the phone or the line with) and
// assertions are tau2's too (Python's getattr of either toolkit).
//
// # Episodes
//
// A step is tool calls (several run in order) and/or a text part, a
// message to the user. The reset option "user" picks who the user is:
//
//   - "simulated" (the default when a user simulator is configured): an
//     LLM plays the task's user_scenario through any OpenAI-compatible
//     chat completions endpoint, with tau2's user guidelines for a user
//     with tools, and the phone's thirty tools in its request. The agent
//     has the carrier's tools only. Each of the agent's messages is
//     answered by the user's, after the tool calls the user makes on the
//     phone (at most tau2.MaxUserToolCalls; a call the phone's schemas
//     reject or that fails gives the user its error to read, as tau2 does);
//     the agent sees the messages, not the user's calls, which the
//     verifier info lists under "user_tool_calls". The opening is the
//     agent's instructions, tau2's policy (main_policy.md and the manual,
//     in tau2's <main_policy> and <tech_support_policy> tags) and the
//     user's answer to tau2's greeting. The episode terminates when the
//     user writes ###STOP###, ###TRANSFER### or ###OUT-OF-SCOPE### (or the
//     agent ###STOP###). A failed or empty reply is a gym.InfraFault
//     "user_simulator".
//   - "solo" (the default otherwise), tau2's solo mode: no user; the agent
//     works the task's ticket with the carrier's tools, the phone's tools
//     and tau2's done tool (which ends the episode), under
//     main_policy_solo.md and the manual. A message also ends the episode
//     (tau2's solo agent may not send one: it would end its episode as an
//     agent error, scored 0; here it is scored).
//
// The reset option "policy" is "manual" (tau2's telecom domain, the
// default) or "workflow" (tau2's telecom-workflow domain: the workflow
// policy, its solo version in solo mode). The shared env's reset option
// "max_tool_errors" (default 10, as tau2's max_errors) truncates an
// episode after that many rejected calls.
//
// # Settings
//
// Domain implements toolcall.Configurer, so its kind implements
// gym.Configurer, with the settings of retail's (tau2.ConfigureUser):
// tau2.user_model, tau2.user_base_url, tau2.user_api_key_env,
// tau2.user_temperature and tau2.user_timeout, read for each Manager.
//
// # The reward
//
// The episode's Verify (gym.Verifier), after it terminated, computes
// tau2's reward: the product of the components the task's reward_basis
// names (every tau2 telecom task has ENV_ASSERTION; two add ACTION):
//
//   - ENV_ASSERTION: each env assertion (a function of the agent's or the
//     phone's toolkit: assert_service_status, assert_mobile_data_status,
//     assert_internet_speed, assert_can_send_mms, assert_no_overdue_bill
//     and the others) run on the episode's final world returns its
//     assert_value. Info "env_assertions", each with "met".
//   - DB: the gold actions, the agent's and the user's, replayed from the
//     task's initial state (those that fail skipped, as tau2 does) give
//     the same agent database and the same user database: their hashes,
//     tau2's get_db_hash and get_user_db_hash (the SHA-256 of
//     json.dumps(model_dump(), sort_keys=True)), are equal. Info "db": the
//     four hashes, "match", and the records and phone fields that differ.
//   - ACTION: each gold action matches a call of the agent's or of the
//     user's (tau2.ActionsMatched).
//   - COMMUNICATE: tau2.Communicated over the agent's messages.
//   - NL_ASSERTION needs an LLM judge: not evaluated, and left out of the
//     product (info "nl_assertions": "not_evaluated").
//
// # Oracle
//
// Domain implements gym.OracleKind: a task's gold actions as tool calls,
// the user's on the phone too, one per step, then a closing message, in
// solo mode (the oracle's reset options); a task whose gold actions end
// with a transfer ends there. Every tau2 telecom task's oracle scores 1.
//
// # Where this differs from tau2
//
// tau2's connect_vpn gives a phone one VpnDetails object, a class
// attribute that break_vpn then changes: a process that ran a task with a
// broken VPN connects every later VPN poorly. Here that object is each
// episode's own (a connection after break_vpn in the same episode is
// poor, as in tau2). A draft bill that refuel_data makes for a customer
// without one is named with a random uuid in tau2, so that an episode's
// database and its gold replay's never match; here its id is a hash of how
// many draft bills the episode made ("B" and 8 hex digits), the same in
// both. The gold actions of no tau2 telecom task meet either case.
//
// Env is used by one goroutine at a time (its gym.Session's); Domain is
// safe for concurrent use.
package telecom

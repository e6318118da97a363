// Package agent is nextstate's LLM agent loop: it plays episodes of any
// env kind with a model behind an OpenAI-compatible chat endpoint (vLLM,
// SGLang, OpenAI, anything that speaks /v1/chat/completions), records the
// policy's side of every step (gym.Turn) for training, and runs whole
// benchmarks and rollout batches: K samples per task, N episodes in
// flight, resumable run directories. `nextstate run` is built on it; its
// episodes carry what a trainer wants of them (each step's prompt,
// response, token ids, log-probs and weight version when the endpoint
// gives them), and `nextstate train` drives it (package train).
//
// # Playing an episode
//
// New checks a Config and returns an Agent; Agent.Play plays one episode
// through a Session (a *client.Session: the gym server's session) from
// its reset, to the end:
//
//	a, err := agent.New(agent.Config{BaseURL: "http://localhost:8000/v1", Model: "Qwen/Qwen3-8B"})
//	s, reset, err := c.Create(ctx, gym.CreateRequest{TaskID: "bfcl-smoke-1"})
//	tools, err := agent.ToolsFor(reset)
//	ep, err := a.Play(ctx, s, agent.Start{Reset: reset, Tools: tools, Seed: 1})
//
// Each turn the history becomes chat messages: the system prompt
// (Config.SystemPrompt, DefaultSystemPrompt, or none), the reset
// observation as the first user message (led by the task's instruction
// when it has no text), then each reply as an assistant message and each
// observation after it. Observation parts map as: text parts to user text;
// tool_result parts to tool messages answering their calls by id (a call
// that no result answers, as with a GUI env whose answer is the new
// screen, gets a tool message with the observation's text); image parts to
// image_url parts holding data: URLs, in a user message (only the latest
// Config.MaxImages images are kept, 3 by default; older ones become a line
// of text; an image given only by a blob reference is a line saying so);
// file parts to their text, a binary file to its path, type and size,
// except tools.json. Each request carries seed Start.Seed plus the turn's
// number (from 1).
//
// The tools offered (ToolsFor) are the reset info's "tools"
// (gym.InfoTools; the GUI kinds list their "computer" tool there), else
// the reset observation's tools.json file; with none the model acts in
// plain text.
//
// A reply becomes an action: its tool_calls become tool_call parts; with
// none, <tool_call>{"name": ..., "arguments": {...}}</tool_call> blocks in
// its text (Qwen and Hermes style, "parameters" accepted for
// "arguments", an unclosed last block read to the end) become tool_call
// parts; otherwise its text is a text part. Reasoning in <think> blocks is
// left out of the action and of later prompts. Text beside tool calls is
// not sent to the env. Arguments go to the env as the model wrote them:
// malformed JSON is the env's to answer with its error, which the model
// then reads (such a turn goes back into the history as plain text, since
// chat servers refuse tool calls whose arguments do not parse). An action
// the gym refuses before the env sees it (it does not match the kind's
// action schema: text to a GUI kind, two parts where one is allowed) is
// shown to the model as "Your action was rejected: ..." and the model
// tries again; after Config.MaxRejected refusals in a row (3) the episode
// ends as an agent error, "bad_action". The gym records each refusal with
// its turn (a step.refused event), so it is a training sample too; the
// trial's result counts them (Result.Refused). Tool call ids the model left out
// are assigned, call_<turn>_<i>.
//
// Each step is sent with its gym.Turn (Session.StepTurn): the prompt
// messages as sent, the tools, the response text (native tool calls
// written out Hermes-style), the model's name, whether the prompt was
// cut, and, when the endpoint returns them, the prompt's token ids, the
// response's token ids and one log-prob per response token. A gym server
// that does not take a step's turn yet (-32602 unknown field "turn") is
// sent plain steps from then on; that is logged once per Agent. A turn
// over the request size limit is sent again without its prompt messages,
// and if still too large the step goes without it (logged each time).
//
// # Token ids and log-probs
//
// With Config.TokenInfo "auto" (the default) or "on", requests carry
// logprobs: true, vLLM's return_tokens_as_token_ids and return_token_ids,
// and SGLang's return_logprob. Accepted in responses: vLLM's
// prompt_token_ids (top level or per choice) and choices[].token_ids (or
// response_token_ids);
// "token_id:N" tokens in choices[].logprobs.content; SGLang's meta_info
// (per choice or top level) with output_token_logprobs and
// input_token_logprobs ([logprob, token_id, text] each) or input_token_ids
// and output_token_ids. Log-probs are kept only when they line up one to
// one with the response ids (or stand alone when there are none). Under
// "auto", an endpoint that refuses the fields with a 400 naming one of them
// (OpenAI's "Unrecognized request argument") is asked again without them,
// and never asked for them again by that Agent (logged once); turns then
// carry text only. Under "on" such a refusal fails the call (a
// "model_rejected" failure, see Failures). "off" never asks.
//
// Other fallbacks: a vLLM started without a tool-call parser refuses
// requests with tools ("auto" tool choice requires
// --enable-auto-tool-choice); the Agent then sends tool_choice "none",
// which keeps the tools in the prompt, and reads the calls from the text
// (from then on, for every episode of that Agent).
//
// # Context budget
//
// Config.ContextBudget is the prompt's budget in tokens (tools and
// messages; set it to the model's context length less MaxTokens). Tokens
// are estimated: one per 3 bytes of text, 4 per message, 800 per image;
// the estimate is then scaled by what the endpoint reports
// (usage.prompt_tokens, or the number of prompt token ids) over the
// estimate of what was sent, smoothed and shared by an Agent's episodes.
// Over budget, the prompt keeps the first KeepHead share (0.3) of the
// budget from the start of the episode and fills the rest from its end,
// dropping whole turns in the middle (a turn is an assistant message and
// the tool and user messages after it, so a call is never separated from
// its result), and marks the cut with a line of text. The system prompt,
// the task and the last turn are always kept; if what is kept is still
// over budget, the longest texts (of 200 bytes or more; a tool call's
// arguments never) are clipped, keeping the KeepHead share of each from its
// start and the rest from its end, up to eight times. The turn's
// Truncated is set. Config.MaxTurns (50) ends an episode after that many
// model calls: truncated, EndReason "max_turns", not a failure.
//
// # Failures
//
// An Episode's Failure says whose fault ended it, as gym.Failure does:
// the env's and the gym's failures as the server labelled them; a model
// call that failed after Config.Retries retries (429, 5xx, broken
// connections; the official openai-go client does the retrying, with
// backoff) is the infrastructure's ("model_unavailable", "model_rejected"
// for another 4xx), except a prompt over the model's context, which is the
// agent's ("context_length"). A refused key or an unknown model (401, 403,
// 404) makes Play return ErrFatal: no episode can succeed.
//
// # Runs
//
// A Runner plays K samples of each task (a group, labelled "group" with
// the task id on its sessions, with "trial" and "sample", under the run
// label Info.Run) with at most
// Concurrency episodes in flight, with the Agent or, with Oracle set, with
// each task's oracle (gym.OracleFor on the task as the Runner holds it,
// verifier data included; the oracle's reset options are used). A
// trial's reset seed is TrialSeed(Seed, task id, sample): the same in
// every rerun. Sessions are created by task id when the server's catalog
// has the task (Runner.Known), else with the task inline; a server over
// capacity or draining is waited out (its retry hint, else a second) until
// ctx ends. A trial whose session cannot be created, whose task has no
// oracle, or whose reset lists tools that do not parse gets a row with
// that failure and no steps.
//
// The run directory is in package agent/rundir's format (and
// docs/formats.md's "Run directories"):
//
//	run.json                   the run's settings (rundir.RunInfo, Runner.Info)
//	results.jsonl              one rundir.Result per line, one per trial played (a rerun appends)
//	trajectories/<t>.<k>.json  a rundir.Trajectory per trial (rundir.TrajectoryPath)
//	blobs/<sha256>.<ext>       the observations' images and files, by content (rundir.BlobPath)
//	report.md, report.html     written by package agent/report
//
// A row's status is passed (reward >= PassThreshold, 1 by default),
// failed, agent_error (a failure that is the agent's fault) or
// infra_error (the infrastructure's: not scored). Its reward is the
// outcome reward: the verifier's reward on the last step when it gave
// one, else the sum of the step rewards. Trajectory steps keep, besides
// the action, observation, reward and info, the model's response and the
// messages new in that turn's prompt (messages_tail; images as blob
// paths); observations' images and files (but tools.json) are moved to
// blobs/. A step the gym refused is kept with step 0 and its failure. The
// rows' process_reward and the steps' judge are null: the Runner does not
// read the judge's rewards.
//
// Resuming: Run reads results.jsonl first (a last line cut short by a
// killed process is dropped); trials whose last row is passed, failed or
// agent_error are skipped, infra_error trials and trials without a row
// are run. Every trajectory file is written whole before its row, and each
// row with one write, so a directory left by a killed process is
// consistent. When ctx ends (SIGINT, SIGTERM), Run stops starting trials,
// abandons those in flight (they get no row), and returns once the writes
// are done; ErrFatal from an episode, or a write that fails, stops the run
// the same way. A directory holding a run of another model, oracle mode or
// seed is refused. Summarize gives pass@1 and unbiased pass@k (PassAtK)
// per task, averaged over tasks, infrastructure errors left out.
//
// # Demonstrations
//
// Demonstration turns a recorded episode (an oracle's trajectory from
// `nextstate run --oracle`) into the prompts an Agent with the same
// settings would have sent and the replies that make it take the recorded
// actions (text, or tool calls as <tool_call> blocks): supervised
// fine-tuning on them (`nextstate sft`) teaches a model to act as the
// demonstrator in exactly the prompts it will see when it plays.
//
// Concurrency: an Agent is safe for concurrent use, each Play one
// episode. A Runner's Run is called once at a time; its Progress func is
// called from one goroutine at a time.
package agent

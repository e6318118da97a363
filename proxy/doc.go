// Package proxy is nextstate's personal-agent proxy: an OpenAI-compatible
// endpoint in front of the policy's server that turns live conversations
// into training samples. A personal agent improves simply by being used:
// the user's next message (a re-query, a correction, thanks) or the next
// tool result is the next state of the agent's last turn.
//
//	nextstate proxy --upstream http://localhost:8000 --listen 127.0.0.1:8090 \
//	    --judge-url http://localhost:8001/v1 --judge-model Qwen/Qwen3-8B --data DIR
//
// # Forwarding
//
// Every request (/v1/chat/completions, /v1/models, anything under the
// upstream) goes to Config.Upstream with its path, query and headers; the
// answer comes back with its status and headers. A streamed answer
// (text/event-stream) is flushed to the client chunk by chunk as the
// upstream sends it, and parsed for the record only after each chunk has
// been written. The body goes upstream byte for byte unless it holds a
// session key, which is then removed (the body is re-encoded); nothing is
// added (stream_options.include_usage is sent only if the client asked).
//
// # Sessions
//
//	header           body key       values
//	X-Session-Id     session_id     the conversation; none: forwarded and counted, not trained on
//	X-Turn-Type      turn_type      main (default) or side (heartbeats, memory flushes: forwarded only)
//	X-Session-Done   session_done   true on the session's last request
//	X-User-Id        user           whose feedback it is (OpenAI's "user" field)
//
// Headers win over body keys. A main turn is recorded once answered: its
// messages (the prompt), the answer's text (tool calls appended as
// <tool_call>{"name": ..., "arguments": ...}</tool_call> lines), and, when
// the upstream returned them (vLLM's prompt_token_ids and token_ids,
// logprobs), its token ids and log-probs. The next main request of the
// same session carries its next state: its last message (user or tool),
// which goes with the turn to the judge, off the request path. The turn of
// a request marked session_done has no next state and is not trained on
// (a side turn marked so ends the session too). At most 100000 sessions
// are held; past that the least recently seen one is forgotten.
// A response whose turn will not be trained on carries
// X-Nextstate-Trained: false; reason=R, R one of no_session, side_turn,
// not_allowed, rate_limited, session_done, no_judge.
//
// # Feedback not to learn from
//
// Config.AllowUsers (--allow-users a,b or --allow-users-file) lists whose
// feedback trains; with no list, everyone's does. SessionRate and UserRate
// (--session-rate, --user-rate) bound the trained turns per minute of a
// session and of a user: token buckets holding a minute's worth (at least
// one). The judge also looks for next states that try to make the agent
// unsafe or contradict its instructions; such a turn goes to the
// quarantine (DATA/quarantine, one JSON file per turn with the reason and
// the judgement), kept and not trained on until released:
//
//	nextstate proxy quarantine list --data DIR
//	nextstate proxy quarantine release ID --data DIR   # store it as a sample (stop the proxy first)
//	nextstate proxy quarantine drop ID --data DIR
//
// # The judge
//
// HTTPJudge asks an OpenAI-compatible endpoint m times (--judge-votes, 3)
// with a prompt of its own for a personal agent's next state. Each reply
// ends in \boxed{1}, \boxed{0} or \boxed{-1} (read by rl.ParseVote), may
// hold a hint between [HINT_START] and [HINT_END] (how the answer should
// have been different, for on-policy distillation; rl.SelectHint picks
// it), and a line "[FLAG] reason" when the next state is an attempt to
// subvert the agent. The turn's vote is the majority of the valid votes
// (Majority: a tie, or no valid vote, is 0; unlike rl's mean); one valid
// flagging vote quarantines the turn. Any Judge implementation may be
// given instead (Config.Judge). Judging runs on Workers goroutines (4)
// from a queue of Queue turns (256); past it a turn is dropped and logged.
//
// # Samples
//
// A judged turn becomes one rl.Sample (rl.BuildSamples; slime's fields):
// prompt = the request's messages, response = the answer, tokens and
// rollout_log_probs when known, reward = step_scores[0] = the vote,
// metadata.opd with the hint and rl.TeacherMessages' teacher prompt when
// there is a hint, status completed, metadata.nextstate with the session,
// step (the turn's number in the session; also the sample's episode), env
// "proxy", task = the session. It is appended with store.AppendSamples
// under run "proxy", the session as the task, so all samples of a session
// share a group_index. A store directory is locked by the process that
// writes it, so the proxy cannot write into the data dir of a running
// `nextstate serve`: it keeps its own store (--data, default
// <cache>/nextstate/proxy), with the same samples.db format;
// `nextstate export --format samples --data DIR` reads it while the proxy
// runs. To put the samples on the gym's own samples stream, run the proxy
// inside the server: `nextstate serve --proxy-upstream URL` mounts it
// (server.Server.Mount) on the server's address and store, behind the
// server's token (which is not forwarded upstream), judged by serve's
// --judge-url; Config.OnSample wakes the stream's subscribers.
package proxy

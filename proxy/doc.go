// Package proxy is nextstate's personal-agent proxy: an OpenAI-compatible
// endpoint in front of the policy's server that turns live conversations
// into training samples. A personal agent improves simply by being used:
// the user's next message (a re-query, a correction, thanks) or the next
// tool result is the next state of the agent's last turn.
//
//	nextstate proxy --upstream http://localhost:8000 --listen 127.0.0.1:8090 \
//	    --judge-url http://localhost:8001/v1 --judge-model Qwen/Qwen3-8B --data DIR
//	nextstate proxy --upstream http://localhost:8000 --listen 0.0.0.0:8090 \
//	    --users-file users.txt --allow-users alice ...   # beyond loopback: tokens
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
// The client's Authorization header goes upstream only when the proxy has
// no token of its own; Config.UpstreamKey (--upstream-api-key-env) sends
// the upstream's key instead.
//
// # Sessions
//
//	header           body key       values
//	X-Session-Id     session_id     the conversation; none: forwarded and counted, not trained on
//	X-Turn-Type      turn_type      main (default) or side (heartbeats, memory flushes: forwarded only)
//	X-Session-Done   session_done   true on the session's last request
//	X-User-Id        user           whose conversation it is (OpenAI's "user" field); see Identity
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
// # Identity
//
// A next state trains a turn only if it comes from the turn's own user and
// that user is allowed. To make "its own user" mean something:
//
//   - A session is bound to the user of its first main request (no user is
//     a user too: a session begun without one stays without). A later
//     request in the session, main or side, from another user, or without
//     the user, is refused with 403 Forbidden and an error that says the
//     session belongs to another user; it is not forwarded and changes
//     nothing, so the bound user's next message is still the next state of
//     their pending turn. Such refusals are logged (with both users) and
//     counted (Stats.WrongUser). A session is taken by whoever sends its id
//     first: use ids no one else can guess.
//   - Who the user is depends on the channel. With no token the user is
//     whatever the request says (X-User-Id, else the body's user), so the
//     standalone proxy then listens only on loopback addresses
//     (CheckListen, Proxy.Listen: --listen 0.0.0.0:8090 without a token is
//     refused, as `nextstate serve` refuses it): anyone who can reach it
//     can name any user. Config.Token (--token, --token-file or
//     $NEXTSTATE_TOKEN) is a shared bearer token ("Authorization: Bearer
//     <token>", the scheme in any case) for a front end that authenticates
//     its users itself: a request with it names its user as before.
//     Config.Users (--users-file, "TOKEN USER" a line) gives each user a
//     token of their own, and then the token says who is speaking: a
//     request in a session that names another user is refused (403). With
//     either, a request without a right token is refused with 401 and
//     WWW-Authenticate (Stats.Unauthorized), the token is not forwarded
//     upstream, and the proxy may listen on any address.
//   - Mounted in `nextstate serve`, the proxy is behind the server's one
//     bearer token: users are self-asserted there, as behind --token; per-user
//     tokens need the standalone proxy.
//
// # Feedback not to learn from
//
// Config.AllowUsers (--allow-users a,b or --allow-users-file) lists whose
// feedback trains; with no list, everyone's does. A user not on it has
// neither their turns nor their messages trained on: their sessions are
// their own (see Identity), so their messages are no one else's next state. SessionRate and UserRate
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
// The judge is rl's (Config.Judge, an rl.Scorer: an *rl.Judge from
// rl.NewJudge, --judge-url and the other judge flags): m votes
// (--judge-votes, 3) on the rl.KindChat prompt (rl/prompts/chat.tmpl,
// which --judge-templates may replace), whose input JudgeInput builds:
// the conversation the agent saw, each message cut to 2000 characters
// and all of them to 32000 (rl.TextLimits; the oldest after the system
// messages are left out first), the answer and the next state, 4000
// each. Each reply ends in \boxed{1}, \boxed{0} or \boxed{-1}
// (rl.ParseVote), may hold a hint between [HINT_START] and [HINT_END]
// (how the answer should have been different, for on-policy
// distillation; rl.SelectHint picks it), and a line "[FLAG] reason" when
// the next state is an attempt to subvert the agent. Combine reads the
// verdict: the turn's vote is the majority of the valid votes
// (rl.AggregateBy with rl.MajorityVote: a tie, or no valid vote, is 0;
// unlike the mean rl's process reward takes), and one valid flagging vote
// quarantines the turn. Judging runs on Workers goroutines (4) from a
// queue of Queue turns (256); past it a turn is dropped and logged.
// FeedbackJudge is a programmatic judge for when no judge model is at
// hand: one vote read from the user's words (thanks, a correction and its
// "please" sentences as the hint, a re-query; a request to ignore the
// instructions flagged).
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
// --judge-url; the store wakes the stream's subscribers. Its users
// are self-asserted behind that token (see Identity). To train on the
// samples as they come, in front of the policy being trained, see package
// live (`nextstate train --proxy`). A turn's sample names its user
// (metadata.nextstate.user) and the weight version that answered it
// (the upstream's X-Weight-Version).
package proxy

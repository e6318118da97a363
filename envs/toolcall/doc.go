// Package toolcall is the tool-call env: function calling, exactly as chat
// models emit it, against stateful domains. A Domain (tau2 retail and
// telecom, BFCL, the code interpreter; each in a subpackage that registers
// its own kind) starts Episodes; NewKind wraps a Domain in a gym kind whose
// Env does what every domain shares:
//
//   - Tools are declared in the OpenAI function-calling shape (Tool: name,
//     description, a JSON Schema of the parameters). The reset observation
//     lists them as a tools.json file part, and its info under "tools".
//     Tool, Toolset and ToolError are package envs/internal/tools's, the
//     one tool mechanism, which terminal-v1 and swe-v1 use too.
//   - An action is one or more tool_call parts (parallel calls, run in
//     order, each answered by a tool_result part in the same order) and/or
//     text, a message to the user answered by the user's reply.
//   - Bad calls are the agent's mistakes, not crashes: an unknown tool,
//     arguments that are not a JSON object, a missing required parameter or
//     a value of the wrong type is answered by an is_error tool result that
//     says what the tool expects (Toolset.Check), the step's info lists them
//     under "tool_errors", and the episode goes on; once max_tool_errors
//     (DefaultMaxToolErrors, or the reset option) have been made, the step is
//     truncated with info "truncated_reason": "tool_errors".
//   - A domain's tool may fail the way real tools do (an order that does not
//     exist): it returns a *ToolError (Errorf), read by the agent as the
//     call's result. Any other error ends the session as the
//     infrastructure's fault.
//   - The outcome reward is the domain's Verify after the episode
//     terminates (gym.Verifier): run on state the agent never saw.
//   - One-shot episodes (Answerer, for BFCL single-turn) take the first
//     action as the whole answer: nothing is run, the episode terminates,
//     and Verify scores the calls.
//
// The same sessions are reachable over the Model Context Protocol through
// the server (see docs/protocol.md): an MCP client lists the session's tools
// and calls them, and each call is a step of the episode.
package toolcall

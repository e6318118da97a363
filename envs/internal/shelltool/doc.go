// Package shelltool is what the shell kinds, terminal-v1 and swe-v1,
// share: an agent's sandbox with a persistent shell across episodes, the
// tools it acts with, and the step that runs them.
//
// Tools are declared as tools.Tool (the OpenAI function shape) and
// checked by a tools.Toolset against their JSON Schemas, as the tool-call
// kinds' are; a null parameter counts as absent. Tools holds a kind's
// list, its shell_exec first. Parse turns an action into Calls (a text
// part alone is a shell_exec of its text, or with textFinal the end of the
// episode; text beside tool calls is the model's words). Step decodes each
// call with the kind's decoder (which may reject what the schema admits
// but the tool does not, with Tools.BadArguments) and runs it with the
// kind's runner, in order, each answered by a tool_result (a text part for
// a text command). A rejected call is answered with what was wrong and
// what the tool takes (info "error": "bad_call"); one that ran and failed
// in a way the agent can act on (a *tools.ToolError) with its message
// ("tool_failed"); after submit nothing runs. Any other error fails the
// step. The step's info "calls" has one entry per call: its tool,
// "elapsed_ms" of those that ran, and what the runner added. Decode is
// what Step makes of an action before it runs anything, for tests.
//
// shell_exec is declared by a kind's Exec (where it runs, the default and
// the cap of its timeout), decoded by Tools.ExecArgs and run by Box.Exec:
// a command typed into the persistent shell, its timeout cut to leave the
// step's deadline room, its output and exit code (FormatExec). The limits
// are the kind's (docs/formats.md, Shell tools): terminal tasks run short
// commands, a repository's build and tests take minutes.
//
// Box is the agent's sandbox: Reset restores the snapshot of the
// sandbox's initial state when the episode's task is the one it was built
// for (sandbox.TrySnapshot right after the build), and builds it anew
// otherwise; then it starts a fresh shell. Whose fault an error is follows
// sbopen: a tool the agent broke in a live sandbox is its mistake
// (Box.ToolFault), a sandbox that died is the infrastructure's
// (Box.Fault).
package shelltool

// Package code is the code interpreter domain of the tool-call env (the
// ReTool setting of OpenClaw-RL), registered as the kind
// "code-interpreter-v1": math problems solved with a Python interpreter
// that runs in a sandbox, scored by an exact comparison of the final
// \boxed{} answer with the reference. Import it for its side effect; the
// shared parts (actions, tool-call checks, bad-call counting) are package
// envs/toolcall's.
//
// # The episode
//
// The reset observation is the problem, with how to answer, and a
// tools.json file holding one tool in the OpenAI function shape:
//
//	code_interpreter {"code": string}
//
// It runs the code with python3 and returns what it printed: stdout and
// stderr merged in their order, tracebacks included (a failing cell is a
// result, not an error), and, as in a notebook, the repr of a final
// expression statement that is not None; "(no output)" when there is
// none. A call that does not fit the schema (no "code", a number for it,
// arguments that are not JSON, another tool's name) or sends empty code
// is answered by an is_error result that says what the tool takes, and
// counts towards the env's max_tool_errors.
//
// The final answer is a text message that holds \boxed{...}; the last
// \boxed{} (or \fbox{}) of the message is the answer, and the message ends
// the episode. A text message without one is answered by a reminder and
// the episode goes on, unless the reset option "text_action" is "final":
// then every text message ends the episode, as a chat model's reply
// without tool calls ends its turn, and one without \boxed{} scores 0.
//
// Reset options:
//
//   - "mode": "stateless" (the default: each call runs in a fresh python3
//     process, nothing is kept) or "session" (one persistent interpreter per
//     episode: variables, functions and imports persist between calls). A
//     task may ask for session mode in its data; the option wins.
//   - "timeout": seconds a call may run, 1 to 60 (default 10). A call past
//     it is killed, and its result is the output so far and a line saying
//     so; in session mode the interpreter is restarted, and the line says
//     its state is lost. A call never runs past the step's deadline: it is
//     cut 5 s before, so that a slow cell is its result, not a failed step.
//   - "text_action": "boxed" (default) or "final", as above.
//   - "max_tool_errors", read by envs/toolcall.
//
// # The sandbox
//
// Each episode runs in a sandbox of its own (package sandbox), taken from
// a warm pool when there is one: no network, a memory limit (the setting
// "code.memory", default 512 MiB; a cell that allocates past it gets a
// MemoryError or is killed, and its result says it may have run out of
// memory), the backend's CPU and PID limits, and at most 16 KiB of output
// per call (MaxOutput: the head and the tail, with sandbox's truncation
// marker and the count of bytes dropped between). On bwrap the sandbox's
// root is the host's, read-only, which has python3; on docker it is the
// base image (the setting "base_image", default nextstate/base, which has
// python3 with the standard library). Files a cell writes stay for the
// episode, in /workspace and /tmp.
//
// The stateless mode runs `python3 -u -c <driver> once` with the code on
// stdin (Sandbox.Exec; the process group is killed at the timeout). The
// session mode starts the same driver in session mode with Sandbox.Start:
// it reads framed cells on stdin, runs each in one globals dict, and ends
// each cell's output with a marker that carries a random nonce, which the
// env reads up to. A cell that times out, kills its interpreter or gets it
// killed (os._exit, out of memory) is answered with what it printed and a
// note, and a fresh interpreter is started for the next call. The
// driver's stdin is its own; a cell's stdin is /dev/null.
//
// Closing an episode closes its sandbox, which ends every process in it.
// An episode also has a Restart method that starts the Env's next episode
// in the same sandbox: the first restart takes a fresh sandbox and
// snapshots it (sandbox.Snapshotter), later ones restore that snapshot,
// which on bwrap takes milliseconds. envs/toolcall's Env calls it when it
// resets, if it looks for the method; otherwise each reset closes the
// episode and starts a new one, from the pool.
//
// # Tasks
//
// A task's Data is {"problem": "...", "mode": "session"?, "files":
// {"data.txt": "..."}?} (the problem is the Instruction when Data has
// none; files are written into the code's working directory before the
// first call, where the agent reads them with code: the problem need not
// show them) and its Verifier is {"answer": "...", "solution": "python
// source"?, "oracle": "answer"?}. The reward is 1 when the final
// answer matches the reference, else 0; the verifier's info (recorded,
// never shown to the agent) holds the answer as given, both canonical
// forms, whether they matched and why:
//
//	{"match": true, "answer": "\\frac{3}{4}", "got": "3/4", "expected": "3/4",
//	 "reason": "equal as exact numbers: \\frac{3}{4} = 3/4"}
//
// The package ships a generated set of 240 problems with exact answers,
// tasks/math.jsonl (arithmetic: big products, modular powers and
// inverses, exact fraction sums, digit sums, lcm, factorial valuations;
// algebra: linear systems with rational solutions, quadratics with
// rational roots, arithmetic, geometric, polynomial and telescoping sums,
// compositions of Möbius maps; combinatorics: binomials, anagrams, row
// arrangements with adjacency constraints, permutations with forbidden
// positions, counting by inclusion–exclusion, Catalan numbers,
// derangements, stars and bars, committees). Its generator is the command
// in gen/ (`go run ./envs/toolcall/code/gen -n 240 -seed 1 -o
// envs/toolcall/code/tasks/math.jsonl`); the answers are computed in Go
// with math/big, and each task carries a Python solution computed
// independently, which the tests run in the sandbox. Load the set with
// `nextstate serve --tasks envs/toolcall/code/tasks/math.jsonl`. The
// kind's built-in tasks (SmokeTasks) are five of them, one or two per
// category, with ids prefixed "code-".
//
// # Answers
//
// Normalize reads an answer (the \boxed{} content, or a reference) in
// this order: surrounding $...$, \(...\) and \[...\] are removed;
// \text{}, \textbf{}, \mathrm{}, \mbox{} and the like are replaced by
// their argument; \left, \right, TeX spacing, degrees (^\circ), percent
// signs and dollar signs are dropped; \dfrac and \tfrac are \frac, \cdot
// and \times are *, \div is /, Unicode minus is -; a trailing period is
// dropped; a leading "x =" (one name, one '=') is dropped; trailing words
// of letters after a space ("12 cm", "5050 ways") are dropped when what
// precedes them is a number; commas (or spaces) between groups of three
// digits are thousands separators ("1,234,567"; "1,23" is not a number).
// What is left, without spaces, is evaluated exactly with math/big.Rat
// (Eval): integers, decimals (0.75, .5, 1e-3), + - * / and ^ with an
// integer exponent (-2^2 is -4), parentheses, brackets and braces,
// \frac{a}{b} (and \frac12), \binom{n}{k} and n!, within bounds on size.
// There is no implicit multiplication: 2\frac{1}{2} and 2(3) are not
// numbers.
//
// Match compares: when the reference has a value, the answer must have
// the same value (0.75, 6/8 and \frac{3}{4} match 3/4; a
// rounded decimal such as 0.333 does not match 1/3); when it has none
// (a reference that is not a number), the normalised texts must be equal
// up to case.
//
// # Oracle
//
// The Domain implements gym.OracleKind: NewOracle plays a task's Python
// solution through code_interpreter, then answers "The answer is
// \boxed{<what it printed>}", so the oracle checks the solution, the
// sandbox and the answer check together. A task whose verifier says
// "oracle": "answer" has instead a demonstrator that answers the reference
// at once, without the tool: demonstrations of not using the tool, for a
// warm start that should sometimes skip it (examples/learn).
//
// # Settings
//
// Configure reads the sandbox settings of package envs/internal/sbopen
// ("sandbox": bwrap or docker, "docker.hosts", "sandbox.owner",
// "sandbox.dir"), and "base_image" (the docker image, default
// nextstate/base), "code.memory" (bytes, or 512MiB, 2GiB; 64 MiB to 64
// GiB) and "code.pool" (warm sandboxes kept, default 2; 0 turns the pool
// off). Each Manager's Configure opens a backend and a pool of its own,
// with its own settings (toolcall.Instance), and the Manager's Shutdown
// closes them.
//
// # Performance
//
// BenchmarkRoundTrip measures one code_interpreter call through a gym
// session on each backend, in both modes. A stateless call costs a
// process start (python3 starts in some 30 ms on an idle host; a docker
// exec adds about 100 ms); a session call costs a write and a read on the
// interpreter's pipes, well under a millisecond.
package code

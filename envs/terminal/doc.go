// Package terminal is the terminal-v1 env kind: shell tasks in a sandbox,
// in the Terminal-Bench task format, judged by the task's hidden pytest
// tests. Import it for its side effect (cmd/nextstate does); it registers
// the kind with gym and the "terminal-bench" task format with
// gym.RegisterTaskFormat, so `nextstate serve --tasks DIR` and `nextstate
// tasks list DIR` read Terminal-Bench task folders.
//
// # Configuration
//
// Kind implements gym.Configurer. Configure reads the manager's settings:
// "sandbox" ("bwrap", the default, or "docker": the backend package must
// be compiled in, as cmd/nextstate does with blank imports),
// "docker.hosts" (comma-separated engine addresses), "base_image" (the
// image that replaces a FROM image missing from the engine; default
// nextstate/base), "terminal.pool" (warm sandboxes kept per sandbox spec,
// default 2, 0 for none), "terminal.tests_runner" (how the tests run:
// RunnerAuto, the default, RunnerScript or RunnerPytest; offline, a
// run-tests.sh that only installs its runner from the network, as
// Terminal-Bench's template does, gives way to the sandbox's pytest),
// "sandbox.dir" and "sandbox.owner" (passed to the backend). It opens
// one backend and one warm pool (sandbox/pool) per Manager, which the
// Manager's envs of the kind share, in the gym.Instance it returns; the
// Manager's Shutdown closes them. Two Managers of one process have a
// backend each, with their own settings.
//
// # Actions
//
// Tool calls in the OpenAI function shape (gym.PartToolCall), several per
// step (parallel calls), each answered by a tool_result part, in order:
//
//	shell_exec {command: string, timeout?: number}  run in the persistent bash; output, exit code
//	shell_send_keys {keys: [string], wait?: number} type into the terminal (tmux keys); the screen
//	shell_view {}                                   the terminal's screen
//	write_file {path: string, content: string}      write a file (relative to the workdir)
//	submit {}                                       end the episode: the tests judge it
//
// OpenAITools returns the schemas in the OpenAI "tools" shape; the reset
// info carries them under "tools", so any chat model can be given them.
// The tools, the step that runs them and the sandbox across episodes are
// swe-v1's too (package envs/internal/shelltool), and calls are checked
// against the schemas as the tool-call kinds' are (envs/internal/tools).
// A call the schema does not fit (an unknown tool, arguments that are not
// a JSON object, a missing or mistyped parameter) or that the tool cannot
// take (a blank command or path, a timeout that is not positive) is the
// agent's mistake: it is answered with a tool_result whose is_error is
// set and whose content says what was wrong and what the tool takes; the
// other calls of the step run. Calls after submit in the same step are
// not run. A null parameter is an absent one; timeout and wait may be a
// duration ("90s"), keys one string.
//
// A plain text part is a shell_exec command, for simple agents. With the
// reset option {"text_action": "final"}, an action of text parts only ends
// the episode instead (a chat model's final answer); text next to tool
// calls is always the model's words and is not run.
//
// shell_exec runs in a persistent `bash --norc` (sandbox.NewShell): cd and
// exported variables persist; stdin is /dev/null. Its output (stdout and
// stderr together) is cut at 64 KiB with sandbox.TruncationMarker; the
// answer ends with "[exit code N]". A command still running at its
// timeout (DefaultCommandTimeout, 60 s, at most MaxCommandTimeout, 10 min,
// and never past the step's deadline; docs/formats.md says why) is
// interrupted, and that is its observation ("[timed out after
// ...]"), not an error. The terminal of shell_send_keys and shell_view is a
// tmux session with its own shell, for interactive programs; a cd in
// shell_exec does not move it.
//
// # Observations
//
// At reset, the task's instruction (a text part); info "tools", "workdir"
// and "sandbox". After a step, one part per call. Per-call details that
// are not deterministic (elapsed_ms) or not for the model (exit_code,
// timed_out, truncated, error) are in the step info under "calls".
//
// # The Terminal-Bench task format
//
// A task folder holds task.yaml, Dockerfile, run-tests.sh, tests/ and
// solution.sh or solution.yaml (see LoadTask). A docker-compose.yaml
// (.yml) names where the image is built from instead: its main service's
// (MainService, or the only one) build context and Dockerfile, which may be
// in a subfolder; nothing else of compose is supported (other services
// and build args make the reset fail with "unsupported_task", saying
// which; image, command, environment, volumes are ignored). task.yaml
// maps so:
//
//	instruction (or descriptions[key=base])  Task.Instruction
//	max_agent_timeout_sec (default 360)      Limits.EpisodeTimeout = agent + test timeout + 1 min
//	max_test_timeout_sec (default 60)        the test run's timeout (Verifier "test_timeout");
//	                                         Limits.StepTimeout = max(10 min, test timeout + 1 min)
//	parser_name                              pytest (the only parser; others are refused)
//	difficulty, category, tags               Data
//	every other field                        Data "task_yaml", kept as read
//
// Terminal-Bench's base images work in /app and have `python`; tasks,
// tests and solutions written for them rely on both. So a Dockerfile that
// sets no WORKDIR works in DefaultWorkdir, /app (its relative COPY and RUN
// steps too), under either backend: with docker, a FROM image missing from
// the engine is replaced by the base image followed by WORKDIR /app
// (sandbox.ImageBuild.BaseWorkdir), and the base image has python as
// python3 (package sandbox/image, Packages); under bwrap, `python` is the
// host's (scripts/deps.sh installs python-is-python3).
//
// The task's id is the folder's name, its env terminal-v1, its Dir the
// folder; Data holds the working directory and FROM; Verifier lists the
// test files (never sent to agents). A task.yaml with an "env" field is a
// gym task file, not Terminal-Bench's. SmokeTasks are this package's own
// suite (tasks/), built in and embedded: their Data names them ("builtin")
// since they have no Dir. Dir is not part of a task's JSON: a task sent
// inline by a client has no folder (a bare sandbox, no tests); serve the
// folders with --tasks and create sessions by task id instead.
//
// # Sandboxes
//
// Where the backend builds images (a sandbox.ImageBuilder: docker, which
// builds on every engine it places sandboxes on), a task's image is built
// from its Dockerfile (a FROM image missing from an engine is replaced by
// the base image), and a task without one gets the base image. With bwrap,
// which does not, the
// root is the host's, read-only, and the Dockerfile's WORKDIR, ENV, COPY
// and RUN steps are applied to the sandbox (see Dockerfile for exactly
// what holds). Either way, COPY of the task folder itself leaves out
// tests/, run-tests.sh, the solution, task.yaml and the Dockerfile: bwrap
// skips them, and the docker build context excludes them.
//
// Reset brings the sandbox to the task's initial state: for the same task
// again, a Restore of the snapshot taken after the first build when the
// sandbox is a sandbox.Snapshotter; otherwise a sandbox from the warm
// pool, set up anew. The persistent shell is started afresh each episode.
//
// # The outcome reward
//
// An episode terminates at submit (or a final text message); the step
// limit and deadlines truncate it (gym.Session). Env implements
// gym.Verifier, and Verify judges the agent's work with nothing of the
// agent's in the way:
//
//  0. when the agent typed into the terminal (shell_send_keys), what it
//     typed is processed first: the terminal's shell must hold the
//     foreground again (typed commands finished, typed-ahead input read)
//     and its screen be still, for at most MaxTypedSettle (a program left
//     in the foreground, an editor or a server, is named in the info's
//     "terminal"). So the terminal's state at submit is what the agent left
//     once its input has been processed, and a solution that types a
//     command with a short wait passes, as in Terminal-Bench, where the
//     agent's processes run on during the tests;
//  1. every process of the agent's sandbox is killed (sandbox.Killer, a
//     PID-namespace sweep: background jobs, double forks, setsid, nohup,
//     tmux servers alike), so nothing the agent started runs on. A task
//     that needs a service running is written as "make a script that
//     starts it", which its tests run (the smoke tasks http-service and
//     background-heartbeat do);
//  2. the agent's working directory is copied out (at most MaxWorkBytes);
//     it is all of the agent's work the verdict sees: files it changed
//     elsewhere (/tmp, /root, under docker the image's own directories)
//     are not carried;
//  3. a fresh sandbox of the task's initial state is made the way the
//     agent's was (the task's image; under bwrap the same host view with
//     the Dockerfile's steps applied), and the agent's directory replaces
//     its working directory;
//  4. run-tests.sh and tests/ from the task folder (which the agent never
//     saw) go into a fresh test directory there (/tests where the root is
//     writable, else a new /tmp/nextstate-tests.*), and run-tests.sh runs
//     with TEST_DIR set, through a clean Exec, under the task's test
//     timeout, with pytest steered by testEnv: the test directory's ini
//     file and conftests only, plugin autoloading off, no user site, no
//     working directory on sys.path, and a JUnit report;
//  5. the reward is passed/total of that report (ParseJUnit: xfail counts
//     as passed, xpass and errors as failed, skips not at all); the run's
//     output, which the tests' code can print anything to, only fills the
//     info. The verifier info, kept in the record and never sent to
//     agents, holds every test's status.
//
// So the interpreter, pytest, its plugins and every file outside the
// working directory are the task image's: a fake pytest, a replaced
// python3, a .pth file, an entry-point plugin, a conftest or ini planted
// outside the test directory, a leftover process waiting for the tests, a
// test directory made unwritable, a broken bash, all stay in the agent's
// sandbox. Code of the agent's that the tests import still runs in the
// test process, as in Terminal-Bench.
//
// # Whose fault
//
// The rule (docs/architecture.md): only what the agent could not have
// caused is the infrastructure's. Nothing inside a sandbox can end it (its
// keeper, sandbox.KeeperLoop), so a sandbox that died (sandbox.ErrGone, or
// one the backend reports invalid) is a gym.InfraFault "sandbox_died": the
// step is truncated, the session closes, the server carries on. So is a
// task that does not build ("task_build") and a verifier's sandbox that
// cannot be made. A tool that fails in a live sandbox (a shell or terminal
// the agent broke) answers its call with the error, and the episode goes
// on. A command that timed out is the agent's observation. A test run that
// writes no report scores 0 (the agent's work broke it, or a timeout); a
// working directory over MaxWorkBytes, or one the verifier's sandbox
// cannot take, fails the episode as the agent's fault
// (workspace_too_large, verifier_environment_broken).
//
// # Validation
//
// OracleActions plays a task's solution through the tools; a Validator
// checks that doing nothing fails and the oracle passes (`nextstate tasks
// validate`).
//
// Env is used by one goroutine at a time (its gym.Session's). Kind is safe
// for concurrent use.
package terminal

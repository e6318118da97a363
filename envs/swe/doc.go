// Package swe is the SWE env, registered as "swe-v1": SWE-bench-format
// instances (a repository at a base commit, an issue, the gold patch and
// the tests that judge a fix), a sandbox in which an agent resolves the
// issue with a shell and a file editor, and an evaluation harness that
// judges a diff the way SWE-bench's does: in a fresh sandbox, by the
// instance's FAIL_TO_PASS and PASS_TO_PASS tests, with per-test results.
// Go and Python repositories are supported.
//
// # Instances
//
// An Instance has SWE-bench's fields (instance_id, repo, base_commit,
// patch, test_patch, problem_statement, FAIL_TO_PASS, PASS_TO_PASS, as
// lists or as strings holding JSON lists, and the optional ones) and
// nextstate's: source, language, image, and module/old/new for Go
// instances built from the module proxy (`nextstate swe build-go`, package
// envs/swe/gobuild). LoadInstances reads a JSON file (one instance or a
// list) or JSON Lines. The repository comes from source, relative to the
// instances file: a local git repository, read at base_commit, or a source
// archive (.tar, .tar.gz, .tgz, .zip; one top-level directory is
// stripped); without source, a directory named like repo beside the file.
// language is "go" or "python"; empty means "go" when the tree has a
// go.mod at its root. Test names are pytest node ids for Python
// ("tests/test_x.py::TestK::test_y[1]") and `go test -json` names for Go
// ("TestX", "TestX/sub", or qualified by package,
// "example.com/m/pkg.TestX"; see gotest.go).
//
// PrepareRepo turns an instance's repository into a tar of the tree at the
// base commit with a fresh .git holding one commit (fixed author and date,
// so the same tree gives the same commit) and a .git/info/exclude that
// keeps caches (__pycache__, .pytest_cache) out of diffs. No history is
// copied: the agent sees neither later commits nor the fix. Tars are kept
// in WorkDir/repos, one per repository and commit. This needs git on the
// host.
//
// # Sandboxes
//
// Every sandbox (the agent's and each evaluation's) has the repository in
// Workdir (/testbed), no network, and DefaultLimits. The image is the
// instance's image, else DefaultImage (nextstate/base: Debian with git,
// patch, python3 and pytest) on docker and the host's root, read-only, on
// bwrap, where an image is a rootfs directory (a docker image name is
// taken as the host's root). Go instances get the host's Go toolchain
// read-only at SandboxGoRoot (/nextstate/go) and the module cache
// read-only at SandboxGoModCache (/nextstate/gomod), with GoEnv's
// environment: nothing is fetched (GOPROXY=off, GOSUMDB=off,
// GOTOOLCHAIN=local), modules resolve from the cache (GOFLAGS=-mod=mod),
// CGO_ENABLED=0. In an agent's sandbox the build cache is its own
// (SandboxAgentGoCache): a copy of a seed, the base commit's build cache,
// made once per repository by the harness in a sandbox of its own
// (Harness.Seed: `go test -exec=true ./...`, nothing run), so the agent's
// first `go test` does not compile the standard library; it holds nothing
// of the test patch or the fix, and the agent cannot change the seed. The
// module cache's copies of the repository's own module (its other
// versions, which may hold the fix) are covered by an empty directory. On bwrap, keep instance sources out of the host
// directories bwrap shows sandboxes (/usr, /etc, /opt, /var, /srv): a
// source repository may hold the fix in its history.
//
// # Episodes
//
// A swe-v1 task is an instance (Instance.Task, TasksFromInstances;
// InstanceOf reads it back): Data holds the public part (TaskData: id,
// repo, base commit, problem statement, source, language, image), Verifier
// the hidden part (VerifierData: patch, test_patch, FAIL_TO_PASS,
// PASS_TO_PASS), which is never sent to the agent nor put in its sandbox.
// A directory holding instances.jsonl (or instances.json) is a suite, so
// `nextstate serve --tasks DIR` serves its instances (split "test").
//
// Reset builds the agent's sandbox (later resets of the same task restore
// its snapshot) and answers with the instruction: the problem statement
// and where the repository is. The reset info's "tools" holds the tool
// schemas (OpenAI tools shape); "language" is go or python. Actions are
// tool calls, several per step allowed, each answered by a tool_result in
// order; a text-only action is one shell_exec per text part. The tools,
// the step and the sandbox across episodes are terminal-v1's too (package
// envs/internal/shelltool): calls are checked against the schemas, and a
// bad call is answered with what was wrong and what the tool takes.
//
//   - shell_exec {command, timeout?}: a persistent bash (cd and exports
//     persist), output capped at 64 KiB, the exit code; default timeout
//     DefaultCommandTimeout (3 min), at most MaxCommandTimeout (15 min),
//     longer than terminal-v1's since builds and test runs take minutes.
//   - str_replace_based_edit_tool {command, path, ...}: the editor SWE
//     agents and Anthropic's models expect (Editor): view (cat -n, a
//     view_range [start, end] with end -1 for the last line, or a
//     directory two levels deep), create (never overwrites), str_replace
//     (old_str must occur once: otherwise "No replacement was performed"
//     with how many times and on which lines), insert (after insert_line,
//     0 for the top) and undo_edit. Paths are absolute. A mistake is an
//     error tool result; the episode goes on.
//   - submit {}: the diff of the repository against the base commit
//     (`git add -A; git diff --cached --binary BASE`, new files included)
//     is taken, and the episode terminates.
//
// Verify evaluates that diff with the Harness; its reward is 1 when the
// instance is resolved, else 0, and its info holds the Result (per-test
// results, fail_to_pass_fraction, pass_to_pass_fraction, the reason, the
// compiler's message) and the diff (model_patch). The kind is a
// gym.OracleKind: its oracle writes the gold patch to OraclePatchPath with
// the editor, applies it with git apply in the shell, and submits.
//
// # Evaluation
//
// Harness.Evaluate (or Evaluate) judges a diff against an instance: a
// fresh sandbox at the base commit; the diff's sections that touch files
// of test_patch are dropped (Result.DroppedFiles: editing the tests does
// not count), and so are those of other test files (IsTestFile: Go's
// *_test.go and testdata, Python's test_*.py, *_test.py and conftest.py),
// which could fake results, unless EvalOptions.KeepAgentTests asks for
// SWE-bench's rule; the rest is applied with git apply, or patch --fuzz=3 when
// git refuses; test_patch is applied; the listed tests run, `go test -json
// -count=1 -run '^(TestA|TestB)$'` over their packages (a bare name's are
// the ./dir patterns of the packages whose test files declare it; ./...
// when none does) or `python3 -m pytest -rA` over the node ids; every listed test
// gets a status ("not_run" for one that did not run: a test binary that
// panicked never reached it, or it waited at t.Parallel; it does not pass).
// Result.Error says why an
// instance is not resolved, all of them the patch's fault: empty_patch,
// patch_does_not_apply (with git apply's and patch's words in Message),
// build_failed (the compiler's or pytest's collection message in
// BuildOutput), tests_failed, tests_timed_out, tests_did_not_run. An
// error returned instead is the infrastructure's (the sandbox, a
// test_patch that does not apply): the outcome is unknown.
//
// For speed, Go evaluations share a build cache (EvalOptions.GoCache,
// default WorkDir/gocache-eval) mounted read-write into evaluation
// sandboxes, never into agents': with it warm, an evaluation compiles only
// what the patch changed. The tests an evaluated patch runs can write to
// it, so a hostile patch could leave entries that mislead later
// evaluations; set GoCache to "off" (swe.eval_gocache=off, --eval-gocache
// off) for a fresh cache per evaluation where patches are not trusted.
//
// Harness.EvaluateAll evaluates predictions (SWE-bench's format:
// LoadPredictions reads JSON Lines, a JSON list or an object keyed by
// instance id of {instance_id, model_name_or_path, model_patch}) in
// parallel and makes a Report (resolved counts, a Result per instance; an
// instance without a prediction is unresolved, no_prediction);
// Report.WriteTable prints it. `nextstate swe eval --instances FILE
// --predictions FILE [--parallel N] [--sandbox bwrap|docker] [--json]
// [--out report.json]` is the command line for it; --predictions gold or
// empty evaluates the instances' own patches or none.
//
// # Settings
//
// Configure reads the sandbox settings of package envs/internal/sbopen
// ("sandbox", "docker.hosts", "sandbox.owner", "sandbox.dir") and:
//
//   - "swe.gomodcache": the module cache mounted into Go sandboxes
//     (default DefaultGoModCache, ~/.cache/nextstate/swe/gomod, where
//     `nextstate swe build-go` fetches);
//   - "swe.go_root": the Go toolchain mounted into Go sandboxes (default
//     `go env GOROOT`);
//   - "swe.workdir": prepared repositories and the evaluation build cache
//     (default DefaultWorkDir, ~/.cache/nextstate/swe);
//   - "swe.eval_gocache": the evaluations' build cache directory, or "off";
//   - "swe.agent_gocache": "seed" (the default) or "off" (an agent's Go
//     build cache starts empty);
//   - "swe.test_timeout": the bound on an evaluation's test run (default
//     DefaultTestTimeout);
//   - "swe.image": a sandbox image for every instance, over theirs.
//
// Each Manager's Configure opens a backend and a harness of its own, with
// its own settings (gym.Instance), and its Shutdown closes them.
//
// # Test instances
//
// testdata/python holds three small Python instances and testdata/go two
// Go instances (intmath, whose lists qualify a subpackage's test, and
// wordcount, whose bare names live in subpackages), as plain files (base/,
// fix.patch, test.patch, instance.json); testdata/build.sh DIR OUT makes
// each a git repository and writes OUT/instances.jsonl.
package swe

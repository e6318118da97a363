package terminal

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/nextstate-rl/nextstate/gym"
	"github.com/nextstate-rl/nextstate/sandbox"
)

// TestDir is where the tests are copied when the episode is over, as
// Terminal-Bench does ($TEST_DIR); where the root is read-only (bwrap) a
// fresh directory under /tmp is used instead.
const TestDir = "/tests"

// MaxTestOutput caps what is kept of the test run's output (head and tail:
// pytest's summary is at the end).
const MaxTestOutput = 1 << 20

// testsOf returns a task's test run, from its folder; a task's Verifier
// field may set the timeout. A task without run-tests.sh has none.
func testsOf(task *gym.Task, files fs.FS) (*VerifierData, error) {
	var v VerifierData
	if len(task.Verifier) > 0 {
		if err := json.Unmarshal(task.Verifier, &v); err != nil {
			return nil, fmt.Errorf("terminal-v1 verifier: %w", err)
		}
	}
	if files == nil {
		return nil, nil
	}
	if _, err := fs.Stat(files, "run-tests.sh"); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	tests, err := listFiles(files, "tests")
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	v.Tests, v.RunTests = tests, "run-tests.sh"
	if v.Parser == "" {
		v.Parser = "pytest"
	}
	if v.TestTimeout <= 0 {
		v.TestTimeout = gym.Duration(DefaultTestTimeout)
		if b, err := fs.ReadFile(files, "task.yaml"); err == nil {
			if tf, err := ParseTaskFile(b); err == nil {
				v.TestTimeout = gym.Duration(tf.TestTimeout())
			}
		}
	}
	return &v, nil
}

// Verify implements gym.Verifier. After the agent's last action it stops
// the agent's shell and terminal (and everything started from them that did
// not leave their session), copies run-tests.sh and tests/ from the task
// folder (which the agent never saw) into a fresh test directory, runs
// run-tests.sh there with TEST_DIR set, under the task's test timeout, and
// reads pytest's per-test results from the run's stdout. The reward is
// passed/total; the info holds every test's result. Nothing written in the
// sandbox is read back: the verdict is the output of the run alone.
func (e *Env) Verify(ctx context.Context) (float64, gym.Info, error) {
	if e.sb == nil {
		return 0, nil, errors.New("terminal-v1: verify before a successful reset")
	}
	if e.tests == nil {
		return 0, gym.Info{"tests": "none", "note": "the task has no run-tests.sh"}, nil
	}
	e.closeShell() // stop the agent's processes
	start := time.Now()
	dir, err := e.freshTestDir(ctx)
	if err != nil {
		return 0, nil, e.fault(err)
	}
	entries := []tarEntry{}
	for _, name := range append([]string{e.tests.RunTests}, e.tests.Tests...) {
		b, err := fs.ReadFile(e.files, name)
		if err != nil {
			return 0, nil, fmt.Errorf("terminal-v1: reading the task's %s: %w", name, err)
		}
		rel := strings.TrimPrefix(name, "tests/")
		entries = append(entries, tarEntry{name: rel, mode: 0o755, data: b})
	}
	if !slices.ContainsFunc(entries, func(t tarEntry) bool { return t.name == testIni }) {
		// pytest reads this ini file, not one the agent left in a parent
		// directory (see testEnv).
		entries = append(entries, tarEntry{name: testIni, mode: 0o644, data: []byte("[pytest]\n")})
	}
	for _, d := range dirsOf(entries) {
		entries = append(entries, tarEntry{name: d, dir: true, mode: 0o755})
	}
	tb, err := packTar(entries)
	if err != nil {
		return 0, nil, err
	}
	if err := e.sb.CopyIn(ctx, dir, bytes.NewReader(tb)); err != nil {
		return 0, nil, e.fault(fmt.Errorf("copying the tests in: %w", err))
	}
	timeout := time.Duration(e.tests.TestTimeout)
	r, err := e.sb.Exec(ctx, sandbox.ExecRequest{
		Cmd:       []string{"bash", path.Join(dir, path.Base(e.tests.RunTests))},
		Env:       testEnv(dir),
		Dir:       e.workdir,
		Timeout:   timeout,
		MaxOutput: MaxTestOutput,
	})
	if err != nil {
		return 0, nil, e.fault(fmt.Errorf("running the tests: %w", err))
	}
	info := gym.Info{
		"task":        e.task.ID,
		"exit_code":   r.ExitCode,
		"elapsed_ms":  time.Since(start).Milliseconds(),
		"output_tail": tail(r.Stdout, 4000),
	}
	if len(r.Stderr) > 0 {
		info["stderr_tail"] = tail(r.Stderr, 2000)
	}
	if r.TimedOut {
		info["timed_out"] = true
		info["test_timeout"] = timeout.String()
	}
	rep, err := ParsePytest(string(r.Stdout))
	if err != nil {
		// The run said nothing we can read: the tests failed to run
		// (a broken environment the agent left, a timeout). It counts
		// as failed, not unknown: the sandbox and the runner worked.
		info["error"] = err.Error()
		return 0, info, nil
	}
	for i := range rep.Tests {
		rep.Tests[i].Name = testName(rep.Tests[i].Name, dir)
	}
	info["tests"] = rep.Tests
	info["passed"], info["failed"], info["total"] = rep.Passed, rep.Failed, rep.Total()
	if rep.Skipped > 0 {
		info["skipped"] = rep.Skipped
	}
	info["source"] = rep.Source
	return rep.Reward(), info, nil
}

// testIni is the pytest configuration file of a test run, in the test
// directory: the task's own tests/pytest.ini, or an empty one.
const testIni = "pytest.ini"

// testEnv is the environment of a test run. The tests run with the agent's
// working directory as theirs (they check what the agent made), so they
// must not pick up anything the agent left for pytest or Python to find:
//
//   - pytest's ini file is the test directory's (-c), not a pytest.ini,
//     tox.ini or setup.cfg in a parent directory such as /tmp;
//   - conftest.py files are read only from the test directory down
//     (--confcutdir), never from the working directory or /tmp;
//   - no cache directory is written (-p no:cacheprovider);
//   - Python ignores the user site directory, where a .pth file would run
//     code at start-up (PYTHONNOUSERSITE), and does not put the working
//     directory first on sys.path, where a pytest.py could shadow pytest
//     for `python3 -m pytest` (PYTHONSAFEPATH).
//
// What the tests import from the agent's work still runs inside the test
// process and could print a fake summary; the parser reads pytest's last
// summary, and a task that imports the agent's code accepts that risk, as
// Terminal-Bench does. Under docker the agent is root in its container and
// could replace pytest itself; bwrap's root is read-only.
func testEnv(dir string) map[string]string {
	return map[string]string{
		"TEST_DIR":         dir,
		"PYTEST_ADDOPTS":   "-c " + path.Join(dir, testIni) + " --confcutdir=" + dir + " -p no:cacheprovider",
		"PYTHONNOUSERSITE": "1",
		"PYTHONSAFEPATH":   "1",
		"PYTHONPATH":       "",
	}
}

// freshTestDir removes whatever is at the test directory (the agent may
// have put something there) and makes it anew. /tests where the root is
// writable, else a new directory under /tmp.
func (e *Env) freshTestDir(ctx context.Context) (string, error) {
	script := `set -e
d=$1
if rm -rf "$d" 2>/dev/null && mkdir -p "$d" 2>/dev/null; then echo "$d"; exit 0; fi
mktemp -d /tmp/nextstate-tests.XXXXXXXX`
	r, err := e.sb.Exec(ctx, sandbox.ExecRequest{
		Cmd: []string{"bash", "-c", script, "nextstate-tests", TestDir}, Dir: "/", Timeout: time.Minute,
	})
	if err != nil {
		return "", err
	}
	dir := strings.TrimSpace(string(r.Stdout))
	if r.ExitCode != 0 || !path.IsAbs(dir) {
		return "", fmt.Errorf("making the test directory: exit %d: %s", r.ExitCode, bytes.TrimSpace(r.Stderr))
	}
	return dir, nil
}

// testName makes a pytest node id independent of where the tests ran:
// "../tmp/nextstate-tests.x1/test_outputs.py::test_a" and
// "/tests/test_outputs.py::test_a" become "tests/test_outputs.py::test_a".
func testName(name, dir string) string {
	base := path.Base(dir) + "/"
	if i := strings.Index(name, base); i >= 0 && !strings.Contains(name[:i], "::") {
		return "tests/" + name[i+len(base):]
	}
	return name
}

// dirsOf returns the parent directories of entries' names, sorted.
func dirsOf(entries []tarEntry) []string {
	seen := map[string]bool{}
	var out []string
	for _, e := range entries {
		for d := path.Dir(e.name); d != "." && d != "/" && !seen[d]; d = path.Dir(d) {
			seen[d] = true
			out = append(out, d)
		}
	}
	sort.Strings(out)
	return out
}

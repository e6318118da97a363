package terminal

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/nextstate-rl/nextstate/envs/internal/pytest"
	"github.com/nextstate-rl/nextstate/envs/internal/sbopen"
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

// Verify implements gym.Verifier. After the agent's last action:
//
//  0. what the agent typed into the terminal is processed (settleTyped);
//  1. every process of the agent's sandbox is killed (sandbox.Killer: its
//     PID namespace, not a process group), so nothing the agent started
//     runs while its work is judged;
//  2. the agent's work, its working directory, is copied out (at most
//     MaxWorkBytes; more is the agent's failure, workspace_too_large);
//  3. a fresh sandbox of the task's initial state is made the way the
//     agent's was (the task's image; under bwrap, its Dockerfile's steps),
//     and the agent's working directory replaces its own;
//  4. run-tests.sh and tests/ from the task folder (which the agent never
//     saw) go into a fresh test directory there, and run-tests.sh runs with
//     TEST_DIR set, under the task's test timeout (testEnv);
//  5. the reward is passed/total of the JUnit report pytest writes
//     (ParseJUnit), not of the run's output.
//
// So the interpreter, the test runner, their plugins and every file outside
// the working directory are the task image's, untouched by the agent. A
// sandbox that cannot be made or dies is the infrastructure's fault (the
// outcome is unknown); what the agent's work makes of the test run (no
// report, a crash, a timeout) is a failed run. The info holds every test's
// result.
func (e *Env) Verify(ctx context.Context) (float64, gym.Info, error) {
	if e.box.SB == nil {
		return 0, nil, errors.New("terminal-v1: verify before a successful reset")
	}
	if e.tests == nil {
		return 0, gym.Info{"tests": "none", "note": "the task has no run-tests.sh"}, nil
	}
	start := time.Now()
	// What the agent typed is processed before its processes end.
	var typed gym.Info
	if e.box.Shell != nil {
		typed = e.settleTyped(ctx)
	}
	// The shell dies with every other process of the sandbox below; its
	// object is let go of after, off the step's path.
	if sh := e.box.Shell; sh != nil {
		e.box.Shell = nil
		defer e.background(func() { sh.Close() })
	}
	k, ok := e.box.SB.(sandbox.Killer)
	if !ok {
		return 0, nil, fmt.Errorf("terminal-v1: the %s sandbox cannot kill the agent's processes (sandbox.Killer)", e.backendName)
	}
	// The verifier's sandbox is made while the agent's processes die.
	type prepared struct {
		sb      sandbox.Sandbox
		workdir string
		err     error
	}
	ready := make(chan prepared, 1)
	go func() { // joined below
		sb, wd, err := e.prepare(ctx)
		ready <- prepared{sb, wd, err}
	}()
	kerr := k.KillAll(ctx)
	p := <-ready
	vsb, workdir := p.sb, p.workdir
	if vsb != nil {
		// Removed after the verdict, off the step's path (a container's
		// removal takes a while); Close waits for it.
		defer e.background(func() { vsb.Close(context.WithoutCancel(ctx)) })
	}
	if kerr != nil {
		return 0, nil, e.box.Fault(fmt.Errorf("killing the agent's processes: %w", kerr))
	}
	if err := p.err; err != nil {
		return 0, nil, err
	}
	if workdir != e.workdir {
		return 0, nil, gym.InfraFault("verifier", fmt.Errorf("the verifier's sandbox works in %s, the agent's in %s", workdir, e.workdir))
	}
	dir, err := freshTestDir(ctx, vsb, e.workdir)
	if err != nil {
		return 0, nil, sbopen.Fault(vsb, err)
	}
	moved, err := carryWork(ctx, e.box.SB, vsb, e.workdir)
	if err != nil {
		return 0, nil, err
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
	if err := vsb.CopyIn(ctx, dir, bytes.NewReader(tb)); err != nil {
		return 0, nil, sbopen.Fault(vsb, fmt.Errorf("copying the tests in: %w", err))
	}
	timeout := time.Duration(e.tests.TestTimeout)
	runner := pickRunner(e.runner, e.data.Network, e.files, e.tests.RunTests)
	cmd := []string{"bash", path.Join(dir, path.Base(e.tests.RunTests))}
	if !runner.Script {
		cmd = []string{"bash", "-c", "exec python3 -m pytest " + runner.PytestArgs}
	}
	r, err := vsb.Exec(ctx, sandbox.ExecRequest{
		Cmd:       cmd,
		Env:       testEnv(dir),
		Dir:       e.workdir,
		Timeout:   timeout,
		MaxOutput: MaxTestOutput,
	})
	if err != nil {
		return 0, nil, sbopen.Fault(vsb, fmt.Errorf("running the tests: %w", err))
	}
	info := gym.Info{
		"task":        e.task.ID,
		"exit_code":   r.ExitCode,
		"elapsed_ms":  time.Since(start).Milliseconds(),
		"work_bytes":  moved,
		"output_tail": tail(r.Stdout, 4000),
	}
	if len(r.Stderr) > 0 {
		info["stderr_tail"] = tail(r.Stderr, 2000)
	}
	if typed != nil {
		info["terminal"] = typed
	}
	info["runner"] = e.tests.RunTests
	if !runner.Script {
		info["runner"] = "python3 -m pytest " + runner.PytestArgs
		info["runner_note"] = runner.Why
	}
	if r.TimedOut {
		info["timed_out"] = true
		info["test_timeout"] = timeout.String()
	}
	rep, err := readReport(ctx, vsb, path.Join(dir, junitFile))
	if err != nil {
		// No report to read: the tests did not run to the end (the
		// agent's work broke them, or a timeout). It counts as failed,
		// not unknown: the sandbox and the runner worked.
		info["error"] = err.Error()
		if runner.Script {
			if cause := networkCause(string(r.Stdout)+string(r.Stderr), e.data.Network); cause != "" {
				info["cause"] = cause
			}
		}
		if out, perr := pytest.Parse(string(r.Stdout)); perr == nil {
			info["note"] = fmt.Sprintf("the output shows a pytest summary (%d passed, %d failed) but the reward is read "+
				"only from pytest's JUnit report", out.Passed, out.Failed)
		}
		return 0, info, nil
	}
	info["tests"] = rep.Tests
	info["passed"], info["failed"], info["total"] = rep.Passed, rep.Failed, rep.Total()
	if rep.Skipped > 0 {
		info["skipped"] = rep.Skipped
	}
	info["source"] = rep.Source
	return rep.Reward(), info, nil
}

// MaxWorkBytes bounds the agent's working directory that Verify carries
// into the verifier's sandbox (the tar stream's size).
const MaxWorkBytes = 2 << 30

// junitFile is the report pytest writes in the test directory (testEnv).
const junitFile = ".nextstate-junit.xml"

// maxReport bounds the JUnit report Verify reads.
const maxReport = 32 << 20

// readReport reads and parses the JUnit report at p in sb.
func readReport(ctx context.Context, sb sandbox.Sandbox, p string) (*pytest.Report, error) {
	rc, err := sb.CopyOut(ctx, p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, errors.New("the test run wrote no JUnit report (pytest did not run, or did not finish)")
		}
		return nil, fmt.Errorf("reading the JUnit report: %w", err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err != nil {
			return nil, fmt.Errorf("reading the JUnit report: %w", err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		if h.Size > maxReport {
			return nil, fmt.Errorf("the JUnit report is %d bytes, over the %d it may have", h.Size, maxReport)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			return nil, fmt.Errorf("reading the JUnit report: %w", err)
		}
		return ParseJUnit(b)
	}
}

// carryWork copies the agent's working directory, from src, into the
// verifier's sandbox dst, whose own freshTestDir emptied, and reports the
// bytes carried. The agent's directory is streamed as a tar of its
// contents; a missing one leaves an empty directory (the agent removed
// it). More than MaxWorkBytes is the agent's failure, and so is a copy that
// fails while both sandboxes live: what the agent left cannot be carried
// (names, file types or trees the sandboxes refuse). Only a sandbox that
// died is the infrastructure's.
func carryWork(ctx context.Context, src, dst sandbox.Sandbox, workdir string) (int64, error) {
	blame := func(err error) error {
		for _, sb := range []sandbox.Sandbox{src, dst} {
			if v, ok := sb.(sandbox.Validator); ok && !v.IsValid() {
				return sbopen.Fault(sb, err)
			}
		}
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			return err
		}
		return gym.AgentFault("verifier_environment_broken", fmt.Errorf("the agent's working directory %s cannot be "+
			"carried into the verifier's sandbox: %w", workdir, err))
	}
	rc, err := src.CopyOut(ctx, workdir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, blame(err)
	}
	defer rc.Close()
	pr, pw := io.Pipe()
	var n int64
	var over bool
	done := make(chan error, 1)
	go func() { // joined below
		nn, ov, err := stripTop(pw, rc, MaxWorkBytes)
		n, over = nn, ov
		pw.CloseWithError(err)
		done <- err
	}()
	cerr := dst.CopyIn(ctx, workdir, pr)
	pr.CloseWithError(errCopyInEnded)
	serr := <-done
	switch {
	case over:
		return n, gym.AgentFault("workspace_too_large", fmt.Errorf("the working directory %s holds over %d bytes: "+
			"the verifier carries at most that much of the agent's work", workdir, int64(MaxWorkBytes)))
	case serr != nil && !errors.Is(serr, errCopyInEnded):
		return n, blame(serr)
	case cerr != nil:
		return n, blame(cerr)
	}
	return n, nil
}

// errCopyInEnded stops the copy out when the copy in ended first.
var errCopyInEnded = errors.New("the copy into the verifier's sandbox ended")

// stripTop copies the tar stream of a directory from r to w without its
// top entry, the entries' names relative to the directory, and stops
// (over) past max bytes of content.
func stripTop(w io.Writer, r io.Reader, max int64) (n int64, over bool, err error) {
	tr := tar.NewReader(r)
	tw := tar.NewWriter(w)
	top := ""
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return n, false, err
		}
		name := strings.TrimPrefix(h.Name, "./")
		if top == "" {
			top = strings.TrimSuffix(name, "/") + "/"
			continue
		}
		rel, ok := strings.CutPrefix(name, top)
		if !ok || rel == "" {
			continue
		}
		if n += h.Size; n > max {
			return n, true, nil
		}
		h.Name = rel
		if h.Typeflag == tar.TypeLink {
			h.Linkname = strings.TrimPrefix(strings.TrimPrefix(h.Linkname, "./"), top)
		}
		if err := tw.WriteHeader(h); err != nil {
			return n, false, err
		}
		if _, err := io.Copy(tw, tr); err != nil {
			return n, false, err
		}
	}
	return n, false, tw.Close()
}

// testIni is the pytest configuration file of a test run, in the test
// directory: the task's own tests/pytest.ini, or an empty one.
const testIni = "pytest.ini"

// testEnv is the environment of a test run. The tests run with the agent's
// working directory as theirs (they check what the agent made), in the
// verifier's fresh sandbox, so the interpreter, pytest and its plugins are
// the task image's; still, nothing in the working directory may steer
// pytest or Python:
//
//   - pytest's ini file is the test directory's (-c), not a pytest.ini,
//     tox.ini or setup.cfg in a parent directory such as /tmp;
//   - conftest.py files are read only from the test directory down
//     (--confcutdir), never from the working directory;
//   - plugins are not autoloaded from installed entry points
//     (PYTEST_DISABLE_PLUGIN_AUTOLOAD): only pytest's own run, and those a
//     run-tests.sh names with -p;
//   - no cache directory is written (-p no:cacheprovider);
//   - the results go to a JUnit report in the test directory
//     (--junitxml, junit_family xunit1, which names each test's file);
//   - Python ignores the user site directory, where a .pth file would run
//     code at start-up (PYTHONNOUSERSITE), does not put the working
//     directory first on sys.path, where a pytest.py could shadow pytest
//     for `python3 -m pytest` (PYTHONSAFEPATH), and takes no PYTHONPATH.
//
// What the tests import from the agent's work still runs inside the test
// process; a task that imports the agent's code accepts that, as
// Terminal-Bench does.
func testEnv(dir string) map[string]string {
	return map[string]string{
		"TEST_DIR": dir,
		"PYTEST_ADDOPTS": "-c " + path.Join(dir, testIni) + " --confcutdir=" + dir + " -p no:cacheprovider" +
			" --junitxml=" + path.Join(dir, junitFile) + " -o junit_family=xunit1",
		"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
		"PYTHONNOUSERSITE":               "1",
		"PYTHONSAFEPATH":                 "1",
		"PYTHONPATH":                     "",
	}
}

// freshTestDir readies the verifier's sandbox in one command: it empties
// its working directory (the agent's comes in its place) and makes the test
// directory, /tests where the root is writable, else a new directory under
// /tmp, whose path it returns.
func freshTestDir(ctx context.Context, sb sandbox.Sandbox, workdir string) (string, error) {
	script := `set -e
find "$2" -mindepth 1 -delete
d=$1
if rm -rf "$d" 2>/dev/null && mkdir -p "$d" 2>/dev/null; then echo "$d"; exit 0; fi
mktemp -d /tmp/nextstate-tests.XXXXXXXX`
	r, err := sb.Exec(ctx, sandbox.ExecRequest{
		Cmd: []string{"bash", "-c", script, "nextstate-tests", TestDir, workdir}, Dir: "/", Timeout: time.Minute,
	})
	if err != nil {
		return "", err
	}
	dir := strings.TrimSpace(string(r.Stdout))
	if r.ExitCode != 0 || !path.IsAbs(dir) {
		return "", fmt.Errorf("readying the verifier's sandbox: exit %d: %s", r.ExitCode, bytes.TrimSpace(r.Stderr))
	}
	return dir, nil
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

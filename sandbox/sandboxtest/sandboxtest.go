// Package sandboxtest is the conformance suite every sandbox backend's
// tests call: Run(t, backend) creates sandboxes and checks Exec (exit
// codes, stdin, env, working directory, stderr, a timeout that kills the
// whole process group, the output cap and its marker), concurrent Execs,
// the persistent Shell (cd and export persist, a timeout interrupts, the
// terminal drives an interactive python3), CopyIn/CopyOut round trips,
// Spec.Mounts (read-only and writable binds of host directories, seen
// live both ways, left alone by Snapshot/Restore; bad mounts refused),
// Snapshot/Restore where the backend implements sandbox.Snapshotter,
// Close (idempotent, then ErrClosed), ErrGone after the sandbox is killed
// from outside (WithKill), integrity (a keeper that nothing inside can
// kill; sandbox.Killer ending background, double-forked, setsid, nohup and
// tmux leftovers), and containment: a fork bomb by the PID limit, the disk
// by Limits.DiskBytes,
// a memory hog by the memory limit, and no network unless Spec.Network.
//
// Checks never assert wall-clock times; waits poll a condition under a
// deadline. Subtests run in parallel, each with sandboxes of its own.
package sandboxtest

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nextstate-rl/nextstate/sandbox"
)

// Option configures Run.
type Option func(*config)

type config struct {
	noPIDs  bool
	noDisk  bool
	spec    sandbox.Spec
	kill    func(sandbox.Sandbox) error
	removed func(sandbox.Sandbox) error
}

// WithSpec sets the Spec every sandbox of the suite starts from (an image,
// for instance); subtests add limits, network and labels to it.
func WithSpec(s sandbox.Spec) Option { return func(c *config) { c.spec = s } }

// WithoutPIDLimit says the backend (in its present mode) cannot bound a
// sandbox's processes: the fork bomb check then only checks that the
// sandbox recovers.
func WithoutPIDLimit() Option { return func(c *config) { c.noPIDs = true } }

// WithoutDiskQuota says the backend (here) cannot bound a sandbox's disk
// (Limits.DiskBytes): the quota check is skipped.
func WithoutDiskQuota() Option { return func(c *config) { c.noDisk = true } }

// WithKill gives the suite a way to kill a sandbox's processes from
// outside (as an operator or the OOM killer would), to check ErrGone.
// Without it, that check is skipped.
func WithKill(f func(sandbox.Sandbox) error) Option { return func(c *config) { c.kill = f } }

// WithRemoved gives the suite a check that nothing of a closed sandbox is
// left (directories, containers, cgroups). Without it, only ErrClosed is
// checked after Close.
func WithRemoved(f func(sandbox.Sandbox) error) Option { return func(c *config) { c.removed = f } }

// Timeout bounds each wait of the suite.
const Timeout = 30 * time.Second

// Run runs the conformance suite against b.
func Run(t *testing.T, b sandbox.Backend, opts ...Option) {
	var c config
	for _, o := range opts {
		o(&c)
	}
	s := &suite{b: b, cfg: c}
	tests := []struct {
		name string
		f    func(*testing.T)
	}{
		{"ExecBasics", s.execBasics},
		{"ExecTimeoutKillsGroup", s.execTimeout},
		{"ExecOutputCap", s.execOutputCap},
		{"ExecConcurrent", s.execConcurrent},
		{"ShellPersists", s.shellPersists},
		{"ShellTimeout", s.shellTimeout},
		{"ShellExit", s.shellExit},
		{"Terminal", s.terminal},
		{"CopyRoundTrip", s.copyRoundTrip},
		{"Mounts", s.mounts},
		{"SnapshotRestore", s.snapshotRestore},
		{"Close", s.close},
		{"Gone", s.gone},
		{"Keeper", s.keeper},
		{"KillAll", s.killAll},
		{"DiskQuota", s.diskQuota},
		{"ForkBomb", s.forkBomb},
		{"MemoryHog", s.memoryHog},
		{"NoNetwork", s.noNetwork},
		{"Network", s.network},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.f(t)
		})
	}
}

type suite struct {
	b   sandbox.Backend
	cfg config
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*Timeout)
	t.Cleanup(cancel)
	return ctx
}

// create makes a sandbox from the base spec changed by edit; it is closed
// when the test ends.
func (s *suite) create(t *testing.T, edit func(*sandbox.Spec)) sandbox.Sandbox {
	t.Helper()
	spec := s.cfg.spec
	spec.Env = maps.Clone(spec.Env)
	spec.Labels = sandbox.MergeLabels(spec.Labels, map[string]string{"sandboxtest": t.Name()})
	if edit != nil {
		edit(&spec)
	}
	sb, err := s.b.Create(ctxFor(t), spec)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), Timeout)
		defer cancel()
		if err := sb.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return sb
}

// exec runs a script and fails the test on an error.
func exec(t *testing.T, sb sandbox.Sandbox, req sandbox.ExecRequest) sandbox.ExecResult {
	t.Helper()
	r, err := sb.Exec(ctxFor(t), req)
	if err != nil {
		t.Fatalf("Exec %q%q: %v", req.Cmd, req.Script, err)
	}
	return r
}

// waitFor polls cond until it holds or Timeout passes.
func waitFor(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(Timeout)
	for delay := 5 * time.Millisecond; ; delay = min(2*delay, 200*time.Millisecond) {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s; last: %s", Timeout, what, state)
		}
		time.Sleep(delay)
	}
}

func has(t *testing.T, sb sandbox.Sandbox, prog string) bool {
	r := exec(t, sb, sandbox.ExecRequest{Script: "command -v " + prog})
	return r.ExitCode == 0
}

func (s *suite) execBasics(t *testing.T) {
	sb := s.create(t, func(sp *sandbox.Spec) { sp.Env = map[string]string{"FROM_SPEC": "spec"} })
	if sb.ID() == "" {
		t.Error("empty ID")
	}
	r := exec(t, sb, sandbox.ExecRequest{Script: "echo out; echo err >&2; exit 3"})
	if string(r.Stdout) != "out\n" || string(r.Stderr) != "err\n" || r.ExitCode != 3 || r.TimedOut || r.Truncated {
		t.Errorf("script: %+v", r)
	}
	r = exec(t, sb, sandbox.ExecRequest{Cmd: []string{"echo", "a  b", "$HOME"}})
	if string(r.Stdout) != "a  b $HOME\n" {
		t.Errorf("argv: %q", r.Stdout)
	}
	r = exec(t, sb, sandbox.ExecRequest{Cmd: []string{"cat"}, Stdin: strings.NewReader("from stdin")})
	if string(r.Stdout) != "from stdin" {
		t.Errorf("stdin: %q", r.Stdout)
	}
	r = exec(t, sb, sandbox.ExecRequest{Script: "cat; echo eof"})
	if string(r.Stdout) != "eof\n" {
		t.Errorf("no stdin: %q", r.Stdout)
	}
	r = exec(t, sb, sandbox.ExecRequest{Script: `echo "$FROM_SPEC $FROM_REQ"`, Env: map[string]string{"FROM_REQ": "req"}})
	if string(r.Stdout) != "spec req\n" {
		t.Errorf("env: %q", r.Stdout)
	}
	r = exec(t, sb, sandbox.ExecRequest{Script: "pwd"})
	wd := s.cfg.spec.Workdir
	if wd == "" {
		wd = "/workspace"
	}
	if strings.TrimSpace(string(r.Stdout)) != wd {
		t.Errorf("default dir %q, want %s", r.Stdout, wd)
	}
	r = exec(t, sb, sandbox.ExecRequest{Script: "pwd", Dir: "/tmp"})
	if string(r.Stdout) != "/tmp\n" {
		t.Errorf("dir: %q", r.Stdout)
	}
	r = exec(t, sb, sandbox.ExecRequest{Script: "kill -9 $$"})
	if r.ExitCode != 137 {
		t.Errorf("killed by signal 9: exit %d, want 137", r.ExitCode)
	}
	r = exec(t, sb, sandbox.ExecRequest{Cmd: []string{"no-such-program-here"}})
	if r.ExitCode == 0 {
		t.Errorf("missing program: exit 0")
	}
	r = exec(t, sb, sandbox.ExecRequest{Script: "echo hi > f.txt && cat " + wd + "/f.txt"})
	if string(r.Stdout) != "hi\n" {
		t.Errorf("workspace is not writable: %+v", r)
	}
}

// countProcs counts the sandbox's processes whose command line contains
// pattern (a grep pattern written so that it does not match itself).
func countProcs(t *testing.T, sb sandbox.Sandbox, pattern string) string {
	r := exec(t, sb, sandbox.ExecRequest{Script: "grep -las '" + pattern + "' /proc/[0-9]*/cmdline | wc -l"})
	return strings.TrimSpace(string(r.Stdout))
}

func (s *suite) execTimeout(t *testing.T) {
	sb := s.create(t, nil)
	start := time.Now()
	r := exec(t, sb, sandbox.ExecRequest{Script: "echo started; sleep 4242 & sleep 4242; echo never", Timeout: 300 * time.Millisecond})
	if !r.TimedOut {
		t.Fatalf("not timed out: %+v", r)
	}
	if r.ExitCode == 0 || string(r.Stdout) != "started\n" {
		t.Errorf("timed out: exit %d, stdout %q", r.ExitCode, r.Stdout)
	}
	if el := time.Since(start); el > Timeout {
		t.Errorf("Exec returned after %v", el)
	}
	waitFor(t, "the sleep 4242 tree to be gone", func() (bool, string) {
		n := countProcs(t, sb, "424[2]")
		return n == "0", n + " left"
	})
	// ctx ends the command too, and says so.
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := sb.Exec(ctx, sandbox.ExecRequest{Script: "sleep 4243 & sleep 4243"})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("ctx deadline: err %v", err)
	}
	waitFor(t, "the sleep 4243 tree to be gone", func() (bool, string) {
		n := countProcs(t, sb, "424[3]")
		return n == "0", n + " left"
	})
}

func (s *suite) execOutputCap(t *testing.T) {
	sb := s.create(t, nil)
	const max = 64 << 10
	r := exec(t, sb, sandbox.ExecRequest{Script: "yes | head -c 10000000; echo done >&2", MaxOutput: max})
	if r.ExitCode != 0 || !r.Truncated {
		t.Fatalf("exit %d, truncated %v", r.ExitCode, r.Truncated)
	}
	if len(r.Stdout) > max+100 || len(r.Stdout) < max {
		t.Errorf("kept %d bytes, cap %d", len(r.Stdout), max)
	}
	marker := fmt.Sprintf(sandbox.TruncationMarker, 10000000-max)
	if !bytes.Contains(r.Stdout, []byte(marker)) {
		t.Errorf("no marker %q in the output", marker)
	}
	if !bytes.HasPrefix(r.Stdout, []byte("y\ny\n")) || !bytes.HasSuffix(r.Stdout, []byte("y\ny\n")) {
		t.Errorf("head or tail lost")
	}
	if string(r.Stderr) != "done\n" {
		t.Errorf("stderr %q", r.Stderr)
	}
	// The default cap applies without MaxOutput.
	r = exec(t, sb, sandbox.ExecRequest{Script: "head -c 1000000 /dev/zero"})
	if !r.Truncated || len(r.Stdout) > sandbox.DefaultMaxOutput+100 {
		t.Errorf("default cap: %d bytes, truncated %v", len(r.Stdout), r.Truncated)
	}
}

func (s *suite) execConcurrent(t *testing.T) {
	sb := s.create(t, nil)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := sb.Exec(ctxFor(t), sandbox.ExecRequest{Script: fmt.Sprintf("echo %d > c%d; cat c%d", i, i, i)})
			if err != nil {
				errs <- err
				return
			}
			if got := strings.TrimSpace(string(r.Stdout)); got != fmt.Sprint(i) {
				errs <- fmt.Errorf("exec %d: %q", i, got)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func newShell(t *testing.T, sb sandbox.Sandbox) sandbox.Shell {
	t.Helper()
	sh, err := sandbox.NewShell(ctxFor(t), sb)
	if err != nil {
		t.Fatalf("NewShell: %v", err)
	}
	t.Cleanup(func() { sh.Close() })
	return sh
}

func run(t *testing.T, sh sandbox.Shell, cmd string) sandbox.ExecResult {
	t.Helper()
	r, err := sh.Run(ctxFor(t), cmd, Timeout)
	if err != nil {
		t.Fatalf("Run %q: %v", cmd, err)
	}
	return r
}

func (s *suite) shellPersists(t *testing.T) {
	sb := s.create(t, nil)
	sh := newShell(t, sb)
	run(t, sh, "mkdir -p /tmp/d && cd /tmp/d && export GREETING='hello there'; f() { echo fn; }")
	r := run(t, sh, `pwd; echo "$GREETING"; f`)
	if string(r.Stdout) != "/tmp/d\nhello there\nfn\n" {
		t.Errorf("state lost: %q", r.Stdout)
	}
	if r := run(t, sh, "false"); r.ExitCode != 1 {
		t.Errorf("false: exit %d", r.ExitCode)
	}
	if r := run(t, sh, "printf 'no newline'"); string(r.Stdout) != "no newline" {
		t.Errorf("printf: %q", r.Stdout)
	}
	if r := run(t, sh, "echo out; echo err >&2"); string(r.Stdout) != "out\nerr\n" {
		t.Errorf("merged output: %q", r.Stdout)
	}
	if r := run(t, sh, "echo 'unbalanced"); r.ExitCode == 0 {
		t.Errorf("a syntax error: exit 0")
	}
	if r := run(t, sh, "read x; echo read=$?"); string(r.Stdout) != "read=1\n" {
		t.Errorf("stdin is not /dev/null: %q", r.Stdout)
	}
	if r := run(t, sh, "cat <<'EOF'\nline $1\nEOF"); string(r.Stdout) != "line $1\n" {
		t.Errorf("heredoc: %q", r.Stdout)
	}
	r = run(t, sh, "yes | head -c 5000000")
	if !r.Truncated || !bytes.Contains(r.Stdout, []byte("bytes truncated")) || len(r.Stdout) > sandbox.DefaultMaxOutput+100 {
		t.Errorf("shell output cap: %d bytes, truncated %v", len(r.Stdout), r.Truncated)
	}
	if r := run(t, sh, "echo still $GREETING"); string(r.Stdout) != "still hello there\n" {
		t.Errorf("after a flood: %q", r.Stdout)
	}
}

func (s *suite) shellTimeout(t *testing.T) {
	sb := s.create(t, nil)
	sh := newShell(t, sb)
	run(t, sh, "cd /tmp && export KEEP=1")
	r, err := sh.Run(ctxFor(t), "echo before; sleep 4244; echo after", 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if !r.TimedOut || r.ExitCode == 0 || !strings.HasPrefix(string(r.Stdout), "before\n") || strings.Contains(string(r.Stdout), "after") {
		t.Errorf("timed out: %+v %q", r, r.Stdout)
	}
	waitFor(t, "sleep 4244 to be gone", func() (bool, string) {
		n := countProcs(t, sb, "424[4]")
		return n == "0", n + " left"
	})
	if r := run(t, sh, "pwd; echo $KEEP"); string(r.Stdout) != "/tmp\n1\n" {
		t.Errorf("state lost after an interrupt: %q", r.Stdout)
	}
	// A loop in the shell itself cannot be interrupted: the shell restarts.
	r, err = sh.Run(ctxFor(t), "while :; do :; done", 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if !r.TimedOut {
		t.Errorf("busy loop: %+v", r)
	}
	if r := run(t, sh, "echo alive"); string(r.Stdout) != "alive\n" {
		t.Errorf("after a restart: %q", r.Stdout)
	}
	// ctx ends a Run.
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := sh.Run(ctx, "sleep 4245", 0); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("ctx deadline: %v", err)
	}
	if r := run(t, sh, "echo ok"); string(r.Stdout) != "ok\n" {
		t.Errorf("after ctx: %q", r.Stdout)
	}
}

func (s *suite) shellExit(t *testing.T) {
	sb := s.create(t, nil)
	sh := newShell(t, sb)
	r := run(t, sh, "echo bye; exit 7")
	if r.ExitCode != 7 || !strings.HasPrefix(string(r.Stdout), "bye\n") {
		t.Errorf("exit: %+v %q", r, r.Stdout)
	}
	if r := run(t, sh, "echo back"); string(r.Stdout) != "back\n" {
		t.Errorf("after exit: %q", r.Stdout)
	}
	if err := sh.Close(); err != nil {
		t.Error(err)
	}
	if err := sh.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := sh.Run(ctxFor(t), "true", 0); !errors.Is(err, sandbox.ErrClosed) {
		t.Errorf("Run after Close: %v", err)
	}
}

func (s *suite) terminal(t *testing.T) {
	sb := s.create(t, nil)
	if !has(t, sb, "tmux") || !has(t, sb, "python3") {
		t.Skip("no tmux or python3 in the sandbox")
	}
	sh := newShell(t, sb)
	ctx := ctxFor(t)
	screenHas := func(what string) {
		t.Helper()
		waitFor(t, "the screen to show "+what, func() (bool, string) {
			scr, err := sh.Screen(ctx)
			if err != nil {
				t.Fatalf("Screen: %v", err)
			}
			return strings.Contains(scr, what), scr
		})
	}
	if err := sh.SendKeys(ctx, "python3", "Enter"); err != nil {
		t.Fatal(err)
	}
	screenHas(">>>")
	if err := sh.SendKeys(ctx, "print(6 * 7, 'x' * 3)", "Enter"); err != nil {
		t.Fatal(err)
	}
	screenHas("42 xxx")
	if err := sh.SendKeys(ctx, "C-d"); err != nil {
		t.Fatal(err)
	}
	if err := sh.SendKeys(ctx, "echo back-in-$((40+2))", "Enter"); err != nil {
		t.Fatal(err)
	}
	screenHas("back-in-42")
	// The terminal and Run are different shells in the same sandbox.
	run(t, sh, "echo from-run > seen.txt")
	if err := sh.SendKeys(ctx, "cat seen.txt", "Enter"); err != nil {
		t.Fatal(err)
	}
	screenHas("from-run")
}

func (s *suite) copyRoundTrip(t *testing.T) {
	sb := s.create(t, nil)
	ctx := ctxFor(t)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	mtime := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	files := map[string]string{"proj/a.txt": "alpha\n", "proj/sub/b.sh": "#!/bin/sh\necho bee\n"}
	tw.WriteHeader(&tar.Header{Name: "proj/", Typeflag: tar.TypeDir, Mode: 0o755, ModTime: mtime})
	tw.WriteHeader(&tar.Header{Name: "proj/sub/", Typeflag: tar.TypeDir, Mode: 0o755, ModTime: mtime})
	for _, n := range []string{"proj/a.txt", "proj/sub/b.sh"} {
		mode := int64(0o644)
		if strings.HasSuffix(n, ".sh") {
			mode = 0o755
		}
		tw.WriteHeader(&tar.Header{Name: n, Typeflag: tar.TypeReg, Mode: mode, Size: int64(len(files[n])), ModTime: mtime})
		tw.Write([]byte(files[n]))
	}
	tw.WriteHeader(&tar.Header{Name: "proj/link", Typeflag: tar.TypeSymlink, Linkname: "a.txt", ModTime: mtime})
	tw.Close()
	if err := sb.CopyIn(ctx, "/tmp/in", &buf); err != nil {
		t.Fatalf("CopyIn: %v", err)
	}
	r := exec(t, sb, sandbox.ExecRequest{Script: "cat proj/a.txt proj/link; proj/sub/b.sh", Dir: "/tmp/in"})
	if string(r.Stdout) != "alpha\nalpha\nbee\n" {
		t.Errorf("after CopyIn: %q %q", r.Stdout, r.Stderr)
	}
	exec(t, sb, sandbox.ExecRequest{Script: "echo gamma > /tmp/in/proj/c.txt"})
	rc, err := sb.CopyOut(ctx, "/tmp/in/proj")
	if err != nil {
		t.Fatalf("CopyOut: %v", err)
	}
	got := map[string]string{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("CopyOut tar: %v", err)
		}
		switch h.Typeflag {
		case tar.TypeReg:
			b, _ := io.ReadAll(tr)
			got[strings.TrimPrefix(h.Name, "./")] = string(b)
		case tar.TypeSymlink:
			got[strings.TrimPrefix(h.Name, "./")] = "-> " + h.Linkname
		}
		if h.Name == "proj/sub/b.sh" && h.Mode&0o111 == 0 {
			t.Errorf("b.sh lost its x bit: %o", h.Mode)
		}
	}
	rc.Close()
	want := map[string]string{"proj/a.txt": "alpha\n", "proj/sub/b.sh": files["proj/sub/b.sh"], "proj/link": "-> a.txt", "proj/c.txt": "gamma\n"}
	if !maps.Equal(got, want) {
		t.Errorf("CopyOut: %v, want %v", got, want)
	}
	// A single file.
	rc, err = sb.CopyOut(ctx, "/tmp/in/proj/a.txt")
	if err != nil {
		t.Fatalf("CopyOut file: %v", err)
	}
	tr = tar.NewReader(rc)
	h, err := tr.Next()
	if err != nil || strings.TrimPrefix(h.Name, "./") != "a.txt" {
		t.Errorf("CopyOut file: %v %v", h, err)
	}
	rc.Close()
	if _, err := sb.CopyOut(ctx, "/tmp/no/such/file"); err == nil {
		t.Errorf("CopyOut of a missing path: no error")
	}
}

func (s *suite) snapshotRestore(t *testing.T) {
	sb := s.create(t, nil)
	sn, ok := sb.(sandbox.Snapshotter)
	if !ok {
		t.Skip("the backend cannot snapshot")
	}
	ctx := ctxFor(t)
	exec(t, sb, sandbox.ExecRequest{Script: "echo one > a.txt && mkdir -p d && echo x > d/x && echo t > /tmp/t"})
	snap, err := sn.Snapshot(ctx)
	if err != nil {
		t.Fatalf("Snapshot: %v", err)
	}
	defer snap.Release(ctx)
	for round := range 2 {
		exec(t, sb, sandbox.ExecRequest{Script: "echo two > a.txt && rm -r d && echo b > b.txt && rm /tmp/t; (sleep 4246 >/dev/null 2>&1 &)"})
		if n := countProcs(t, sb, "424[6]"); n != "1" {
			t.Fatalf("background sleep: %s", n)
		}
		if err := sn.Restore(ctx, snap); err != nil {
			t.Fatalf("Restore %d: %v", round, err)
		}
		r := exec(t, sb, sandbox.ExecRequest{Script: "cat a.txt d/x /tmp/t; ls b.txt 2>&1 >/dev/null | wc -l"})
		if string(r.Stdout) != "one\nx\nt\n1\n" {
			t.Errorf("after Restore %d: %q %q", round, r.Stdout, r.Stderr)
		}
		if n := countProcs(t, sb, "424[6]"); n != "0" {
			t.Errorf("after Restore %d: %s processes left", round, n)
		}
	}
	// A shell started after Restore works.
	sh := newShell(t, sb)
	if r := run(t, sh, "cat a.txt"); string(r.Stdout) != "one\n" {
		t.Errorf("shell after Restore: %q", r.Stdout)
	}
}

func (s *suite) close(t *testing.T) {
	sb := s.create(t, nil)
	ctx := ctxFor(t)
	sh := newShell(t, sb)
	run(t, sh, "sleep 4247 &")
	if err := sb.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := sb.Close(ctx); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := sb.Exec(ctx, sandbox.ExecRequest{Script: "true"}); !errors.Is(err, sandbox.ErrClosed) {
		t.Errorf("Exec after Close: %v, want ErrClosed", err)
	}
	if _, err := sh.Run(ctx, "true", time.Second); err == nil {
		t.Errorf("Run in a shell of a closed sandbox: no error")
	}
	if s.cfg.removed != nil {
		if err := s.cfg.removed(sb); err != nil {
			t.Errorf("after Close: %v", err)
		}
	}
}

func (s *suite) gone(t *testing.T) {
	if s.cfg.kill == nil {
		t.Skip("no WithKill")
	}
	sb := s.create(t, nil)
	exec(t, sb, sandbox.ExecRequest{Script: "true"})
	if err := s.cfg.kill(sb); err != nil {
		t.Fatalf("kill: %v", err)
	}
	waitFor(t, "Exec to report ErrGone", func() (bool, string) {
		_, err := sb.Exec(ctxFor(t), sandbox.ExecRequest{Script: "true"})
		return errors.Is(err, sandbox.ErrGone), fmt.Sprint(err)
	})
	if v, ok := sb.(sandbox.Validator); ok && v.IsValid() {
		t.Errorf("IsValid after kill")
	}
}

func (s *suite) forkBomb(t *testing.T) {
	const pids = 64
	sb := s.create(t, func(sp *sandbox.Spec) { sp.Limits.PIDs = pids })
	timeout := 5 * time.Second
	if s.cfg.noPIDs {
		timeout = time.Second // unbounded: keep it short
	}
	r := exec(t, sb, sandbox.ExecRequest{
		Script:  "bomb() { bomb | bomb & }; bomb; sleep 2",
		Timeout: timeout,
	})
	t.Logf("fork bomb: exit %d, timed out %v", r.ExitCode, r.TimedOut)
	if st, ok := sb.(sandbox.Stats); ok {
		if u, err := st.Usage(ctxFor(t)); err == nil && u.PIDs > pids && !s.cfg.noPIDs {
			t.Errorf("%d processes, limit %d", u.PIDs, pids)
		}
	}
	// Whatever is left of the bomb, the sandbox recovers once it is
	// killed (Restore or Close); here it must at least answer.
	if sn, ok := sb.(sandbox.Snapshotter); ok {
		snap, err := sn.Snapshot(ctxFor(t))
		if err == nil {
			if err := sn.Restore(ctxFor(t), snap); err != nil {
				t.Errorf("Restore after a fork bomb: %v", err)
			}
			snap.Release(ctxFor(t))
		}
	}
	waitFor(t, "the sandbox to answer after a fork bomb", func() (bool, string) {
		r, err := sb.Exec(ctxFor(t), sandbox.ExecRequest{Script: "echo ok", Timeout: 5 * time.Second})
		return err == nil && string(r.Stdout) == "ok\n", fmt.Sprintf("%v %q %q", err, r.Stdout, r.Stderr)
	})
}

func (s *suite) memoryHog(t *testing.T) {
	sb := s.create(t, func(sp *sandbox.Spec) { sp.Limits.MemoryBytes = 128 << 20 })
	if !has(t, sb, "python3") {
		t.Skip("no python3 in the sandbox")
	}
	r := exec(t, sb, sandbox.ExecRequest{
		Script:  `python3 -c "b = b'x' * (1 << 30); print(len(b))"`,
		Timeout: Timeout,
	})
	if r.ExitCode == 0 || r.TimedOut {
		t.Errorf("a 1 GiB allocation under a 128 MiB limit: exit %d, timed out %v, %q", r.ExitCode, r.TimedOut, r.Stdout)
	}
	if r := exec(t, sb, sandbox.ExecRequest{Script: "echo ok"}); string(r.Stdout) != "ok\n" {
		t.Errorf("after the hog: %q", r.Stdout)
	}
}

// interfaces lists the network interfaces the sandbox sees.
func interfaces(t *testing.T, sb sandbox.Sandbox) []string {
	r := exec(t, sb, sandbox.ExecRequest{Script: "tail -n +3 /proc/net/dev | cut -d: -f1"})
	return strings.Fields(string(r.Stdout))
}

func (s *suite) noNetwork(t *testing.T) {
	sb := s.create(t, nil)
	if ifs := interfaces(t, sb); len(ifs) != 1 || ifs[0] != "lo" {
		// Stop here: with an interface, the connect below could leave
		// the machine.
		t.Fatalf("interfaces without Network: %v, want [lo]", ifs)
	}
	if !has(t, sb, "python3") {
		return
	}
	r := exec(t, sb, sandbox.ExecRequest{
		Script:  `python3 -c 'import socket; socket.create_connection(("1.1.1.1", 80), 2)'`,
		Timeout: Timeout,
	})
	if r.ExitCode == 0 {
		t.Errorf("a connection out succeeded without Network")
	}
	// Loopback works, and is shared by the sandbox's processes.
	r = exec(t, sb, sandbox.ExecRequest{
		Script: `python3 - <<'EOF'
import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(1)
c = socket.create_connection(s.getsockname(), 2); a, _ = s.accept()
c.sendall(b"ping"); print(a.recv(4).decode())
EOF`,
		Timeout: Timeout,
	})
	if string(r.Stdout) != "ping\n" {
		t.Errorf("loopback: %q %q", r.Stdout, r.Stderr)
	}
}

func (s *suite) network(t *testing.T) {
	sb := s.create(t, func(sp *sandbox.Spec) { sp.Network = true })
	if ifs := interfaces(t, sb); len(ifs) < 2 {
		t.Errorf("interfaces with Network: %v, want more than lo", ifs)
	}
}

// mounts checks Spec.Mounts: a read-only bind is read but not written, a
// writable one is written through to the host, both are live (a change on
// the host shows inside), CopyOut reads a mount, CopyIn writes a writable
// one and not a read-only one, a Restore leaves a mount's files alone, and
// a relative or missing source is refused. The host directories are the
// test's temporary directories: the backend must run on this host.
func (s *suite) mounts(t *testing.T) {
	ro, rw := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(ro, "tool.txt"), []byte("toolchain\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sb := s.create(t, func(sp *sandbox.Spec) {
		sp.Mounts = append(sp.Mounts,
			sandbox.Mount{Source: ro, Target: "/mnt/ns-ro", ReadOnly: true},
			sandbox.Mount{Source: rw, Target: "/mnt/ns-rw"})
	})
	ctx := ctxFor(t)
	r := exec(t, sb, sandbox.ExecRequest{Script: "cat /mnt/ns-ro/tool.txt && echo out > /mnt/ns-rw/made.txt"})
	if r.ExitCode != 0 || string(r.Stdout) != "toolchain\n" {
		t.Errorf("reading the read-only mount, writing the writable one: exit %d, %q %q", r.ExitCode, r.Stdout, r.Stderr)
	}
	if b, err := os.ReadFile(filepath.Join(rw, "made.txt")); err != nil || string(b) != "out\n" {
		t.Errorf("a file written in the writable mount is not on the host: %q %v", b, err)
	}
	r = exec(t, sb, sandbox.ExecRequest{Script: "echo x > /mnt/ns-ro/new.txt; rm -f /mnt/ns-ro/tool.txt; ls /mnt/ns-ro"})
	if r.ExitCode != 0 && string(r.Stdout) != "tool.txt\n" {
		t.Errorf("the read-only mount changed: exit %d, %q %q", r.ExitCode, r.Stdout, r.Stderr)
	}
	if _, err := os.Stat(filepath.Join(ro, "new.txt")); err == nil {
		t.Errorf("a write into the read-only mount reached the host")
	}
	if _, err := os.Stat(filepath.Join(ro, "tool.txt")); err != nil {
		t.Errorf("a removal in the read-only mount reached the host: %v", err)
	}
	// Live: the host's change shows inside.
	if err := os.WriteFile(filepath.Join(ro, "later.txt"), []byte("later\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := exec(t, sb, sandbox.ExecRequest{Script: "cat /mnt/ns-ro/later.txt"}); string(r.Stdout) != "later\n" {
		t.Errorf("a file the host added to the mount is not seen inside: %q %q", r.Stdout, r.Stderr)
	}
	// CopyOut reads a mount; CopyIn writes a writable one only.
	rc, err := sb.CopyOut(ctx, "/mnt/ns-ro/tool.txt")
	if err != nil {
		t.Fatalf("CopyOut from a read-only mount: %v", err)
	}
	tr := tar.NewReader(rc)
	if h, err := tr.Next(); err != nil || strings.TrimPrefix(h.Name, "./") != "tool.txt" {
		t.Errorf("CopyOut from a mount: %v %v", h, err)
	} else if b, _ := io.ReadAll(tr); string(b) != "toolchain\n" {
		t.Errorf("CopyOut from a mount: %q", b)
	}
	rc.Close()
	tarOf := func(name, body string) io.Reader {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(body)), ModTime: time.Now()})
		tw.Write([]byte(body))
		tw.Close()
		return &buf
	}
	if err := sb.CopyIn(ctx, "/mnt/ns-rw/sub", tarOf("in.txt", "copied\n")); err != nil {
		t.Errorf("CopyIn into a writable mount: %v", err)
	} else if b, err := os.ReadFile(filepath.Join(rw, "sub", "in.txt")); err != nil || string(b) != "copied\n" {
		t.Errorf("CopyIn into a writable mount did not reach the host: %q %v", b, err)
	}
	if err := sb.CopyIn(ctx, "/mnt/ns-ro", tarOf("in.txt", "no\n")); err == nil {
		t.Errorf("CopyIn into a read-only mount: no error")
	}
	if _, err := os.Stat(filepath.Join(ro, "in.txt")); err == nil {
		t.Errorf("CopyIn into a read-only mount reached the host")
	}
	// A restore leaves what is in a mount alone.
	if sn, ok := sb.(sandbox.Snapshotter); ok {
		snap, err := sn.Snapshot(ctx)
		if err != nil {
			t.Fatalf("Snapshot: %v", err)
		}
		defer snap.Release(context.WithoutCancel(ctx))
		exec(t, sb, sandbox.ExecRequest{Script: "echo kept > /mnt/ns-rw/after.txt"})
		if err := sn.Restore(ctx, snap); err != nil {
			t.Fatalf("Restore: %v", err)
		}
		r := exec(t, sb, sandbox.ExecRequest{Script: "cat /mnt/ns-rw/after.txt /mnt/ns-ro/tool.txt"})
		if string(r.Stdout) != "kept\ntoolchain\n" {
			t.Errorf("after Restore, the mounts show %q %q", r.Stdout, r.Stderr)
		}
	}
	// Bad mounts are refused.
	for _, m := range []sandbox.Mount{
		{Source: "relative/dir", Target: "/mnt/x"},
		{Source: ro, Target: "relative"},
		{Source: filepath.Join(ro, "no-such-dir"), Target: "/mnt/x"},
	} {
		spec := s.cfg.spec
		spec.Labels = sandbox.MergeLabels(spec.Labels, map[string]string{"sandboxtest": t.Name()})
		spec.Mounts = []sandbox.Mount{m}
		if bad, err := s.b.Create(ctx, spec); err == nil {
			bad.Close(context.WithoutCancel(ctx))
			t.Errorf("Create with mount %+v: no error", m)
		}
	}
}

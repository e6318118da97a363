package bwrap_test

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nextstate-rl/nextstate/sandbox"
	"github.com/nextstate-rl/nextstate/sandbox/bwrap"
	"github.com/nextstate-rl/nextstate/sandbox/sandboxtest"
)

// Every backend of these tests uses this owner and directory, so the leak
// check after them finds whatever they left.
var (
	testOwner = "bwtest-" + sandbox.RandomID(4)
	testDir   string
)

func TestMain(m *testing.M) {
	if os.Getenv("BWRAP_TEST_CHILD") == "1" { // TestDiesWithParent's server
		testOwner, testDir = os.Getenv("BWRAP_TEST_OWNER"), os.Getenv("BWRAP_TEST_DIR")
		os.Exit(m.Run())
	}
	var err error
	if testDir, err = os.MkdirTemp("", "nextstate-bwrap-test-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	if code == 0 {
		if err := leaks(); err != nil {
			fmt.Fprintln(os.Stderr, "FAIL: leak check:", err)
			code = 1
		}
	}
	os.RemoveAll(testDir)
	os.Exit(code)
}

// leaks reports any process, state directory or cgroup of testOwner left
// after the tests, polling briefly for processes that are being reaped.
func leaks() error {
	var last error
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if last = leaksNow(); last == nil {
			return nil
		}
	}
	return last
}

func leaksNow() error {
	var errs []error
	ents, _ := os.ReadDir(testDir)
	for _, e := range ents {
		errs = append(errs, fmt.Errorf("state directory %s left", e.Name()))
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err == nil && bytes.Contains(b, []byte(testDir)) {
			errs = append(errs, fmt.Errorf("process %s left: %q", filepath.Dir(p), bytes.ReplaceAll(b, []byte{0}, []byte{' '})))
		}
	}
	cgs, _ := filepath.Glob("/sys/fs/cgroup/*/nextstate_" + testOwner + "_*")
	cgs2, _ := filepath.Glob("/sys/fs/cgroup/*/*/*/nextstate_" + testOwner + "_*")
	cgs3, _ := filepath.Glob("/sys/fs/cgroup/nextstate_" + testOwner + "_*")
	for _, c := range append(append(cgs, cgs2...), cgs3...) {
		errs = append(errs, fmt.Errorf("cgroup %s left", c))
	}
	return errors.Join(errs...)
}

func open(t *testing.T, o ...bwrap.Option) *bwrap.Backend {
	t.Helper()
	b, err := bwrap.Open(context.Background(), sandbox.Options{Owner: testOwner, Dir: testDir}, o...)
	if errors.Is(err, sandbox.ErrUnavailable) {
		t.Skipf("bwrap backend unavailable here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.Close(context.Background()); err != nil {
			t.Errorf("backend Close: %v", err)
		}
	})
	return b
}

func kill(sb sandbox.Sandbox) error {
	return syscall.Kill(sb.(*bwrap.Sandbox).PID(), syscall.SIGKILL)
}

func removed(sb sandbox.Sandbox) error {
	s := sb.(*bwrap.Sandbox)
	if _, err := os.Stat(s.StateDir()); !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("state directory %s: %v", s.StateDir(), err)
	}
	if err := syscall.Kill(s.PID(), 0); err == nil {
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", s.PID())); err == nil && bytes.Contains(b, []byte("bwrap")) {
			return fmt.Errorf("pid 1 %d still runs", s.PID())
		}
	}
	cgs, _ := filepath.Glob("/sys/fs/cgroup/*/*" + s.ID())
	cgs2, _ := filepath.Glob("/sys/fs/cgroup/*/*/*/*" + s.ID())
	if len(cgs)+len(cgs2) > 0 {
		return fmt.Errorf("cgroups left: %v %v", cgs, cgs2)
	}
	return nil
}

func TestConformance(t *testing.T) {
	b := open(t)
	mode, why := b.LimitsMode()
	t.Logf("limits: %s (%v)", mode, why)
	sandboxtest.Run(t, b, sandboxtest.WithKill(kill), sandboxtest.WithRemoved(removed))
}

func TestConformanceRlimit(t *testing.T) {
	b := open(t, bwrap.WithoutCgroups())
	if mode, _ := b.LimitsMode(); mode != bwrap.ModeRlimit {
		t.Fatalf("mode %s with WithoutCgroups", mode)
	}
	sandboxtest.Run(t, b, sandboxtest.WithKill(kill), sandboxtest.WithRemoved(removed), sandboxtest.WithoutPIDLimit())
}

func TestRegistered(t *testing.T) {
	found := false
	for _, n := range sandbox.Backends() {
		found = found || n == "bwrap"
	}
	if !found {
		t.Fatalf("bwrap not in %v", sandbox.Backends())
	}
	b, err := sandbox.Open(context.Background(), "bwrap", sandbox.Options{Owner: testOwner, Dir: testDir})
	if errors.Is(err, sandbox.ErrUnavailable) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(context.Background())
	if b.Name() != "bwrap" {
		t.Errorf("Name %q", b.Name())
	}
}

func TestUnavailableWithoutBwrap(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := bwrap.Open(context.Background(), sandbox.Options{Owner: testOwner, Dir: testDir})
	if !errors.Is(err, sandbox.ErrUnavailable) {
		t.Fatalf("Open without bwrap on PATH: %v, want ErrUnavailable", err)
	}
}

func TestInvalidOwner(t *testing.T) {
	if _, err := bwrap.Open(context.Background(), sandbox.Options{Owner: "a_b/c", Dir: testDir}); err == nil {
		t.Fatal("no error for an owner with '_' and '/'")
	}
}

func TestSpecChecks(t *testing.T) {
	b := open(t)
	ctx := context.Background()
	for _, spec := range []sandbox.Spec{{Workdir: "relative"}, {Workdir: "/usr/src/app"}, {Workdir: "/"}, {Image: t.TempDir()}} {
		if sb, err := b.Create(ctx, spec); err == nil {
			sb.Close(ctx)
			t.Errorf("Create(%+v): no error", spec)
		}
	}
	sb, err := b.Create(ctx, sandbox.Spec{Workdir: "/app"})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close(ctx)
	r, err := sb.Exec(ctx, sandbox.ExecRequest{Script: "pwd; touch /usr/x 2>/dev/null || echo ro; ls /root /home 2>&1 | head -1; cat /proc/self/status | grep CapEff"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(r.Stdout), "/app\nro\n") || !strings.Contains(string(r.Stdout), "0000000000000000") {
		t.Errorf("sandbox: %q", r.Stdout)
	}
}

func tarOf(t *testing.T, entries ...*tar.Header) *bytes.Buffer {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range entries {
		if h.Typeflag == tar.TypeReg {
			h.Size = 1
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			tw.Write([]byte("x"))
		}
	}
	tw.Close()
	return &buf
}

func TestCopyStaysInside(t *testing.T) {
	b := open(t)
	ctx := context.Background()
	sb, err := b.Create(ctx, sandbox.Spec{})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close(ctx)
	file := &tar.Header{Name: "f", Typeflag: tar.TypeReg, Mode: 0o644}
	if err := sb.CopyIn(ctx, "/etc", tarOf(t, file)); err == nil {
		t.Error("CopyIn to /etc: no error")
	}
	if _, err := sb.CopyOut(ctx, "/etc/passwd"); err == nil {
		t.Error("CopyOut of /etc/passwd: no error")
	}
	if err := sb.CopyIn(ctx, "/workspace", tarOf(t, &tar.Header{Name: "../../escape", Typeflag: tar.TypeReg, Mode: 0o644})); err == nil {
		t.Error("CopyIn of ../../escape: no error")
	}
	// A link the agent made that points out of the workspace is not
	// followed on the host.
	victim := filepath.Join(t.TempDir(), "victim")
	os.Mkdir(victim, 0o755)
	if _, err := sb.Exec(ctx, sandbox.ExecRequest{Script: "ln -s " + victim + " out && ln -s ../.. up"}); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"/workspace/out", "/workspace/up/x"} {
		if err := sb.CopyIn(ctx, dir, tarOf(t, file)); err == nil {
			t.Errorf("CopyIn through the link %s: no error", dir)
		}
	}
	if err := sb.CopyIn(ctx, "/workspace", tarOf(t, &tar.Header{Name: "out/f", Typeflag: tar.TypeReg, Mode: 0o644})); err == nil {
		t.Errorf("CopyIn of out/f through a link: no error")
	}
	if ents, _ := os.ReadDir(victim); len(ents) != 0 {
		t.Errorf("wrote through a link onto the host: %v", ents)
	}
	// Relative paths are in the workspace.
	if err := sb.CopyIn(ctx, "sub", tarOf(t, file)); err != nil {
		t.Fatal(err)
	}
	if r, _ := sb.Exec(ctx, sandbox.ExecRequest{Script: "cat /workspace/sub/f"}); string(r.Stdout) != "x" {
		t.Errorf("relative CopyIn: %q", r.Stdout)
	}
}

func TestLabels(t *testing.T) {
	b := open(t)
	ctx := context.Background()
	sb, err := b.Create(ctx, sandbox.Spec{Labels: map[string]string{"task": "t1", sandbox.LabelPool: "p"}})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close(ctx)
	s := sb.(*bwrap.Sandbox)
	if err := s.SetLabels(ctx, map[string]string{sandbox.LabelPool: "", sandbox.LabelSession: "s1", sandbox.LabelOwner: "other"}); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(s.StateDir(), "labels.json"))
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]string
	json.Unmarshal(raw, &got)
	want := map[string]string{"task": "t1", sandbox.LabelSession: "s1", sandbox.LabelOwner: testOwner}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("labels %v, want %v", got, want)
	}
}

// TestReap plays a crash: a second backend of the same owner (the server
// after a restart) reaps what the first one left, and keeps its own.
func TestReap(t *testing.T) {
	ctx := context.Background()
	crashed := open(t)
	orphan, err := crashed.Create(ctx, sandbox.Spec{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := orphan.Exec(ctx, sandbox.ExecRequest{Script: "(sleep 4248 >/dev/null 2>&1 &)"}); err != nil {
		t.Fatal(err)
	}
	restarted := open(t)
	mine, err := restarted.Create(ctx, sandbox.Spec{})
	if err != nil {
		t.Fatal(err)
	}
	n, err := restarted.Reap(ctx, testOwner)
	if err != nil {
		t.Fatal(err)
	}
	if n < 1 {
		t.Errorf("reaped %d", n)
	}
	if _, err := os.Stat(orphan.(*bwrap.Sandbox).StateDir()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("orphan state directory: %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for orphan.(*bwrap.Sandbox).IsValid() {
		if time.Now().After(deadline) {
			t.Fatal("orphan still runs after Reap")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if r, err := mine.Exec(ctx, sandbox.ExecRequest{Script: "echo alive"}); err != nil || string(r.Stdout) != "alive\n" {
		t.Errorf("Reap touched a live sandbox: %v %q", err, r.Stdout)
	}
	if err := orphan.Close(ctx); err != nil {
		t.Errorf("Close of a reaped sandbox: %v", err)
	}
}

// TestDiesWithParent: a sandbox whose server is killed does not outlive
// it, and its state directory stays for Reap.
func TestDiesWithParent(t *testing.T) {
	if os.Getenv("BWRAP_TEST_CHILD") == "1" {
		b, err := bwrap.Open(context.Background(), sandbox.Options{Owner: testOwner, Dir: testDir})
		if err != nil {
			t.Fatal(err)
		}
		sb, err := b.Create(context.Background(), sandbox.Spec{})
		if err != nil {
			t.Fatal(err)
		}
		fmt.Printf("PID1 %d\n", sb.(*bwrap.Sandbox).PID())
		os.Stdout.Sync()
		select {} // killed by the parent
	}
	open(t) // skips when unavailable
	cmd := exec.Command(os.Args[0], "-test.run=^TestDiesWithParent$")
	cmd.Env = append(os.Environ(), "BWRAP_TEST_CHILD=1", "BWRAP_TEST_DIR="+testDir, "BWRAP_TEST_OWNER="+testOwner)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var pid1 int
	if _, err := fmt.Fscanf(out, "PID1 %d\n", &pid1); err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("child: %v", err)
	}
	cmd.Process.Kill()
	cmd.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for syscall.Kill(pid1, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("sandbox pid 1 %d outlived its server", pid1)
		}
		time.Sleep(10 * time.Millisecond)
	}
	b := open(t)
	if n, err := b.Reap(context.Background(), testOwner); err != nil || n < 1 {
		t.Errorf("Reap after the crash: %d, %v", n, err)
	}
}

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
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
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

// TestReap: Reap(owner) removes what a crashed backend of the same owner
// left and keeps the sandboxes its own Backend holds.
func TestReap(t *testing.T) {
	ctx := context.Background()
	restarted := open(t)
	crashed := open(t) // opened after restarted, before any sandbox: reaps nothing
	orphan, err := crashed.Create(ctx, sandbox.Spec{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := orphan.Exec(ctx, sandbox.ExecRequest{Script: "(sleep 4248 >/dev/null 2>&1 &)"}); err != nil {
		t.Fatal(err)
	}
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
	waitInvalid(t, orphan)
	if r, err := mine.Exec(ctx, sandbox.ExecRequest{Script: "echo alive"}); err != nil || string(r.Stdout) != "alive\n" {
		t.Errorf("Reap touched a live sandbox: %v %q", err, r.Stdout)
	}
	if err := orphan.Close(ctx); err != nil {
		t.Errorf("Close of a reaped sandbox: %v", err)
	}
}

// TestReapOwnAtOpen: Open with an explicit owner removes what an earlier
// backend of that owner left.
func TestReapOwnAtOpen(t *testing.T) {
	ctx := context.Background()
	crashed := open(t)
	orphan, err := crashed.Create(ctx, sandbox.Spec{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := orphan.Exec(ctx, sandbox.ExecRequest{Script: "(sleep 4249 >/dev/null 2>&1 &)"}); err != nil {
		t.Fatal(err)
	}
	restarted := open(t)
	if _, err := os.Stat(orphan.(*bwrap.Sandbox).StateDir()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("orphan state directory after Open: %v", err)
	}
	waitInvalid(t, orphan)
	if n, err := restarted.Reap(ctx, testOwner); err != nil || n != 0 {
		t.Errorf("Reap after Open: %d, %v", n, err)
	}
	if err := orphan.Close(ctx); err != nil {
		t.Errorf("Close of a reaped sandbox: %v", err)
	}
}

func waitInvalid(t *testing.T, sb sandbox.Sandbox) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for sb.(*bwrap.Sandbox).IsValid() {
		if time.Now().After(deadline) {
			t.Fatal("orphan still runs after it was reaped")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// openDefault opens a backend with the default owner (a lease on this
// process) in the test directory.
func openDefault(t *testing.T) *bwrap.Backend {
	t.Helper()
	b, err := bwrap.Open(context.Background(), sandbox.Options{Dir: testDir})
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

// cgroupsOf lists the cgroup directories of a sandbox, in every hierarchy.
func cgroupsOf(owner, id string) []string {
	var out []string
	for _, pat := range []string{"/sys/fs/cgroup", "/sys/fs/cgroup/*", "/sys/fs/cgroup/*/*", "/sys/fs/cgroup/*/*/*", "/sys/fs/cgroup/*/*/*/*"} {
		m, _ := filepath.Glob(pat + "/nextstate_" + owner + "_" + id)
		out = append(out, m...)
	}
	return out
}

func execEcho(t *testing.T, sb sandbox.Sandbox, what string) {
	t.Helper()
	r, err := sb.Exec(context.Background(), sandbox.ExecRequest{Script: "echo alive"})
	if err != nil || string(r.Stdout) != "alive\n" {
		t.Errorf("%s: %v %q", what, err, r.Stdout)
	}
}

// TestReapEndedOwner plays a crash with default owners: a server (a child
// process) opens a backend, makes a sandbox and is killed; the next
// backend opened here removes its state directory and cgroup at Open,
// while the sandboxes of backends that are open (in this process, and the
// child's while it lived) stay.
func TestReapEndedOwner(t *testing.T) {
	ctx := context.Background()
	if os.Getenv("BWRAP_TEST_CHILD") == "1" {
		b, err := bwrap.Open(ctx, sandbox.Options{Dir: testDir})
		if err != nil {
			t.Fatal(err)
		}
		sb, err := b.Create(ctx, sandbox.Spec{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := sb.Exec(ctx, sandbox.ExecRequest{Script: "(sleep 4250 >/dev/null 2>&1 &)"}); err != nil {
			t.Fatal(err)
		}
		s := sb.(*bwrap.Sandbox)
		fmt.Printf("ORPHAN %s %s %s\n", b.Owner(), s.ID(), s.StateDir())
		os.Stdout.Sync()
		select {} // killed by the parent
	}
	live := openDefault(t)
	keep, err := live.Create(ctx, sandbox.Spec{})
	if err != nil {
		t.Fatal(err)
	}
	defer keep.Close(ctx)
	mode, _ := live.LimitsMode()
	t.Logf("limits: %s", mode)

	cmd := exec.Command(os.Args[0], "-test.run=^TestReapEndedOwner$")
	cmd.Env = append(os.Environ(), "BWRAP_TEST_CHILD=1", "BWRAP_TEST_DIR="+testDir, "BWRAP_TEST_OWNER="+testOwner)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var owner, id, state string
	if _, err := fmt.Fscanf(out, "ORPHAN %s %s %s\n", &owner, &id, &state); err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("child: %v", err)
	}
	if owner == live.Owner() || !strings.HasPrefix(state, testDir) {
		t.Errorf("child owner %s (mine %s), state %s", owner, live.Owner(), state)
	}
	if alive, known := sandbox.OwnerAlive(owner); !alive || !known {
		t.Errorf("OwnerAlive(%s) while the child runs: %v, %v", owner, alive, known)
	}
	execEcho(t, keep, "the child's Open touched this process's sandbox")
	if mode != bwrap.ModeRlimit && len(cgroupsOf(owner, id)) == 0 {
		t.Errorf("no cgroup of the child's sandbox (mode %s)", mode)
	}
	cmd.Process.Kill()
	cmd.Wait()
	if alive, known := sandbox.OwnerAlive(owner); alive || !known {
		t.Errorf("OwnerAlive(%s) after the child was killed: %v, %v", owner, alive, known)
	}
	if _, err := os.Stat(state); err != nil {
		t.Fatalf("the crashed server's state directory is gone before any Open: %v", err)
	}

	fresh := openDefault(t)
	if _, err := os.Stat(state); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the crashed server's state directory after Open: %v", err)
	}
	if cgs := cgroupsOf(owner, id); len(cgs) > 0 {
		t.Errorf("the crashed server's cgroups after Open: %v", cgs)
	}
	execEcho(t, keep, "Open reaped a live backend's sandbox")
	mine, err := fresh.Create(ctx, sandbox.Spec{})
	if err != nil {
		t.Fatal(err)
	}
	defer mine.Close(ctx)
	// Two more backends open at once: neither reaps the others'.
	third := openDefault(t)
	other, err := third.Create(ctx, sandbox.Spec{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(ctx)
	openDefault(t)
	for what, sb := range map[string]sandbox.Sandbox{"first": keep, "second": mine, "third": other} {
		execEcho(t, sb, "the "+what+" backend's sandbox after later Opens")
	}
}

// TestReapEndedOwnerKillsGroup: a state directory whose owner has ended
// but whose recorded process group still runs (with the recorded start
// time) has that group killed, then is removed; the directories of a live
// owner and of an unknown one stay.
func TestReapEndedOwnerKillsGroup(t *testing.T) {
	open(t) // skips when unavailable
	self := sandbox.NewOwnerID()
	parts := strings.Split(self, "-")
	host, start := strings.Join(parts[:len(parts)-3], "-"), parts[len(parts)-2]
	dead := host + "-4194305-" + start + "-deadbeef" // above any pid_max
	if alive, known := sandbox.OwnerAlive(dead); alive || !known {
		t.Fatalf("OwnerAlive(%s) = %v, %v", dead, alive, known)
	}
	sleeper := exec.Command("sleep", "4251")
	sleeper.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- sleeper.Wait() }()
	defer func() {
		sleeper.Process.Kill()
		<-waited
	}()
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", sleeper.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(st[bytes.LastIndexByte(st, ')')+1:]))
	fake := func(owner, id string, pid string) string {
		dir := filepath.Join(testDir, owner+"_"+id)
		if err := os.MkdirAll(filepath.Join(dir, "workspace"), 0o700); err != nil {
			t.Fatal(err)
		}
		l, _ := json.Marshal(map[string]string{sandbox.LabelOwner: owner})
		os.WriteFile(filepath.Join(dir, "labels.json"), l, 0o600)
		if pid != "" {
			os.WriteFile(filepath.Join(dir, "pid"), []byte(pid), 0o600)
		}
		return dir
	}
	pgid := sleeper.Process.Pid
	deadDir := fake(dead, "bwfake1", fmt.Sprintf(`{"pgid":%d,"pid1":%d,"start":%s}`, pgid, pgid, f[19]))
	deadNoPid := fake(dead, "bwfake2", "")
	liveDir := fake(self, "bwfake3", "")
	unknownDir := fake("bwtest-unknown", "bwfake4", "")
	defer os.RemoveAll(liveDir)
	defer os.RemoveAll(unknownDir)

	openDefault(t)
	for _, d := range []string{deadDir, deadNoPid} {
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the ended owner's %s after Open: %v", filepath.Base(d), err)
		}
	}
	for _, d := range []string{liveDir, unknownDir} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s after Open: %v", filepath.Base(d), err)
		}
	}
	select {
	case err := <-waited:
		waited <- err
	case <-time.After(time.Minute):
		t.Errorf("the ended owner's process group still runs")
	}
}

// TestDiesWithParent: a sandbox whose server is killed does not outlive
// it, and its state directory stays until a backend of the same owner
// opens.
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
		fmt.Printf("PID1 %d %s\n", sb.(*bwrap.Sandbox).PID(), sb.(*bwrap.Sandbox).StateDir())
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
	var state string
	if _, err := fmt.Fscanf(out, "PID1 %d %s\n", &pid1, &state); err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("child: %v", err)
	}
	cmd.Process.Kill()
	cmd.Wait()
	deadline := time.Now().Add(time.Minute)
	for syscall.Kill(pid1, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("sandbox pid 1 %d outlived its server", pid1)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := os.Stat(state); err != nil {
		t.Errorf("state directory after the crash: %v", err)
	}
	open(t)
	if _, err := os.Stat(state); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("state directory after Open of the same owner: %v", err)
	}
}

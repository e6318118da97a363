package docker

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/nextstate-rl/nextstate/sandbox"
	"github.com/nextstate-rl/nextstate/sandbox/sandboxtest"
)

func TestConformance(t *testing.T) {
	b := openBackend(t)
	var opts []sandboxtest.Option
	// overlay2 bounds a container's disk only on xfs with pquota.
	if probe := create(t, b, sandbox.Spec{}); !b.DiskQuota(probe.Host()) {
		t.Logf("engine %s: no per-container disk quota", probe.Host())
		opts = append(opts, sandboxtest.WithoutDiskQuota())
	}
	sandboxtest.Run(t, b, append(opts,
		sandboxtest.WithKill(func(sb sandbox.Sandbox) error {
			d := sb.(*Sandbox)
			_, err := d.e.cli.ContainerKill(context.Background(), d.ContainerID(), client.ContainerKillOptions{Signal: "KILL"})
			return err
		}),
		sandboxtest.WithRemoved(func(sb sandbox.Sandbox) error {
			d := sb.(*Sandbox)
			_, err := d.e.cli.ContainerInspect(context.Background(), d.ContainerID(), client.ContainerInspectOptions{})
			if cerrdefs.IsNotFound(err) {
				return nil
			}
			return errors.Join(errors.New("the container is still there"), err)
		}),
	)...)
}

func TestRegistered(t *testing.T) {
	needEngine(t)
	b, err := sandbox.Open(testCtx(t), Name, sandbox.Options{Owner: testOwnerPrefix + newID()})
	if err != nil {
		t.Fatal(err)
	}
	if b.Name() != Name {
		t.Errorf("Name %q", b.Name())
	}
	if err := b.Close(context.Background()); err != nil {
		t.Error(err)
	}
	if err := b.Close(context.Background()); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := b.Create(context.Background(), sandbox.Spec{}); !errors.Is(err, sandbox.ErrClosed) {
		t.Errorf("Create after Close: %v", err)
	}
}

func TestOpenUnavailable(t *testing.T) {
	_, err := Open(testCtx(t), sandbox.Options{Owner: "x", Hosts: []string{"unix://" + t.TempDir() + "/no.sock"}})
	if !errors.Is(err, sandbox.ErrUnavailable) {
		t.Fatalf("Open on a missing socket: %v, want ErrUnavailable", err)
	}
	if _, err := Open(testCtx(t), sandbox.Options{Owner: "bad owner"}); err == nil {
		t.Errorf("an owner with a space: no error")
	}
}

// TestContainerConfig checks what the engine was told: limits, network,
// capabilities, labels, the keeper.
func TestContainerConfig(t *testing.T) {
	b := openBackend(t)
	sb := create(t, b, sandbox.Spec{
		Labels: map[string]string{"task": "t1", sandbox.LabelSession: "s1"},
		Limits: sandbox.Limits{MemoryBytes: 256 << 20, CPUs: 0.5, PIDs: 100},
	})
	res, err := sb.e.cli.ContainerInspect(testCtx(t), sb.ContainerID(), client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := res.Container
	hc := c.HostConfig
	if hc.Memory != 256<<20 || hc.MemorySwap != 256<<20 || hc.NanoCPUs != 5e8 || hc.PidsLimit == nil || *hc.PidsLimit != 100 {
		t.Errorf("limits: memory %d swap %d cpus %d pids %v", hc.Memory, hc.MemorySwap, hc.NanoCPUs, hc.PidsLimit)
	}
	// The keeper is PID 1 itself, not a child of the engine's init.
	if hc.NetworkMode != "none" || hc.Init != nil && *hc.Init || !c.Config.OpenStdin ||
		len(c.Config.Entrypoint) != 3 || c.Config.Entrypoint[2] != keeper {
		t.Errorf("network %q init %v stdin %v entrypoint %q", hc.NetworkMode, hc.Init, c.Config.OpenStdin, c.Config.Entrypoint)
	}
	if len(hc.CapDrop) != 1 || !strings.EqualFold(strings.TrimPrefix(hc.CapDrop[0], "CAP_"), "ALL") || len(hc.CapAdd) != len(Capabilities) {
		t.Errorf("caps: drop %v add %v", hc.CapDrop, hc.CapAdd)
	}
	if len(hc.SecurityOpt) == 0 || !strings.HasPrefix(hc.SecurityOpt[0], "no-new-privileges") {
		t.Errorf("security opts %v", hc.SecurityOpt)
	}
	l := c.Config.Labels
	if l["task"] != "t1" || l[sandbox.LabelSession] != "s1" || l[sandbox.LabelOwner] != b.Owner() || l[LabelSandbox] != sb.ID() {
		t.Errorf("labels %v", l)
	}
	// Inside: the limits as the kernel sees them, and no-new-privileges.
	r := execOK(t, sb, `cat /sys/fs/cgroup/pids.max 2>/dev/null || cat /sys/fs/cgroup/pids/pids.max; grep NoNewPrivs /proc/self/status | tr -d '\t '; grep CapEff /proc/self/status | tr -d '\t '`)
	if got := string(r.Stdout); got != "100\nNoNewPrivs:1\nCapEff:00000000000004fb\n" {
		t.Errorf("inside: %q", got)
	}
}

// TestKilledFromOutside: a container killed or removed behind the
// backend's back makes calls fail with ErrGone, and Close still works.
func TestKilledFromOutside(t *testing.T) {
	b := openBackend(t)
	for _, how := range []string{"kill", "remove"} {
		t.Run(how, func(t *testing.T) {
			sb := create(t, b, sandbox.Spec{})
			p, err := sb.Start(testCtx(t), sandbox.StartRequest{Cmd: []string{"bash"}})
			if err != nil {
				t.Fatal(err)
			}
			ctx := testCtx(t)
			if how == "kill" {
				_, err = sb.e.cli.ContainerKill(ctx, sb.ContainerID(), client.ContainerKillOptions{Signal: "KILL"})
			} else {
				_, err = sb.e.cli.ContainerRemove(ctx, sb.ContainerID(), client.ContainerRemoveOptions{Force: true})
			}
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, p.Stdout())
			if _, err := p.Wait(); !errors.Is(err, sandbox.ErrGone) {
				t.Errorf("Wait of a process in a killed container: %v, want ErrGone", err)
			}
			if _, err := sb.Exec(ctx, sandbox.ExecRequest{Script: "true"}); !errors.Is(err, sandbox.ErrGone) {
				t.Errorf("Exec: %v, want ErrGone", err)
			}
			if _, err := sb.CopyOut(ctx, "/etc/hostname"); !errors.Is(err, sandbox.ErrGone) {
				t.Errorf("CopyOut: %v, want ErrGone", err)
			}
			if sb.IsValid() {
				t.Errorf("IsValid")
			}
			if err := sb.Close(ctx); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
	}
}

// TestReap: a container carrying the owner's label that the backend does
// not hold is removed; the backend's own sandboxes stay.
func TestReap(t *testing.T) {
	b := openBackend(t)
	ctx := testCtx(t)
	mine := create(t, b, sandbox.Spec{})
	cli := b.engines[0].cli
	orphan, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Config: &container.Config{
			Image:      DefaultImage,
			Entrypoint: []string{"sleep", "infinity"},
			Labels:     map[string]string{sandbox.LabelOwner: b.Owner()},
		},
		HostConfig: &container.HostConfig{NetworkMode: "none"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.ContainerStart(ctx, orphan.ID, client.ContainerStartOptions{}); err != nil {
		t.Fatal(err)
	}
	other, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Config:     &container.Config{Image: DefaultImage, Labels: map[string]string{sandbox.LabelOwner: testOwnerPrefix + "someone-else"}},
		HostConfig: &container.HostConfig{NetworkMode: "none"},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cli.ContainerRemove(context.Background(), other.ID, client.ContainerRemoveOptions{Force: true})
	})

	n, err := b.Reap(ctx, b.Owner())
	if err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Errorf("Reap removed %d, want 1", n)
	}
	if _, err := cli.ContainerInspect(ctx, orphan.ID, client.ContainerInspectOptions{}); !cerrdefs.IsNotFound(err) {
		t.Errorf("the orphan is still there: %v", err)
	}
	if _, err := cli.ContainerInspect(ctx, other.ID, client.ContainerInspectOptions{}); err != nil {
		t.Errorf("another owner's container was touched: %v", err)
	}
	if r := execOK(t, mine, "echo alive"); string(r.Stdout) != "alive\n" {
		t.Errorf("the held sandbox: %q", r.Stdout)
	}
	// Reaping another owner removes its containers, held by nobody here.
	if n, err := b.Reap(ctx, testOwnerPrefix+"someone-else"); err != nil || n != 1 {
		t.Errorf("Reap of another owner: %d, %v", n, err)
	}
}

// TestReapAtOpen: Open removes what a crashed backend of the same owner
// left: its containers and snapshot images.
func TestReapAtOpen(t *testing.T) {
	needEngine(t)
	ctx := testCtx(t)
	owner := testOwnerPrefix + newID()
	b1, err := Open(ctx, sandbox.Options{Owner: owner})
	if err != nil {
		t.Fatal(err)
	}
	sb, err := b1.create(ctx, sandbox.Spec{})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := sb.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	img := snap.(*Snapshot).Image()
	sb.mu.Lock()
	standby := sb.standby
	sb.mu.Unlock()
	if standby == nil {
		t.Fatal("no standby container after Snapshot")
	}
	<-standby.ready
	// b1 "crashes": nothing of it is closed.
	b2, err := Open(ctx, sandbox.Options{Owner: owner})
	if err != nil {
		t.Fatal(err)
	}
	defer b2.Close(ctx)
	cli := b2.engines[0].cli
	if _, err := cli.ContainerInspect(ctx, sb.ContainerID(), client.ContainerInspectOptions{}); !cerrdefs.IsNotFound(err) {
		t.Errorf("the crashed backend's container is still there: %v", err)
	}
	if _, err := cli.ImageInspect(ctx, img); !cerrdefs.IsNotFound(err) {
		t.Errorf("the crashed backend's snapshot image is still there: %v", err)
	}
	b1.Close(ctx) // finds everything gone already
}

// TestSnapshotReleaseInUse: releasing a snapshot a container was restored
// from removes the image once that container is gone.
func TestSnapshotReleaseInUse(t *testing.T) {
	b := openBackend(t)
	ctx := testCtx(t)
	sb := create(t, b, sandbox.Spec{})
	execOK(t, sb, "echo v1 > f")
	snap, err := sb.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := sb.Restore(ctx, snap); err != nil {
		t.Fatal(err)
	}
	if err := snap.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := sb.Restore(ctx, snap); err == nil {
		t.Errorf("Restore from a released snapshot: no error")
	}
	img := snap.(*Snapshot).Image()
	if _, err := b.engines[0].cli.ImageInspect(ctx, img); err != nil {
		t.Errorf("the image of a snapshot in use went early: %v", err)
	}
	if r := execOK(t, sb, "cat f"); string(r.Stdout) != "v1\n" {
		t.Errorf("after restore: %q", r.Stdout)
	}
	if err := sb.Close(ctx); err != nil {
		t.Fatal(err)
	}
	// The standby of the snapshot is removed in the background; the image
	// goes with the last container.
	waitFor(t, "the released snapshot's image to go", func() (bool, string) {
		_, err := b.engines[0].cli.ImageInspect(ctx, img)
		return cerrdefs.IsNotFound(err), fmt.Sprint(err)
	})
}

// TestStartTTY: a process with a terminal.
func TestStartTTY(t *testing.T) {
	b := openBackend(t)
	sb := create(t, b, sandbox.Spec{})
	p, err := sb.Start(testCtx(t), sandbox.StartRequest{Cmd: []string{"bash", "--norc", "-i"}, TTY: true, Env: map[string]string{"PS1": "$ "}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(p.Stdin(), "tty && echo tty-ok\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(p.Stdout())
	found := make(chan string, 1)
	go func() {
		var seen strings.Builder
		for {
			line, err := br.ReadString('\n')
			seen.WriteString(line)
			if strings.HasPrefix(line, "tty-ok") || err != nil {
				found <- seen.String()
				return
			}
		}
	}()
	select {
	case s := <-found:
		if !strings.Contains(s, "/dev/pts/") {
			t.Errorf("no terminal: %q", s)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no output from the tty")
	}
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, br)
	if code, err := p.Wait(); err != nil || code == 0 {
		t.Errorf("Wait after Kill: %d, %v", code, err)
	}
}

// TestCopyInCreatesDir: CopyIn makes its directory, relative paths are
// the working directory's, CopyOut of a missing path is fs.ErrNotExist.
func TestCopyInCreatesDir(t *testing.T) {
	b := openBackend(t)
	sb := create(t, b, sandbox.Spec{Workdir: "/app"})
	ctx := testCtx(t)
	pr, pw := io.Pipe()
	go func() {
		pw.CloseWithError(writeTar(pw, map[string]string{"x.txt": "hello"}))
	}()
	if err := sb.CopyIn(ctx, "deep/er", pr); err != nil {
		t.Fatal(err)
	}
	if r := execOK(t, sb, "cat /app/deep/er/x.txt"); string(r.Stdout) != "hello" {
		t.Errorf("%q %q", r.Stdout, r.Stderr)
	}
	if _, err := sb.CopyOut(ctx, "nope"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("CopyOut of a missing path: %v", err)
	}
}

// KillAll's sure way, teardown, on its own (the conformance suite's
// KillAll takes the quick way): every leftover is gone, the filesystem
// stays, and the sandbox runs commands again.
func TestKillAllTeardown(t *testing.T) {
	b := openBackend(t)
	sb := create(t, b, sandbox.Spec{})
	ctx := testCtx(t)
	for _, script := range []string{
		"echo kept > /workspace/kept",
		"setsid sleep 4545001 </dev/null >/dev/null 2>&1 & disown; true",
		"( (sleep 4545002 &) & ); true",
	} {
		if r, err := sb.Exec(ctx, sandbox.ExecRequest{Script: script}); err != nil || r.ExitCode != 0 {
			t.Fatalf("%s: %+v %v", script, r, err)
		}
	}
	count := func() int {
		top, err := sb.e.cli.ContainerTop(ctx, sb.ContainerID(), client.ContainerTopOptions{Arguments: []string{"-o", "pid,stat,args"}})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, p := range top.Processes {
			if strings.Contains(strings.Join(p, " "), "454500") {
				n++
			}
		}
		return n
	}
	if n := count(); n != 2 {
		t.Fatalf("%d leftovers running, want 2", n)
	}
	sb.restoreMu.Lock()
	c, err := sb.current()
	if err != nil {
		t.Fatal(err)
	}
	next := &ctr{id: c.id, name: c.name, snap: c.snap}
	sb.mu.Lock()
	sb.cur = next
	sb.mu.Unlock()
	err = sb.teardown(ctx, c, next)
	sb.restoreMu.Unlock()
	if err != nil {
		t.Fatalf("teardown: %v", err)
	}
	if n := count(); n != 0 {
		t.Errorf("%d leftovers survive the teardown", n)
	}
	r, err := sb.Exec(ctx, sandbox.ExecRequest{Script: "cat /workspace/kept"})
	if err != nil || strings.TrimSpace(string(r.Stdout)) != "kept" {
		t.Errorf("after the teardown: %q %v", r.Stdout, err)
	}
}

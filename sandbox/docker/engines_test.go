package docker

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/nextstate-rl/nextstate/sandbox"
)

// The second engine of the multi-engine tests: a dockerd of its own, with
// its own socket, exec root, pid file and data root, started by the test
// that needs it and stopped when that test ends. It runs in a network
// namespace of its own, with no bridge and no iptables rules (its
// sandboxes run with --network none): a dockerd started with --bridge=none
// deletes the interface docker0, which in the host's namespace is the
// first engine's bridge. The data root is
// kept between runs so that the base image loaded into it (from the
// default engine, with save and load) is there next time; a dockerd left
// running by a killed test run is stopped first.
const (
	engine2Socket  = "/run/nextstate-test-dockerd.sock"
	engine2Pidfile = "/run/nextstate-test-dockerd.pid"
	engine2Exec    = "/run/nextstate-test-dockerd"
	engine2Data    = "/var/lib/nextstate-test-dockerd"
	engine2Host    = "unix://" + engine2Socket
)

// startEngine2 starts the second engine with the default engine's base
// image in it and returns its host; it is stopped when t ends.
func startEngine2(t *testing.T) string {
	t.Helper()
	needEngine(t)
	if os.Geteuid() != 0 {
		t.Skip("a second dockerd needs root")
	}
	if _, err := exec.LookPath("dockerd"); err != nil {
		t.Skip("no dockerd binary (scripts/deps.sh installs docker.io)")
	}
	stopEngine2(t) // a leftover of a killed run
	logf, err := os.CreateTemp("", "nextstate-test-dockerd-*.log")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("dockerd",
		"--host", engine2Host, "--pidfile", engine2Pidfile,
		"--exec-root", engine2Exec, "--data-root", engine2Data,
		"--bridge=none", "--iptables=false", "--ip-masq=false")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Cloneflags: syscall.CLONE_NEWNET}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }() // owned: the cleanup below receives
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(60 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
		unmountUnder(engine2Exec)
		_ = os.RemoveAll(engine2Exec)
		logf.Close()
		if !t.Failed() {
			os.Remove(logf.Name())
		} else {
			t.Logf("second dockerd's log: %s", logf.Name())
		}
	})
	cli, err := NewClient(engine2Host)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	deadline := time.Now().Add(90 * time.Second)
	for delay := 10 * time.Millisecond; ; delay = min(2*delay, 500*time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := cli.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true})
		cancel()
		if err == nil {
			break
		}
		select {
		case werr := <-exited:
			exited <- werr
			log, _ := os.ReadFile(logf.Name())
			t.Fatalf("the second dockerd exited (%v):\n%s", werr, tail(string(log), 20))
		default:
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(logf.Name())
			t.Fatalf("the second dockerd did not answer in 90s (%v):\n%s", err, tail(string(log), 20))
		}
		time.Sleep(delay)
	}
	copyBaseImage(t, cli)
	return engine2Host
}

// copyBaseImage loads the default engine's base image into cli's engine
// unless that has the same image already.
func copyBaseImage(t *testing.T, dst *client.Client) {
	t.Helper()
	ctx := testCtx(t)
	src, err := NewClient("")
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	want, err := src.ImageInspect(ctx, DefaultImage)
	if err != nil {
		t.Fatal(err)
	}
	if have, err := dst.ImageInspect(ctx, DefaultImage); err == nil && have.ID == want.ID {
		return
	}
	start := time.Now()
	saved, err := src.ImageSave(ctx, []string{DefaultImage})
	if err != nil {
		t.Fatal(err)
	}
	defer saved.Close()
	loaded, err := dst.ImageLoad(ctx, saved)
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.Copy(io.Discard, loaded)
	loaded.Close()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("loaded %s into the second engine in %v", DefaultImage, time.Since(start).Round(time.Millisecond))
}

// stopEngine2 stops a second dockerd that a killed run left.
func stopEngine2(t *testing.T) {
	b, err := os.ReadFile(engine2Pidfile)
	if err != nil {
		return
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || syscall.Kill(pid, 0) != nil {
		return
	}
	if exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); filepath.Base(exe) != "dockerd" {
		return
	}
	t.Logf("stopping a second dockerd left by an earlier run (pid %d)", pid)
	_ = syscall.Kill(pid, syscall.SIGTERM)
	deadline := time.Now().Add(60 * time.Second)
	for syscall.Kill(pid, 0) == nil && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
}

func unmountUnder(dir string) {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return
	}
	var mps []string
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && (f[4] == dir || strings.HasPrefix(f[4], dir+"/")) {
			mps = append(mps, f[4])
		}
	}
	for i := len(mps) - 1; i >= 0; i-- {
		_ = syscall.Unmount(mps[i], syscall.MNT_DETACH)
	}
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// TestMultiEngine: sandboxes spread over two engines by load, an image
// found on one engine only sends a sandbox there, and Reap, the reaping at
// Open and Close work on both.
func TestMultiEngine(t *testing.T) {
	host2 := startEngine2(t)
	host1 := DefaultHost
	if h := os.Getenv("DOCKER_HOST"); h != "" {
		host1 = h
	}
	b := openBackend(t, host1, host2)
	if len(b.Engines()) != 2 {
		t.Fatalf("engines: %v", b.Engines())
	}
	ctx := testCtx(t)
	var sbs []*Sandbox
	for i := range 4 {
		sb := create(t, b, sandbox.Spec{})
		sbs = append(sbs, sb)
		want := []string{host1, host2}[i%2]
		if sb.Host() != want {
			t.Errorf("sandbox %d on %s, want %s (least loaded, ties to the first)", i, sb.Host(), want)
		}
		if r := execOK(t, sb, "echo on-"+strconv.Itoa(i)); string(r.Stdout) != fmt.Sprintf("on-%d\n", i) {
			t.Errorf("exec on %s: %q", sb.Host(), r.Stdout)
		}
	}
	if l := b.Load(); l[host1] != 2 || l[host2] != 2 {
		t.Errorf("load %v", l)
	}
	// Freed room on the second engine is used next.
	if err := sbs[1].Close(ctx); err != nil {
		t.Fatal(err)
	}
	if sb := create(t, b, sandbox.Spec{}); sb.Host() != host2 {
		t.Errorf("after a close on %s: placed on %s", host2, sb.Host())
	}
	// An image the less-loaded engine lacks: the sandbox goes where it is.
	only1 := "nextstate-test/only-one:" + newID()
	cli1 := b.engines[0].cli
	if _, err := cli1.ImageTag(ctx, client.ImageTagOptions{Source: DefaultImage, Target: only1}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli1.ImageRemove(context.Background(), only1, client.ImageRemoveOptions{}) })
	create(t, b, sandbox.Spec{}) // e1: 3, e2: 2
	if sb := create(t, b, sandbox.Spec{Image: only1}); sb.Host() != host1 {
		t.Errorf("an image on %s only: placed on %s", host1, sb.Host())
	}
	if _, err := b.Create(ctx, sandbox.Spec{Image: "nextstate-test/on-no-engine:1"}); err == nil {
		t.Errorf("an image on no engine: no error")
	}
	// Snapshot and restore on the second engine.
	sb2 := sbs[3]
	execOK(t, sb2, "echo kept > k")
	snap, err := sb2.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	execOK(t, sb2, "rm k")
	if err := sb2.Restore(ctx, snap); err != nil {
		t.Fatal(err)
	}
	if r := execOK(t, sb2, "cat k"); string(r.Stdout) != "kept\n" {
		t.Errorf("restore on the second engine: %q", r.Stdout)
	}
	if err := sbs[0].Restore(ctx, snap); err == nil {
		t.Errorf("restoring a snapshot of another engine: no error")
	}
	// An orphan on the second engine is reaped.
	cli2 := b.engines[1].cli
	orphan, err := cli2.ContainerCreate(ctx, client.ContainerCreateOptions{
		Config:     &container.Config{Image: DefaultImage, Labels: map[string]string{sandbox.LabelOwner: b.Owner()}},
		HostConfig: &container.HostConfig{NetworkMode: "none"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := b.Reap(ctx, b.Owner()); err != nil || n != 1 {
		t.Errorf("Reap: %d, %v", n, err)
	}
	if _, err := cli2.ContainerInspect(ctx, orphan.ID, client.ContainerInspectOptions{}); !cerrdefs.IsNotFound(err) {
		t.Errorf("the orphan on the second engine: %v", err)
	}
	// An ended owner's container on the second engine is removed when a
	// backend with a default owner opens on both; b's sandboxes stay.
	ended := labelled(t, cli2, endedOwner(t))
	openDefault(t, host1, host2)
	if _, err := cli2.ContainerInspect(ctx, ended, client.ContainerInspectOptions{}); !cerrdefs.IsNotFound(err) {
		t.Errorf("the ended owner's container on the second engine: %v", err)
	}
	if r := execOK(t, sb2, "echo alive"); string(r.Stdout) != "alive\n" {
		t.Errorf("a live backend's sandbox on the second engine: %q", r.Stdout)
	}
	// Close leaves nothing on either engine.
	owner := b.Owner()
	if err := b.Close(ctx); err != nil {
		t.Fatal(err)
	}
	for _, e := range []*client.Client{cli1, cli2} {
		if err := noneLeft(ctx, e, owner); err != nil {
			t.Error(err)
		}
	}
}

// noneLeft fails when a container or snapshot image of owner is on the
// engine. Close closed the backend's clients; this opens its own.
func noneLeft(ctx context.Context, cli *client.Client, owner string) error {
	c, err := NewClient(cli.DaemonHost())
	if err != nil {
		return err
	}
	defer c.Close()
	f := make(client.Filters).Add("label", sandbox.LabelOwner+"="+owner)
	cs, err := c.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		return err
	}
	is, err := c.ImageList(ctx, client.ImageListOptions{Filters: f})
	if err != nil {
		return err
	}
	if len(cs.Items)+len(is.Items) > 0 {
		return fmt.Errorf("%s: %d containers and %d images of %s left", c.DaemonHost(), len(cs.Items), len(is.Items), owner)
	}
	return nil
}

// TestSSHHost: an ssh:// engine is reached through `ssh ... docker system
// dial-stdio`. A stand-in ssh on PATH records its arguments and runs the
// dial-stdio itself against the local engine, as sshd would run it on the
// remote host; everything, the hijacked streams of Exec and Start
// included, goes over its stdin and stdout.
func TestSSHHost(t *testing.T) {
	needEngine(t)
	dockerBin, err := exec.LookPath("docker")
	if err != nil {
		t.Skip("no docker CLI for dial-stdio")
	}
	local := os.Getenv("DOCKER_HOST")
	if local == "" {
		local = DefaultHost
	}
	dir := t.TempDir()
	script := fmt.Sprintf("#!/bin/sh\necho \"$@\" >> %s/args\nexec %s -H %s system dial-stdio\n", dir, dockerBin, local)
	if err := os.WriteFile(filepath.Join(dir, "ssh"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	b := openBackend(t, "ssh://tester@remote.invalid:2222")
	sb := create(t, b, sandbox.Spec{})
	if r := execOK(t, sb, "cat; echo over-ssh"); string(r.Stdout) != "over-ssh\n" {
		t.Errorf("exec over ssh: %q", r.Stdout)
	}
	r, err := sb.Exec(testCtx(t), sandbox.ExecRequest{Cmd: []string{"cat"}, Stdin: strings.NewReader("stdin over ssh")})
	if err != nil || string(r.Stdout) != "stdin over ssh" {
		t.Errorf("stdin over ssh: %q %v", r.Stdout, err)
	}
	sh, err := sandbox.NewShell(testCtx(t), sb)
	if err != nil {
		t.Fatal(err)
	}
	defer sh.Close()
	run, err := sh.Run(testCtx(t), "cd /tmp; pwd", 30*time.Second)
	if err != nil || string(run.Stdout) != "/tmp\n" {
		t.Errorf("shell over ssh: %q %v", run.Stdout, err)
	}
	args, _ := os.ReadFile(filepath.Join(dir, "args"))
	if !strings.Contains(string(args), "-l tester -p 2222 -- remote.invalid docker system dial-stdio") {
		t.Errorf("ssh arguments: %q", args)
	}
}

package docker

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"testing"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/nextstate-rl/nextstate/sandbox"
)

// TestReapEndedOwner plays a crash with default owners: a server (a child
// process) opens a backend, makes a sandbox with a snapshot (a container,
// a standby container and an image) and is killed; the next backend opened
// here removes all three at Open, while the sandboxes of backends that are
// open (in this process, and the child's while it lived) stay.
func TestReapEndedOwner(t *testing.T) {
	if os.Getenv("DOCKER_TEST_CHILD") == "1" {
		ctx := context.Background()
		b, err := Open(ctx, sandbox.Options{})
		if err != nil {
			t.Fatal(err)
		}
		sb, err := b.create(ctx, sandbox.Spec{})
		if err != nil {
			t.Fatal(err)
		}
		snap, err := sb.Snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		sb.mu.Lock()
		standby := sb.standby
		sb.mu.Unlock()
		if standby != nil {
			<-standby.ready
		}
		fmt.Printf("ORPHAN %s %s %s\n", b.Owner(), sb.ContainerID(), snap.(*Snapshot).Image())
		os.Stdout.Sync()
		select {} // killed by the parent
	}
	live := openDefault(t)
	keep := create(t, live, sandbox.Spec{})
	ctx := testCtx(t)

	cmd := exec.Command(os.Args[0], "-test.run=^TestReapEndedOwner$")
	cmd.Env = append(os.Environ(), "DOCKER_TEST_CHILD=1")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var owner, ctrID, img string
	_, err = fmt.Fscanf(out, "ORPHAN %s %s %s\n", &owner, &ctrID, &img)
	childOwnersMu.Lock()
	childOwners[owner] = true
	childOwnersMu.Unlock()
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("child: %v", err)
	}
	if owner == live.Owner() {
		t.Errorf("the child has this process's owner %s", owner)
	}
	if alive, known := sandbox.OwnerAlive(owner); !alive || !known {
		t.Errorf("OwnerAlive(%s) while the child runs: %v, %v", owner, alive, known)
	}
	if r := execOK(t, keep, "echo alive"); string(r.Stdout) != "alive\n" {
		t.Errorf("the child's Open touched this process's sandbox: %q", r.Stdout)
	}
	cmd.Process.Kill()
	cmd.Wait()
	if alive, known := sandbox.OwnerAlive(owner); alive || !known {
		t.Errorf("OwnerAlive(%s) after the child was killed: %v, %v", owner, alive, known)
	}
	cli := live.engines[0].cli
	byOwner := make(client.Filters).Add("label", sandbox.LabelOwner+"="+owner)
	cs, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: byOwner})
	if err != nil {
		t.Fatal(err)
	}
	if len(cs.Items) != 2 {
		t.Errorf("the killed child left %d containers, want 2 (the sandbox's and its standby)", len(cs.Items))
	}

	fresh := openDefault(t)
	if _, err := cli.ContainerInspect(ctx, ctrID, client.ContainerInspectOptions{}); !cerrdefs.IsNotFound(err) {
		t.Errorf("the crashed server's container after Open: %v", err)
	}
	if cs, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: byOwner}); err != nil || len(cs.Items) != 0 {
		t.Errorf("the crashed server's containers after Open: %v, %v", cs.Items, err)
	}
	if _, err := cli.ImageInspect(ctx, img); !cerrdefs.IsNotFound(err) {
		t.Errorf("the crashed server's snapshot image after Open: %v", err)
	}
	mine := create(t, fresh, sandbox.Spec{})
	// Two more backends open at once: none reaps the others'.
	third := openDefault(t)
	other := create(t, third, sandbox.Spec{})
	openDefault(t)
	for what, sb := range map[string]*Sandbox{"first": keep, "second": mine, "third": other} {
		if r := execOK(t, sb, "echo alive"); string(r.Stdout) != "alive\n" {
			t.Errorf("the %s backend's sandbox after later Opens: %q", what, r.Stdout)
		}
	}
}

// labelled creates (and does not start) a container carrying owner's
// label on cli, removed when the test ends.
func labelled(t *testing.T, cli *client.Client, owner string) string {
	t.Helper()
	c, err := cli.ContainerCreate(testCtx(t), client.ContainerCreateOptions{
		Config:     &container.Config{Image: DefaultImage, Labels: map[string]string{sandbox.LabelOwner: owner}},
		HostConfig: &container.HostConfig{NetworkMode: "none"},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cli.ContainerRemove(context.Background(), c.ID, client.ContainerRemoveOptions{Force: true})
	})
	return c.ID
}

// TestReapAtOpenOwners: Open removes the containers of an ended owner of
// this host, and keeps those of a live owner, an unknown (explicit) owner
// and another host's ended owner.
func TestReapAtOpenOwners(t *testing.T) {
	needEngine(t)
	ctx := testCtx(t)
	cli, err := NewClient("")
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ended := endedOwner(t)
	gone := labelled(t, cli, ended)
	kept := map[string]string{
		"a live owner":          labelled(t, cli, sandbox.NewOwnerID()),
		"an unknown owner":      labelled(t, cli, testOwnerPrefix+"unknown-"+newID()),
		"another host's owner":  labelled(t, cli, "some-other-host-4194305-12345-deadbeef"),
		"an old-style owner":    labelled(t, cli, "ns"+newID()),
		"the old default owner": labelled(t, cli, "nextstate"),
	}
	openDefault(t)
	if _, err := cli.ContainerInspect(ctx, gone, client.ContainerInspectOptions{}); !cerrdefs.IsNotFound(err) {
		t.Errorf("the ended owner's container after Open: %v", err)
	}
	for what, id := range kept {
		if _, err := cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{}); err != nil {
			t.Errorf("%s's container after Open: %v", what, err)
		}
	}
	// Reap keeps its meaning: one owner's, alive or not.
	b := openBackend(t)
	mine := labelled(t, cli, b.Owner())
	if n, err := b.Reap(ctx, b.Owner()); err != nil || n != 1 {
		t.Errorf("Reap of the backend's own owner: %d, %v", n, err)
	}
	if _, err := cli.ContainerInspect(ctx, mine, client.ContainerInspectOptions{}); !cerrdefs.IsNotFound(err) {
		t.Errorf("Reap left the owner's container: %v", err)
	}
}

package docker

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/nextstate-rl/nextstate/sandbox"
	"github.com/nextstate-rl/nextstate/sandbox/image"
)

// testOwnerPrefix starts the owner of every backend these tests open; each
// test has an owner of its own, so one test's Open does not reap
// another's sandboxes.
const testOwnerPrefix = "nstest-"

// skipReason says why the tests that need an engine skip; "" when they run.
var skipReason string

// childOwners are the owners of the child processes the tests start and
// kill; the leak check looks for their resources too.
var (
	childOwnersMu sync.Mutex
	childOwners   = map[string]bool{}
)

// ownedHere reports whether owner is one the leak check looks for: a test
// owner, a default owner of this process, or a child's.
func ownedHere(owner string) bool {
	if strings.HasPrefix(owner, testOwnerPrefix) {
		return true
	}
	if p := strings.Split(owner, "-"); len(p) >= 4 && p[len(p)-3] == strconv.Itoa(os.Getpid()) {
		if _, known := sandbox.OwnerAlive(owner); known {
			return true
		}
	}
	childOwnersMu.Lock()
	defer childOwnersMu.Unlock()
	return childOwners[owner]
}

// endedOwner returns an owner id of this host whose process has ended
// (its pid lies above any pid_max), as a crashed server's reads.
func endedOwner(t testing.TB) string {
	t.Helper()
	p := strings.Split(sandbox.NewOwnerID(), "-")
	if len(p) < 4 {
		t.Skip("owner ids here are not leases (no /proc)")
	}
	p[len(p)-3] = "4194305"
	owner := strings.Join(p, "-")
	if alive, known := sandbox.OwnerAlive(owner); alive || !known {
		t.Fatalf("OwnerAlive(%s) = %v, %v; want an ended, known owner", owner, alive, known)
	}
	return owner
}

func TestMain(m *testing.M) {
	skipReason = probeEngine()
	code := m.Run()
	if skipReason == "" {
		if left := leftovers(); left != "" {
			fmt.Fprintf(os.Stderr, "FAIL: containers or snapshot images of the tests are left behind: %s\n", left)
			code = 1
		}
	}
	os.Exit(code)
}

func probeEngine() string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cli, err := NewClient("")
	if err != nil {
		return err.Error()
	}
	defer cli.Close()
	if _, err := cli.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		return fmt.Sprintf("no docker engine answers (%v): scripts/deps.sh installs and starts one", err)
	}
	if ok, err := image.Exists(ctx, cli, DefaultImage); err != nil || !ok {
		return fmt.Sprintf("image %s is missing (%v): `nextstate image build` (make image) makes it", DefaultImage, err)
	}
	return ""
}

// leftovers lists containers and snapshot images of any owner of these
// tests (ownedHere), on the default engine.
func leftovers() string {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cli, err := NewClient("")
	if err != nil {
		return err.Error()
	}
	defer cli.Close()
	var out []string
	cs, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: make(client.Filters).Add("label", sandbox.LabelOwner)})
	if err != nil {
		return err.Error()
	}
	for _, c := range cs.Items {
		if ownedHere(c.Labels[sandbox.LabelOwner]) {
			out = append(out, fmt.Sprintf("container %s %v (owner %s)", shortID(c.ID), c.Names, c.Labels[sandbox.LabelOwner]))
		}
	}
	is, err := cli.ImageList(ctx, client.ImageListOptions{Filters: make(client.Filters).Add("label", LabelSnapshot)})
	if err != nil {
		return err.Error()
	}
	for _, im := range is.Items {
		if ownedHere(im.Labels[sandbox.LabelOwner]) {
			out = append(out, fmt.Sprintf("image %s (owner %s)", shortID(im.ID), im.Labels[sandbox.LabelOwner]))
		}
	}
	return strings.Join(out, ", ")
}

func needEngine(t testing.TB) {
	t.Helper()
	if skipReason != "" {
		t.Skip("docker: " + skipReason)
	}
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// openBackend opens a backend with an owner of the test's own, closed when
// the test ends.
func openBackend(t testing.TB, hosts ...string) *Backend {
	t.Helper()
	needEngine(t)
	b, err := Open(testCtx(t), sandbox.Options{Owner: testOwnerPrefix + newID(), Hosts: hosts})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := b.Close(ctx); err != nil {
			t.Errorf("Backend.Close: %v", err)
		}
	})
	return b
}

// openDefault opens a backend with the default owner (a lease on this
// process), closed when the test ends.
func openDefault(t testing.TB, hosts ...string) *Backend {
	t.Helper()
	needEngine(t)
	b, err := Open(testCtx(t), sandbox.Options{Hosts: hosts})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := b.Close(ctx); err != nil {
			t.Errorf("Backend.Close: %v", err)
		}
	})
	return b
}

func create(t testing.TB, b *Backend, spec sandbox.Spec) *Sandbox {
	t.Helper()
	sb, err := b.Create(testCtx(t), spec)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	t.Cleanup(func() { _ = sb.Close(context.Background()) })
	return sb.(*Sandbox)
}

func execOK(t testing.TB, sb sandbox.Sandbox, script string) sandbox.ExecResult {
	t.Helper()
	r, err := sb.Exec(testCtx(t), sandbox.ExecRequest{Script: script})
	if err != nil {
		t.Fatalf("Exec %q: %v", script, err)
	}
	return r
}

// waitFor polls cond until it holds, for at most a minute.
func waitFor(t testing.TB, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for delay := 5 * time.Millisecond; ; delay = min(2*delay, 200*time.Millisecond) {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited a minute for %s; last: %s", what, state)
		}
		time.Sleep(delay)
	}
}

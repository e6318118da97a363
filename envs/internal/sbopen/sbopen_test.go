package sbopen_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/nextstate-rl/nextstate/envs/internal/sbopen"
	"github.com/nextstate-rl/nextstate/gym"
	"github.com/nextstate-rl/nextstate/sandbox"
)

// fake is a backend that records how it was opened and closed.
type fake struct {
	opts   sandbox.Options
	closed int
}

func (f *fake) Name() string { return "sbopen-fake" }
func (f *fake) Create(context.Context, sandbox.Spec) (sandbox.Sandbox, error) {
	return nil, errors.New("fake: no sandboxes")
}
func (f *fake) Reap(context.Context, string) (int, error) { return 0, nil }
func (f *fake) Close(context.Context) error               { f.closed++; return nil }

var (
	openedMu sync.Mutex
	opened   []*fake
)

func init() {
	sandbox.Register("sbopen-fake", func(_ context.Context, opts sandbox.Options) (sandbox.Backend, error) {
		openedMu.Lock()
		defer openedMu.Unlock()
		f := &fake{opts: opts}
		opened = append(opened, f)
		return f, nil
	})
	sandbox.Register("sbopen-missing", func(context.Context, sandbox.Options) (sandbox.Backend, error) {
		return nil, sandbox.ErrUnavailable
	})
}

func TestNameAndOptions(t *testing.T) {
	if n := sbopen.Name(gym.Settings{}); n != "bwrap" {
		t.Errorf("default backend %q, want bwrap", n)
	}
	if n := sbopen.Name(gym.Settings{"sandbox": " docker "}); n != "docker" {
		t.Errorf("backend %q, want docker", n)
	}
	o := sbopen.Options(gym.Settings{"docker.hosts": " unix:///a.sock, ,ssh://b ", "sandbox.owner": "me", "sandbox.dir": "/tmp/x"})
	want := sandbox.Options{Hosts: []string{"unix:///a.sock", "ssh://b"}, Owner: "me", Dir: "/tmp/x"}
	if !slices.Equal(o.Hosts, want.Hosts) || o.Owner != want.Owner || o.Dir != want.Dir {
		t.Errorf("Options = %+v, want %+v", o, want)
	}
	if o := sbopen.Options(gym.Settings{}); o.Hosts != nil || o.Owner != "" || o.Dir != "" {
		t.Errorf("Options of no settings = %+v, want zero", o)
	}
}

func TestOpenErrors(t *testing.T) {
	_, err := sbopen.Open(t.Context(), gym.Settings{"sandbox": "no-such-backend"})
	if err == nil || !strings.Contains(err.Error(), "no-such-backend") || !strings.Contains(err.Error(), "sbopen-fake") {
		t.Errorf("unknown backend: %v; want an error naming it and listing the registered ones", err)
	}
	_, err = sbopen.Open(t.Context(), gym.Settings{"sandbox": "sbopen-missing"})
	if !errors.Is(err, sandbox.ErrUnavailable) || !strings.Contains(err.Error(), "opening the sbopen-missing sandbox") {
		t.Errorf("missing backend: %v; want sandbox.ErrUnavailable, wrapped with the backend's name", err)
	}
}

// The first Acquire opens, later ones share, the last Release closes, after
// the caller's own teardown.
func TestSharedRefcount(t *testing.T) {
	ctx := t.Context()
	sh := &sbopen.Shared{Kind: "test-v1"}
	if b, name := sh.Backend(); b != nil || name != "" {
		t.Fatalf("fresh Shared has backend %v %q", b, name)
	}
	if err := sh.Release(ctx, func(context.Context) error { t.Error("teardown without a reference"); return nil }); err != nil {
		t.Fatal(err)
	}
	s := gym.Settings{"sandbox": "sbopen-fake", "sandbox.owner": "first"}
	b1, first, err := sh.Acquire(ctx, s)
	if err != nil || !first {
		t.Fatalf("first Acquire: %v, first %v", err, first)
	}
	b2, first, err := sh.Acquire(ctx, gym.Settings{"sandbox": "sbopen-fake", "sandbox.owner": "second"})
	if err != nil || first || b2 != b1 {
		t.Fatalf("second Acquire: %v, first %v, same backend %v", err, first, b2 == b1)
	}
	if got := b1.(*fake).opts.Owner; got != "first" {
		t.Errorf("owner %q: the first Acquire's settings hold", got)
	}
	if _, _, err := sh.Acquire(ctx, gym.Settings{"sandbox": "bwrap"}); err == nil ||
		!strings.Contains(err.Error(), "test-v1 is already configured with the sbopen-fake sandbox, not bwrap") {
		t.Errorf("Acquire of another backend: %v", err)
	}
	if sh.Refs() != 2 {
		t.Errorf("%d references, want 2 (a refused Acquire takes none)", sh.Refs())
	}
	teardowns := 0
	teardown := func(context.Context) error { teardowns++; return errors.New("pool: closing") }
	if err := sh.Release(ctx, teardown); err != nil || teardowns != 0 || b1.(*fake).closed != 0 {
		t.Fatalf("first Release: %v; teardowns %d, closes %d; want the backend kept", err, teardowns, b1.(*fake).closed)
	}
	err = sh.Release(ctx, teardown)
	if err == nil || !strings.Contains(err.Error(), "pool: closing") || teardowns != 1 || b1.(*fake).closed != 1 {
		t.Fatalf("last Release: %v; teardowns %d, closes %d; want both run and the teardown's error", err, teardowns, b1.(*fake).closed)
	}
	if b, _ := sh.Backend(); b != nil {
		t.Error("the backend is still held after the last Release")
	}
	// Opened again after the last Release.
	b3, first, err := sh.Acquire(ctx, s)
	if err != nil || !first || b3 == b1 {
		t.Fatalf("Acquire after close: %v, first %v, new backend %v", err, first, b3 != b1)
	}
	if err := sh.Release(ctx, nil); err != nil || b3.(*fake).closed != 1 {
		t.Fatalf("Release with no teardown: %v, closes %d", err, b3.(*fake).closed)
	}
}

func TestSharedOpenFailure(t *testing.T) {
	sh := &sbopen.Shared{}
	_, _, err := sh.Acquire(t.Context(), gym.Settings{"sandbox": "sbopen-missing"})
	if !errors.Is(err, sandbox.ErrUnavailable) {
		t.Fatalf("Acquire: %v", err)
	}
	if sh.Refs() != 0 {
		t.Errorf("a failed Acquire holds %d references", sh.Refs())
	}
}

// Acquire and Release from many goroutines leave the backend closed once.
func TestSharedConcurrent(t *testing.T) {
	ctx := t.Context()
	sh := &sbopen.Shared{Kind: "test-v1"}
	openedMu.Lock()
	before := len(opened)
	openedMu.Unlock()
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			if _, _, err := sh.Acquire(ctx, gym.Settings{"sandbox": "sbopen-fake"}); err != nil {
				t.Error(err)
				return
			}
			if err := sh.Release(ctx, nil); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	openedMu.Lock()
	defer openedMu.Unlock()
	for _, f := range opened[before:] {
		if f.closed != 1 {
			t.Errorf("a backend was closed %d times", f.closed)
		}
	}
	if sh.Refs() != 0 {
		t.Errorf("%d references left", sh.Refs())
	}
}

// valid is a sandbox that only answers IsValid.
type valid struct {
	sandbox.Sandbox
	ok bool
}

func (v valid) IsValid() bool { return v.ok }

// A tool that failed in a live sandbox is the agent's doing; a dead
// sandbox, a deadline and an error already the agent's are not.
func TestAgentBroke(t *testing.T) {
	broken := errors.New("bash: not found")
	for _, c := range []struct {
		name string
		sb   sandbox.Sandbox
		err  error
		want bool
	}{
		{"live sandbox", valid{ok: true}, broken, true},
		{"labelled infra in a live sandbox", valid{ok: true}, gym.InfraFault("no_python", broken), true},
		{"dead sandbox", valid{ok: false}, broken, false},
		{"gone", valid{ok: true}, fmt.Errorf("x: %w", sandbox.ErrGone), false},
		{"closed", valid{ok: true}, sandbox.ErrClosed, false},
		{"deadline", valid{ok: true}, context.DeadlineExceeded, false},
		{"already the agent's", valid{ok: true}, gym.AgentFault("bad_call", broken), false},
		{"no error", valid{ok: true}, nil, false},
		{"no validator", nil, broken, false},
	} {
		if got := sbopen.AgentBroke(c.sb, c.err); got != c.want {
			t.Errorf("%s: AgentBroke %v, want %v", c.name, got, c.want)
		}
	}
}

package sbopen_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/nextstate-rl/nextstate/envs/internal/sbopen"
	"github.com/nextstate-rl/nextstate/gym"
	"github.com/nextstate-rl/nextstate/sandbox"
	"github.com/nextstate-rl/nextstate/sandbox/pool"
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

func init() {
	sandbox.Register("sbopen-fake", func(_ context.Context, opts sandbox.Options) (sandbox.Backend, error) {
		return &fake{opts: opts}, nil
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

// Each Open opens a backend of its own, with its own settings (one per
// Manager's instance of a kind), and Sandboxes.Close closes that one only.
func TestOpenPerManager(t *testing.T) {
	ctx := t.Context()
	open := func(owner string) *sbopen.Sandboxes {
		t.Helper()
		s := gym.Settings{"sandbox": "sbopen-fake", "sandbox.owner": owner}
		b, err := sbopen.Open(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		return &sbopen.Sandboxes{Backend: b, Name: sbopen.Name(s)}
	}
	first, second := open("first"), open("second")
	f1, f2 := first.Backend.(*fake), second.Backend.(*fake)
	if f1 == f2 || f1.opts.Owner != "first" || f2.opts.Owner != "second" {
		t.Fatalf("owners %q and %q of backends shared %v; want one backend per Open, each with its settings",
			f1.opts.Owner, f2.opts.Owner, f1 == f2)
	}
	if err := first.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if f1.closed != 1 || f2.closed != 0 {
		t.Errorf("closes %d and %d; want the first backend's only", f1.closed, f2.closed)
	}
	// With a pool: the pool closes, then the backend.
	second.Pool = pool.New(second.Backend, pool.Options{})
	if err := second.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if f2.closed != 1 {
		t.Errorf("the second backend closed %d times, want once", f2.closed)
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

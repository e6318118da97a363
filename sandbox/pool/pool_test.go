package pool_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nextstate-rl/nextstate/sandbox"
	"github.com/nextstate-rl/nextstate/sandbox/pool"
)

// fake is a Backend whose sandboxes do nothing; creates can be held at a
// gate to observe concurrency.
type fake struct {
	gate     chan struct{} // nil: creates pass at once
	fail     atomic.Bool
	mu       sync.Mutex
	made     []*fakeSB
	running  int
	maxAtMax int
}

func (f *fake) Name() string                              { return "fake" }
func (f *fake) Reap(context.Context, string) (int, error) { return 0, nil }
func (f *fake) Close(context.Context) error               { return nil }
func (f *fake) Create(ctx context.Context, spec sandbox.Spec) (sandbox.Sandbox, error) {
	f.mu.Lock()
	f.running++
	f.maxAtMax = max(f.maxAtMax, f.running)
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.running--
		f.mu.Unlock()
	}()
	if f.gate != nil {
		select {
		case <-f.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if f.fail.Load() {
		return nil, errors.New("create failed")
	}
	f.mu.Lock()
	sb := &fakeSB{id: fmt.Sprint("sb", len(f.made)), labels: maps.Clone(spec.Labels)}
	sb.valid.Store(true)
	f.made = append(f.made, sb)
	f.mu.Unlock()
	return sb, nil
}

func (f *fake) all() []*fakeSB {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*fakeSB(nil), f.made...)
}

type fakeSB struct {
	id     string
	mu     sync.Mutex
	labels map[string]string
	closed atomic.Int32
	valid  atomic.Bool
}

func (s *fakeSB) ID() string { return s.id }
func (s *fakeSB) Exec(context.Context, sandbox.ExecRequest) (sandbox.ExecResult, error) {
	return sandbox.ExecResult{}, nil
}
func (s *fakeSB) Start(context.Context, sandbox.StartRequest) (sandbox.Process, error) {
	return nil, errors.ErrUnsupported
}
func (s *fakeSB) CopyIn(context.Context, string, io.Reader) error { return nil }
func (s *fakeSB) CopyOut(context.Context, string) (io.ReadCloser, error) {
	return nil, errors.ErrUnsupported
}
func (s *fakeSB) Close(context.Context) error { s.closed.Add(1); return nil }
func (s *fakeSB) IsValid() bool               { return s.valid.Load() }
func (s *fakeSB) SetLabels(_ context.Context, l map[string]string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.labels = sandbox.MergeLabels(s.labels, l)
	return nil
}
func (s *fakeSB) label(k string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.labels[k]
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited a minute for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestMissThenHit(t *testing.T) {
	f := &fake{}
	p := pool.New(f, pool.Options{Size: 2})
	defer p.Close(context.Background())
	ctx := context.Background()
	spec := sandbox.Spec{Image: "img", Labels: map[string]string{sandbox.LabelSession: "s1", "task": "x"}}
	sb, err := p.Acquire(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if st := p.Stats(); st.Misses != 1 || st.Hits != 0 {
		t.Errorf("first Acquire: %+v", st)
	}
	if got := sb.(*fakeSB).label(sandbox.LabelSession); got != "s1" {
		t.Errorf("created sandbox session label %q", got)
	}
	waitFor(t, "2 idle", func() bool { return p.Stats().Idle == 2 })
	for _, s := range f.all() {
		if s == sb.(*fakeSB) {
			continue
		}
		if s.label(sandbox.LabelPool) == "" || s.label(sandbox.LabelSession) != "" || s.label("task") != "x" {
			t.Errorf("idle sandbox labels %v", s.labels)
		}
	}
	// Another session, same spec otherwise: a hit, relabelled.
	spec.Labels = map[string]string{sandbox.LabelSession: "s2", "task": "x"}
	sb2, err := p.Acquire(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	w := sb2.(*fakeSB)
	if w == sb.(*fakeSB) || w.label(sandbox.LabelPool) != "" || w.label(sandbox.LabelSession) != "s2" {
		t.Errorf("warm sandbox labels %v", w.labels)
	}
	if st := p.Stats(); st.Hits != 1 || st.Misses != 1 {
		t.Errorf("stats %+v", st)
	}
	waitFor(t, "refilled to 2", func() bool { return p.Stats().Idle == 2 })
	// A different spec is a miss.
	if _, err := p.Acquire(ctx, sandbox.Spec{Image: "other"}); err != nil {
		t.Fatal(err)
	}
	if st := p.Stats(); st.Misses != 2 {
		t.Errorf("stats %+v", st)
	}
}

func TestBoundedRefill(t *testing.T) {
	f := &fake{gate: make(chan struct{})}
	p := pool.New(f, pool.Options{Size: 6, MaxCreating: 2, Specs: []sandbox.Spec{{Image: "a"}, {Image: "b"}}})
	defer p.Close(context.Background())
	waitFor(t, "2 creates under way", func() bool { return p.Stats().Creating == 2 })
	for range 12 {
		f.gate <- struct{}{}
	}
	waitFor(t, "12 idle", func() bool { return p.Stats().Idle == 12 })
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.maxAtMax > 2 {
		t.Errorf("%d creates at once, MaxCreating 2", f.maxAtMax)
	}
}

func TestCloseDrains(t *testing.T) {
	f := &fake{gate: make(chan struct{})}
	p := pool.New(f, pool.Options{Size: 3, MaxCreating: 3, Specs: []sandbox.Spec{{}}})
	f.gate <- struct{}{}
	f.gate <- struct{}{}
	waitFor(t, "2 idle", func() bool { return p.Stats().Idle == 2 })
	// The third create is held at the gate: Close cancels it.
	if err := p.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, s := range f.all() {
		if s.closed.Load() != 1 {
			t.Errorf("%s closed %d times", s.id, s.closed.Load())
		}
	}
	if len(f.all()) != 2 {
		t.Errorf("%d made", len(f.all()))
	}
	if _, err := p.Acquire(context.Background(), sandbox.Spec{}); !errors.Is(err, sandbox.ErrClosed) {
		t.Errorf("Acquire after Close: %v", err)
	}
	if err := p.Close(context.Background()); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestInvalidDiscarded(t *testing.T) {
	f := &fake{}
	p := pool.New(f, pool.Options{Size: 2, Specs: []sandbox.Spec{{}}})
	defer p.Close(context.Background())
	waitFor(t, "2 idle", func() bool { return p.Stats().Idle == 2 })
	for _, s := range f.all() {
		s.valid.Store(false)
	}
	sb, err := p.Acquire(context.Background(), sandbox.Spec{})
	if err != nil {
		t.Fatal(err)
	}
	if !sb.(*fakeSB).IsValid() {
		t.Error("handed out an invalid sandbox")
	}
	st := p.Stats()
	if st.Discarded != 2 || st.Misses+st.Hits != 1 {
		t.Errorf("stats %+v", st)
	}
	waitFor(t, "the discarded closed", func() bool {
		n := 0
		for _, s := range f.all() {
			n += int(s.closed.Load())
		}
		return n == 2
	})
}

func TestFailingBackendBacksOff(t *testing.T) {
	f := &fake{}
	f.fail.Store(true)
	p := pool.New(f, pool.Options{Size: 2, Specs: []sandbox.Spec{{}}})
	defer p.Close(context.Background())
	waitFor(t, "a failed create", func() bool { return p.Stats().Failed >= 1 })
	if _, err := p.Acquire(context.Background(), sandbox.Spec{}); err == nil {
		t.Error("Acquire from a failing backend: no error")
	}
	f.fail.Store(false)
	waitFor(t, "recovery after the backoff", func() bool { return p.Stats().Idle == 2 })
}

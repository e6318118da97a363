// Package pool keeps warm sandboxes: for each Spec it has seen (by
// sandbox.SpecKey), a Pool keeps Size sandboxes created ahead, so that
// Acquire hands one out at once instead of waiting for a start, and
// refills in the background. It works with any sandbox.Backend.
//
// A sandbox waits in the pool with the label sandbox.LabelPool set. When
// Acquire hands it out, the OnAcquire hook runs; the default removes
// LabelPool and sets LabelSession from the Spec's labels through
// sandbox.Labeler, where the sandbox implements it. Idle sandboxes that
// implement sandbox.Validator and report themselves invalid (killed from
// outside while they waited) are discarded, not handed out.
//
// One goroutine per Pool, started by New and stopped by Close, decides
// what to refill; creates run in goroutines it owns, at most MaxCreating
// at once across all specs, and a failed create waits (doubling up to a
// minute) before that spec is tried again. Close stops refilling, cancels
// the creates under way, waits for them and closes every idle sandbox;
// sandboxes already handed out are the caller's to close.
//
// A Pool is safe for concurrent use.
package pool

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nextstate-rl/nextstate/sandbox"
)

// Options configure a Pool. Zero values mean the stated defaults.
type Options struct {
	// Size is the number of idle sandboxes kept per spec. Default 4.
	Size int
	// MaxCreating bounds the creates under way at once, across specs.
	// Default 2.
	MaxCreating int
	// Specs are warmed from New on; other specs are warmed from their
	// first Acquire on.
	Specs []sandbox.Spec
	// OnAcquire prepares a warm sandbox for the spec it is handed out
	// for. Default: relabel through sandbox.Labeler (LabelPool removed,
	// LabelSession set from spec.Labels). An error closes the sandbox and
	// Acquire creates a fresh one instead.
	OnAcquire func(ctx context.Context, sb sandbox.Sandbox, spec sandbox.Spec) error
}

// Stats are a Pool's counters.
type Stats struct {
	Hits      int64 `json:"hits"`      // Acquires served by a warm sandbox
	Misses    int64 `json:"misses"`    // Acquires that created one
	Created   int64 `json:"created"`   // sandboxes created by refills
	Failed    int64 `json:"failed"`    // refill creates that failed
	Discarded int64 `json:"discarded"` // idle sandboxes found invalid or refused by OnAcquire
	Idle      int   `json:"idle"`      // idle sandboxes now, all specs
	Creating  int   `json:"creating"`  // refill creates under way
}

// Pool is a warm pool over one Backend.
type Pool struct {
	b    sandbox.Backend
	opts Options

	ctx    context.Context // canceled by Close: ends creates under way
	cancel context.CancelFunc
	kick   chan struct{} // wakes the refill loop; capacity 1
	sem    chan struct{} // creates under way
	wg     sync.WaitGroup

	mu     sync.Mutex
	closed bool
	specs  map[string]*entry

	hits, misses, created, failed, discarded atomic.Int64
}

type entry struct {
	spec     sandbox.Spec // labelled for the pool
	idle     []sandbox.Sandbox
	creating int
	backoff  time.Duration // after a failed create
	retry    time.Time     // no create before
}

// New starts a pool over b.
func New(b sandbox.Backend, opts Options) *Pool {
	if opts.Size <= 0 {
		opts.Size = 4
	}
	if opts.MaxCreating <= 0 {
		opts.MaxCreating = 2
	}
	if opts.OnAcquire == nil {
		opts.OnAcquire = Relabel
	}
	p := &Pool{b: b, opts: opts, kick: make(chan struct{}, 1), sem: make(chan struct{}, opts.MaxCreating), specs: map[string]*entry{}}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	for _, s := range opts.Specs {
		p.entryLocked(s)
	}
	p.wg.Add(1)
	go p.loop()
	p.wake()
	return p
}

// Relabel is the default OnAcquire: it removes LabelPool and sets
// LabelSession (when spec has one) on a sandbox that implements
// sandbox.Labeler.
func Relabel(ctx context.Context, sb sandbox.Sandbox, spec sandbox.Spec) error {
	l, ok := sb.(sandbox.Labeler)
	if !ok {
		return nil
	}
	return l.SetLabels(ctx, map[string]string{sandbox.LabelPool: "", sandbox.LabelSession: spec.Labels[sandbox.LabelSession]})
}

// Warm makes the pool keep sandboxes of spec ready from now on.
func (p *Pool) Warm(spec sandbox.Spec) {
	p.mu.Lock()
	p.entryLocked(spec)
	p.mu.Unlock()
	p.wake()
}

func (p *Pool) entryLocked(spec sandbox.Spec) *entry {
	k := sandbox.SpecKey(spec)
	e := p.specs[k]
	if e == nil {
		ps := spec
		ps.Labels = maps.Clone(spec.Labels)
		if ps.Labels == nil {
			ps.Labels = map[string]string{}
		}
		delete(ps.Labels, sandbox.LabelSession)
		ps.Labels[sandbox.LabelPool] = "idle"
		e = &entry{spec: ps}
		p.specs[k] = e
	}
	return e
}

// Acquire returns a sandbox for spec: a warm one at once when the pool has
// one, otherwise a new one from the Backend (and the pool starts keeping
// sandboxes of spec warm). The caller owns it and closes it.
func (p *Pool) Acquire(ctx context.Context, spec sandbox.Spec) (sandbox.Sandbox, error) {
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return nil, fmt.Errorf("pool: %w", sandbox.ErrClosed)
		}
		e := p.entryLocked(spec)
		var sb sandbox.Sandbox
		if len(e.idle) > 0 {
			sb = e.idle[0]
			e.idle = e.idle[1:]
		}
		p.mu.Unlock()
		p.wake()
		if sb == nil {
			p.misses.Add(1)
			return p.b.Create(ctx, spec)
		}
		if v, ok := sb.(sandbox.Validator); ok && !v.IsValid() {
			p.discard(sb)
			continue
		}
		if err := p.opts.OnAcquire(ctx, sb, spec); err != nil {
			p.discard(sb)
			continue
		}
		p.hits.Add(1)
		return sb, nil
	}
}

// discard closes an idle sandbox that is no use, in the background.
func (p *Pool) discard(sb sandbox.Sandbox) {
	p.discarded.Add(1)
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.goLocked(func() { closeQuietly(sb) }) {
		closeQuietly(sb)
	}
}

func closeQuietly(sb sandbox.Sandbox) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_ = sb.Close(ctx)
}

// goLocked runs f in a goroutine the pool waits for in Close; false once
// the pool is closed. p.mu must be held.
func (p *Pool) goLocked(f func()) bool {
	if p.closed {
		return false
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		f()
	}()
	return true
}

func (p *Pool) wake() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// loop is the refill goroutine.
func (p *Pool) loop() {
	defer p.wg.Done()
	for {
		select {
		case <-p.ctx.Done():
			return
		case <-p.kick:
		}
		p.fill()
	}
}

// fill starts the creates the specs need, as far as MaxCreating allows.
func (p *Pool) fill() {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	for _, e := range p.specs {
		if now.Before(e.retry) {
			continue
		}
		for len(e.idle)+e.creating < p.opts.Size {
			select {
			case p.sem <- struct{}{}:
			default:
				return // at MaxCreating: a finishing create wakes the loop
			}
			e.creating++
			if !p.goLocked(func() { p.create(e) }) {
				<-p.sem
				e.creating--
				return
			}
		}
	}
}

// create makes one sandbox for e.
func (p *Pool) create(e *entry) {
	sb, err := p.b.Create(p.ctx, e.spec)
	<-p.sem
	p.mu.Lock()
	e.creating--
	closed := p.closed
	var wait time.Duration
	if err == nil && !closed {
		e.idle = append(e.idle, sb)
		e.backoff = 0
		p.created.Add(1)
	} else if err != nil && !closed {
		p.failed.Add(1)
		e.backoff = min(max(2*e.backoff, 100*time.Millisecond), time.Minute)
		e.retry = time.Now().Add(e.backoff)
		wait = e.backoff
	}
	p.mu.Unlock()
	if err == nil && closed {
		closeQuietly(sb)
		return
	}
	if wait > 0 {
		// Wake the loop when the backoff is over.
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-t.C:
		case <-p.ctx.Done():
			return
		}
	}
	p.wake()
}

// Stats returns the pool's counters.
func (p *Pool) Stats() Stats {
	p.mu.Lock()
	idle, creating := 0, 0
	for _, e := range p.specs {
		idle += len(e.idle)
		creating += e.creating
	}
	p.mu.Unlock()
	return Stats{
		Hits: p.hits.Load(), Misses: p.misses.Load(), Created: p.created.Load(),
		Failed: p.failed.Load(), Discarded: p.discarded.Load(), Idle: idle, Creating: creating,
	}
}

// Close stops refilling, waits for the creates under way (canceled) and
// closes every idle sandbox. Idempotent. ctx bounds the closes.
func (p *Pool) Close(ctx context.Context) error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.cancel()
	p.mu.Unlock()
	p.wg.Wait()
	p.mu.Lock()
	var idle []sandbox.Sandbox
	for _, e := range p.specs {
		idle = append(idle, e.idle...)
		e.idle = nil
	}
	p.mu.Unlock()
	errs := make([]error, len(idle))
	var wg sync.WaitGroup
	for i, sb := range idle {
		wg.Add(1)
		go func() { // waited for just below
			defer wg.Done()
			errs[i] = sb.Close(ctx)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

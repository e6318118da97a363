package server

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/nextstate-rl/nextstate/gym"
	"github.com/nextstate-rl/nextstate/wire"
)

// What a component mounted in the server (Mount) may use besides its
// Manager and Store: stepping a session as a request of the server's, the
// events the store commits, and the start of Shutdown. Package mcp is such
// a component.

// Step runs one session.step as the server runs one from a WebSocket or
// HTTP client (a retried step id answered from the record included),
// counted among the requests in flight that Shutdown drains and in the
// request metrics under transport ("mcp", say). The answer is the agent's:
// its info has no verifier details.
func (s *Server) Step(ctx context.Context, transport string, p wire.StepParams) (gym.StepResult, *wire.Error) {
	start := time.Now()
	s.requests.add()
	res, werr := s.step(ctx, p)
	s.requests.done()
	s.metrics.request(wire.MethodSessionStep, transport, start, werr)
	if werr != nil {
		return gym.StepResult{}, werr
	}
	return res.(gym.StepResult), nil
}

// Subscribe calls f with every event the store commits from now on whose
// type is one of types (any type if none), in its public form
// (gym.Event.Public), in seq order, until stop is called; no call starts
// after stop has returned. f runs on the store's writer goroutine before
// the commit's Appends return, as the broker's deliveries to
// events.subscribe do: it must not block or call into the server, only
// hand the event on. It may keep ev.
func (s *Server) Subscribe(types []gym.EventType, f func(ev *gym.Event)) (stop func()) {
	return s.broker.funcs.add(&funcSub{p: wire.SubscribeParams{Types: types}, f: f})
}

// RegisterOnShutdown registers f to be called when Shutdown starts, as
// net/http's Server.RegisterOnShutdown: f should tell the component's
// long-lived requests (streams) to end, and return without waiting for
// them. Mount's close is where the component waits.
func (s *Server) RegisterOnShutdown(f func()) { s.http.RegisterOnShutdown(f) }

// funcSubs are the broker's in-process subscribers (Server.Subscribe).
type funcSubs struct {
	mu   sync.RWMutex
	subs map[*funcSub]struct{}
}

// funcSub is one Server.Subscribe.
type funcSub struct {
	p wire.SubscribeParams // Types only

	mu sync.Mutex
	f  func(*gym.Event) // nil once stopped
}

func (fs *funcSubs) add(sub *funcSub) (stop func()) {
	fs.mu.Lock()
	if fs.subs == nil {
		fs.subs = map[*funcSub]struct{}{}
	}
	fs.subs[sub] = struct{}{}
	fs.mu.Unlock()
	return func() {
		fs.mu.Lock()
		delete(fs.subs, sub)
		fs.mu.Unlock()
		sub.mu.Lock() // waits for a call under way
		sub.f = nil
		sub.mu.Unlock()
	}
}

// publish hands a commit's events to the in-process subscribers.
func (fs *funcSubs) publish(evs []*gym.Event) {
	fs.mu.RLock()
	subs := slices.Collect(maps.Keys(fs.subs))
	fs.mu.RUnlock()
	for _, sub := range subs {
		sub.mu.Lock()
		for _, ev := range evs {
			if sub.f != nil && matches(&sub.p, ev) {
				pub := ev.Public()
				sub.f(&pub)
			}
		}
		sub.mu.Unlock()
	}
}

// Package mcp serves nextstate sessions over the Model Context Protocol:
// the endpoint /v1/sessions/{id}/mcp serves the tools of one session
// (those its latest reset lists in info "tools", in the OpenAI shape) over
// MCP's streamable HTTP transport, so that an agent that speaks MCP can act
// in an episode without knowing nextstate's own protocol. tools/call is one
// session.step with one tool_call part, run by the server's own step code
// (Server.Step): the same events, store records, rewards and metrics as a
// step over WebSocket or HTTP. What it shows the agent comes from events in
// their public form (gym.Event.Public): the step's answer, and the reset
// events it reads its tools from. docs/protocol.md, section MCP, is the
// contract.
//
// A Hub is mounted in a nextstate server, which it reaches through the
// small Server interface (*server.Server is one):
//
//	hub := mcp.New(srv, mcp.Config{SessionTimeout: idleTTL, Version: server.Version, Logger: log})
//	srv.Mount([]string{mcp.Pattern}, hub, hub.Close)
//
// The Hub keeps one MCP server (an SDK Server and its HTTP handler) per
// gym session that has been addressed over MCP. While any is cached it
// follows the resets and closes the store commits (Server.Subscribe): a
// goroutine of its own applies them, so a reset through the gym API changes
// the MCP tool list and connected clients get
// notifications/tools/list_changed, and a session's close closes its MCP
// sessions (which ends their streams and goroutines) and drops its MCP
// server. tools/list also reads the store itself, so a client that lists
// after a reset never sees stale tools. MCP sessions are closed once the
// requests being answered on them (other than their GET streams) have
// been: a call whose step closed the session still gets its answer.
//
// At shutdown (told by Server.RegisterOnShutdown) the Hub turns new
// requests away and closes every MCP session, so that no hanging stream
// holds up the server's drain; Close, which Mount calls later, waits for
// the Hub's goroutine. A Hub is safe for concurrent use.
package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/nextstate-rl/nextstate/gym"
	"github.com/nextstate-rl/nextstate/store"
	"github.com/nextstate-rl/nextstate/wire"
)

// Pattern is the route a Hub answers (a net/http.ServeMux pattern), for
// Server.Mount.
const Pattern = "/v1/sessions/{id}/mcp"

// maxSessions caps the MCP sessions (initialized clients) one gym session
// may have at once.
const maxSessions = 16

// maxQueued caps the committed events the Hub holds before it applies
// them; past it, it reads what it missed back from the store.
const maxQueued = 10000

// Server is what a Hub needs of the nextstate server it is mounted in;
// *server.Server is one.
type Server interface {
	// Manager holds the live sessions.
	Manager() *gym.Manager
	// Store holds the reset events the tools come from.
	Store() *store.Store
	// Step runs a session.step as the server's own requests do.
	Step(ctx context.Context, transport string, p wire.StepParams) (gym.StepResult, *wire.Error)
	// Subscribe calls f with the committed events of the given types,
	// in their public form, from the store's writer goroutine.
	Subscribe(types []gym.EventType, f func(ev *gym.Event)) (stop func())
	// RegisterOnShutdown calls f when the server starts to shut down.
	RegisterOnShutdown(f func())
}

// Config configures a Hub. The zero value works.
type Config struct {
	// MaxBodyBytes caps a request body. Default wire.MaxFrameBytes, the
	// server's default MaxFrameBytes.
	MaxBodyBytes int
	// SessionTimeout closes an MCP session that had no request for this
	// long. Default 10 minutes, the gym's default idle TTL.
	SessionTimeout time.Duration
	// Version is the serverInfo version that initialize answers. Default
	// "dev".
	Version string
	// Logger; nil means slog.Default().
	Logger *slog.Logger
}

// Hub serves Pattern. Lock order: Hub.mu, then entry.mu; entry.mu is
// never held while taking Hub.mu.
type Hub struct {
	srv Server
	cfg Config
	log *slog.Logger

	mu      sync.Mutex
	entries map[string]*entry // by gym session id
	follow  *follower         // set while any entry is cached
	closed  bool              // the server is shutting down
	quit    chan struct{}     // closed at shutdown; stops the follower
	work    sync.WaitGroup    // the follower's goroutine
}

// follower is a Hub's subscription to committed resets and closes, and the
// queue its goroutine applies them from.
type follower struct {
	stop func()        // ends the subscription
	wake chan struct{} // one pending wake-up

	mu    sync.Mutex
	queue []*gym.Event
	lost  bool // the queue overflowed: read the store again
}

// New returns a Hub that serves srv's sessions; mount it at Pattern, with
// Close as its close.
func New(srv Server, cfg Config) *Hub {
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = wire.MaxFrameBytes
	}
	if cfg.SessionTimeout <= 0 {
		cfg.SessionTimeout = 10 * time.Minute
	}
	if cfg.Version == "" {
		cfg.Version = "dev"
	}
	h := &Hub{srv: srv, cfg: cfg, log: cfg.Logger, entries: map[string]*entry{}, quit: make(chan struct{})}
	if h.log == nil {
		h.log = slog.Default()
	}
	srv.RegisterOnShutdown(h.shutdown)
	return h
}

// ServeHTTP answers a request to a session's MCP endpoint. Mount puts the
// server's bearer token check in front of it.
func (h *Hub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	closed := h.closed
	h.mu.Unlock()
	if closed {
		h.httpError(w, r, wire.FromError(gym.ErrDraining))
		return
	}
	id := r.PathValue("id")
	sess, err := h.srv.Manager().Get(id)
	if err != nil {
		if e := h.remove(id, nil); e != nil {
			e.close()
		}
		h.httpError(w, r, wire.FromError(err))
		return
	}
	e, werr := h.entry(r.Context(), sess)
	if werr != nil {
		h.httpError(w, r, werr)
		return
	}
	if r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") == "" && e.sessions() >= maxSessions {
		h.httpError(w, r, &wire.Error{Code: wire.CodeOverCapacity, Data: &wire.ErrorData{RetryAfterMS: 1000},
			Message: fmt.Sprintf("session %s already has %d MCP sessions, the most it may have: close one (DELETE with its Mcp-Session-Id header) or reuse it", id, maxSessions)})
		return
	}
	stream := r.Method == http.MethodGet
	if !stream {
		e.begin()
	}
	e.handler.ServeHTTP(w, r)
	if !stream {
		e.end()
	}
	// This request may have initialized an MCP session after the entry's
	// sessions were closed, or been the last one answered of a closed
	// entry: close what is left.
	e.closeIfDone()
}

// httpError answers a request the MCP server never saw: a JSON-RPC
// error response with the code's HTTP status, and the id of the request
// the body holds (null if none). Its "error" is the HTTP mirror's, so
// clients of either read it alike.
func (h *Hub) httpError(w http.ResponseWriter, r *http.Request, e *wire.Error) {
	id := json.RawMessage("null")
	if r.Method == http.MethodPost && r.Body != nil {
		var req struct{ ID json.RawMessage }
		b, _ := io.ReadAll(io.LimitReader(r.Body, int64(h.cfg.MaxBodyBytes)))
		if json.Unmarshal(b, &req) == nil && len(req.ID) > 0 && (req.ID[0] == '"' || req.ID[0] == '-' || (req.ID[0] >= '0' && req.ID[0] <= '9')) {
			id = req.ID
		}
	}
	if e.Data != nil && e.Data.RetryAfterMS > 0 {
		w.Header().Set("Retry-After", strconv.FormatInt((e.Data.RetryAfterMS+999)/1000, 10))
	}
	b, _ := json.Marshal(wire.Response{JSONRPC: "2.0", ID: id, Error: e})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.HTTPStatus())
	w.Write(append(b, '\n'))
}

// entry returns the cached MCP server of sess, making it on first use.
// While any entry is cached the follower runs: it is started with the
// first one, and it closes every entry at shutdown.
func (h *Hub) entry(ctx context.Context, sess *gym.Session) (*entry, *wire.Error) {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil, wire.FromError(gym.ErrDraining)
	}
	if e := h.entries[sess.ID]; e != nil {
		h.mu.Unlock()
		return e, nil
	}
	if h.follow == nil {
		h.startFollower()
	}
	e := newEntry(h, sess)
	e.mu.Lock() // until the first sync: requests to it wait for its tools
	h.entries[sess.ID] = e
	h.mu.Unlock()
	// The session may have closed before the follower saw its close (a
	// close is recorded after the session has left the Manager).
	if live, err := h.srv.Manager().Get(sess.ID); err != nil || live != sess {
		e.mu.Unlock()
		if h.remove(sess.ID, e) != nil {
			e.close()
		}
		return nil, wire.FromError(fmt.Errorf("%w %q: it was closed", gym.ErrUnknownSession, sess.ID))
	}
	err := e.syncLocked(ctx)
	e.mu.Unlock()
	if err != nil {
		if h.remove(sess.ID, e) != nil {
			e.close()
		}
		return nil, wire.FromError(gym.InfraFault("store", fmt.Errorf("reading the session's tools: %w", err)))
	}
	return e, nil
}

// startFollower subscribes to resets and closes and starts the goroutine
// that applies them. h.mu is held and the Hub is not closed.
func (h *Hub) startFollower() {
	f := &follower{wake: make(chan struct{}, 1)}
	f.stop = h.srv.Subscribe([]gym.EventType{gym.EventReset, gym.EventSessionClosed}, f.offer)
	h.follow = f
	h.work.Add(1)
	go func() {
		defer h.work.Done()
		h.run(f)
	}()
}

// offer queues a committed event; it runs on the store's writer goroutine
// and never blocks.
func (f *follower) offer(ev *gym.Event) {
	f.mu.Lock()
	if len(f.queue) < maxQueued {
		f.queue = append(f.queue, ev)
	} else {
		f.lost = true
	}
	f.mu.Unlock()
	f.nudge()
}

func (f *follower) nudge() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

func (f *follower) take() (evs []*gym.Event, lost bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	evs, lost = f.queue, f.lost
	f.queue, f.lost = nil, false
	return evs, lost
}

// run is the follower's goroutine. It returns once no entry is left, or
// at shutdown after closing every entry.
func (h *Hub) run(f *follower) {
	defer f.stop()
	for {
		select {
		case <-h.quit:
			h.mu.Lock()
			entries := h.entries
			h.entries = map[string]*entry{}
			h.follow = nil
			h.mu.Unlock()
			var wg sync.WaitGroup
			for _, e := range entries {
				wg.Go(e.close)
			}
			wg.Wait()
			return
		case <-f.wake:
		}
		if evs, lost := f.take(); lost {
			h.resync()
		} else {
			for _, ev := range evs {
				h.apply(ev)
			}
		}
		h.mu.Lock()
		idle := len(h.entries) == 0
		if idle {
			h.follow = nil
		}
		h.mu.Unlock()
		if idle {
			return
		}
	}
}

// apply serves a committed reset's tools, or closes a closed session's
// entry.
func (h *Hub) apply(ev *gym.Event) {
	h.mu.Lock()
	e := h.entries[ev.Session]
	h.mu.Unlock()
	if e == nil {
		return
	}
	switch ev.Type {
	case gym.EventReset:
		e.mu.Lock()
		e.apply(ev)
		e.mu.Unlock()
	case gym.EventSessionClosed:
		if h.remove(ev.Session, e) != nil {
			e.close()
		}
	}
}

// resync is apply for events the follower did not keep: it drops the
// entries of sessions no longer live and reads each other's resets from
// the store.
func (h *Hub) resync() {
	h.mu.Lock()
	entries := make([]*entry, 0, len(h.entries))
	for _, e := range h.entries {
		entries = append(entries, e)
	}
	h.mu.Unlock()
	for _, e := range entries {
		if live, err := h.srv.Manager().Get(e.sess.ID); err != nil || live != e.sess {
			if h.remove(e.sess.ID, e) != nil {
				e.close()
			}
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		e.mu.Lock()
		err := e.syncLocked(ctx)
		e.mu.Unlock()
		cancel()
		if err != nil {
			h.log.Warn("mcp: reading resets from the store", "session", e.sess.ID, "err", err)
		}
	}
}

// remove takes the entry of id out of the cache and returns it; with want
// set, only if it is that entry. The follower is told, so that it stops
// once no entry is left.
func (h *Hub) remove(id string, want *entry) *entry {
	h.mu.Lock()
	defer h.mu.Unlock()
	e := h.entries[id]
	if e == nil || (want != nil && e != want) {
		return nil
	}
	delete(h.entries, id)
	if len(h.entries) == 0 && h.follow != nil {
		h.follow.nudge()
	}
	return e
}

// cached returns the number of cached MCP servers.
func (h *Hub) cached() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.entries)
}

// shutdown is the server's shutdown hook: from now on MCP requests are
// turned away, and the follower closes every MCP session.
func (h *Hub) shutdown() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.closed {
		h.closed = true
		close(h.quit)
	}
}

// Close turns requests away, closes every MCP session (as the shutdown
// hook does, if it has not) and waits, no longer than ctx, for the Hub's
// goroutine. It is Mount's close, run after the server's HTTP requests
// have ended.
func (h *Hub) Close(ctx context.Context) error {
	h.shutdown()
	done := make(chan struct{})
	go func() {
		h.work.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("mcp: closing the MCP sessions: %w", ctx.Err())
	}
}

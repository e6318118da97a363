// Package server serves nextstate's API: JSON-RPC 2.0 over WebSocket at
// /v1/ws, the same methods over plain HTTP under /v1/, /healthz and
// Prometheus /metrics, all on one listener. It wires the gym's session
// Manager to the trajectory store and to live event subscribers, and knows
// env kinds only by the names they registered with gym.
//
// A Server owns everything it starts: the store, the Manager (and so every
// env), each connection's reader goroutine, the workers shared by the
// connections (pool.go) that run requests and write responses, and the
// handlers of requests in flight. Shutdown stops admitting, lets requests in flight
// finish, closes WebSockets with a close frame, closes every session (and so
// every env) and flushes the store, all bounded by its ctx.
//
// Components that live in the server's process are mounted with Mount
// (cmd/nextstate mounts package mcp's Hub and package proxy): they answer
// routes of their own behind the server's token, and may step sessions as
// the server's own requests do (Step), follow the committed events
// (Subscribe) and learn when Shutdown starts (RegisterOnShutdown); see
// mounted.go.
//
// What agents read back is filtered in one place: every stored event the
// server sends or hands on (session.resume, events.subscribe replayed and
// live, GET /v1/events and /v1/sessions/{id}/events, Subscribe's events,
// which MCP reads its tools from, a replayed step's answer) is the event's
// gym.Event.Public form, so
// that no agent sees the verifier's details (expected answers, hidden
// tests) and replays them after a reset. The store keeps them for trainers
// (`nextstate export --with-verifier`). A server that starts on a store
// with sessions no server closed (its predecessor crashed or was killed)
// records their close, reason gym.CloseServerRestart, before it admits a
// session (restart.go). Frames and bodies must be UTF-8 JSON nested at most
// 10000 levels deep; others are refused with a -32700 that says which.
//
// Off the step path the server also makes training signals, by wiring
// package rl's Follower (Config.Signals) to its store: the store's commit
// hook hands every committed event to the follower, which judges steps,
// records the judges' reward events and stores training samples, all in
// the store (see rl's package doc). The server only counts what it reports
// in its metrics and closes it at Shutdown, after the sessions. The samples
// stream stays here (samplestream.go: events.subscribe "stream": "samples",
// samples.ack, GET /v1/samples) because all of it is the wire's: it reads
// the store's samples log by offset (store.Samples, woken by
// store.SamplesChanged whoever appends: the follower, a mounted proxy) and
// adds only the connection's flow control (a window of unacknowledged
// notifications, the outbound queue's backpressure, events.ended). An
// in-process reader, such as the trainer of `nextstate train`, reads the
// same log the same way, without a server.
//
// Config fields whose zero value is meaningful say so; the others default
// as documented on each field.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/nextstate-rl/nextstate/gym"
	"github.com/nextstate-rl/nextstate/internal/auth"
	"github.com/nextstate-rl/nextstate/rl"
	"github.com/nextstate-rl/nextstate/store"
	"github.com/nextstate-rl/nextstate/wire"
)

// Version is the server's version, set by the build.
var Version = "dev"

// Config configures a Server.
type Config struct {
	// DataDir holds the store (events.db and blobs/). Required.
	DataDir string
	// Token, when set, is required as "Authorization: Bearer <token>" on
	// every endpoint but /healthz. With no token the server refuses to
	// listen on anything but a loopback address.
	Token string
	// Sessions configures the session Manager; its Recorder is the store.
	Sessions gym.Config
	// Suites are task suites to serve besides the kinds' built-in tasks.
	// A suite's Signals.Mix, if set, mixes the rewards of its tasks'
	// trajectories.
	Suites []*gym.Suite
	// Signals configures judging and training samples (package rl's
	// Follower); the zero value judges nothing and still builds samples.
	// The server sets its Store (the server's) and Suites (Config.Suites),
	// and counts what OnJudged and OnTrajectory report in its metrics
	// before calling those given.
	Signals rl.FollowerConfig
	// MaxFrameBytes caps an incoming WebSocket message or HTTP body.
	// Default wire.MaxFrameBytes (4 MiB).
	MaxFrameBytes int
	// OutboundBytes caps the bytes queued for one WebSocket connection.
	// Past 3/4 of it subscriptions are ended as slow consumers; past it the
	// connection is closed. Default 16 MiB.
	OutboundBytes int
	// PingInterval is how often WebSocket peers are pinged. Default 30s.
	PingInterval time.Duration
	// PongTimeout closes a connection from which nothing (not even a pong)
	// arrived for this long. Default 2*PingInterval.
	PongTimeout time.Duration
	// WriteTimeout bounds one write to a connection. Default 10s.
	WriteTimeout time.Duration
	// Registerer receives the metrics; nil means a fresh registry served at
	// /metrics.
	Registerer prometheus.Registerer
	// Logger; nil means slog.Default().
	Logger *slog.Logger
}

// Server is a running nextstate API.
type Server struct {
	cfg     Config
	log     *slog.Logger
	store   *store.Store
	mgr     *gym.Manager
	broker  *broker
	sig     *rl.Follower
	metrics *metrics
	gather  prometheus.Gatherer
	http    *http.Server
	mux     *http.ServeMux

	// closers are the mounted components' (Mount), closed at shutdown
	// after the HTTP server stops and before the store closes.
	closersMu sync.Mutex
	closers   []func(context.Context) error

	upgrader *websocket.Upgrader

	mu       sync.Mutex
	conns    map[*conn]struct{}
	ln       net.Listener
	shutting atomic.Bool
	done     chan struct{}

	// work counts goroutines the server started: connection readers and
	// the pool's workers. Shutdown waits for it.
	work     sync.WaitGroup
	pool     *pool
	requests inFlight // requests in flight, for the drain
	stopOnce sync.Once
	stopErr  error
}

// New opens the store and starts the session Manager. Call Serve or
// ListenAndServe, then Shutdown.
func New(cfg Config) (*Server, error) {
	if cfg.DataDir == "" {
		return nil, errors.New("server: Config.DataDir is required")
	}
	if cfg.MaxFrameBytes <= 0 {
		cfg.MaxFrameBytes = wire.MaxFrameBytes
	}
	if cfg.OutboundBytes <= 0 {
		cfg.OutboundBytes = 16 << 20
	}
	if cfg.PingInterval <= 0 {
		cfg.PingInterval = 30 * time.Second
	}
	if cfg.PongTimeout <= 0 {
		cfg.PongTimeout = 2 * cfg.PingInterval
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = 10 * time.Second
	}
	s := &Server{cfg: cfg, log: cfg.Logger, conns: map[*conn]struct{}{}, done: make(chan struct{}), upgrader: newUpgrader()}
	s.pool = newPool(s.goTracked)
	if s.log == nil {
		s.log = slog.Default()
	}
	s.broker = newBroker()
	st, err := store.Open(cfg.DataDir, store.Options{OnCommit: func(evs []*gym.Event, bodies []string) {
		s.broker.publish(evs, bodies)
		s.sig.Publish(evs, bodies) // set before the first event is recorded
	}})
	if err != nil {
		return nil, fmt.Errorf("server: opening the store in %s: %w", cfg.DataDir, err)
	}
	s.store = st
	s.broker.last.Store(st.LastSeq())

	reg := cfg.Registerer
	if reg == nil {
		r := prometheus.NewRegistry()
		reg, s.gather = r, r
	} else if g, ok := reg.(prometheus.Gatherer); ok {
		s.gather = g
	}
	catalog := gym.NewCatalog()
	for _, su := range cfg.Suites {
		if err := catalog.AddSuite(su); err != nil {
			st.Close()
			return nil, err
		}
	}
	if s.sig, err = rl.NewFollower(s.followerConfig(cfg.Signals, st)); err != nil {
		st.Close()
		return nil, err
	}
	// Before the follower starts (it follows this server's sessions only)
	// and before any session is admitted.
	if err := closeCutOff(st, s.log); err != nil {
		st.Close()
		return nil, fmt.Errorf("server: %w", err)
	}
	mc := cfg.Sessions
	mc.Recorder = st
	mc.Tasks = catalog
	if mc.Logger == nil {
		mc.Logger = s.log
	}
	s.mgr = gym.NewManager(mc)
	s.metrics = newMetrics(reg, s)
	s.sig.Start(st.LastSeq())
	s.mux = s.routes()
	s.http = &http.Server{
		Handler:           s.mux,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	return s, nil
}

// followerConfig is cfg wired to the server: its store, its suites, its
// metrics (which s.metrics holds by the time the follower starts).
func (s *Server) followerConfig(cfg rl.FollowerConfig, st *store.Store) rl.FollowerConfig {
	cfg.Store, cfg.Suites = st, s.cfg.Suites
	if cfg.Logger == nil {
		cfg.Logger = s.log
	}
	onJudged, onTrajectory := cfg.OnJudged, cfg.OnTrajectory
	cfg.OnJudged = func(r rl.JudgeResult) {
		s.metrics.judged(r)
		if onJudged != nil {
			onJudged(r)
		}
	}
	cfg.OnTrajectory = func(status string, samples int) {
		s.metrics.trajectory(status, samples)
		if onTrajectory != nil {
			onTrajectory(status, samples)
		}
	}
	return cfg
}

// Manager returns the session manager, for in-process use.
func (s *Server) Manager() *gym.Manager { return s.mgr }

// Store returns the trajectory store.
func (s *Server) Store() *store.Store { return s.store }

// Mount serves a component that lives in the server's process and shares
// its store, such as the OpenAI-compatible proxy of package proxy (`nextstate
// serve --proxy-upstream`): h answers the patterns (net/http.ServeMux
// patterns that must not collide with the server's own routes) behind the
// server's bearer token, and close, when not nil, runs at shutdown after
// the HTTP server has stopped and before the store closes.
func (s *Server) Mount(patterns []string, h http.Handler, close func(context.Context) error) {
	for _, p := range patterns {
		s.mux.Handle(p, s.auth(h))
	}
	if close != nil {
		s.closersMu.Lock()
		s.closers = append(s.closers, close)
		s.closersMu.Unlock()
	}
}

// ListenAndServe listens on addr ("127.0.0.1:7070"; port 0 picks one) and
// serves until Shutdown. It refuses a non-loopback address without a token.
func (s *Server) ListenAndServe(addr string) error {
	ln, err := s.Listen(addr)
	if err != nil {
		return err
	}
	return s.Serve(ln)
}

// Listen checks addr against the auth rule and opens a listener on it.
func (s *Server) Listen(addr string) (net.Listener, error) {
	if err := auth.CheckListen(addr, s.cfg.Token != "", "--token or --token-file", "127.0.0.1:7070"); err != nil {
		return nil, err
	}
	return net.Listen("tcp", addr)
}

// Serve accepts connections on ln until Shutdown; it then returns
// http.ErrServerClosed.
func (s *Server) Serve(ln net.Listener) error {
	if s.cfg.Token == "" && !auth.Loopback(ln.Addr().String()) {
		ln.Close()
		return fmt.Errorf("refusing to serve on %s without a token", ln.Addr())
	}
	s.mu.Lock()
	s.ln = ln
	s.mu.Unlock()
	return s.http.Serve(ln)
}

// Addr returns the listener's address once Serve has been called.
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return nil
	}
	return s.ln.Addr()
}

// Shutdown stops the server in order: stop admitting sessions and accepting
// connections, let requests in flight finish, end subscriptions and close
// WebSockets with a going-away frame, close every session (and its env),
// then let the judge finish (within Signals.Drain) and store the last
// training samples, then flush and close the store. It waits no longer
// than ctx for any of it and is idempotent; later calls return the first
// call's result.
func (s *Server) Shutdown(ctx context.Context) error {
	s.stopOnce.Do(func() { s.stopErr = s.shutdown(ctx) })
	return s.stopErr
}

func (s *Server) shutdown(ctx context.Context) error {
	s.shutting.Store(true)
	s.mgr.Drain()
	var errs []error
	// Closes listeners and idle HTTP connections, waits for HTTP requests;
	// hijacked WebSockets are ours to close.
	if err := s.http.Shutdown(ctx); err != nil {
		errs = append(errs, fmt.Errorf("http: %w", err))
	}
	if err := s.requests.wait(ctx); err != nil {
		errs = append(errs, fmt.Errorf("requests in flight: %w", err))
	}
	s.mu.Lock()
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns {
		c.close(closeShutdown)
	}
	s.pool.stop()
	if err := waitCtx(ctx, &s.work); err != nil {
		errs = append(errs, fmt.Errorf("connections: %w", err))
	}
	if err := s.mgr.Shutdown(ctx); err != nil {
		errs = append(errs, fmt.Errorf("sessions: %w", err))
	}
	s.closersMu.Lock()
	closers := s.closers
	s.closersMu.Unlock()
	for _, c := range closers {
		if err := c(ctx); err != nil {
			errs = append(errs, fmt.Errorf("mounted: %w", err))
		}
	}
	// After the sessions: their closes end the last episodes, whose
	// judges and samples are then finished.
	if err := s.sig.Close(ctx); err != nil {
		errs = append(errs, fmt.Errorf("signals: %w", err))
	}
	if err := s.store.Close(); err != nil {
		errs = append(errs, fmt.Errorf("store: %w", err))
	}
	close(s.done)
	return errors.Join(errs...)
}

// Done is closed when Shutdown has finished.
func (s *Server) Done() <-chan struct{} { return s.done }

func waitCtx(ctx context.Context, wg *sync.WaitGroup) error {
	ch := make(chan struct{})
	go func() { wg.Wait(); close(ch) }()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// inFlight counts requests being served, for Shutdown's drain. Unlike a
// sync.WaitGroup it may rise from zero while Shutdown waits on it: requests
// keep arriving on open connections during the drain, and are served.
type inFlight struct {
	mu   sync.Mutex
	n    int
	idle chan struct{} // closed when n drops to 0
}

func (f *inFlight) add() {
	f.mu.Lock()
	if f.n == 0 {
		f.idle = make(chan struct{})
	}
	f.n++
	f.mu.Unlock()
}

func (f *inFlight) done() {
	f.mu.Lock()
	if f.n--; f.n == 0 {
		close(f.idle)
	}
	f.mu.Unlock()
}

// wait returns once no request is in flight, or with ctx's error.
func (f *inFlight) wait(ctx context.Context) error {
	f.mu.Lock()
	if f.n == 0 {
		f.mu.Unlock()
		return nil
	}
	idle := f.idle
	f.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// goTracked runs f on a goroutine the server waits for at Shutdown.
func (s *Server) goTracked(f func()) {
	s.work.Add(1)
	go func() {
		defer s.work.Done()
		f()
	}()
}

// authorized checks the bearer token, in constant time.
func (s *Server) authorized(r *http.Request) bool {
	if s.cfg.Token == "" {
		return true
	}
	tok, ok := auth.Bearer(r.Header)
	return ok && auth.Equal(tok, s.cfg.Token)
}

package server

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/nextstate-rl/nextstate/gym"
	"github.com/nextstate-rl/nextstate/rl"
	"github.com/nextstate-rl/nextstate/store"
	"github.com/nextstate-rl/nextstate/wire"
)

// gate-v1 is a test kind whose step "wait" blocks until the test opens the
// gate, so a test can hold a step in flight.
var gate struct {
	mu      sync.Mutex
	entered chan struct{} // a "wait" step has started
	open    chan struct{} // closed to let it finish
}

type gateKind struct{}

func (gateKind) Spec() gym.Spec {
	return gym.Spec{Name: "gate-v1", Description: "test: a step that waits for the test",
		ActionSchema: gym.PartsSchema(1, 1, gym.PartText), ObservationSchema: gym.PartsSchema(0, 1, gym.PartText),
		Limits: gym.Limits{StepTimeout: gym.Duration(time.Minute)}}
}

func (gateKind) New(context.Context) (gym.Env, error) { return gateEnv{}, nil }

type gateEnv struct{}

func (gateEnv) Reset(context.Context, *gym.Task, int64, gym.Options) (gym.Observation, gym.Info, error) {
	return gym.TextObservation("ready"), nil, nil
}

func (gateEnv) Step(ctx context.Context, a gym.Action) (gym.Transition, error) {
	if a.Text() == "wait" {
		gate.mu.Lock()
		entered, open := gate.entered, gate.open
		gate.mu.Unlock()
		close(entered)
		select {
		case <-open:
		case <-ctx.Done():
			return gym.Transition{}, ctx.Err()
		}
	}
	return gym.Transition{Observation: gym.TextObservation("done " + a.Text())}, nil
}

func (gateEnv) Close(context.Context) error { return nil }

func init() { gym.Register(gateKind{}) }

// TestShutdown holds a step in flight and shuts down: the step finishes and
// is answered and recorded, new sessions are refused, connections get a
// going-away close, every acknowledged step is in the store when it is
// reopened, and Shutdown is idempotent.
func TestShutdown(t *testing.T) {
	ts := startServer(t)
	a := ts.dial()
	held := a.create(gym.CreateRequest{Env: "gate-v1"}).Session
	echo := a.create(gym.CreateRequest{Env: "echo-v1"}).Session
	acked := map[string]string{} // step id -> session
	for i := range 5 {
		id := fmt.Sprint("a", i)
		a.step(echo, id, "before")
		acked[id] = echo
	}

	// A client that keeps stepping through the shutdown.
	busy := ts.dial()
	busySession := busy.create(gym.CreateRequest{Env: "echo-v1"}).Session
	var busyAcked []string
	busyDone := make(chan struct{})
	go func() {
		defer close(busyDone)
		for i := 0; ; i++ {
			id := fmt.Sprint("b", i)
			m, err := busy.tryCall(wire.MethodSessionStep, stepArgs(busySession, id, "busy"))
			if err != nil {
				return // closed by the shutdown
			}
			if m.Error != nil {
				if m.Error.Code != wire.CodeShuttingDown {
					t.Errorf("a step during shutdown answered %d %s", m.Error.Code, m.Error.Message)
				}
				return
			}
			busyAcked = append(busyAcked, id)
		}
	}()
	late := ts.dial()

	gate.mu.Lock()
	gate.entered, gate.open = make(chan struct{}), make(chan struct{})
	entered, open := gate.entered, gate.open
	gate.mu.Unlock()
	heldID := a.send(wire.MethodSessionStep, stepArgs(held, "held", "wait"))
	<-entered

	shutdownErr := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		defer cancel()
		shutdownErr <- ts.Shutdown(ctx)
	}()
	waitFor(t, "the server to report shutting down", func() bool {
		resp, err := ts.hc.Get(ts.base + "/healthz")
		if err != nil {
			return true // the listener is closed already
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusServiceUnavailable
	})
	// The step is still held, so connections are still open: a new session
	// is refused with a retry hint.
	e := late.callErr(wire.MethodSessionCreate, gym.CreateRequest{Env: "echo-v1"})
	wantCode(t, e, wire.CodeShuttingDown, "shutting down")
	if e.Data == nil || e.Data.RetryAfterMS <= 0 {
		t.Errorf("data = %+v, want retry_after_ms", e.Data)
	}
	if _, _, err := websocket.DefaultDialer.Dial(ts.ws, nil); err == nil {
		t.Error("a new WebSocket was accepted during shutdown")
	}
	select {
	case err := <-shutdownErr:
		t.Fatalf("Shutdown returned %v with a step in flight", err)
	default:
	}

	close(open)
	r := a.response(heldID)
	if r.Error != nil {
		t.Fatalf("the held step answered %v, want its result", r.Error)
	}
	acked["held"] = held
	if err := <-shutdownErr; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	<-busyDone
	for _, id := range busyAcked {
		acked[id] = busySession
	}
	for name, c := range map[string]*wsClient{"a": a, "late": late} {
		if !c.closedWith(websocket.CloseGoingAway) {
			t.Errorf("connection %s ended with %v, want a going-away close", name, c.err)
		}
	}
	select {
	case <-ts.Done():
	default:
		t.Error("Done is not closed after Shutdown")
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if err := ts.Shutdown(ctx); err != nil {
		t.Errorf("a second Shutdown: %v", err)
	}

	st, err := store.Open(ts.dir, store.Options{})
	if err != nil {
		t.Fatalf("reopening the store: %v", err)
	}
	defer st.Close()
	checkStepsStored(t, st, acked)
	closed, err := st.Events(t.Context(), store.Filter{Types: []gym.EventType{gym.EventSessionClosed}})
	if err != nil {
		t.Fatal(err)
	}
	if len(closed) != 3 {
		t.Errorf("%d session.closed events, want 3", len(closed))
	}
	for _, ev := range closed {
		if ev.Reason != gym.CloseShutdown {
			t.Errorf("session %s closed with reason %q, want shutdown", ev.Session, ev.Reason)
		}
	}
}

// checkStepsStored fails for every acknowledged step id (mapped to its
// session) that has no step event in st.
func checkStepsStored(t *testing.T, st *store.Store, acked map[string]string) {
	t.Helper()
	for id, session := range acked {
		if _, ok, err := st.StepEvent(t.Context(), session, id); err != nil || !ok {
			t.Errorf("acknowledged step %s of %s is not in the store (%v)", id, session, err)
		}
	}
}

// TestReaper abandons 1,000 sessions on a few connections: the reaper
// closes all of them as idle, and nothing is left running.
func TestReaper(t *testing.T) {
	ts := startServer(t, func(c *Config) {
		c.Sessions.IdleTTL = 300 * time.Millisecond
		c.Sessions.ReapInterval = 50 * time.Millisecond
	})
	baseline := runtime.NumGoroutine()
	const conns, perConn = 4, 250
	var wg sync.WaitGroup
	var mu sync.Mutex
	var created []string
	for range conns {
		c := ts.dial()
		wg.Go(func() {
			var ids []string
			for range perConn {
				id, err := c.trySend(wire.MethodSessionCreate, gym.CreateRequest{Env: "echo-v1", Run: "abandoned"})
				if err != nil {
					t.Error(err)
					return
				}
				ids = append(ids, id)
			}
			for _, id := range ids {
				m, err := c.tryTake(func(m *rpcMsg) bool { return string(m.ID) == id })
				if err != nil || m.Error != nil {
					t.Errorf("create: %v %v", err, m)
					return
				}
				var r gym.ResetResult
				if err := json.Unmarshal(m.Result, &r); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				created = append(created, r.Session)
				mu.Unlock()
			}
			c.close()
		})
	}
	wg.Wait()
	if len(created) != conns*perConn {
		t.Fatalf("created %d sessions", len(created))
	}
	waitFor(t, "every session to be reaped", func() bool { return ts.Manager().Len() == 0 })
	// A session leaves the manager just before its close is recorded.
	var closed []gym.Event
	waitFor(t, "every session.closed event", func() bool {
		var err error
		closed, err = ts.Store().Events(t.Context(), store.Filter{Run: "abandoned", Types: []gym.EventType{gym.EventSessionClosed}})
		return err == nil && len(closed) >= len(created)
	})
	reasons := map[string]string{}
	for _, ev := range closed {
		if _, dup := reasons[ev.Session]; dup {
			t.Errorf("session %s closed twice", ev.Session)
		}
		reasons[ev.Session] = ev.Reason
	}
	for _, s := range created {
		if reasons[s] != gym.CloseIdle {
			t.Errorf("session %s: close reason %q, want idle", s, reasons[s])
		}
	}
	checkGoroutines(t, baseline)
}

// TestPanicConfined: an env that panics fails only its own session, as an
// infrastructure failure; the connection and other sessions carry on.
func TestPanicConfined(t *testing.T) {
	ts := startServer(t)
	c := ts.dial()
	bad := c.create(gym.CreateRequest{Env: "panic-v1"}).Session
	good := c.create(gym.CreateRequest{Env: "echo-v1"}).Session
	r := c.step(bad, "", "boom")
	if r.Failure == nil || r.Failure.Fault != gym.FaultInfra || !r.Truncated {
		t.Fatalf("a panicking step answered %+v, want a truncated infra failure", r)
	}
	wantCode(t, c.callErr(wire.MethodSessionStep, stepArgs(bad, "", "again")), wire.CodeUnknownSession)
	c.step(good, "", "fine")
}

type panicKind struct{}

func (panicKind) Spec() gym.Spec {
	return gym.Spec{Name: "panic-v1", Description: "test: every step panics",
		ActionSchema: gym.PartsSchema(1, 1, gym.PartText), ObservationSchema: gym.PartsSchema(0, 1, gym.PartText)}
}
func (panicKind) New(context.Context) (gym.Env, error) { return panicEnv{}, nil }

type panicEnv struct{}

func (panicEnv) Reset(context.Context, *gym.Task, int64, gym.Options) (gym.Observation, gym.Info, error) {
	return gym.TextObservation(""), nil, nil
}
func (panicEnv) Step(context.Context, gym.Action) (gym.Transition, error) { panic("env bug") }
func (panicEnv) Close(context.Context) error                              { return nil }

func init() { gym.Register(panicKind{}) }

const childDirEnv = "NEXTSTATE_SERVER_CHILD_DIR"

// TestServerChild is the child process of startChildServer: it serves on
// 127.0.0.1:0, prints "addr <host:port>", and serves until it is killed (or
// a minute passes).
func TestServerChild(t *testing.T) {
	dir := os.Getenv(childDirEnv)
	if dir == "" {
		t.Skip("runs only as the child of startChildServer (TestKillNine, TestRestartClosesCutOffSessions)")
	}
	srv, err := New(Config{DataDir: dir, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(2)
	}
	ln, err := srv.Listen("127.0.0.1:0")
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(2)
	}
	fmt.Println("addr", ln.Addr())
	go srv.Serve(ln)
	time.Sleep(time.Minute) // the parent kills us long before
	os.Exit(3)
}

// TestKillNine kills -9 a server process after some acknowledged steps and
// finds every one of them in its store.
func TestKillNine(t *testing.T) {
	dir, c, kill := startChildServer(t)
	s := c.create(gym.CreateRequest{Env: "echo-v1"}).Session
	acked := map[string]string{}
	for i := range 20 {
		id := fmt.Sprint("k", i)
		c.step(s, id, fmt.Sprint("step ", i))
		acked[id] = s
	}
	// Some more in flight when the process dies; only acknowledged ones
	// must survive.
	for i := range 20 {
		c.send(wire.MethodSessionStep, stepArgs(s, fmt.Sprint("u", i), "unacknowledged"))
	}
	kill()

	st, err := store.Open(dir, store.Options{})
	if err != nil {
		t.Fatalf("opening the killed server's store: %v", err)
	}
	defer st.Close()
	checkStepsStored(t, st, acked)
	steps, err := st.Events(t.Context(), store.Filter{Session: s, Types: []gym.EventType{gym.EventStep}})
	if err != nil {
		t.Fatal(err)
	}
	for i, ev := range steps {
		if ev.Step != i+1 {
			t.Fatalf("stored steps are not 1..n in order: %v", eventSeqs(steps))
		}
	}
	if !slices.ContainsFunc(steps, func(ev gym.Event) bool { return ev.StepID == "k19" }) {
		t.Error("the last acknowledged step is missing")
	}
}

// startChildServer starts TestServerChild on a fresh store and returns the
// store's directory, a connection to it, and a func that kills it with
// SIGKILL and waits for it to die. It skips in -short mode.
func startChildServer(t *testing.T) (dir string, c *wsClient, kill func()) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a child process")
	}
	dir = t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestServerChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), childDirEnv+"="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	t.Cleanup(func() {
		if !killed {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if a, ok := strings.CutPrefix(sc.Text(), "addr "); ok {
				addr <- a
			}
		}
		close(addr)
	}()
	select {
	case host, ok := <-addr:
		if !ok {
			t.Fatal("the child exited without serving")
		}
		c = dialWS(t, "ws://"+host+"/v1/ws", nil)
	case <-time.After(waitTimeout):
		t.Fatal("the child did not print its address")
	}
	return dir, c, func() {
		t.Helper()
		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		killed = true
		werr := cmd.Wait()
		var ee *exec.ExitError
		if !errors.As(werr, &ee) || ee.ExitCode() != -1 {
			t.Fatalf("the child ended with %v, want killed by a signal", werr)
		}
	}
}

// TestRestartClosesCutOffSessions kills -9 a server with a session in the
// middle of an episode, and one already closed, then starts a server on
// the same store: the cut-off session gets a session.closed with reason
// server_restart (an infra failure), which a client resuming or
// subscribing sees; the closed one gets nothing more; and a further restart
// adds no second close.
func TestRestartClosesCutOffSessions(t *testing.T) {
	dir, c, kill := startChildServer(t)
	cut := c.create(gym.CreateRequest{TaskID: "guess-1-100", Seed: 3, Run: "restart"})
	c.step(cut.Session, "g1", "1")
	done := c.create(gym.CreateRequest{Env: "echo-v1", Run: "restart"}).Session
	c.mustCall(wire.MethodSessionClose, wire.CloseParams{Session: done}, nil)
	kill()

	ts := startServer(t, func(cfg *Config) { cfg.DataDir = dir })
	a := ts.dial()
	var res wire.ResumeResult
	a.mustCall(wire.MethodSessionResume, wire.ResumeParams{Session: cut.Session}, &res)
	last := res.Events[len(res.Events)-1]
	if res.Live || last.Type != gym.EventSessionClosed || last.Reason != gym.CloseServerRestart || last.Episode != 1 ||
		last.Task != "guess-1-100" || last.Run != "restart" || last.Failure == nil || last.Failure.Fault != gym.FaultInfra ||
		!strings.Contains(last.Failure.Message, "restarted") {
		t.Fatalf("resume after the restart: live %v, last event %+v; want session.closed, reason server_restart, infra", res.Live, last)
	}
	var sr wire.SubscribeResult
	a.mustCall(wire.MethodEventsSubscribe, wire.SubscribeParams{Run: "restart", Types: []gym.EventType{gym.EventSessionClosed}}, &sr)
	reasons := map[string]string{}
	for len(reasons) < 2 {
		n := a.next().event()
		if n == nil {
			t.Fatal("want session.closed events")
		}
		if _, dup := reasons[n.Event.Session]; dup {
			t.Fatalf("session %s closed twice", n.Event.Session)
		}
		reasons[n.Event.Session] = n.Event.Reason
	}
	if reasons[cut.Session] != gym.CloseServerRestart || reasons[done] != gym.CloseClient {
		t.Errorf("close reasons %v, want %s server_restart and %s client", reasons, cut.Session, done)
	}
	// The cut-off session stays closed: stepping it is refused, and a
	// retried step id is answered from the record.
	wantCode(t, a.callErr(wire.MethodSessionStep, stepArgs(cut.Session, "", "50")), wire.CodeUnknownSession)
	if r := a.step(cut.Session, "g1", "1"); !r.Replayed {
		t.Errorf("a retried step of the cut-off session answered %+v, want the recorded answer", r)
	}

	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if err := ts.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	again := startServer(t, func(cfg *Config) { cfg.DataDir = dir })
	closed, err := again.Store().Events(t.Context(), store.Filter{Run: "restart", Types: []gym.EventType{gym.EventSessionClosed}})
	if err != nil || len(closed) != 2 {
		t.Errorf("after a second restart: %d session.closed events (%v), want 2", len(closed), err)
	}
}

// TestShutdownWhileBusy shuts down while clients step as fast as they can:
// requests keep arriving during the drain and are turned away with -32009.
// Shutdown finishes, and every acknowledged step is in the store.
func TestShutdownWhileBusy(t *testing.T) {
	ts := startServer(t)
	var wg sync.WaitGroup
	var mu sync.Mutex
	acked := map[string]string{}
	for g := range 8 {
		c := ts.dial()
		s := c.create(gym.CreateRequest{Env: "echo-v1"}).Session
		wg.Go(func() {
			for i := 0; ; i++ {
				id := fmt.Sprint("g", g, "-", i)
				m, err := c.tryCall(wire.MethodSessionStep, stepArgs(s, id, "busy"))
				if err != nil {
					return // closed by the shutdown
				}
				if m.Error != nil {
					if m.Error.Code != wire.CodeShuttingDown {
						t.Errorf("step %s: %v", id, m.Error)
					}
					return // the drain turns new requests away
				}
				mu.Lock()
				acked[id] = s
				mu.Unlock()
			}
		})
	}
	waitFor(t, "some steps", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(acked) >= 100
	})
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if err := ts.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	wg.Wait()
	st, err := store.Open(ts.dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	checkStepsStored(t, st, acked)
}

// TestServerRestartCloseEndsEpisode: the signals follower ends an episode
// at a server_restart close, as a trajectory cut off by the
// infrastructure (aborted, masked out of training), instead of waiting for
// a step that will never come.
func TestServerRestartCloseEndsEpisode(t *testing.T) {
	ts := startServer(t)
	a := ts.dial()
	sess := a.create(gym.CreateRequest{Env: "echo-v1"}).Session
	a.step(sess, "e1", "hello")
	// What a restarted server records for a session its predecessor left
	// open, here appended under a follower that has the episode open.
	err := ts.Store().Append(t.Context(), &gym.Event{Type: gym.EventSessionClosed, Time: time.Now(), Session: sess, Env: "echo-v1",
		Episode: 1, Reason: gym.CloseServerRestart})
	if err != nil {
		t.Fatal(err)
	}
	s := ts.waitSamples(sess)
	if len(s) != 1 || s[0].Status != rl.StatusAborted || !s[0].RemoveSample {
		t.Fatalf("samples of an episode closed by a server restart: %+v; want one, aborted and removed", s)
	}
}

package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nextstate-rl/nextstate/client"
	"github.com/nextstate-rl/nextstate/gym"
	"github.com/nextstate-rl/nextstate/wire"
)

func dial(t *testing.T, url string, opts ...client.Opt) *client.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	opts = append([]client.Opt{
		client.WithReconnect(client.ReconnectPolicy{InitialBackoff: 10 * time.Millisecond, MaxBackoff: 100 * time.Millisecond}),
		client.WithLogger(slog.New(slog.NewTextHandler(t.Output(), nil))),
	}, opts...)
	c, err := client.Dial(ctx, url, opts...)
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// echoStep answers session.step with the action as the observation.
func echoStep(fc *fakeConn, req wire.Request, replayed bool) {
	var p wire.StepParams
	if err := json.Unmarshal(req.Params, &p); err != nil {
		fc.replyErr(req.ID, gym.ErrBadRequest)
		return
	}
	fc.reply(req.ID, gym.StepResult{
		Transition: gym.Transition{Observation: gym.Observation{Parts: p.Action.Parts}},
		Session:    p.Session, StepID: p.StepID, Replayed: replayed,
	})
}

func TestURL(t *testing.T) {
	for in, want := range map[string]string{
		"http://127.0.0.1:7070":       "ws://127.0.0.1:7070/v1/ws",
		"http://127.0.0.1:7070/":      "ws://127.0.0.1:7070/v1/ws",
		"https://gym.example.com":     "wss://gym.example.com/v1/ws",
		"ws://127.0.0.1:7070":         "ws://127.0.0.1:7070/v1/ws",
		"ws://127.0.0.1:7070/x/v1/ws": "ws://127.0.0.1:7070/x/v1/ws",
	} {
		got, err := client.WSURL(in)
		if err != nil || got != want {
			t.Errorf("wsURL(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"127.0.0.1:7070", "ftp://x", "http://"} {
		if _, err := client.WSURL(in); err == nil {
			t.Errorf("wsURL(%q) succeeded, want an error", in)
		}
	}
}

func TestMultiplexing(t *testing.T) {
	f := newFake(t, func(fc *fakeConn, req wire.Request) {
		time.Sleep(time.Duration(rand.IntN(500)) * time.Microsecond) // answer out of order
		echoStep(fc, req, false)
	})
	c := dial(t, f.url(), client.WithQueueLen(8))
	ctx := testCtx(t)
	const goroutines, calls = 100, 20
	var wg sync.WaitGroup
	var ok atomic.Int32
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := c.Attach(fmt.Sprintf("s%d", g))
			seen := map[string]bool{}
			for i := range calls {
				want := fmt.Sprintf("g%d-%d", g, i)
				res, err := s.Step(ctx, gym.TextAction(want))
				if err != nil {
					t.Errorf("step %s: %v", want, err)
					return
				}
				if res.Session != s.ID() || res.Observation.Text() != want {
					t.Errorf("step %s of %s got the answer %q of %s", want, s.ID(), res.Observation.Text(), res.Session)
				}
				if seen[res.StepID] || !strings.HasPrefix(res.StepID, s.ID()+"-") {
					t.Errorf("step id %q repeated or not of session %s", res.StepID, s.ID())
				}
				seen[res.StepID] = true
				ok.Add(1)
			}
		}()
	}
	wg.Wait()
	if n := ok.Load(); n != goroutines*calls {
		t.Fatalf("%d calls answered, want %d", n, goroutines*calls)
	}
	if n := client.Pending(c); n != 0 {
		t.Errorf("%d calls still pending", n)
	}
}

func TestCallDeadline(t *testing.T) {
	f := newFake(t, func(fc *fakeConn, req wire.Request) {
		if req.Method == wire.MethodServerInfo {
			return // never answered
		}
		fc.reply(req.ID, wire.EnvListResult{Envs: []wire.EnvSummary{{Name: "echo-v1"}}})
	})
	c := dial(t, f.url())
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := c.ServerInfo(ctx)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("ServerInfo on a server that never answers: %v, want DeadlineExceeded", err)
	}
	if n := client.Pending(c); n != 0 {
		t.Errorf("%d calls pending after the deadline, want 0", n)
	}
	envs, err := c.Envs(testCtx(t))
	if err != nil || len(envs) != 1 || envs[0].Name != "echo-v1" {
		t.Fatalf("Envs after a timed-out call: %v, %v", envs, err)
	}
}

func TestErrorMapping(t *testing.T) {
	f := newFake(t, func(fc *fakeConn, req wire.Request) {
		switch req.Method {
		case wire.MethodSessionCreate:
			fc.replyErr(req.ID, &gym.CapacityError{Limit: "sessions", Max: 2, RetryAfter: 1500 * time.Millisecond})
		case wire.MethodSessionStep:
			p := decode[wire.StepParams](t, req)
			if p.Session == "over" {
				fc.replyErr(req.ID, gym.ErrEpisodeOver)
				return
			}
			fc.replyErr(req.ID, fmt.Errorf("%w %q", gym.ErrUnknownSession, p.Session))
		case wire.MethodEnvDescribe:
			fc.replyErr(req.ID, fmt.Errorf("%w %q", gym.ErrUnknownKind, "nope-v1"))
		default:
			fc.send(wire.Response{JSONRPC: "2.0", ID: req.ID, Error: wire.Errorf(wire.CodeMethodNotFound, "no")})
		}
	})
	c := dial(t, f.url())
	ctx := testCtx(t)

	_, err := c.Attach("gone").Step(ctx, gym.TextAction("x"))
	if !errors.Is(err, gym.ErrUnknownSession) {
		t.Errorf("step on an unknown session: %v, want ErrUnknownSession", err)
	}
	var se *client.StepError
	if !errors.As(err, &se) || se.Session != "gone" || se.StepID == "" {
		t.Errorf("step error %v carries no step id", err)
	}
	var we *wire.Error
	if !errors.As(err, &we) || we.Code != wire.CodeUnknownSession {
		t.Errorf("step error %v: no *wire.Error with code %d", err, wire.CodeUnknownSession)
	}
	if _, err := c.Attach("over").Step(ctx, gym.TextAction("x")); !errors.Is(err, gym.ErrEpisodeOver) {
		t.Errorf("step after the end: %v, want ErrEpisodeOver", err)
	}

	_, _, err = c.Create(ctx, gym.CreateRequest{Env: "echo-v1"})
	var ce *gym.CapacityError
	if !errors.As(err, &ce) || ce.RetryAfter != 1500*time.Millisecond {
		t.Errorf("create over capacity: %v, want a *gym.CapacityError with RetryAfter 1.5s", err)
	}
	if _, err := c.Describe(ctx, "nope-v1"); !errors.Is(err, gym.ErrUnknownKind) {
		t.Errorf("describe: %v, want ErrUnknownKind", err)
	}
	if _, err := c.ServerInfo(ctx); !errors.As(err, &we) || we.Code != wire.CodeMethodNotFound {
		t.Errorf("server.info: %v, want a *wire.Error with code %d", err, wire.CodeMethodNotFound)
	}
}

func TestUnauthorized(t *testing.T) {
	f := newFake(t, func(fc *fakeConn, req wire.Request) { fc.reply(req.ID, wire.ServerInfo{Name: "fake"}) })
	f.token = "sesame"
	ctx := testCtx(t)
	_, err := client.Dial(ctx, f.url(), client.WithToken("wrong"))
	var we *wire.Error
	if !errors.As(err, &we) || we.Code != wire.CodeUnauthorized {
		t.Fatalf("Dial with a wrong token: %v, want a *wire.Error with code %d", err, wire.CodeUnauthorized)
	}
	c := dial(t, f.url(), client.WithToken("sesame"))
	if info, err := c.ServerInfo(ctx); err != nil || info.Name != "fake" {
		t.Fatalf("ServerInfo with the token: %+v, %v", info, err)
	}
}

// stepRecorder is a fake that drops the connection at the first session.step
// and answers the others as replays, recording the step ids it saw.
type stepRecorder struct {
	mu      sync.Mutex
	ids     []string
	creates int
}

func (r *stepRecorder) handle(fc *fakeConn, req wire.Request) {
	switch req.Method {
	case wire.MethodSessionStep:
		p := decodeNoT[wire.StepParams](req)
		r.mu.Lock()
		r.ids = append(r.ids, p.StepID)
		first := len(r.ids) == 1
		r.mu.Unlock()
		if first {
			fc.drop() // the step "ran", its answer is lost
			return
		}
		echoStep(fc, req, true)
	case wire.MethodSessionCreate:
		r.mu.Lock()
		r.creates++
		r.mu.Unlock()
		if fc.n == 1 {
			fc.drop()
			return
		}
		fc.reply(req.ID, gym.ResetResult{Session: "s_new", Episode: 1, Seq: 1})
	default:
		fc.reply(req.ID, wire.ServerInfo{Name: "fake"})
	}
}

func TestReconnectResendsStepWithSameID(t *testing.T) {
	var r stepRecorder
	f := newFake(t, r.handle)
	c := dial(t, f.url())
	ctx := testCtx(t)
	res, err := c.Attach("s1").Step(ctx, gym.TextAction("42"))
	if err != nil {
		t.Fatalf("step across a dropped connection: %v", err)
	}
	if !res.Replayed || res.Observation.Text() != "42" {
		t.Errorf("step result %+v: want the replayed answer", res)
	}
	r.mu.Lock()
	ids := append([]string(nil), r.ids...)
	r.mu.Unlock()
	if len(ids) != 2 || ids[0] != ids[1] || ids[0] == "" {
		t.Fatalf("server saw step ids %q, want the same id twice", ids)
	}
	if n := f.dials.Load(); n != 2 {
		t.Errorf("%d connections, want 2", n)
	}
}

func TestReconnectDoesNotResendCreate(t *testing.T) {
	var r stepRecorder
	f := newFake(t, r.handle)
	c := dial(t, f.url())
	ctx := testCtx(t)
	_, _, err := c.Create(ctx, gym.CreateRequest{Env: "echo-v1"})
	if !errors.Is(err, client.ErrConnectionLost) || !strings.Contains(err.Error(), "outcome is unknown") {
		t.Fatalf("create across a dropped connection: %v, want an outcome-unknown ErrConnectionLost", err)
	}
	// A round trip on the new connection: a re-sent create would have gone
	// out before it.
	if _, err := c.ServerInfo(ctx); err != nil {
		t.Fatalf("ServerInfo after reconnecting: %v", err)
	}
	r.mu.Lock()
	n := r.creates
	r.mu.Unlock()
	if n != 1 {
		t.Fatalf("server saw %d creates, want 1", n)
	}
	s, _, err := c.Create(ctx, gym.CreateRequest{Env: "echo-v1"})
	if err != nil || s.ID() != "s_new" || s.LastSeq() != 1 {
		t.Fatalf("second create: %v, %v", s, err)
	}
}

func TestWithoutReconnect(t *testing.T) {
	var r stepRecorder
	f := newFake(t, r.handle)
	c := dial(t, f.url(), client.WithoutReconnect())
	ctx := testCtx(t)
	_, err := c.Attach("s1").Step(ctx, gym.TextAction("1"))
	if !errors.Is(err, client.ErrConnectionLost) {
		t.Fatalf("step with reconnecting off: %v, want ErrConnectionLost", err)
	}
	if _, err := c.ServerInfo(ctx); !errors.Is(err, client.ErrConnectionLost) {
		t.Fatalf("a call after the drop: %v, want ErrConnectionLost", err)
	}
	if n := f.dials.Load(); n != 1 {
		t.Errorf("%d connections, want 1", n)
	}
}

// TestCallsWaitForReconnect: calls made while the connection is down are
// sent on the next one, more of them than the outbound queue holds.
func TestCallsWaitForReconnect(t *testing.T) {
	f := newFake(t, func(fc *fakeConn, req wire.Request) { fc.reply(req.ID, wire.ServerInfo{Name: "fake", Sessions: fc.n}) })
	c := dial(t, f.url(), client.WithQueueLen(4))
	ctx := testCtx(t)
	client.DropConn(c)
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := c.ServerInfo(ctx); err != nil {
				t.Errorf("ServerInfo around a drop: %v", err)
			}
		}()
	}
	wg.Wait()
	waitFor(t, "the second connection", func() bool { return client.Generation(c) == 2 && client.Connected(c) })
	info, err := c.ServerInfo(ctx)
	if err != nil || info.Sessions != 2 {
		t.Fatalf("ServerInfo on the new connection: %+v, %v", info, err)
	}
}

// TestKeepalive: an idle client pings the server every interval and is
// still served. (Whether it kept its first connection is not asserted: a
// loaded machine may stall past the read deadline, three intervals, and
// the client then reconnects, as it should.)
func TestKeepalive(t *testing.T) {
	f := newFake(t, func(fc *fakeConn, req wire.Request) { fc.reply(req.ID, wire.ServerInfo{Name: "fake"}) })
	c := dial(t, f.url(), client.WithKeepalive(20*time.Millisecond))
	waitFor(t, "five pings", func() bool { return f.pings.Load() >= 5 })
	if _, err := c.ServerInfo(testCtx(t)); err != nil {
		t.Fatalf("ServerInfo after the pings: %v", err)
	}
}

func TestCloseEndsCalls(t *testing.T) {
	f := newFake(t, func(fc *fakeConn, req wire.Request) {}) // answers nothing
	c := dial(t, f.url())
	errc := make(chan error, 1)
	go func() {
		_, err := c.ServerInfo(context.Background())
		errc <- err
	}()
	waitFor(t, "the call to be pending", func() bool { return client.Pending(c) == 1 })
	c.Close()
	if err := <-errc; !errors.Is(err, client.ErrClosed) {
		t.Fatalf("call in flight at Close: %v, want ErrClosed", err)
	}
	if _, err := c.ServerInfo(context.Background()); !errors.Is(err, client.ErrClosed) {
		t.Fatalf("call after Close: %v, want ErrClosed", err)
	}
	c.Close() // idempotent
}

// eventLog is a fake's store: events 1..n of session s1.
func eventLog(n int) []*gym.Event {
	evs := make([]*gym.Event, n)
	for i := range evs {
		evs[i] = &gym.Event{Seq: int64(i + 1), Type: gym.EventStep, Session: "s1", Env: "echo-v1", Step: i + 1}
	}
	return evs
}

func TestSubscriptionResubscribesWithoutGapsOrDuplicates(t *testing.T) {
	const n = 50
	evs := eventLog(n)
	var mu sync.Mutex
	var afters []int64
	var subN atomic.Int32
	f := newFake(t, func(fc *fakeConn, req wire.Request) {
		switch req.Method {
		case wire.MethodEventsSubscribe:
			p := decodeNoT[wire.SubscribeParams](req)
			mu.Lock()
			afters = append(afters, p.AfterSeq)
			round := len(afters)
			mu.Unlock()
			id := "sub_" + strconv.Itoa(int(subN.Add(1)))
			fc.reply(req.ID, wire.SubscribeResult{Subscription: id, LastSeq: n})
			send := func(from, to int) { // seqs from..to
				for _, ev := range evs[from-1 : to] {
					fc.notify(wire.NotifyEvent, wire.EventNotification{Subscription: id, Event: ev})
				}
			}
			switch round {
			case 1: // 1..20, then the server ends it
				send(1, 20)
				fc.notify(wire.NotifySubscriptionEnded, wire.EndedNotification{Subscription: id, Reason: "slow_consumer", LastSeq: 20})
				send(21, 22) // after the end: must be ignored
			case 2: // repeats 18..20, goes to 35, then the connection drops
				send(18, 35)
				fc.drop()
			default:
				send(int(p.AfterSeq)+1, n)
			}
		case wire.MethodEventsUnsubscribe:
			if len(req.ID) > 0 {
				fc.reply(req.ID, map[string]any{"ended": true})
			}
		}
	})
	c := dial(t, f.url())
	ctx := testCtx(t)
	sub, err := c.Subscribe(ctx, wire.SubscribeParams{Session: "s1", AfterSeq: 0})
	if err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	defer sub.Close()
	for want := int64(1); want <= n; want++ {
		select {
		case ev, ok := <-sub.C():
			if !ok {
				t.Fatalf("subscription ended at seq %d: %v", want, sub.Err())
			}
			if ev.Seq != want {
				t.Fatalf("got seq %d, want %d", ev.Seq, want)
			}
		case <-ctx.Done():
			t.Fatalf("waiting for seq %d: %v", want, ctx.Err())
		}
	}
	mu.Lock()
	got := append([]int64(nil), afters...)
	mu.Unlock()
	if len(got) != 3 || got[0] != 0 || got[1] != 20 || got[2] != 35 {
		t.Errorf("subscribed with after_seq %v, want [0 20 35]", got)
	}
	if err := sub.Close(); err != nil || sub.Err() != nil {
		t.Errorf("Close: %v, Err %v", err, sub.Err())
	}
	if _, ok := <-sub.C(); ok {
		t.Error("C is open after Close")
	}
}

func TestSubscriptionSlowReader(t *testing.T) {
	const n = 100
	evs := eventLog(n)
	var mu sync.Mutex
	var afters []int64
	var subN atomic.Int32
	firstDone := make(chan struct{})
	f := newFake(t, func(fc *fakeConn, req wire.Request) {
		switch req.Method {
		case wire.MethodEventsSubscribe:
			p := decodeNoT[wire.SubscribeParams](req)
			mu.Lock()
			afters = append(afters, p.AfterSeq)
			mu.Unlock()
			id := "sub_" + strconv.Itoa(int(subN.Add(1)))
			fc.reply(req.ID, wire.SubscribeResult{Subscription: id, LastSeq: n})
			for _, ev := range evs[p.AfterSeq:] {
				fc.notify(wire.NotifyEvent, wire.EventNotification{Subscription: id, Event: ev})
			}
			if id == "sub_1" {
				close(firstDone)
			}
		case wire.MethodEventsUnsubscribe:
		default:
			<-firstDone
			fc.reply(req.ID, wire.ServerInfo{Name: "fake"})
		}
	})
	c := dial(t, f.url(), client.WithEventBuffer(4))
	ctx := testCtx(t)
	sub, err := c.Subscribe(ctx, wire.SubscribeParams{AfterSeq: 0})
	if err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	defer sub.Close()
	// The fake answers this after it has sent all 100 events, and the
	// reader handles messages in order: once it returns, all of them have
	// met the 4-event buffer, which overflowed as nothing read C.
	if _, err := c.ServerInfo(ctx); err != nil {
		t.Fatal(err)
	}
	for want := int64(1); want <= n; want++ {
		select {
		case ev, ok := <-sub.C():
			if !ok {
				t.Fatalf("subscription ended at seq %d: %v", want, sub.Err())
			}
			if ev.Seq != want {
				t.Fatalf("got seq %d, want %d", ev.Seq, want)
			}
		case <-ctx.Done():
			t.Fatalf("waiting for seq %d: %v", want, ctx.Err())
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(afters) < 2 || afters[1] <= 0 {
		t.Errorf("subscribed with after_seq %v: want a resubscription after the buffer overflowed", afters)
	}
}

func TestSubscribeRefused(t *testing.T) {
	f := newFake(t, func(fc *fakeConn, req wire.Request) {
		fc.send(wire.Response{JSONRPC: "2.0", ID: req.ID, Error: wire.Errorf(wire.CodeInvalidParams, "unknown event type")})
	})
	c := dial(t, f.url())
	_, err := c.Subscribe(testCtx(t), wire.SubscribeParams{Types: []gym.EventType{"nope"}})
	var we *wire.Error
	if !errors.As(err, &we) || we.Code != wire.CodeInvalidParams {
		t.Fatalf("Subscribe with bad params: %v, want code %d", err, wire.CodeInvalidParams)
	}
}

func TestReconnectGivesUp(t *testing.T) {
	f := newFake(t, func(fc *fakeConn, req wire.Request) {
		switch req.Method {
		case wire.MethodEventsSubscribe:
			fc.reply(req.ID, wire.SubscribeResult{Subscription: "sub_1"})
		case wire.MethodServerInfo:
			fc.reply(req.ID, wire.ServerInfo{Name: "fake"})
		}
	})
	c := dial(t, f.url(), client.WithReconnect(client.ReconnectPolicy{InitialBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond, MaxAttempts: 3}))
	ctx := testCtx(t)
	sub, err := c.Subscribe(ctx, wire.SubscribeParams{AfterSeq: -1})
	if err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	f.stop() // the server is gone for good
	if _, err := c.ServerInfo(ctx); !errors.Is(err, client.ErrConnectionLost) {
		t.Fatalf("ServerInfo with the server gone: %v, want ErrConnectionLost", err)
	}
	if _, ok := <-sub.C(); ok {
		t.Fatal("got an event from a gone server")
	}
	if err := sub.Err(); !errors.Is(err, client.ErrConnectionLost) {
		t.Fatalf("subscription Err: %v, want ErrConnectionLost", err)
	}
	if _, err := c.Subscribe(ctx, wire.SubscribeParams{}); !errors.Is(err, client.ErrConnectionLost) {
		t.Fatalf("Subscribe after giving up: %v, want ErrConnectionLost", err)
	}
}

func TestFrameCap(t *testing.T) {
	var calls atomic.Int32
	f := newFake(t, func(fc *fakeConn, req wire.Request) {
		calls.Add(1)
		echoStep(fc, req, false)
	})
	c := dial(t, f.url(), client.WithMaxFrame(1024))
	ctx := testCtx(t)
	_, err := c.Attach("s1").Step(ctx, gym.TextAction(strings.Repeat("x", 2048)))
	if !errors.Is(err, gym.ErrBadRequest) || !strings.Contains(err.Error(), "frame limit") {
		t.Fatalf("oversized step: %v, want a frame-limit ErrBadRequest", err)
	}
	if _, err := c.Attach("s1").Step(ctx, gym.TextAction("small")); err != nil {
		t.Fatalf("small step: %v", err)
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("the fake saw %d requests, want 1", n)
	}
}

func TestResumePages(t *testing.T) {
	const n = 2500
	evs := eventLog(n)
	var calls atomic.Int32
	f := newFake(t, func(fc *fakeConn, req wire.Request) {
		calls.Add(1)
		p := decodeNoT[wire.ResumeParams](req)
		if p.Limit <= 0 || p.Limit > wire.MaxResumeEvents {
			p.Limit = wire.MaxResumeEvents
		}
		res := wire.ResumeResult{Session: p.Session, Live: true, LastSeq: p.AfterSeq, Events: []gym.Event{}}
		for _, ev := range evs[p.AfterSeq:] {
			if len(res.Events) == p.Limit {
				res.More = true
				break
			}
			res.Events = append(res.Events, *ev)
			res.LastSeq = ev.Seq
		}
		fc.reply(req.ID, res)
	})
	c := dial(t, f.url())
	s := c.Attach("s1")
	res, err := s.Resume(testCtx(t), 10)
	if err != nil {
		t.Fatalf("Resume: %v", err)
	}
	if len(res.Events) != n-10 || res.Events[0].Seq != 11 || res.LastSeq != n || res.More || !res.Live {
		t.Fatalf("Resume(10): %d events from %d, last %d, more %v", len(res.Events), res.Events[0].Seq, res.LastSeq, res.More)
	}
	for i, ev := range res.Events {
		if ev.Seq != int64(11+i) {
			t.Fatalf("event %d has seq %d", i, ev.Seq)
		}
	}
	if s.LastSeq() != n {
		t.Errorf("LastSeq %d, want %d", s.LastSeq(), n)
	}
	if calls.Load() < 2 {
		t.Errorf("%d resume calls, want several pages", calls.Load())
	}
}

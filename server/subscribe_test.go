package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/nextstate-rl/nextstate/gym"
	"github.com/nextstate-rl/nextstate/store"
	"github.com/nextstate-rl/nextstate/wire"
)

// TestSubscribeReplayThenLive subscribes with after_seq 0 while other
// sessions step: the subscriber gets the run's history, then its live
// events, in seq order with no gap and no duplicate.
func TestSubscribeReplayThenLive(t *testing.T) {
	ts := startServer(t)
	const run = "watched"
	hist := ts.dial()
	for range 3 {
		s := hist.create(gym.CreateRequest{Env: "echo-v1", Run: run}).Session
		for i := range 20 {
			hist.step(s, "", fmt.Sprint("history ", i))
		}
	}
	hist.create(gym.CreateRequest{Env: "echo-v1", Run: "elsewhere"})

	start := make(chan struct{})
	var wg sync.WaitGroup
	for g := range 5 {
		c := ts.dial()
		r := run
		if g == 4 {
			r = "elsewhere"
		}
		s := c.create(gym.CreateRequest{Env: "echo-v1", Run: r}).Session
		wg.Go(func() {
			<-start
			for i := range 40 {
				if m, err := c.tryCall(wire.MethodSessionStep, stepArgs(s, "", fmt.Sprint("live ", i))); err != nil || m.Error != nil {
					t.Errorf("step: %v %v", err, m)
					return
				}
			}
			if m, err := c.tryCall(wire.MethodSessionClose, wire.CloseParams{Session: s}); err != nil || m.Error != nil {
				t.Errorf("close: %v %v", err, m)
			}
		})
	}

	sub := ts.dial()
	id := sub.send(wire.MethodEventsSubscribe, wire.SubscribeParams{Run: run, AfterSeq: 0})
	close(start)
	m := sub.next() // the answer comes before any event
	if string(m.ID) != id || m.Error != nil {
		t.Fatalf("the first message is %s, want the answer to events.subscribe", m)
	}
	var sr wire.SubscribeResult
	mustUnmarshal(t, m.Result, &sr)
	wg.Wait()

	want, err := ts.Store().Events(t.Context(), store.Filter{Run: run})
	if err != nil {
		t.Fatal(err)
	}
	if len(want) != 3*(2+20)+4*(2+40+1) {
		t.Fatalf("the store has %d events of the run", len(want))
	}
	var got []int64
	for len(got) < len(want) {
		m := sub.next()
		n := m.event()
		if n == nil || n.Subscription != sr.Subscription {
			t.Fatalf("got %s, want an event of %s", m, sr.Subscription)
		}
		if n.Event.Run != run {
			t.Fatalf("event of run %q passed the filter", n.Event.Run)
		}
		got = append(got, n.Event.Seq)
	}
	if !slices.Equal(got, eventSeqs(want)) {
		t.Fatalf("the subscriber got seqs\n%v\nthe store has\n%v", got, eventSeqs(want))
	}
	// Nothing more is queued for it: a round trip comes back alone.
	if m := sub.call(wire.MethodServerInfo, nil); m.Error != nil {
		t.Fatal(m.Error)
	}
	sub.mu.Lock()
	defer sub.mu.Unlock()
	if len(sub.inbox) != 0 {
		t.Errorf("extra messages after the last event: %v", sub.inbox)
	}
}

// TestUnsubscribe ends a subscription: an events.ended says so, and no
// event of it follows.
func TestUnsubscribe(t *testing.T) {
	ts := startServer(t)
	c := ts.dial()
	s := c.create(gym.CreateRequest{Env: "echo-v1"}).Session
	var sr wire.SubscribeResult
	c.mustCall(wire.MethodEventsSubscribe, wire.SubscribeParams{Session: s, AfterSeq: -1, Types: []gym.EventType{gym.EventStep}}, &sr)
	st := c.step(s, "", "seen")
	// The event is published before the step is acknowledged, so it is
	// queued on this connection before the step's answer.
	m := c.next()
	if n := m.event(); n == nil || n.Event.Seq != st.Seq || n.Subscription != sr.Subscription {
		t.Fatalf("got %s, want the step's event", m)
	}

	var ur struct {
		Subscription string `json:"subscription"`
		Ended        bool   `json:"ended"`
	}
	c.mustCall(wire.MethodEventsUnsubscribe, wire.UnsubscribeParams{Subscription: sr.Subscription}, &ur)
	if !ur.Ended || ur.Subscription != sr.Subscription {
		t.Errorf("unsubscribe answered %+v", ur)
	}
	m = c.next()
	if e := m.ended(); e == nil || e.Reason != "unsubscribed" || e.LastSeq != st.Seq {
		t.Fatalf("got %s, want events.ended unsubscribed with last_seq %d", m, st.Seq)
	}
	c.step(s, "", "unseen")
	c.mu.Lock()
	left := slices.Clone(c.inbox)
	c.mu.Unlock()
	if len(left) != 0 {
		t.Errorf("messages after unsubscribing: %v", left)
	}
	wantCode(t, c.callErr(wire.MethodEventsUnsubscribe, wire.UnsubscribeParams{Subscription: sr.Subscription}), wire.CodeUnknownSub)
	if ts.broker.count() != 0 {
		t.Errorf("the broker still has %d subscriptions", ts.broker.count())
	}
	if _, _, body := ts.do("GET", "/metrics", nil); !strings.Contains(string(body), "\nnextstate_subscriptions 0\n") {
		t.Errorf("/metrics does not say nextstate_subscriptions 0")
	}
}

// TestSlowConsumer subscribes on a connection that never reads. The server
// ends the subscription (events.ended slow_consumer) or closes the
// connection, while a subscriber that reads gets every event and the
// connection that steps is not held up.
func TestSlowConsumer(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.OutboundBytes = 64 << 10 })
	slow, _, err := websocket.DefaultDialer.Dial(ts.ws, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	if err := slow.WriteMessage(websocket.TextMessage, []byte(`{"jsonrpc":"2.0","id":1,"method":"events.subscribe","params":{"after_seq":-1}}`)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the slow subscription", func() bool { return ts.broker.count() == 1 })

	fast := ts.dial()
	var sr wire.SubscribeResult
	fast.mustCall(wire.MethodEventsSubscribe, wire.SubscribeParams{AfterSeq: -1, Types: []gym.EventType{gym.EventStep}}, &sr)
	s := fast.create(gym.CreateRequest{Env: "echo-v1"}).Session
	text := strings.Repeat("next state ", 400) // ~4 KiB, twice in each event
	var seqs []int64
	deadline := time.Now().Add(waitTimeout)
	for ts.broker.count() != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("after %d steps the slow subscriber is still subscribed", len(seqs))
		}
		seqs = append(seqs, fast.step(s, "", text).Seq)
	}
	steps := len(seqs)
	for range 10 {
		seqs = append(seqs, fast.step(s, "", "after").Seq)
	}
	// The subscriber that reads got every step, in order, and was not ended.
	for _, want := range seqs {
		m := fast.take("an event", func(m *rpcMsg) bool { return m.Method != "" })
		if n := m.event(); n == nil || n.Subscription != sr.Subscription || n.Event.Seq != want {
			t.Fatalf("the reading subscriber got %.200s, want the event of seq %d", m, want)
		}
	}

	// The slow client finally reads: events, then either events.ended
	// slow_consumer or the end of the connection.
	slow.SetReadDeadline(time.Now().Add(waitTimeout))
	for {
		_, b, err := slow.ReadMessage()
		if err != nil {
			var ce *websocket.CloseError
			if errors.As(err, &ce) && ce.Code != websocket.ClosePolicyViolation {
				t.Fatalf("the slow connection was closed with %v, want policy violation (slow consumer)", err)
			}
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatalf("after %d steps the slow connection is neither ended nor closed", steps)
			}
			t.Logf("after %d steps the slow connection was closed: %v", steps, err)
			return
		}
		m, err := parseMsg(b)
		if err != nil {
			t.Fatal(err)
		}
		if e := m.ended(); e != nil {
			if e.Reason != "slow_consumer" {
				t.Fatalf("events.ended reason %q, want slow_consumer", e.Reason)
			}
			t.Logf("after %d steps the subscription ended as a slow consumer at seq %d", steps, e.LastSeq)
			return
		}
	}
}

// TestWSRefusedAfterShutdown: after Shutdown nothing is accepted.
func TestWSRefusedAfterShutdown(t *testing.T) {
	ts := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if err := ts.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	_, resp, err := websocket.DefaultDialer.Dial(ts.ws, nil)
	if err == nil {
		t.Fatal("dialing after Shutdown succeeded")
	}
	if resp != nil && resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("dialing after Shutdown: HTTP %d", resp.StatusCode)
	}
}

// TestCommittedJSON: what a live subscriber is sent of a committed event,
// made from the store's body, is byte for byte publicJSON's encoding of it,
// for events that are their own public form (sent as stored) and for those
// that are not (encoded again without the verifier's details).
func TestCommittedJSON(t *testing.T) {
	var mu sync.Mutex
	var got, want []string
	st, err := store.Open(t.TempDir(), store.Options{OnCommit: func(evs []*gym.Event, bodies []string) {
		mu.Lock()
		defer mu.Unlock()
		for i, ev := range evs {
			pub, _ := publicJSON(ev)
			got, want = append(got, string(committedJSON(ev, bodies[i]))), append(want, string(pub))
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	one := 1.0
	act, obs := gym.TextAction("ls <a&b>"), gym.TextObservation("out\n")
	for _, ev := range []*gym.Event{
		{Type: gym.EventStep, Session: "s", Env: "echo-v1", Step: 1, StepID: "a", Action: &act, Observation: &obs, Reward: &one},
		{Type: gym.EventStep, Session: "s", Env: "echo-v1", Step: 2, Terminated: true, Reward: &one,
			Info: gym.Info{"reward_source": "verifier", gym.InfoVerifier: gym.Info{"expected": "SECRET"}}},
		{Type: gym.EventReward, Session: "s", Env: "echo-v1", StepID: "a", Reward: &one, Source: "verifier:pytest", Info: gym.Info{"x": "SECRET"}},
		{Type: gym.EventReward, Session: "s", Env: "echo-v1", StepID: "a", Reward: &one, Source: "judge:prm", Info: gym.Info{"hint": "h"}},
	} {
		if err := st.Append(context.Background(), ev); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 4 {
		t.Fatalf("%d events committed, want 4", len(got))
	}
	for i := range got {
		if got[i] != want[i] || strings.Contains(got[i], "SECRET") {
			t.Errorf("event %d sent as\n%s\nwant\n%s", i+1, got[i], want[i])
		}
	}
}

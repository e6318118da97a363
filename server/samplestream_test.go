package server

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/nextstate-rl/nextstate/store"
	"github.com/nextstate-rl/nextstate/wire"
)

// addSamples stores one trajectory of n samples of run and env, as the
// signals follower would (the store wakes the streams).
func (ts *testServer) addSamples(run, env string, n int) (first, last int64) {
	ts.tb.Helper()
	first, last, err := ts.store.AppendSamples(context.Background(),
		store.Trajectory{Run: run, Env: env, Task: "task-" + run, Session: "s-" + run, Episode: 1},
		func(group, index int) ([][]byte, error) {
			out := make([][]byte, n)
			for i := range out {
				out[i] = fmt.Appendf(nil, `{"group_index":%d,"index":%d,"turn":%d,"run":%q}`, group, index, i, run)
			}
			return out, nil
		})
	if err != nil {
		ts.tb.Fatal(err)
	}
	return first, last
}

// subscribeSamples subscribes c to the samples stream and returns the
// subscription id and the result's last_seq.
func (c *wsClient) subscribeSamples(p map[string]any) (string, int64) {
	c.tb.Helper()
	p["stream"] = "samples"
	var r wire.SubscribeResult
	c.mustCall(wire.MethodEventsSubscribe, p, &r)
	return r.Subscription, r.LastSeq
}

// nextSample takes the next samples.sample of subscription sub.
func (c *wsClient) nextSample(sub string) wire.SampleNotification {
	c.tb.Helper()
	m := c.take("a sample of "+sub, func(m *rpcMsg) bool { return m.Method == wire.NotifySample })
	var n wire.SampleNotification
	mustUnmarshal(c.tb, m.Params, &n)
	if n.Subscription != sub {
		c.tb.Fatalf("a sample of subscription %s, want %s", n.Subscription, sub)
	}
	return n
}

// wantSamples takes the next samples and checks their offsets.
func (c *wsClient) wantSamples(sub string, offsets ...int64) {
	c.tb.Helper()
	for _, want := range offsets {
		if n := c.nextSample(sub); n.Offset != want {
			c.tb.Fatalf("sample offset %d, want %d", n.Offset, want)
		}
	}
}

// noSampleQueued makes a round trip and checks that no sample came before
// its answer.
func (c *wsClient) noSampleQueued() {
	c.tb.Helper()
	c.mustCall(wire.MethodServerInfo, nil, nil)
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range c.inbox {
		if m.Method == wire.NotifySample {
			c.tb.Fatalf("a sample came past the window: %s", m)
		}
	}
}

func (c *wsClient) ack(sub string, offset int64) int64 {
	c.tb.Helper()
	var r wire.SamplesAckResult
	c.mustCall(wire.MethodSamplesAck, wire.SamplesAckParams{Subscription: sub, Offset: offset}, &r)
	return r.Acked
}

// TestSamplesStreamWindow: samples come in offset order, at most window
// past the last acknowledged one; an ack lets more come, an ack past what
// was sent skips those samples, and new samples are streamed live.
func TestSamplesStreamWindow(t *testing.T) {
	ts := startServer(t)
	ts.addSamples("r1", "echo-v1", 10)
	c := ts.dial()
	sub, last := c.subscribeSamples(map[string]any{"after_seq": 0, "window": 3})
	if last != 10 {
		t.Errorf("subscribe: last_seq %d, want 10", last)
	}
	c.wantSamples(sub, 1, 2, 3)
	c.noSampleQueued() // the window is full: the server waits
	if got := c.ack(sub, 2); got != 2 {
		t.Errorf("ack 2: acked %d", got)
	}
	c.wantSamples(sub, 4, 5)
	c.noSampleQueued()
	if got := c.ack(sub, 1); got != 2 {
		t.Errorf("an older ack: acked %d, want 2 kept", got)
	}
	if got := c.ack(sub, 8); got != 8 {
		t.Errorf("ack 8: acked %d", got)
	}
	c.wantSamples(sub, 9, 10) // 6..8 were acknowledged unsent
	c.noSampleQueued()
	ts.addSamples("r1", "echo-v1", 2)
	c.wantSamples(sub, 11) // live; 9, 10, 11 in flight
	c.noSampleQueued()
	c.ack(sub, 11)
	c.wantSamples(sub, 12)

	// The sample is the stored JSON.
	ts.addSamples("r1", "echo-v1", 1)
	n := c.nextSample(sub)
	var body map[string]any
	mustUnmarshal(t, n.Sample, &body)
	if n.Offset != 13 || body["run"] != "r1" || body["group_index"] != float64(0) || body["index"] != float64(2) {
		t.Errorf("sample 13: %s", n.Sample)
	}
}

// TestSamplesStreamResume: after a disconnect a new subscription from the
// last acknowledged offset gets every later sample, those received but
// not acknowledged again (at least once).
func TestSamplesStreamResume(t *testing.T) {
	ts := startServer(t)
	ts.addSamples("r1", "echo-v1", 8)
	a := ts.dial()
	sub, _ := a.subscribeSamples(map[string]any{"after_seq": 0, "window": 4})
	a.wantSamples(sub, 1, 2, 3, 4)
	a.ack(sub, 2)
	a.wantSamples(sub, 5, 6)
	a.close() // 3..6 were received, not acknowledged

	b := ts.dial()
	sub2, _ := b.subscribeSamples(map[string]any{"after_seq": 2, "window": 4})
	b.wantSamples(sub2, 3, 4, 5, 6)
	b.ack(sub2, 6)
	b.wantSamples(sub2, 7, 8)

	// events.unsubscribe ends a samples stream too.
	var r struct{ Ended bool }
	b.mustCall(wire.MethodEventsUnsubscribe, wire.UnsubscribeParams{Subscription: sub2}, &r)
	m := b.take("events.ended", func(m *rpcMsg) bool { return m.ended() != nil })
	if e := m.ended(); !r.Ended || e.Reason != "unsubscribed" || e.LastSeq != 8 {
		t.Errorf("unsubscribe: %+v, ended %+v", r, e)
	}
	e := b.callErr(wire.MethodSamplesAck, wire.SamplesAckParams{Subscription: sub2, Offset: 8})
	wantCode(t, e, wire.CodeUnknownSub, sub2)
}

// TestSamplesStreamFilters: run and env filter the stream; after_seq -1
// starts with the samples stored after the subscription.
func TestSamplesStreamFilters(t *testing.T) {
	ts := startServer(t)
	ts.addSamples("r1", "echo-v1", 2) // 1, 2
	c := ts.dial()
	sub, _ := c.subscribeSamples(map[string]any{"after_seq": -1, "run": "r2"})
	ts.addSamples("r1", "echo-v1", 2) // 3, 4
	ts.addSamples("r2", "echo-v1", 2) // 5, 6
	c.wantSamples(sub, 5, 6)
	envSub, _ := c.subscribeSamples(map[string]any{"after_seq": 0, "env": "guess-v1"})
	ts.addSamples("r3", "guess-v1", 1) // 7
	c.wantSamples(envSub, 7)
	c.noSampleQueued()
}

// TestSamplesStreamErrors: bad params and acks are refused, saying why.
func TestSamplesStreamErrors(t *testing.T) {
	ts := startServer(t)
	ts.addSamples("r1", "echo-v1", 3)
	c := ts.dial()
	for _, tc := range []struct {
		params map[string]any
		want   string
	}{
		{map[string]any{"stream": "samples", "window": 5000}, "window"},
		{map[string]any{"stream": "samples", "window": -1}, "window"},
		{map[string]any{"stream": "samples", "types": []string{"step"}}, "types"},
		{map[string]any{"stream": "samples", "after_seq": -2}, "after_seq"},
		{map[string]any{"stream": "trajectories"}, "unknown stream"},
		{map[string]any{"window": 3}, "samples stream"},
	} {
		wantCode(t, c.callErr(wire.MethodEventsSubscribe, tc.params), wire.CodeInvalidParams, tc.want)
	}
	sub, _ := c.subscribeSamples(map[string]any{"after_seq": 0})
	c.wantSamples(sub, 1, 2, 3)
	wantCode(t, c.callErr(wire.MethodSamplesAck, wire.SamplesAckParams{Subscription: sub, Offset: 4}), wire.CodeInvalidParams, "past the last stored")
	wantCode(t, c.callErr(wire.MethodSamplesAck, wire.SamplesAckParams{Subscription: sub, Offset: -1}), wire.CodeInvalidParams, "offset")
	wantCode(t, c.callErr(wire.MethodSamplesAck, wire.SamplesAckParams{Subscription: "sub_99", Offset: 1}), wire.CodeUnknownSub, "sub_99")
	status, _, body := ts.do("POST", "/v1/rpc", `{"jsonrpc":"2.0","id":1,"method":"samples.ack","params":{"subscription":"sub_1","offset":1}}`)
	if status != http.StatusOK || !strings.Contains(string(body), fmt.Sprint(wire.CodeUnknownSub)) || !strings.Contains(string(body), "GET /v1/samples") {
		t.Errorf("samples.ack over HTTP: %d %s", status, body)
	}
}

// TestSamplesStreamBytes: a stream whose samples overfill the connection's
// outbound queue waits for the writer instead of failing the connection.
func TestSamplesStreamBytes(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.OutboundBytes = 64 << 10 })
	big := strings.Repeat("x", 20<<10)
	_, _, err := ts.store.AppendSamples(context.Background(), store.Trajectory{Run: "big", Session: "s"},
		func(int, int) ([][]byte, error) {
			out := make([][]byte, 20)
			for i := range out {
				out[i] = fmt.Appendf(nil, `{"i":%d,"pad":%q}`, i, big)
			}
			return out, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	c := ts.dial()
	sub, _ := c.subscribeSamples(map[string]any{"after_seq": 0, "window": 100})
	for i := int64(1); i <= 20; i++ {
		c.wantSamples(sub, i)
	}
}

// TestSamplesHTTP pulls pages of samples over HTTP.
func TestSamplesHTTP(t *testing.T) {
	ts := startServer(t)
	ts.addSamples("r1", "echo-v1", 4) // 1..4
	ts.addSamples("r2", "echo-v1", 2) // 5, 6
	var page wire.SamplesPage
	get := func(q string) {
		t.Helper()
		status, _, body := ts.do("GET", "/v1/samples?"+q, nil)
		if status != http.StatusOK {
			t.Fatalf("GET /v1/samples?%s: %d %s", q, status, body)
		}
		page = wire.SamplesPage{}
		mustUnmarshal(t, body, &page)
	}
	offsets := func() []int64 {
		var out []int64
		for _, s := range page.Samples {
			out = append(out, s.Offset)
		}
		return out
	}
	get("after_seq=1&limit=2")
	if fmt.Sprint(offsets()) != "[2 3]" || page.LastSeq != 3 || !page.More {
		t.Errorf("page 1: %v last %d more %v", offsets(), page.LastSeq, page.More)
	}
	get("after_seq=3&run=r1")
	if fmt.Sprint(offsets()) != "[4]" || page.LastSeq != 4 || page.More {
		t.Errorf("page 2 of r1: %v last %d more %v", offsets(), page.LastSeq, page.More)
	}
	get("after_seq=6")
	if len(page.Samples) != 0 || page.LastSeq != 6 || page.More {
		t.Errorf("past the end: %+v", page)
	}
	var body map[string]any
	get("after_seq=4&limit=1")
	mustUnmarshal(t, page.Samples[0].Sample, &body)
	if body["run"] != "r2" {
		t.Errorf("sample 5: %s", page.Samples[0].Sample)
	}
	if status, _, b := ts.do("GET", "/v1/samples?after_seq=-1", nil); status != http.StatusBadRequest {
		t.Errorf("after_seq=-1: %d %s", status, b)
	}
}

// TestExportSamples writes the stored samples as JSON Lines, each with its
// offset.
func TestExportSamples(t *testing.T) {
	ts := startServer(t)
	ts.addSamples("r1", "echo-v1", 2)
	ts.addSamples("r2", "echo-v1", 1)
	var out bytes.Buffer
	if err := ts.store.Export(context.Background(), &out, store.Filter{Run: "r2"}, store.FormatSamples); err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(out.String()); got != `{"offset":3,"group_index":1,"index":1,"turn":0,"run":"r2"}` {
		t.Errorf("export: %s", got)
	}
	out.Reset()
	if err := ts.store.Export(context.Background(), &out, store.Filter{}, store.FormatSamples); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(&out)
	n := 0
	for sc.Scan() {
		n++
		var v struct{ Offset int64 }
		mustUnmarshal(t, sc.Bytes(), &v)
		if v.Offset != int64(n) {
			t.Errorf("line %d: offset %d", n, v.Offset)
		}
	}
	if n != 3 {
		t.Errorf("exported %d samples, want 3", n)
	}
}

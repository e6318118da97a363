package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	_ "github.com/nextstate-rl/nextstate/envs/terminal" // terminal-v1
	"github.com/nextstate-rl/nextstate/gym"
	_ "github.com/nextstate-rl/nextstate/mcp/mcptest" // mcptest-v1
	"github.com/nextstate-rl/nextstate/rl"
	"github.com/nextstate-rl/nextstate/sandbox"
	_ "github.com/nextstate-rl/nextstate/sandbox/bwrap" // the bwrap backend
	"github.com/nextstate-rl/nextstate/store"
	"github.com/nextstate-rl/nextstate/wire"
)

// BenchmarkStepLatencyJudge measures session.step latency (p50, p99, in
// microseconds, over loopback WebSockets with the store on) of echo-v1, of
// terminal-v1 (shell_exec "true" in a bubblewrap sandbox; skipped where
// bwrap cannot run) and of a tool-call kind (mcptest-v1, the toolcall env
// over a counter domain, from package mcp/mcptest),
// without a judge and with a judge whose every call takes 2s (4 workers,
// a queue of 256: past it each step is recorded as not judged,
// queue_full, one more store write per step). sessions clients step at
// once, each waiting for its answer.
//
//	go test -run '^$' -bench BenchmarkStepLatencyJudge -benchtime 4000x ./server/
func BenchmarkStepLatencyJudge(b *testing.B) {
	for _, kind := range []string{"echo-v1", "terminal-v1", "mcptest-v1"} {
		for _, delay := range []time.Duration{0, 2 * time.Second} {
			for _, sessions := range []int{1, 8} {
				name := fmt.Sprintf("kind=%s/judge=%s/sessions=%d", kind, map[bool]string{true: "2s", false: "none"}[delay > 0], sessions)
				b.Run(name, func(b *testing.B) { benchStepLatency(b, kind, delay, sessions) })
			}
		}
	}
}

// slowJudge answers every call after delay (or when the caller gives up).
func slowJudge(b *testing.B, delay time.Duration) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"c","object":"chat.completion","created":0,"model":"slow","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"\\boxed{0}"}}]}`)
	}))
	b.Cleanup(srv.Close)
	return srv
}

func benchStepLatency(b *testing.B, kind string, delay time.Duration, sessions int) {
	var opts []func(*Config)
	if kind == "terminal-v1" {
		sb, err := sandbox.Open(context.Background(), "bwrap", sandbox.Options{Dir: b.TempDir()})
		if err != nil {
			b.Skipf("the bwrap sandbox is unavailable here: %v", err)
		}
		sb.Close(context.Background())
		dir := b.TempDir()
		opts = append(opts, func(c *Config) { c.Sessions.Settings = gym.Settings{"sandbox": "bwrap", "sandbox.dir": dir} })
	}
	if delay > 0 {
		j := slowJudge(b, delay)
		opts = append(opts, func(c *Config) {
			c.Signals.Judge = rl.JudgeConfig{Endpoint: j.URL + "/v1", Model: "slow", Votes: 3,
				HTTPClient: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}}
			c.Signals.Drain = 100 * time.Millisecond
		})
	}
	ts := startServer(b, opts...)
	create := gym.CreateRequest{Env: kind}
	action := gym.TextAction("the next state")
	toolCall := func(name, args string) gym.Action {
		return gym.Action{Parts: []gym.Part{{Type: gym.PartToolCall, ToolCall: &gym.ToolCall{ID: "c1", Type: "function",
			Function: gym.FunctionCall{Name: name, Arguments: args}}}}}
	}
	switch kind {
	case "mcptest-v1":
		create, action = gym.CreateRequest{TaskID: "mcptest-3"}, toolCall("get", "{}")
	case "terminal-v1":
		create, action = gym.CreateRequest{TaskID: "terminal-env-vars"}, toolCall("shell_exec", `{"command":"true"}`)
	}
	per := (b.N + sessions - 1) / sessions
	lat := make([][]time.Duration, sessions)
	var wg sync.WaitGroup
	b.ResetTimer()
	for s := range sessions {
		wg.Go(func() {
			ws, _, err := websocket.DefaultDialer.Dial(ts.ws, http.Header{})
			if err != nil {
				b.Error(err)
				return
			}
			defer ws.Close()
			id := 0
			call := func(method string, params any) json.RawMessage {
				id++
				req, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
				if err := ws.WriteMessage(websocket.TextMessage, req); err != nil {
					b.Error(err)
					return nil
				}
				var resp wire.Response
				if err := ws.ReadJSON(&resp); err != nil || resp.Error != nil {
					b.Errorf("%s: %v %v", method, err, resp.Error)
					return nil
				}
				return resp.Result
			}
			var cr gym.ResetResult
			if err := json.Unmarshal(call(wire.MethodSessionCreate, create), &cr); err != nil {
				b.Error(err)
				return
			}
			out := make([]time.Duration, 0, per)
			for i := range per {
				start := time.Now()
				raw := call(wire.MethodSessionStep, wire.StepParams{Session: cr.Session, StepID: fmt.Sprint("s", i), Action: action})
				out = append(out, time.Since(start))
				var r gym.StepResult
				if raw == nil || json.Unmarshal(raw, &r) != nil {
					return
				}
				if r.Terminated || r.Truncated {
					call(wire.MethodSessionReset, wire.ResetParams{Session: cr.Session})
				}
			}
			lat[s] = out
		})
	}
	wg.Wait()
	b.StopTimer()
	all := slices.Concat(lat...)
	if len(all) == 0 {
		return
	}
	slices.Sort(all)
	pct := func(p float64) float64 { return float64(all[int(p*float64(len(all)-1))].Microseconds()) }
	b.ReportMetric(pct(0.50), "p50_us")
	b.ReportMetric(pct(0.99), "p99_us")
	b.ReportMetric(0, "ns/op")
	st := ts.sig.JudgeStats()
	b.ReportMetric(float64(st.Dropped), "queue_full")
}

// BenchmarkSampleStream measures the samples stream's throughput to one
// WebSocket subscriber that acknowledges every 64 samples, window 256, and
// of GET /v1/samples pages of 1000. Samples are about 3 KB (a prompt of a
// few messages, 256 prompt and 128 response token ids with log-probs).
//
//	go test -run '^$' -bench BenchmarkSampleStream -benchtime 20000x ./server/
func BenchmarkSampleStream(b *testing.B) {
	b.Run("ws", func(b *testing.B) {
		ts := startServer(b)
		fillSamples(b, ts, b.N)
		ws, _, err := websocket.DefaultDialer.Dial(ts.ws, http.Header{})
		if err != nil {
			b.Fatal(err)
		}
		defer ws.Close()
		b.ResetTimer()
		start := time.Now()
		write := func(id int, method string, params any) {
			req, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
			if err := ws.WriteMessage(websocket.TextMessage, req); err != nil {
				b.Fatal(err)
			}
		}
		write(1, wire.MethodEventsSubscribe, map[string]any{"stream": "samples", "after_seq": 0, "window": 256})
		var sub string
		got, n, id := 0, 0, 1
		for got < b.N {
			_, msg, err := ws.ReadMessage()
			if err != nil {
				b.Fatal(err)
			}
			n += len(msg)
			// The notification's head, read without decoding the sample
			// (the subscriber's own cost is not the server's throughput):
			// {"jsonrpc":"2.0","method":"samples.sample","params":{"subscription":"sub_1","offset":N,...
			rest, ok := bytes.CutPrefix(msg, []byte(`{"jsonrpc":"2.0","method":"`+wire.NotifySample+`","params":{"subscription":"`))
			if !ok {
				if bytes.Contains(msg, []byte(`"method"`)) {
					b.Fatalf("unexpected %.200s", msg)
				}
				continue // a response
			}
			q := bytes.IndexByte(rest, '"')
			sub = string(rest[:q])
			rest = bytes.TrimPrefix(rest[q:], []byte(`","offset":`))
			offset, err := strconv.ParseInt(string(rest[:bytes.IndexByte(rest, ',')]), 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			got++
			if got%64 == 0 {
				id++
				write(id, wire.MethodSamplesAck, wire.SamplesAckParams{Subscription: sub, Offset: offset})
			}
		}
		elapsed := time.Since(start)
		b.StopTimer()
		b.ReportMetric(float64(got)/elapsed.Seconds(), "samples/s")
		b.ReportMetric(float64(n)/elapsed.Seconds()/1e6, "MB/s")
	})
	b.Run("http", func(b *testing.B) {
		ts := startServer(b)
		fillSamples(b, ts, b.N)
		b.ResetTimer()
		start := time.Now()
		got, after := 0, int64(0)
		for got < b.N {
			status, _, body := ts.do("GET", fmt.Sprintf("/v1/samples?after_seq=%d&limit=1000", after), nil)
			if status != http.StatusOK {
				b.Fatalf("%d %s", status, body)
			}
			var page wire.SamplesPage
			if err := json.Unmarshal(body, &page); err != nil {
				b.Fatal(err)
			}
			got += len(page.Samples)
			after = page.LastSeq
		}
		elapsed := time.Since(start)
		b.StopTimer()
		b.ReportMetric(float64(got)/elapsed.Seconds(), "samples/s")
	})
}

// fillSamples stores n realistic samples, 16 per trajectory.
func fillSamples(b *testing.B, ts *testServer, n int) {
	b.Helper()
	ids := func(k, base int) []int {
		out := make([]int, k)
		for i := range out {
			out[i] = base + i*37%50000
		}
		return out
	}
	lp := make([]float64, 128)
	for i := range lp {
		lp[i] = -0.25 - float64(i%7)/10
	}
	prompt := []rl.Message{{Role: "system", Content: "You are an agent in a shell."},
		{Role: "user", Content: strings.Repeat("Create hello.txt containing hi. ", 8)},
		{Role: "assistant", Content: "ls -la"}, {Role: "user", Content: "total 0\n[exit code 0]"}}
	for left := n; left > 0; {
		k := min(16, left)
		_, _, err := ts.store.AppendSamples(context.Background(), store.Trajectory{Run: "bench", Env: "terminal-v1", Task: "hello", Session: "s"},
			func(group, index int) ([][]byte, error) {
				out := make([][]byte, k)
				for i := range out {
					s := rl.Sample{GroupIndex: group, Index: index, Prompt: prompt, Response: "echo hi > hello.txt",
						Tokens: append(ids(256, 100), ids(128, 9000)...), ResponseLength: 128, LossMask: slices.Repeat([]int{1}, 128),
						RolloutLogProbs: lp, Reward: 1, Status: rl.StatusCompleted}
					var err error
					if out[i], err = json.Marshal(&s); err != nil {
						return nil, err
					}
				}
				return out, nil
			})
		if err != nil {
			b.Fatal(err)
		}
		left -= k
	}
}

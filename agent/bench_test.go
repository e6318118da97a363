package agent

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nextstate-rl/nextstate/gym"
)

// BenchmarkAgentTurn measures the agent's own cost per turn against the
// scripted endpoint on loopback: building and cutting the prompt, the
// HTTP call, decoding the reply (with vLLM's token ids and log-probs when
// asked), turning it into an action, and the step. Episodes are 10 turns.
// "fake" steps a session in memory, so the number is the agent and the
// HTTP round trip; "gym" steps echo-v1 on a server in process over its
// WebSocket, so it adds the gym's step path.
func BenchmarkAgentTurn(b *testing.B) {
	const turns = 10
	text := strings.Repeat("some words of a reply ", 8)
	for _, tc := range []struct {
		name  string
		vllm  bool
		calls bool
		gym   bool
	}{
		{name: "fake/text"},
		{name: "fake/vllm-tokens", vllm: true},
		{name: "fake/tool-calls", calls: true},
		{name: "gym/echo", gym: true},
	} {
		b.Run(tc.name, func(b *testing.B) {
			llm := newScripted(b, tc.vllm, func(r llmRequest) llmReply {
				if tc.calls {
					return llmReply{Content: "calling", ToolCalls: []map[string]any{nativeCall("", "f", `{"x": 1}`)}}
				}
				return llmReply{Content: text}
			})
			llm.mu.Lock()
			llm.reqs = make([]llmRequest, 0, b.N+turns)
			llm.mu.Unlock()
			tokenInfo := "off"
			if tc.vllm {
				tokenInfo = "on"
			}
			a := mustAgent(b, Config{BaseURL: llm.URL(), MaxTurns: turns, TokenInfo: tokenInfo})
			ctx := context.Background()
			gc := func() (Session, gym.ResetResult, func()) {
				fs := &fakeSession{end: turns}
				return fs, echoReset(), func() {}
			}
			if tc.gym {
				cl := gymServer(b)
				gc = func() (Session, gym.ResetResult, func()) {
					s, res, err := cl.Create(ctx, gym.CreateRequest{TaskID: "echo-smoke"})
					if err != nil {
						b.Fatal(err)
					}
					return s, res, func() { s.Close(ctx) }
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			done := 0
			for done < b.N {
				s, res, closeSess := gc()
				ep, err := a.Play(ctx, s, Start{Reset: res})
				if err != nil || ep.Failure != nil {
					b.Fatalf("%v %+v", err, ep.Failure)
				}
				done += ep.Turns
				closeSess()
				llm.mu.Lock()
				llm.reqs, llm.raw = llm.reqs[:0], llm.raw[:0]
				llm.mu.Unlock()
			}
			b.StopTimer()
			b.ReportMetric(float64(done)/time.Since(start).Seconds(), "turns/s")
			b.ReportMetric(float64(time.Since(start).Nanoseconds())/float64(done), "ns/turn")
		})
	}
}

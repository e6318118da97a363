package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/nextstate-rl/nextstate/gym"
	"github.com/nextstate-rl/nextstate/wire"
)

// BenchmarkWSStep steps echo-v1 sessions over loopback WebSockets with the
// store on: each b.RunParallel goroutine has its own connection and session
// and waits for each answer before its next step (an agent's loop), and
// every step is committed to the store before it is answered. The sub-
// benchmarks run 1, 8 and 32 sessions per GOMAXPROCS; steps/s is the
// throughput of all of them together.
//
//	go test -run '^$' -bench BenchmarkWSStep -benchtime 3s ./server/
func BenchmarkWSStep(b *testing.B) {
	for _, par := range []int{1, 8, 32} {
		b.Run(fmt.Sprintf("sessions=%d", par*runtime.GOMAXPROCS(0)), func(b *testing.B) {
			benchWSStep(b, par)
		})
	}
}

func benchWSStep(b *testing.B, parallelism int) {
	ts := startServer(b)
	var sessions atomic.Int64
	b.SetParallelism(parallelism)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		ws, _, err := websocket.DefaultDialer.Dial(ts.ws, http.Header{})
		if err != nil {
			b.Error(err)
			return
		}
		defer ws.Close()
		call := func(id int, method string, params any) json.RawMessage {
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
		if err := json.Unmarshal(call(0, wire.MethodSessionCreate, gym.CreateRequest{Env: "echo-v1"}), &cr); err != nil {
			b.Error(err)
			return
		}
		sessions.Add(1)
		p := wire.StepParams{Session: cr.Session, Action: gym.TextAction("the next state")}
		for i := 1; pb.Next(); i++ {
			if call(i, wire.MethodSessionStep, p) == nil {
				return
			}
		}
	})
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "steps/s")
	b.ReportMetric(float64(sessions.Load()), "sessions")
}

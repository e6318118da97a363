package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"runtime"
	"strconv"
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

// BenchmarkStepRequest is the server's side of one session.step, without
// the sockets: the frame as the reader goroutine gets it, decoded, routed,
// run (the store on: each step is committed before it is answered) and its
// response encoded. Each b.RunParallel goroutine steps its own echo-v1
// session with a fresh step id each time, as the Go client does. allocs/op
// is what one step costs the garbage collector.
//
//	go test -run '^$' -bench BenchmarkStepRequest -benchmem ./server/
func BenchmarkStepRequest(b *testing.B) {
	ts := startServer(b)
	b.SetParallelism(8)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		c := &conn{s: ts.Server}
		res, werr := ts.call(context.Background(), c, wire.MethodSessionCreate, json.RawMessage(`{"env":"echo-v1"}`))
		if werr != nil {
			b.Error(werr)
			return
		}
		sess := res.(gym.ResetResult).Session
		head := []byte(`{"jsonrpc":"2.0","id":1,"method":"session.step","params":{"session":"` + sess + `","step_id":"` + sess + `-`)
		frame := make([]byte, 0, 256)
		for i := 1; pb.Next(); i++ {
			frame = strconv.AppendInt(append(frame[:0], head...), int64(i), 10)
			frame = append(frame, `","action":{"parts":[{"type":"text","text":"the next state"}]}}}`...)
			if msg := stepFrame(c, frame); !bytes.Contains(msg, []byte(`"result"`)) {
				b.Errorf("step: %s", msg)
				return
			}
		}
	})
}

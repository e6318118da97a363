package store

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/nextstate-rl/nextstate/gym"
)

// BenchmarkAppend appends small step events (a text action and a text
// observation) from many goroutines at once, as a server with many sessions
// does, and reports events/s.
func BenchmarkAppend(b *testing.B) {
	var commits atomic.Int64
	s := openT(b, b.TempDir(), Options{OnCommit: func([]*gym.Event, []string) { commits.Add(1) }})
	b.SetParallelism(32) // goroutines per GOMAXPROCS: sessions waiting on their step's commit
	var sessions atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		sess := fmt.Sprintf("sess-%04d", sessions.Add(1))
		ctx := context.Background()
		act := gym.TextAction("ls -la /tmp")
		obs := gym.TextObservation("total 8\ndrwxrwxrwt 2 root root 4096 Jan  1 00:00 .\ndrwxr-xr-x 1 root root 4096 Jan  1 00:00 ..\n")
		reward := 0.0
		for i := 1; pb.Next(); i++ {
			ev := &gym.Event{Type: gym.EventStep, Session: sess, Run: "bench", Env: "terminal-v1", Task: "list-tmp",
				Episode: 1, Step: i, StepID: fmt.Sprintf("st-%d", i), Action: &act, Observation: &obs,
				Reward: &reward, DurationUS: 1500}
			if err := s.Append(ctx, ev); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(b.N)/float64(max(commits.Load(), 1)), "events/commit")
}

// BenchmarkAppendSerial is one session stepping alone: the latency of one
// commit with nothing to group it with.
func BenchmarkAppendSerial(b *testing.B) {
	s := openT(b, b.TempDir(), Options{})
	ctx := context.Background()
	act := gym.TextAction("ls -la /tmp")
	obs := gym.TextObservation("total 8")
	b.ResetTimer()
	for i := range b.N {
		ev := &gym.Event{Type: gym.EventStep, Session: "s", Env: "terminal-v1", Episode: 1, Step: i + 1,
			Action: &act, Observation: &obs}
		if err := s.Append(ctx, ev); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

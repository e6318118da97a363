package code_test

import (
	"context"
	"log/slog"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nextstate-rl/nextstate/envs/toolcall/code"
	"github.com/nextstate-rl/nextstate/gym"
)

// BenchmarkRoundTrip measures one code_interpreter call through a gym
// session (a step with one call of print(6 * 7), its result back) on each
// sandbox backend, stateless and in a session, and reports the p50 and p99
// latency in milliseconds. For stable percentiles run enough steps:
//
//	go test -run '^$' -bench RoundTrip -benchtime 200x ./envs/toolcall/code/
func BenchmarkRoundTrip(b *testing.B) {
	for _, backend := range []struct {
		name     string
		settings func(testing.TB) gym.Settings
	}{{"bwrap", needBwrap}, {"docker", needDocker}} {
		b.Run(backend.name, func(b *testing.B) {
			settings := backend.settings(b)
			m := gym.NewManager(gym.Config{Recorder: &nopRecorder{}, Settings: settings, Logger: slog.New(slog.DiscardHandler)})
			defer func() {
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				defer cancel()
				m.Shutdown(ctx)
			}()
			for _, mode := range []string{code.ModeStateless, code.ModeSession} {
				b.Run(mode, func(b *testing.B) { benchRoundTrip(b, m, mode) })
			}
		})
	}
}

func benchRoundTrip(b *testing.B, m *gym.Manager, mode string) {
	ctx := context.Background()
	task := sumTask
	task.Limits.MaxSteps = 1 << 30
	s, _, err := m.Create(ctx, gym.CreateRequest{Task: &task, Options: gym.Options{"mode": mode}})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close(ctx)
	action := gym.Action{Parts: []gym.Part{call("print(6 * 7)")}}
	// One call before timing: the first one of a sandbox warms caches.
	if _, err := s.Step(ctx, "", action); err != nil {
		b.Fatal(err)
	}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for b.Loop() {
		t0 := time.Now()
		res, err := s.Step(ctx, "", action)
		lat = append(lat, time.Since(t0))
		if err != nil || res.Failure != nil {
			b.Fatalf("step: %v %+v", err, res.Failure)
		}
		if rs := results(b, res); len(rs) != 1 || rs[0].Content != "42\n" {
			b.Fatalf("result %+v", rs)
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	ms := func(q float64) float64 {
		return float64(lat[int(q*float64(len(lat)-1))]) / float64(time.Millisecond)
	}
	b.ReportMetric(ms(0.50), "p50-ms")
	b.ReportMetric(ms(0.99), "p99-ms")
}

// nopRecorder numbers events and keeps none, so that a long benchmark
// does not grow.
type nopRecorder struct{ seq atomic.Int64 }

func (r *nopRecorder) Append(_ context.Context, ev *gym.Event) error {
	ev.Seq = r.seq.Add(1)
	return nil
}

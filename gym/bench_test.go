package gym_test

import (
	"context"
	"math"
	"strconv"
	"testing"

	"github.com/nextstate-rl/nextstate/gym"
	_ "github.com/nextstate-rl/nextstate/gym/testenvs"
)

// benchSession makes an echo-v1 session that never runs out of steps, on a
// manager that records to gym.Discard, so a step costs only the gym's own
// work: encoding and hashing the action, schema validation, limits and the
// step log.
func benchSession(b *testing.B, m *gym.Manager) *gym.Session {
	b.Helper()
	task := &gym.Task{ID: "bench", Env: "echo-v1", Limits: gym.Limits{MaxSteps: math.MaxInt}}
	s, _, err := m.Create(context.Background(), gym.CreateRequest{Task: task})
	if err != nil {
		b.Fatal(err)
	}
	return s
}

func benchManager(b *testing.B) *gym.Manager {
	m := gym.NewManager(gym.Config{Recorder: gym.Discard})
	b.Cleanup(func() { m.Shutdown(context.Background()) })
	return m
}

// BenchmarkSessionStep measures one Session.Step on echo-v1, with and
// without a step id (a step id adds the replay log).
func BenchmarkSessionStep(b *testing.B) {
	ctx := context.Background()
	action := gym.TextAction("ls -la /tmp")
	b.Run("no_step_id", func(b *testing.B) {
		s := benchSession(b, benchManager(b))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := s.Step(ctx, "", action); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("step_id", func(b *testing.B) {
		s := benchSession(b, benchManager(b))
		ids := make([]string, 8192)
		for i := range ids {
			ids[i] = "step-" + strconv.Itoa(i)
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			// Ids cycle after 8192 steps; the log keeps 4096, so every id
			// is new when it comes round again.
			if _, err := s.Step(ctx, ids[i%len(ids)], action); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
}

// BenchmarkSessionStepParallel steps many sessions at once, one per
// goroutine, to show contention on the manager's lock.
func BenchmarkSessionStepParallel(b *testing.B) {
	ctx := context.Background()
	m := benchManager(b)
	action := gym.TextAction("ls -la /tmp")
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		s := benchSession(b, m)
		for pb.Next() {
			if _, err := s.Step(ctx, "", action); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

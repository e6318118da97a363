package terminal_test

import (
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/nextstate-rl/nextstate/gym"
)

// BenchmarkVerify measures the terminating step of an episode, the
// verifier's whole cost: killing the agent's processes, the fresh sandbox,
// carrying the working directory, the test run, the report. Each op is
// one episode of answerTask (reset and the answer are not timed);
// p50/p99 of the submit step are reported.
func BenchmarkVerify(b *testing.B) {
	for _, backend := range []string{"bwrap", "docker"} {
		b.Run(backend, func(b *testing.B) {
			var settings gym.Settings
			if backend == "bwrap" {
				settings = needBwrap(b)
			} else {
				settings = needDocker(b)
			}
			h := newHarnessOn(b, settings)
			task := writeTask(b, answerTask)
			s, _ := h.create(task, nil)
			defer s.Close(b.Context())
			var lat []time.Duration
			for i := 0; b.Loop(); i++ {
				b.StopTimer()
				if i > 0 {
					if _, err := s.Reset(b.Context(), nil, int64(i), nil); err != nil {
						b.Fatal(err)
					}
				}
				if _, err := s.Step(b.Context(), fmt.Sprint("a", i), gym.Action{Parts: []gym.Part{call("shell_exec", map[string]any{"command": "echo 42 > /app/answer.txt"})}}); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				start := time.Now()
				res, err := s.Step(b.Context(), fmt.Sprint("s", i), gym.Action{Parts: []gym.Part{call("submit", map[string]any{})}})
				lat = append(lat, time.Since(start))
				if err != nil || res.Reward != 1 {
					b.Fatalf("submit: reward %v failure %+v err %v", res.Reward, res.Failure, err)
				}
			}
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			b.ReportMetric(float64(lat[len(lat)/2].Milliseconds()), "p50-ms")
			b.ReportMetric(float64(lat[(len(lat)*99)/100].Milliseconds()), "p99-ms")
		})
	}
}

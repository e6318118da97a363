package web

import (
	"context"
	"testing"

	"github.com/nextstate-rl/nextstate/gym"
)

// BenchmarkStep measures a step: the action (a click that ends nothing)
// and the observation (the page's state and a screenshot).
func BenchmarkStep(b *testing.B) {
	for _, elements := range []bool{false, true} {
		name := map[bool]string{false: "screenshot", true: "screenshot+elements"}[elements]
		b.Run(name, func(b *testing.B) {
			m, _ := newManager(b, nil)
			s, _ := create(b, m, testTask(b, "test-click"), 1, gym.Options{"elements": elements, "episode_ms": MaxEpisodeMS})
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				r := step(b, s, at("click", 10+i%100, 180))
				if r.Terminated || r.Truncated {
					b.Fatalf("the episode ended: %v", r.Info)
				}
			}
		})
	}
}

// BenchmarkReset measures a reset (navigation, seeding, start, first
// observation) on a warm page.
func BenchmarkReset(b *testing.B) {
	m, _ := newManager(b, nil)
	s, _ := create(b, m, testTask(b, "test-click"), 1, nil)
	for i := 0; b.Loop(); i++ {
		if _, err := s.Reset(b.Context(), nil, int64(i), nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSession measures a session's create (a new page in a warm
// browser, the first reset) and close.
func BenchmarkSession(b *testing.B) {
	m, _ := newManager(b, nil)
	create(b, m, testTask(b, "test-click"), 1, nil) // warms the browser
	for b.Loop() {
		s, _, err := m.Create(b.Context(), gym.CreateRequest{Task: testTask(b, "test-click"), Seed: 1})
		if err != nil {
			b.Fatal(err)
		}
		if err := s.Close(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
}

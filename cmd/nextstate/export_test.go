package main

import (
	"context"
	"strings"
	"testing"

	"github.com/nextstate-rl/nextstate/gym"
	"github.com/nextstate-rl/nextstate/store"
)

// TestExportWithoutVerifier: export writes trajectories and events without
// the verifier's details, for agents; --with-verifier keeps them, for
// trainers.
func TestExportWithoutVerifier(t *testing.T) {
	const secret = "expected-answer-5e1f"
	dir := t.TempDir()
	st, err := store.Open(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	one := 1.0
	obs := gym.TextObservation("start")
	for _, ev := range []*gym.Event{
		{Type: gym.EventReset, Session: "s1", Env: "echo-v1", Task: "t", Episode: 1, Observation: &obs},
		{Type: gym.EventStep, Session: "s1", Env: "echo-v1", Task: "t", Episode: 1, Step: 1, StepID: "a", Reward: &one, Terminated: true,
			Info: gym.Info{"reward_source": "verifier", "verifier": gym.Info{"expected": secret}}},
		{Type: gym.EventReward, Session: "s1", Env: "echo-v1", Task: "t", Episode: 1, StepID: "a", Reward: &one, Source: "verifier",
			Info: gym.Info{"tests": []string{"test_" + secret}}},
	} {
		if err := st.Append(context.Background(), ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"jsonl", "events"} {
		out, err := run(t, "export", "--data", dir, "--format", format)
		if err != nil {
			t.Fatalf("export --format %s: %v\n%s", format, err, out)
		}
		if strings.Contains(out, secret) || !strings.Contains(out, `"reward_source":"verifier"`) {
			t.Errorf("export --format %s: want the rewards without the verifier's details:\n%s", format, out)
		}
		out, err = run(t, "export", "--data", dir, "--format", format, "--with-verifier")
		if err != nil {
			t.Fatalf("export --format %s --with-verifier: %v\n%s", format, err, out)
		}
		if strings.Count(out, secret) != 2 {
			t.Errorf("export --format %s --with-verifier: want the verifier's details twice:\n%s", format, out)
		}
	}
}

package testenvs_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/nextstate-rl/nextstate/gym"
	"github.com/nextstate-rl/nextstate/gym/gymtest"
	"github.com/nextstate-rl/nextstate/gym/testenvs"
)

func TestConformance(t *testing.T) {
	t.Run("guess-v1", func(t *testing.T) {
		gymtest.CheckKind(t, "guess-v1")
		task := &gym.Task{ID: "guess-1-4", Data: json.RawMessage(`{"low":1,"high":4}`)}
		// Seed 3 and 4 guesses cover higher, lower and correct.
		var actions []gym.Action
		for _, g := range []string{"1", "4", "x", "2", "3"} {
			actions = append(actions, gym.TextAction(g))
		}
		gymtest.CheckKind(t, "guess-v1",
			gymtest.Case{Task: task, Seed: 3, Actions: actions},
			gymtest.Case{Task: task, Seed: 4, Actions: actions})
	})
	t.Run("echo-v1", func(t *testing.T) {
		gymtest.CheckKind(t, "echo-v1")
		gymtest.CheckKind(t, "echo-v1", gymtest.Case{
			Task: &gym.Task{ID: "echo-parts", Instruction: "echo"},
			Actions: []gym.Action{
				gym.TextAction(""),
				{Parts: []gym.Part{gym.TextPart("a"), gym.TextPart("b")}},
				gym.TextAction("/done"),
			},
		})
	})
}

func newManager(t *testing.T) (*gym.Manager, *gymtest.Memory) {
	t.Helper()
	mem := &gymtest.Memory{}
	m := gym.NewManager(gym.Config{Recorder: mem})
	t.Cleanup(func() { m.Shutdown(context.Background()) })
	return m, mem
}

// secretOf plays guess-v1 by binary search and returns the secret and the
// number of steps it took.
func secretOf(t *testing.T, m *gym.Manager, taskID string, seed int64) (secret, steps int, last gym.StepResult) {
	t.Helper()
	ctx := t.Context()
	s, rr, err := m.Create(ctx, gym.CreateRequest{TaskID: taskID, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(ctx)
	var d testenvs.GuessData
	if err := json.Unmarshal(s.Task().Data, &d); err != nil {
		t.Fatal(err)
	}
	if rr.Info["low"] != d.Low || rr.Info["high"] != d.High {
		t.Errorf("reset info %v, want low %d high %d", rr.Info, d.Low, d.High)
	}
	lo, hi := d.Low, d.High
	for {
		if lo > hi {
			t.Fatalf("seed %d: range empty after %d steps: the answers are inconsistent", seed, steps)
		}
		g := lo + (hi-lo)/2
		res, err := s.Step(ctx, "", gym.TextAction(strconv.Itoa(g)))
		if err != nil {
			t.Fatal(err)
		}
		steps++
		switch obs := res.Observation.Text(); {
		case res.Terminated:
			if obs != "correct" {
				t.Errorf("terminated with observation %q", obs)
			}
			return g, steps, res
		case res.Truncated:
			t.Fatalf("seed %d: truncated after %d steps (%v) before binary search found the secret in [%d, %d]", seed, steps, res.Info, lo, hi)
		case obs == "higher":
			lo = g + 1
		case obs == "lower":
			hi = g - 1
		default:
			t.Fatalf("guess %d: observation %q, want higher, lower or correct", g, obs)
		}
	}
}

func TestGuessBinarySearchWins(t *testing.T) {
	m, mem := newManager(t)
	for seed := range int64(200) {
		secret, steps, res := secretOf(t, m, "guess-1-100", seed)
		if secret < 1 || secret > 100 {
			t.Fatalf("seed %d: secret %d outside [1, 100]", seed, secret)
		}
		if steps > 7 { // ceil(log2(101))
			t.Errorf("seed %d: binary search took %d steps", seed, steps)
		}
		if res.Reward != 1 || res.Info["reward_source"] != "verifier" {
			t.Errorf("seed %d: winning step has reward %v, info %v; want 1 from the verifier", seed, res.Reward, res.Info)
		}
		if _, leaked := res.Info["verifier"]; leaked {
			t.Errorf("seed %d: the agent is shown the verifier's details %v", seed, res.Info)
		}
		evs := mem.Session(res.Session)
		var rec gym.Event
		for _, ev := range evs {
			if ev.Type == gym.EventStep && ev.Seq == res.Seq {
				rec = ev
			}
		}
		if v, _ := rec.Info["verifier"].(gym.Info); v["secret"] != secret {
			t.Errorf("seed %d: recorded verifier info %v, want secret %d", seed, rec.Info["verifier"], secret)
		}
	}
}

func TestGuessSecretFollowsSeed(t *testing.T) {
	m, _ := newManager(t)
	seen := map[int]bool{}
	for seed := range int64(20) {
		a, _, _ := secretOf(t, m, "guess-1-1000", seed)
		b, _, _ := secretOf(t, m, "guess-1-1000", seed)
		if a != b {
			t.Errorf("seed %d: secrets %d and %d from the same seed", seed, a, b)
		}
		seen[a] = true
	}
	// 20 draws from 1000 values: a handful of repeats at most.
	if len(seen) < 15 {
		t.Errorf("20 seeds gave only %d different secrets: %v", len(seen), seen)
	}
}

func TestGuessNonIntegerIsAnObservation(t *testing.T) {
	m, mem := newManager(t)
	ctx := t.Context()
	s, _, err := m.Create(ctx, gym.CreateRequest{TaskID: "guess-1-50", Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	for i, g := range []string{"fifty", "", "12.5", " 7x"} {
		res, err := s.Step(ctx, "", gym.TextAction(g))
		if err != nil {
			t.Fatalf("%q: %v (a non-integer guess is the agent's mistake to see, not an error)", g, err)
		}
		if res.Step != i+1 || res.Terminated || res.Truncated || res.Failure != nil {
			t.Errorf("%q: step %d terminated %v truncated %v failure %v", g, res.Step, res.Terminated, res.Truncated, res.Failure)
		}
		if obs := res.Observation.Text(); !strings.Contains(obs, "not an integer") || !strings.Contains(obs, "between 1 and 50") {
			t.Errorf("%q: observation %q should say it is not an integer and give the range", g, obs)
		}
	}
	if evs := mem.Session(s.ID); len(evs) != 6 {
		t.Errorf("%d events, want created, reset and 4 steps", len(evs))
	}
}

func TestGuessBadTaskData(t *testing.T) {
	m, mem := newManager(t)
	for _, data := range []string{`{"low":10,"high":1}`, `{"low":"a"}`} {
		task := &gym.Task{ID: "bad", Env: "guess-v1", Data: json.RawMessage(data)}
		_, _, err := m.Create(t.Context(), gym.CreateRequest{Task: task})
		f := gym.FailureOf(err)
		if err == nil || f.Fault != gym.FaultInfra || f.Reason != "bad_task" {
			t.Errorf("data %s: got %v, want an infra fault bad_task (a broken task is never the agent's fault)", data, err)
		}
	}
	if m.Len() != 0 {
		t.Errorf("%d sessions live after failed creates", m.Len())
	}
	for _, ev := range mem.Events() {
		if ev.Type == gym.EventSessionClosed && ev.Reason != gym.CloseCreate {
			t.Errorf("failed create closed with reason %q, want %q", ev.Reason, gym.CloseCreate)
		}
	}
}

func TestEchoDone(t *testing.T) {
	m, _ := newManager(t)
	ctx := t.Context()
	s, rr, err := m.Create(ctx, gym.CreateRequest{TaskID: "echo-smoke"})
	if err != nil {
		t.Fatal(err)
	}
	if rr.Observation.Text() != rr.Instruction {
		t.Errorf("reset observation %q, want the instruction %q", rr.Observation.Text(), rr.Instruction)
	}
	res, err := s.Step(ctx, "", gym.TextAction("hi"))
	if err != nil || res.Observation.Text() != "hi" || res.Terminated {
		t.Fatalf("echo hi: %+v, %v", res, err)
	}
	res, err = s.Step(ctx, "", gym.TextAction("/done"))
	if err != nil || !res.Terminated || res.Truncated {
		t.Fatalf("/done: %+v, %v; want terminated", res, err)
	}
}

func TestGuessStepRule(t *testing.T) {
	spec, err := gym.Lookup("guess-v1")
	if err != nil || spec.StepRule == nil {
		t.Fatalf("guess-v1 declares no step rule: %v", err)
	}
	instr := "Guess the secret integer between 1 and 100. Answer with the number alone."
	hist := []gym.RuleTurn{{Action: "50", NextState: "higher"}, {Action: "75", NextState: "lower"}} // 51..74 left
	for _, tc := range []struct {
		action, next string
		score        int
		hint         string
	}{
		{"62", "lower", 1, ""},
		{"57", "higher", 1, ""},                            // 4·|57−62| = 20 ≤ 74−51
		{"56", "higher", 0, "guess nearer the middle, 62"}, // 4·|56−62| = 24 > 23
		{"52", "higher", 0, "between 51 and 74; guess nearer the middle, 62"},
		{"80", "lower", -1, "between 51 and 74, and 80 is outside"},
		{"fifty", `"fifty" is not an integer`, -1, "Answer with a whole number alone"},
		{"70", "correct", 1, ""},
	} {
		score, hint := spec.StepRule(gym.RuleInput{Instruction: instr, History: hist, Action: tc.action, NextState: tc.next})
		if want := tc.score; score != want || !strings.Contains(hint, tc.hint) {
			t.Errorf("guess %s after 50 higher, 75 lower: %d %q; want %d and a hint with %q", tc.action, score, hint, tc.score, tc.hint)
		}
	}
	if score, _ := spec.StepRule(gym.RuleInput{Instruction: instr, Action: "50", NextState: "higher"}); score != 1 {
		t.Errorf("the first guess 50 of 1..100 scored %d, want 1", score)
	}
}

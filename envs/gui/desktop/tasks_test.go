package desktop

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/nextstate-rl/nextstate/gym"
)

// TestBuiltinTasks plays every built-in task in one session: done at once
// scores 0, then the oracle, twice, scores 1 (twice, so that a flaky
// oracle shows).
func TestBuiltinTasks(t *testing.T) {
	h := newHarness(t)
	tasks := BuiltinTasks()
	if len(tasks) < 8 {
		t.Fatalf("%d built-in tasks; want at least 8", len(tasks))
	}
	for _, task := range tasks {
		t.Run(strings.TrimPrefix(task.ID, "desktop-"), func(t *testing.T) {
			h.t = t
			s, rr := h.create(task, nil)
			defer s.Close(context.Background())
			if len(rr.Observation.Parts) != 2 || rr.Observation.Parts[0].Text != task.Instruction ||
				rr.Observation.Parts[1].Image == nil || rr.Observation.Parts[1].Image.MIME != "image/png" {
				t.Fatalf("reset observation: want the instruction and a PNG, got %s", jsonString(rr.Observation))
			}
			res := h.step(s, done())
			if !res.Terminated || res.Reward != 0 {
				t.Errorf("done at once: terminated %v reward %v, want terminated with reward 0 (verifier %v)",
					res.Terminated, res.Reward, h.verdict(s))
			}
			for round := 1; round <= 2; round++ {
				if _, err := s.Reset(context.Background(), nil, 0, nil); err != nil {
					t.Fatal(err)
				}
				reward, steps := playOracle(t, h, s, &task)
				if reward != 1 {
					t.Errorf("oracle round %d: reward %v after %d steps, want 1 (verifier %v)", round, reward, steps, h.verdict(s))
				}
			}
		})
	}
}

// playOracle runs the task's oracle on s until the episode ends and
// returns the last reward and the steps taken.
func playOracle(t *testing.T, h *harness, s *gym.Session, task *gym.Task) (float64, int) {
	t.Helper()
	o, err := gym.OracleFor(task)
	if err != nil {
		t.Fatal(err)
	}
	var obs gym.Observation
	var info gym.Info
	for n := 1; ; n++ {
		a, fin, err := o.Next(obs, info)
		if err != nil {
			t.Fatal(err)
		}
		if fin {
			t.Fatalf("the oracle ran out of actions before the episode ended")
		}
		res, err := s.Step(context.Background(), "", a)
		if err != nil {
			t.Fatal(err)
		}
		if res.Failure != nil {
			t.Fatalf("oracle step %d (%s): %+v", n, jsonString(a), res.Failure)
		}
		if e, ok := res.Info["error"]; ok {
			t.Fatalf("oracle step %d (%s) was a mistake: %v: %s", n, jsonString(a), e, res.Observation.Text())
		}
		if res.Terminated || res.Truncated {
			return res.Reward, n
		}
		obs, info = res.Observation, res.Info
	}
}

func TestOracleKind(t *testing.T) {
	k := &Kind{}
	task := bareTask("no-oracle", "true", TaskData{})
	if _, err := k.Oracle(&task); !errors.Is(err, gym.ErrNoOracle) {
		t.Errorf("a task without an oracle: got %v, want gym.ErrNoOracle", err)
	}
	for _, task := range BuiltinTasks() {
		if err := task.Validate(); err != nil {
			t.Error(err)
		}
		if _, err := k.Oracle(&task); err != nil {
			t.Errorf("%s: %v", task.ID, err)
		}
		if strings.Contains(string(task.Data), "oracle") || strings.Contains(string(task.Data), "evaluator") {
			t.Errorf("%s: the task data (which agents see) holds the verifier's inputs: %s", task.ID, task.Data)
		}
		if task.Public().Verifier != nil {
			t.Errorf("%s: Public keeps the verifier data", task.ID)
		}
	}
}

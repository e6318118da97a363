package train

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nextstate-rl/nextstate/agent"
	"github.com/nextstate-rl/nextstate/gym"
	"github.com/nextstate-rl/nextstate/trainer/service"
)

func loopConfig(r *rig, t *testing.T, dir string, steps int) Config {
	train := r.tasks(t, "train")
	known := map[string]bool{}
	var eval []gym.Task
	evalSuite := map[string]string{}
	for _, task := range (firstKind{}).Spec().Tasks {
		known[task.ID] = true
		if task.Split == "test" {
			eval = append(eval, task)
			evalSuite[task.ID] = "first-v1"
		}
	}
	return Config{Gym: r.gym, Trainer: r.svc, Tasks: train, Known: known, Eval: eval, EvalSuite: evalSuite,
		Policy: agent.Config{BaseURL: r.policy.URL, Model: "tiny", MaxTokens: 1, MaxTurns: 1, NoSystemPrompt: true,
			Logger: quietLog()},
		GroupSize: 8, Groups: 2, Steps: steps, MaxStaleness: -1, Concurrency: 4, Seed: 3,
		Loss: service.LossConfig{Terms: []service.TermConfig{{Kind: "policy_gradient", Weight: 1}}}, Adam: service.AdamParams{LR: 0.02},
		Dir: dir, SampleTimeout: 30 * time.Second, Logger: quietLog()}
}

// TestLoopRaisesTheReward: a few RL steps of the whole loop (episodes in
// the gym, samples from its stream, the update, a new version served) on
// a task a random model solves half the time raise the reward.
func TestLoopRaisesTheReward(t *testing.T) {
	root := t.TempDir()
	r := newRig(t, tinyModel(t), filepath.Join(root, "gym"), filepath.Join(root, "states"))
	var progress bytes.Buffer
	cfg := loopConfig(r, t, filepath.Join(root, "run"), 12)
	var steps []Metrics
	cfg.OnStep = func(m Metrics) { steps = append(steps, m) }
	cfg.Progress = &progress
	l, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := l.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + progress.String())
	if sum.Steps != 12 || len(steps) != 12 {
		t.Fatalf("%d steps done, %d recorded; want 12", sum.Steps, len(steps))
	}
	early := (steps[0].Reward + steps[1].Reward + steps[2].Reward) / 3
	late := (steps[9].Reward + steps[10].Reward + steps[11].Reward) / 3
	if late < 0.8 || late < early+0.2 {
		t.Errorf("mean reward %.3f over the first three steps, %.3f over the last three: want it to rise to 0.8 or more", early, late)
	}
	trained := 0
	for _, m := range steps {
		if m.Trained {
			trained++
		}
		if m.Version != trained {
			t.Errorf("step %d: version %d after %d optimizer steps", m.Step, m.Version, trained)
		}
		if m.Trajectories != 16 || m.Samples != 16 || m.Missing != 0 {
			t.Errorf("step %d: %d trajectories, %d samples, %d missing; want 16, 16, 0", m.Step, m.Trajectories, m.Samples, m.Missing)
		}
		if m.StalenessMax != 0 || len(m.Staleness) != 1 || m.Staleness[0] != 16 {
			t.Errorf("step %d: staleness max %d, histogram %v; on-policy (max staleness 0) want every turn at 0", m.Step, m.StalenessMax, m.Staleness)
		}
	}
	recorded, evals, err := ReadMetrics(cfg.Dir)
	if err != nil || len(recorded) != 12 || len(evals) != 2 || evals[0].Step != 0 || evals[1].Step != 12 {
		t.Fatalf("metrics.jsonl: %d steps, %d evaluations (%v), %v; want 12 and the evaluations at 0 and 12", len(recorded), len(evals), evals, err)
	}
	if !strings.Contains(progress.String(), "step 12/12") || !strings.Contains(progress.String(), "held-out pass@1") {
		t.Errorf("progress lines:\n%s", progress.String())
	}
	st, err := readState(cfg.Dir)
	if err != nil || st.Steps != 12 || st.TrainingState == "" {
		t.Errorf("state.json %+v, %v; want 12 steps and a training state", st, err)
	}
	// Done: the same command again has nothing to do.
	l2, _ := New(cfg)
	if sum, err := l2.Run(context.Background()); err != nil || sum.Steps != 12 || sum.Resumed != 12 {
		t.Errorf("a rerun of a finished run: %+v, %v", sum, err)
	}
}

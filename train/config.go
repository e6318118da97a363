package train

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"slices"
	"time"

	"github.com/nextstate-rl/nextstate/agent"
	"github.com/nextstate-rl/nextstate/client"
	"github.com/nextstate-rl/nextstate/gym"
	"github.com/nextstate-rl/nextstate/trainer/service"
)

// Task is a task to train on, with the name of the suite it came from
// (what Config.Mix weighs).
type Task struct {
	gym.Task
	Suite string
}

// Config configures a Loop.
type Config struct {
	// Gym is a connection to the gym server the episodes run on (the one
	// started in-process, or a remote one); its samples stream feeds the
	// trainer.
	Gym *client.Client
	// Trainer is the training API (a *service.Service in-process, or a
	// *service.Client of a remote serve-trainer).
	Trainer service.API
	// Policy plays the episodes: its BaseURL is the OpenAI API serving the
	// trainer's newest weight version, whose answers name their version
	// (X-Weight-Version). Temperature is the rollouts' (default 1).
	// TokenInfo is forced "on": training needs the token ids and log-probs.
	Policy agent.Config
	// Tasks are the training tasks; Known the task ids the gym's catalog
	// has (those are created by id, the others inline).
	Tasks []Task
	Known map[string]bool
	// Mix weighs the suites: a batch's groups are drawn suite by weight,
	// then task uniformly, without replacement. Nil: every suite weighs
	// the same. A suite of Tasks missing from a non-nil Mix is not drawn.
	Mix map[string]float64
	// Eval are the held-out tasks, played at temperature 0 every EvalEvery
	// steps (and before the first): pass@1 per suite with a bootstrap
	// interval. EvalSuite names each one's suite (by task id); EvalEvery 0
	// evaluates only before the first step and after the last.
	Eval      []gym.Task
	EvalSuite map[string]string
	EvalEvery int
	// EvalK plays each held-out task that many times (default 1), each with
	// its own seed (a held-out secret, say); pass@1 is then over the
	// episodes, its interval bootstrapped over the tasks (a task without
	// randomness plays the same episode each time at temperature 0).
	EvalK int
	// GroupSize is K, the episodes per task in a batch (a GRPO group;
	// default 4); Groups the tasks per batch (default 4, at most the tasks
	// there are). One batch is one optimizer step.
	GroupSize, Groups int
	// Steps is the number of optimizer steps (batches) of the whole run.
	Steps int
	// MaxStaleness bounds how many steps the weights may have moved since
	// a batch's episodes began: batch b starts once b−1−MaxStaleness steps
	// are done (0: each batch waits for the step before it). Generation is
	// paced, never discarded. Default 1; -1 means 0 here (the flag's
	// zero is the default).
	MaxStaleness int
	// Concurrency is the episodes in flight (default 8).
	Concurrency int
	// Loss and Estimator are forward_backward's (default: the policy
	// gradient on GRPO advantages); Adam optim_step's (learning rate
	// default 1e-5).
	Loss      service.LossConfig
	Estimator string
	// TrajectoryMean weighs every trajectory of a batch the same in the
	// policy gradient, however many turns it took (forward_backward's
	// trajectory_mean). Kinds whose failures run to the step limit need
	// it: without it a group's failures outweigh its successes. Where the
	// successes are the longer replies (a tool-call choice) it shrinks
	// each of their tokens' share, the one that decides included, and
	// weighing every token the same learned more steadily (the README's
	// learning section).
	TrajectoryMean bool
	// CapNegative caps each group's negative weight over its tokens at
	// its positive (forward_backward's cap_negative): long failures, such
	// as replies degenerating into garbage, no longer push probability to
	// tokens never sampled, while every token keeps its weight otherwise.
	CapNegative bool
	Adam        service.AdamParams
	// WarmupSteps raises the learning rate linearly from Adam.LR/WarmupSteps
	// at the first optimizer step to Adam.LR at step WarmupSteps (0: the
	// full rate from the first). Adam's first steps move every weight by
	// about the learning rate whatever its gradient, since its moment
	// estimates start from nothing; a short warm-up keeps them from
	// scattering a small model's policy before the estimates settle.
	WarmupSteps int
	// SaveEvery saves the training state every that many steps (default
	// 1, and always after the last); the samples of a step are
	// acknowledged once a saved state holds it, and a rerun resumes from
	// the newest saved state, training the later batches again from their
	// samples.
	SaveEvery int
	// SampleTimeout is how long a finished batch waits for more of its
	// samples (the judges run behind the episodes) before its missing
	// trajectories are played again (twice at most; then the step goes on
	// without them, counted). Default 2 minutes.
	SampleTimeout time.Duration
	// PassThreshold is the reward an episode must reach to pass (default 1).
	PassThreshold float64
	// Dir is the run directory: state.json, metrics.jsonl, rollouts/,
	// eval/. Required.
	Dir string
	// Run labels the sessions (Run/b000001, Run/eval-000000); default the
	// directory's name.
	Run string
	// Seed derives each batch's tasks and episode seeds.
	Seed int64
	// Progress, when set, gets a line per step and per evaluation.
	Progress io.Writer
	// OnStep, when set, is called with each step's metrics.
	OnStep func(Metrics)
	// Logger; nil means slog.Default().
	Logger *slog.Logger
}

func (c *Config) setDefaults() error {
	switch {
	case c.Gym == nil:
		return errors.New("train: Config.Gym is required")
	case c.Trainer == nil:
		return errors.New("train: Config.Trainer is required")
	case c.Dir == "":
		return errors.New("train: Config.Dir is required")
	case len(c.Tasks) == 0:
		return errors.New("train: no training task")
	case c.Steps < 1:
		return fmt.Errorf("train: %d steps: want at least 1", c.Steps)
	case c.GroupSize < 0 || c.Groups < 0 || c.Concurrency < 0 || c.EvalEvery < 0 || c.SaveEvery < 0:
		return errors.New("train: group size, groups, concurrency, eval-every and save-every may not be negative")
	case c.MaxStaleness < -1:
		return fmt.Errorf("train: max staleness %d: want 0 or more", c.MaxStaleness)
	}
	if c.GroupSize == 0 {
		c.GroupSize = 4
	}
	if c.Groups == 0 {
		c.Groups = 4
	}
	if c.Concurrency == 0 {
		c.Concurrency = 8
	}
	if c.EvalK <= 0 {
		c.EvalK = 1
	}
	switch c.MaxStaleness {
	case 0:
		c.MaxStaleness = 1
	case -1:
		c.MaxStaleness = 0
	}
	if c.SaveEvery == 0 {
		c.SaveEvery = 1
	}
	if c.SampleTimeout <= 0 {
		c.SampleTimeout = 2 * time.Minute
	}
	if c.PassThreshold == 0 {
		c.PassThreshold = 1
	}
	if c.Adam.LR == 0 {
		c.Adam.LR = 1e-5
	}
	if len(c.Loss.Terms) == 0 {
		c.Loss.Terms = []service.TermConfig{{Kind: "policy_gradient", Weight: 1}}
	}
	if c.Policy.Temperature == nil {
		one := 1.0
		c.Policy.Temperature = &one
	}
	c.Policy.TokenInfo = "on"
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	suites := map[string]int{}
	seen := map[string]bool{}
	for _, t := range c.Tasks {
		if seen[t.ID] {
			return fmt.Errorf("train: task %s is given twice", t.ID)
		}
		seen[t.ID] = true
		suites[t.Suite]++
	}
	for name, w := range c.Mix {
		if _, ok := suites[name]; !ok {
			return fmt.Errorf("train: the mix weighs suite %q, which has no training task (suites: %v)", name, sortedKeys(suites))
		}
		if w < 0 || math.IsNaN(w) || math.IsInf(w, 0) {
			return fmt.Errorf("train: the mix gives suite %q weight %v: want a finite weight ≥ 0", name, w)
		}
	}
	if c.Mix != nil {
		drawn := 0
		for name, n := range suites {
			if c.Mix[name] > 0 {
				drawn += n
			}
		}
		if drawn == 0 {
			return errors.New("train: the mix gives no suite a positive weight")
		}
		c.Groups = min(c.Groups, drawn)
	} else {
		c.Groups = min(c.Groups, len(c.Tasks))
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

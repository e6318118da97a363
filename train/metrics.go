package train

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/nextstate-rl/nextstate/rl"
	"github.com/nextstate-rl/nextstate/trainer/service"
)

// MetricsFile is the run directory's metrics, a JSON object per line: one
// per step (Metrics) and one per evaluation (EvalMetrics), told apart by
// their "kind".
const MetricsFile = "metrics.jsonl"

// Metrics is one step's record (the batch's rewards overall and per
// suite, its staleness, the update's metrics, times and throughput).
type Metrics struct {
	Kind string `json:"kind"` // "step"
	Step int    `json:"step"`
	// Version is the weight version published after the step (its
	// optimizer steps); Trained says whether the step had anything to
	// learn from (else no optimizer step was taken).
	Version int       `json:"version"`
	Trained bool      `json:"trained"`
	Time    time.Time `json:"time"`

	// The batch: trajectories played and trained, samples, and rewards
	// (Reward the mixed sequence score the advantages use, Outcome the
	// verifier's after the outcome map, Process the judges' mean r_t over
	// judged turns, null when none was).
	Trajectories int     `json:"trajectories"`
	Samples      int     `json:"samples"`
	Missing      int     `json:"missing_trajectories"`
	Reward       float64 `json:"reward"`
	Outcome      float64 `json:"reward_outcome"`
	// Suites are the same per suite of the batch's tasks.
	Suites  map[string]SuiteRewards `json:"suites,omitempty"`
	Process *float64                `json:"reward_process"`
	Judged  int                     `json:"judged_turns"`
	// Refused counts the turns whose action the gym refused (their r_t is
	// rl.RefusedProcess, counted in Judged and Process too).
	Refused int `json:"refused_turns"`
	Hinted  int `json:"hinted_turns"`
	// Staleness is the trained-at version less each turn's, over the turns
	// that named one.
	StalenessMean float64 `json:"staleness_mean"`
	StalenessMax  int     `json:"staleness_max"`
	Staleness     []int   `json:"staleness_hist"` // turns by staleness 0, 1, ...

	// What the update measured: forward_backward's metrics (loss/*,
	// entropy, clip fraction, ratio, KL, the train−rollout log-prob gap),
	// the conversion's counts, optim_step's gradient norm.
	Loss       float64             `json:"loss"`
	Update     map[string]float64  `json:"update"`
	Conversion *service.Conversion `json:"conversion,omitempty"`
	Tokens     int                 `json:"trained_tokens"`
	GradNorm   float64             `json:"grad_norm"`

	// Time and throughput: the batch's rollout (wall time of its episodes,
	// and their generated tokens), the wait for its samples, the update,
	// the publish; Busy is the share of the step's wall time the trainer
	// spent in forward_backward and optim_step.
	RolloutSeconds  float64 `json:"rollout_s"`
	WaitSeconds     float64 `json:"wait_s"`
	TrainSeconds    float64 `json:"train_s"`
	PublishMS       float64 `json:"publish_ms"`
	StepSeconds     float64 `json:"step_s"`
	Busy            float64 `json:"trainer_busy"`
	GeneratedTokens int     `json:"generated_tokens"`
	EpisodesPerS    float64 `json:"episodes_per_s"`
	TokensPerS      float64 `json:"generated_tokens_per_s"`
}

// SuiteRewards are one suite's trajectories in a batch and their mean
// rewards (mixed and outcome).
type SuiteRewards struct {
	Trajectories int     `json:"trajectories"`
	Reward       float64 `json:"reward"`
	Outcome      float64 `json:"reward_outcome"`
}

// batchStats fills m's batch fields from the samples, trained at version;
// suite names each task's suite.
func (m *Metrics) batchStats(samples []rl.Sample, version int, suite map[string]string) {
	m.Samples = len(samples)
	type traj struct{ g, i int }
	seen := map[traj]bool{}
	var reward, outcome, process float64
	hist := []int{}
	stale, staled := 0, 0
	for _, s := range samples {
		k := traj{s.GroupIndex, s.Index}
		if !seen[k] {
			seen[k] = true
			reward += s.Reward
			outcome += s.Metadata.StepWise.OutcomeReward
			if name, ok := suite[s.Metadata.Origin.Task]; ok {
				if m.Suites == nil {
					m.Suites = map[string]SuiteRewards{}
				}
				sr := m.Suites[name]
				sr.Trajectories++
				sr.Reward += s.Reward
				sr.Outcome += s.Metadata.StepWise.OutcomeReward
				m.Suites[name] = sr
			}
		}
		if s.Metadata.Origin.Judged {
			m.Judged++
			if len(s.Metadata.StepWise.StepScores) > 0 {
				process += s.Metadata.StepWise.StepScores[0]
			}
		}
		if s.Metadata.Origin.Refused {
			m.Refused++
		}
		if s.Metadata.OPD != nil {
			m.Hinted++
		}
		m.GeneratedTokens += s.ResponseLength
		if v := s.Metadata.Origin.WeightVersion; v != nil {
			d := max(version-*v, 0)
			for len(hist) <= d {
				hist = append(hist, 0)
			}
			hist[d]++
			stale += d
			staled++
			m.StalenessMax = max(m.StalenessMax, d)
		}
	}
	m.Trajectories = len(seen)
	for name, sr := range m.Suites {
		sr.Reward /= float64(sr.Trajectories)
		sr.Outcome /= float64(sr.Trajectories)
		m.Suites[name] = sr
	}
	if n := float64(len(seen)); n > 0 {
		m.Reward, m.Outcome = reward/n, outcome/n
	}
	if m.Judged > 0 {
		p := process / float64(m.Judged)
		m.Process = &p
	}
	if staled > 0 {
		m.StalenessMean = float64(stale) / float64(staled)
	}
	m.Staleness = hist
}

// EvalMetrics is one evaluation's record.
type EvalMetrics struct {
	Kind string `json:"kind"` // "eval"
	// Step is the steps trained before it (0: the starting weights);
	// Version the weight version that played.
	Step    int       `json:"step"`
	Version int       `json:"version"`
	Time    time.Time `json:"time"`
	// Pass1 is pass@1 over every held-out episode (EvalK per task), with
	// its bootstrap interval (95%, resampling tasks, each with its
	// episodes); Suites the same per suite.
	Pass1   Estimate            `json:"pass1"`
	Suites  map[string]Estimate `json:"suites"`
	Trials  int                 `json:"trials"`
	Infra   int                 `json:"infra_errors"`
	Seconds float64             `json:"seconds"`
	Dir     string              `json:"dir"`
}

// Estimate is a mean with its bootstrap interval.
type Estimate struct {
	Mean float64 `json:"mean"`
	Low  float64 `json:"low"`
	High float64 `json:"high"`
	N    int     `json:"n"`
}

// metricsLog appends records to MetricsFile.
type metricsLog struct{ f *os.File }

func openMetrics(dir string) (*metricsLog, error) {
	f, err := os.OpenFile(filepath.Join(dir, MetricsFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	return &metricsLog{f: f}, nil
}

func (ml *metricsLog) write(rec any) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	_, err = ml.f.Write(append(b, '\n'))
	return err
}

func (ml *metricsLog) sync() error { return ml.f.Sync() }

func (ml *metricsLog) close() error { return ml.f.Close() }

// ReadMetrics reads a run directory's MetricsFile: its steps and its
// evaluations, in order. A step recorded twice (trained again after a
// resume) keeps its last record.
func ReadMetrics(dir string) ([]Metrics, []EvalMetrics, error) {
	b, err := os.ReadFile(filepath.Join(dir, MetricsFile))
	if err != nil {
		return nil, nil, err
	}
	var steps []Metrics
	var evals []EvalMetrics
	for i, line := range strings.Split(string(b), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		var kind struct{ Kind string }
		if err := json.Unmarshal([]byte(line), &kind); err != nil {
			if i == strings.Count(string(b), "\n") {
				break // a last line cut short by a crash
			}
			return nil, nil, fmt.Errorf("%s line %d: %w", MetricsFile, i+1, err)
		}
		switch kind.Kind {
		case "step":
			var m Metrics
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				return nil, nil, fmt.Errorf("%s line %d: %w", MetricsFile, i+1, err)
			}
			steps = slices.DeleteFunc(steps, func(x Metrics) bool { return x.Step >= m.Step })
			steps = append(steps, m)
		case "eval":
			var e EvalMetrics
			if err := json.Unmarshal([]byte(line), &e); err != nil {
				return nil, nil, fmt.Errorf("%s line %d: %w", MetricsFile, i+1, err)
			}
			evals = slices.DeleteFunc(evals, func(x EvalMetrics) bool { return x.Step >= e.Step })
			evals = append(evals, e)
		}
	}
	return steps, evals, nil
}

// progressLine is a step's line for the terminal.
func progressLine(w io.Writer, m Metrics, steps int, eval *EvalMetrics) {
	proc := "-"
	if m.Process != nil {
		proc = fmt.Sprintf("%.3f", *m.Process)
	}
	ev := ""
	if eval != nil {
		ev = fmt.Sprintf("  held-out pass@1 %.3f [%.3f, %.3f]%s", eval.Pass1.Mean, eval.Pass1.Low, eval.Pass1.High, suitesText(eval))
	}
	fmt.Fprintf(w, "step %d/%d  v%d  reward %.3f (outcome %.3f, process %s)%s  %.0f tok/s  staleness %.2f  %d trajectories  %.1fs\n",
		m.Step, steps, m.Version, m.Reward, m.Outcome, proc, ev, m.TokensPerS, m.StalenessMean, m.Trajectories, m.StepSeconds)
}

// suitesText is each suite's held-out pass@1 for a progress line, when
// there are several: "; guess 0.380; vehicle 0.450".
func suitesText(em *EvalMetrics) string {
	if len(em.Suites) < 2 {
		return ""
	}
	s := ""
	for _, name := range sortedKeys(em.Suites) {
		s += fmt.Sprintf("; %s %.3f", name, em.Suites[name].Mean)
	}
	return s
}

func finite(x float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return 0
	}
	return x
}

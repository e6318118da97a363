package report

import (
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"sort"
	"strings"
	"time"

	"github.com/nextstate-rl/nextstate/agent/rundir"
	"github.com/nextstate-rl/nextstate/gym"
)

// Bootstrap settings of the report's confidence intervals.
const (
	BootstrapResamples = 2000
	BootstrapLevel     = 0.95
	BootstrapSeed      = 7 // fixed, so that a report is reproducible
)

// MaxExamples is how many trial ids a failure class lists.
const MaxExamples = 5

// PassAtK is the unbiased estimator of pass@k for one task (Chen et al.
// 2021, "Evaluating Large Language Models Trained on Code"): the
// probability that at least one of k samples drawn without replacement
// from n samples, c of which passed, passed,
//
//	pass@k = 1 - C(n-c, k) / C(n, k) = 1 - prod_{i=n-c+1}^{n} (1 - k/i)
//
// computed as the product, which neither overflows nor loses precision
// the way the binomial coefficients would. It is 1 when n-c < k (every
// draw of k holds a pass). It returns NaN unless 1 <= k <= n and
// 0 <= c <= n.
func PassAtK(n, c, k int) float64 {
	if k < 1 || n < k || c < 0 || c > n {
		return math.NaN()
	}
	if n-c < k {
		return 1
	}
	p := 1.0
	for i := n - c + 1; i <= n; i++ {
		p *= 1 - float64(k)/float64(i)
	}
	return 1 - p
}

// Interval is a confidence interval.
type Interval struct {
	Low, High float64
	Level     float64 // 0.95
	Resamples int     // bootstrap resamples
	Units     int     // how many values were resampled (tasks)
}

func (iv Interval) String() string {
	if iv.Units == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.3f–%.3f", iv.Low, iv.High)
}

// Bootstrap returns the percentile bootstrap interval of the mean of
// values: it draws resamples samples of len(values) values with
// replacement, takes each one's mean, and returns the (1-level)/2 and
// 1-(1-level)/2 quantiles of those means (linear interpolation between
// order statistics). The generator is PCG seeded with seed, so the same
// values give the same interval. With no values the interval is empty
// (Units 0); with one it is that value.
func Bootstrap(values []float64, resamples int, level float64, seed uint64) Interval {
	iv := Interval{Level: level, Resamples: resamples, Units: len(values)}
	n := len(values)
	if n == 0 || resamples < 1 {
		return iv
	}
	rng := rand.NewPCG(seed, 0x6e65787473746174) // "nextstat"
	means := make([]float64, resamples)
	for r := range means {
		sum := 0.0
		for range n {
			// Lemire's multiply-shift: an index in [0, n); the bias is
			// at most n/2^64.
			i, _ := bits.Mul64(rng.Uint64(), uint64(n))
			sum += values[i]
		}
		means[r] = sum / float64(n)
	}
	sort.Float64s(means)
	alpha := (1 - level) / 2
	iv.Low, iv.High = quantile(means, alpha), quantile(means, 1-alpha)
	return iv
}

// quantile of sorted xs at q in [0, 1], interpolating linearly.
func quantile(xs []float64, q float64) float64 {
	pos := q * float64(len(xs)-1)
	lo := int(math.Floor(pos))
	hi := int(math.Ceil(pos))
	return xs[lo] + (xs[hi]-xs[lo])*(pos-float64(lo))
}

// KValues returns the k of the pass@k table for tasks of at least minN
// scored samples each: 1, 2, 4, 8, ... up to minN, and minN itself.
func KValues(minN int) []int {
	var ks []int
	for k := 1; k <= minN; k *= 2 {
		ks = append(ks, k)
	}
	if minN > 0 && ks[len(ks)-1] != minN {
		ks = append(ks, minN)
	}
	return ks
}

// Summary holds a run's headline numbers.
type Summary struct {
	Trials      int // distinct trial ids (the last row of each)
	Superseded  int // rows of results.jsonl replaced by a later row of the same trial
	Tasks       int
	ScoredTasks int // tasks with at least one scored trial
	Scored      int // trials that count: every trial but infrastructure failures
	Passed      int
	Failed      int // status failed
	AgentErrors int // status agent_error
	InfraErrors int // infrastructure failures: excluded from every score

	// MinSamples and MaxSamples are the fewest and most scored trials of
	// a scored task.
	MinSamples, MaxSamples int

	// PassAt1 is the mean over scored tasks of passed/scored.
	PassAt1   float64
	PassAt1CI Interval
	// PassAtK maps each k of Ks to the mean over scored tasks of PassAtK.
	PassAtK map[int]float64
	Ks      []int

	// MeanReward is the mean over scored tasks of the task's mean outcome
	// reward over its scored trials.
	MeanReward   float64
	MeanRewardCI Interval

	// MeanProcessReward is the mean process reward of the scored trials
	// that have one (ProcessRewardTrials of them).
	MeanProcessReward   float64
	ProcessRewardTrials int

	PromptTokens     int64
	CompletionTokens int64
	Duration         time.Duration // summed over trials
}

// String is a few lines for a terminal.
func (s Summary) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "trials: %d (%d tasks), scored: %d, passed: %d, infra failures: %d (excluded)\n",
		s.Trials, s.Tasks, s.Scored, s.Passed, s.InfraErrors)
	if s.ScoredTasks == 0 {
		b.WriteString("no scored trials\n")
		return b.String()
	}
	fmt.Fprintf(&b, "pass@1: %.3f (95%% CI %s)", s.PassAt1, s.PassAt1CI)
	for _, k := range s.Ks {
		if k > 1 {
			fmt.Fprintf(&b, ", pass@%d: %.3f", k, s.PassAtK[k])
		}
	}
	fmt.Fprintf(&b, "\nmean reward: %.3f (95%% CI %s)\n", s.MeanReward, s.MeanRewardCI)
	fmt.Fprintf(&b, "tokens: %d prompt, %d completion; duration: %s\n",
		s.PromptTokens, s.CompletionTokens, s.Duration.Round(time.Millisecond))
	return b.String()
}

// TaskStats is one task's row of the per-task table. Rates are over the
// scored trials (infrastructure failures excluded); with none they are 0.
type TaskStats struct {
	Task, Env, Split string
	Trials           int
	Infra            int
	Scored           int // n of pass@k
	Passed           int // c of pass@k
	AgentErrors      int
	PassRate         float64
	MeanReward       float64
	MeanSteps        float64
	Failures         []ReasonCount // the failure classes of its trials
}

// ReasonCount counts the trials of one failure class.
type ReasonCount struct {
	Fault  gym.Fault
	Reason string
	Count  int
}

// GroupStats is a breakdown row: the trials of one env kind or split.
type GroupStats struct {
	Name        string
	Tasks       int
	ScoredTasks int
	Trials      int
	Scored      int
	Passed      int
	Infra       int
	PassAt1     float64 // mean over the group's scored tasks
	MeanReward  float64 // mean over the group's scored tasks
}

// FailureClass is one row of the failure taxonomy: the trials that did not
// pass, grouped by fault and reason.
type FailureClass struct {
	Fault    gym.Fault
	Reason   string
	Count    int
	Examples []string // up to MaxExamples trial ids
	Message  string   // the first example's failure message, if any
}

type taskAgg struct {
	stats  TaskStats
	trials []*rundir.Result
}

// compute fills the report's statistics from its trials.
func (r *Report) compute() {
	s := Summary{Superseded: r.Summary.Superseded, PassAtK: map[int]float64{}}
	var tasks []*taskAgg
	byKey := map[string]*taskAgg{}
	classes := map[[2]string]*FailureClass{}
	var pr float64
	for i := range r.Trials {
		t := &r.Trials[i]
		key := t.Env + "\x00" + t.Task
		a := byKey[key]
		if a == nil {
			a = &taskAgg{stats: TaskStats{Task: t.Task, Env: t.Env, Split: t.Split}}
			byKey[key] = a
			tasks = append(tasks, a)
		}
		if a.stats.Split == "" {
			a.stats.Split = t.Split
		}
		a.trials = append(a.trials, t)
		s.Trials++
		s.PromptTokens += t.PromptTokens
		s.CompletionTokens += t.CompletionTokens
		s.Duration += time.Duration(t.DurationMS) * time.Millisecond
		switch {
		case t.Infra():
			s.InfraErrors++
		case t.Passed():
			s.Passed++
		case t.Status == rundir.StatusAgentError:
			s.AgentErrors++
		default:
			s.Failed++
		}
		if !t.Infra() {
			s.Scored++
			if t.ProcessReward != nil {
				pr += *t.ProcessReward
				s.ProcessRewardTrials++
			}
		}
		if fault, reason, ok := t.FailureClass(); ok {
			k := [2]string{string(fault), reason}
			c := classes[k]
			if c == nil {
				c = &FailureClass{Fault: fault, Reason: reason}
				if t.Failure != nil {
					c.Message = t.Failure.Message
				}
				classes[k] = c
			}
			c.Count++
			if len(c.Examples) < MaxExamples {
				c.Examples = append(c.Examples, t.TrialID)
			}
		}
	}
	if s.ProcessRewardTrials > 0 {
		s.MeanProcessReward = pr / float64(s.ProcessRewardTrials)
	}

	var passRates, rewards []float64
	r.Tasks = r.Tasks[:0]
	for _, a := range tasks {
		a.stats.fill(a.trials)
		r.Tasks = append(r.Tasks, a.stats)
		ts := &a.stats
		if ts.Scored == 0 {
			continue
		}
		passRates = append(passRates, ts.PassRate)
		rewards = append(rewards, ts.MeanReward)
		if s.MinSamples == 0 || ts.Scored < s.MinSamples {
			s.MinSamples = ts.Scored
		}
		s.MaxSamples = max(s.MaxSamples, ts.Scored)
	}
	s.Tasks = len(tasks)
	s.ScoredTasks = len(passRates)
	if s.ScoredTasks > 0 {
		s.PassAt1 = mean(passRates)
		s.MeanReward = mean(rewards)
		s.Ks = KValues(s.MinSamples)
		for _, k := range s.Ks {
			var ps []float64
			for _, ts := range r.Tasks {
				if ts.Scored > 0 {
					ps = append(ps, PassAtK(ts.Scored, ts.Passed, k))
				}
			}
			s.PassAtK[k] = mean(ps)
		}
	}
	s.PassAt1CI = Bootstrap(passRates, BootstrapResamples, BootstrapLevel, BootstrapSeed)
	s.MeanRewardCI = Bootstrap(rewards, BootstrapResamples, BootstrapLevel, BootstrapSeed)
	r.Summary = s

	r.ByEnv = group(r.Tasks, func(ts *TaskStats) string { return ts.Env })
	r.BySplit = group(r.Tasks, func(ts *TaskStats) string { return splitName(ts.Split) })
	r.Failures = r.Failures[:0]
	for _, c := range classes {
		r.Failures = append(r.Failures, *c)
	}
	sort.Slice(r.Failures, func(i, j int) bool {
		a, b := r.Failures[i], r.Failures[j]
		if a.Fault != b.Fault {
			return a.Fault == gym.FaultInfra // infrastructure first: it is not the agent's
		}
		if a.Count != b.Count {
			return a.Count > b.Count
		}
		return a.Reason < b.Reason
	})
}

func (ts *TaskStats) fill(trials []*rundir.Result) {
	var reward, steps float64
	counts := map[[2]string]int{}
	for _, t := range trials {
		ts.Trials++
		if fault, reason, ok := t.FailureClass(); ok {
			counts[[2]string{string(fault), reason}]++
		}
		if t.Infra() {
			ts.Infra++
			continue
		}
		ts.Scored++
		if t.Passed() {
			ts.Passed++
		}
		if t.Status == rundir.StatusAgentError {
			ts.AgentErrors++
		}
		reward += t.Reward
		steps += float64(t.Steps)
	}
	if ts.Scored > 0 {
		n := float64(ts.Scored)
		ts.PassRate = float64(ts.Passed) / n
		ts.MeanReward = reward / n
		ts.MeanSteps = steps / n
	}
	for k, n := range counts {
		ts.Failures = append(ts.Failures, ReasonCount{Fault: gym.Fault(k[0]), Reason: k[1], Count: n})
	}
	sort.Slice(ts.Failures, func(i, j int) bool {
		a, b := ts.Failures[i], ts.Failures[j]
		if a.Count != b.Count {
			return a.Count > b.Count
		}
		if a.Fault != b.Fault {
			return a.Fault < b.Fault
		}
		return a.Reason < b.Reason
	})
}

// group sums task rows by name, sorted by name.
func group(tasks []TaskStats, name func(*TaskStats) string) []GroupStats {
	byName := map[string]*GroupStats{}
	sums := map[string][2]float64{}
	for i := range tasks {
		ts := &tasks[i]
		n := name(ts)
		g := byName[n]
		if g == nil {
			g = &GroupStats{Name: n}
			byName[n] = g
		}
		g.Tasks++
		g.Trials += ts.Trials
		g.Scored += ts.Scored
		g.Passed += ts.Passed
		g.Infra += ts.Infra
		if ts.Scored > 0 {
			g.ScoredTasks++
			s := sums[n]
			sums[n] = [2]float64{s[0] + ts.PassRate, s[1] + ts.MeanReward}
		}
	}
	out := make([]GroupStats, 0, len(byName))
	for n, g := range byName {
		if g.ScoredTasks > 0 {
			g.PassAt1 = sums[n][0] / float64(g.ScoredTasks)
			g.MeanReward = sums[n][1] / float64(g.ScoredTasks)
		}
		out = append(out, *g)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

package train

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/nextstate-rl/nextstate/agent"
	"github.com/nextstate-rl/nextstate/rl"
	"github.com/nextstate-rl/nextstate/trainer/service"
)

// Loop is one training run. New checks the Config; Run runs it.
type Loop struct {
	cfg    Config
	log    *slog.Logger
	run    string
	policy *agent.Agent // the rollouts' (Config.Policy)
	greedy *agent.Agent // the evaluations' (temperature 0)

	mu      sync.Mutex
	changed chan struct{}     // closed and replaced when trained or version change
	trained int               // batches trained (and published)
	suiteOf map[string]string // each training task's suite, by id
	version int               // the newest published version (its optimizer steps)
	// steps names each published version (the trainer's counter, which
	// the policy's X-Weight-Version carries) by its optimizer steps: the
	// loop's records name versions so, whichever trainer served them.
	steps map[int]int
}

// New checks cfg and returns the Loop.
func New(cfg Config) (*Loop, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	l := &Loop{cfg: cfg, log: cfg.Logger, run: cfg.Run, changed: make(chan struct{}), suiteOf: map[string]string{}, steps: map[int]int{}}
	for _, t := range cfg.Tasks {
		l.suiteOf[t.ID] = t.Suite
	}
	if l.run == "" {
		abs, err := filepath.Abs(cfg.Dir)
		if err != nil {
			return nil, err
		}
		l.run = filepath.Base(abs)
	}
	var err error
	if l.policy, err = agent.New(cfg.Policy); err != nil {
		return nil, err
	}
	g := cfg.Policy
	zero := 0.0
	g.Temperature = &zero
	if l.greedy, err = agent.New(g); err != nil {
		return nil, err
	}
	return l, nil
}

func (l *Loop) settings() Settings {
	loss, _ := json.Marshal(l.cfg.Loss)
	s := Settings{Run: l.run, Seed: l.cfg.Seed, GroupSize: l.cfg.GroupSize, Groups: l.cfg.Groups, Mix: l.cfg.Mix,
		Loss: loss, Estimator: l.cfg.Estimator}
	for _, t := range l.cfg.Tasks {
		s.Tasks = append(s.Tasks, t.ID)
	}
	slices.Sort(s.Tasks)
	return s
}

// signal wakes the waiters on trained and version.
func (l *Loop) signal() {
	close(l.changed)
	l.changed = make(chan struct{})
}

// waitTrained returns once at least n batches are trained.
func (l *Loop) waitTrained(ctx context.Context, n int) error {
	for {
		l.mu.Lock()
		done, ch := l.trained >= n, l.changed
		l.mu.Unlock()
		if done {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ch:
		}
	}
}

func (l *Loop) newest() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.version
}

// Summary is what a finished run reports.
type Summary struct {
	Steps int `json:"steps"`
	// Resumed is the step the run started from (0: a new run).
	Resumed int `json:"resumed"`
	// First and Last are the first and last evaluations (nil without
	// held-out tasks).
	First, Last *EvalMetrics `json:"-"`
	Dir         string       `json:"dir"`
}

// Run trains until Config.Steps are done, resuming the run its directory
// holds. When ctx ends it stops, leaving the directory resumable (the
// steps whose state was saved stay done; the batch being played resumes
// where it was).
func (l *Loop) Run(ctx context.Context) (Summary, error) {
	if err := os.MkdirAll(l.cfg.Dir, 0o755); err != nil {
		return Summary{}, err
	}
	st, err := readState(l.cfg.Dir)
	if err != nil {
		return Summary{}, err
	}
	sum := Summary{Dir: l.cfg.Dir, Resumed: st.Steps}
	want := l.settings()
	info, err := l.cfg.Trainer.Info(ctx)
	if err != nil {
		return sum, fmt.Errorf("train: the trainer's info: %w", err)
	}
	for _, v := range info.Versions {
		l.published(v)
	}
	if st.TrainingState != "" {
		if d := st.Settings.diff(want); d != "" {
			return sum, fmt.Errorf("train: %s holds a run with other settings (%s): use another --out, or the same settings", l.cfg.Dir, d)
		}
		res, err := l.cfg.Trainer.LoadState(ctx, st.TrainingState)
		if err != nil {
			return sum, fmt.Errorf("train: resuming from %s: %w", st.TrainingState, err)
		}
		if res.Step != st.OptimizerSteps {
			return sum, fmt.Errorf("train: the saved state %s took %d optimizer steps, %s says %d", st.TrainingState, res.Step, StateFile, st.OptimizerSteps)
		}
		v, err := l.cfg.Trainer.SaveWeightsForSampler(ctx)
		if err != nil {
			return sum, err
		}
		l.published(v)
		l.log.Info("train: resuming", "dir", l.cfg.Dir, "steps", st.Steps, "state", st.TrainingState)
	}
	st.Settings = want
	l.trained, l.version = st.Steps, st.OptimizerSteps
	if st.Steps >= l.cfg.Steps {
		sum.Steps = st.Steps
		return sum, nil
	}
	ml, err := openMetrics(l.cfg.Dir)
	if err != nil {
		return sum, err
	}
	defer ml.close()

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	batches := make(chan rollout, 1)
	produced := make(chan error, 1)
	go func() { produced <- l.produce(ctx, st.Steps+1, batches) }()
	stop := func(err error) (Summary, error) {
		cancel(err)
		if perr := <-produced; err == nil && perr != nil && !errors.Is(perr, context.Canceled) {
			err = perr
		}
		return sum, err
	}

	if len(l.cfg.Eval) > 0 && st.Steps == 0 {
		em, err := l.evaluate(ctx, 0)
		if err != nil {
			return stop(err)
		}
		sum.First = em
		if err := l.recordEval(ml, em); err != nil {
			return stop(err)
		}
	}
	var pending []*batchSamples // trained, not yet in a saved state
	for b := st.Steps + 1; b <= l.cfg.Steps; b++ {
		stepBegin := time.Now()
		var r rollout
		var ok bool
		select {
		case <-ctx.Done():
			return stop(context.Cause(ctx))
		case r, ok = <-batches:
		}
		if !ok { // the producer stopped: its error says why
			cancel(nil)
			return sum, <-produced
		}
		if r.batch != b {
			return stop(fmt.Errorf("train: batch %d arrived for step %d", r.batch, b))
		}
		waitBegin := time.Now()
		bs, r, err := l.collect(ctx, r)
		if err != nil {
			return stop(err)
		}
		m, err := l.step(ctx, b, r, bs)
		if err != nil {
			bs.close()
			return stop(err)
		}
		m.WaitSeconds = time.Since(waitBegin).Seconds() - m.TrainSeconds - m.PublishMS/1000
		pending = append(pending, bs)
		// The evaluation and the records come before the save: a crash
		// before it trains the step again and records it again (the last
		// record of a step wins), one after it finds the step recorded.
		var em *EvalMetrics
		if len(l.cfg.Eval) > 0 && (l.cfg.EvalEvery > 0 && b%l.cfg.EvalEvery == 0 || b == l.cfg.Steps) {
			if em, err = l.evaluate(ctx, b); err != nil {
				return stop(err)
			}
			sum.Last = em
		}
		m.StepSeconds = time.Since(stepBegin).Seconds()
		if m.StepSeconds > 0 {
			m.Busy = (m.TrainSeconds + m.PublishMS/1000) / m.StepSeconds
		}
		if err := ml.write(m); err != nil {
			return stop(err)
		}
		if em != nil {
			if err := l.recordEval(ml, em); err != nil {
				return stop(err)
			}
		}
		if err := ml.sync(); err != nil {
			return stop(err)
		}
		if b%l.cfg.SaveEvery == 0 || b == l.cfg.Steps {
			saved, err := l.cfg.Trainer.SaveState(ctx)
			if err != nil {
				return stop(fmt.Errorf("train: saving the state after step %d: %w", b, err))
			}
			st.Steps, st.OptimizerSteps, st.TrainingState = b, saved.Step, saved.Path
			if err := writeState(l.cfg.Dir, st); err != nil {
				return stop(err)
			}
			for _, p := range pending {
				if err := p.ack(ctx); err != nil {
					l.log.Warn("train: acknowledging samples", "err", err)
				}
			}
			pending = nil
		}
		if err := WriteReport(l.cfg.Dir, b < l.cfg.Steps); err != nil {
			l.log.Warn("train: writing the report", "err", err)
		}
		if l.cfg.Progress != nil {
			progressLine(l.cfg.Progress, m, l.cfg.Steps, em)
		}
		if l.cfg.OnStep != nil {
			l.cfg.OnStep(m)
		}
		sum.Steps = b
	}
	for _, p := range pending {
		p.close()
	}
	if sum.First == nil { // a resumed run: its first evaluation is on record
		if _, evals, err := ReadMetrics(l.cfg.Dir); err == nil && len(evals) > 0 {
			sum.First = &evals[0]
		}
	}
	return stop(nil)
}

func (l *Loop) recordEval(ml *metricsLog, em *EvalMetrics) error {
	if l.cfg.Progress != nil && em.Step == 0 {
		fmt.Fprintf(l.cfg.Progress, "step 0/%d  v%d  held-out pass@1 %.3f [%.3f, %.3f] over %d trials%s\n", l.cfg.Steps, em.Version,
			em.Pass1.Mean, em.Pass1.Low, em.Pass1.High, em.Pass1.N, suitesText(em))
	}
	return ml.write(em)
}

// published records a published version's optimizer steps.
func (l *Loop) published(v service.Version) {
	l.mu.Lock()
	l.steps[v.Version] = v.Step
	l.mu.Unlock()
}

// nameByStep renames a sample's weight version (the served version that
// produced its turn) to that version's optimizer steps. A version this
// loop never saw published is left as it is.
func (l *Loop) nameByStep(s *rl.Sample) {
	v := s.Metadata.Origin.WeightVersion
	if v == nil {
		return
	}
	l.mu.Lock()
	step, ok := l.steps[*v]
	l.mu.Unlock()
	if ok {
		s.Metadata.Origin.WeightVersion = &step
	}
}

// adamAt is the optimizer's settings for optimizer step n (1 the first):
// the learning rate warmed up over Config.WarmupSteps.
func (l *Loop) adamAt(n int) service.AdamParams {
	a := l.cfg.Adam
	if w := l.cfg.WarmupSteps; w > 0 && n < w {
		a.LR *= float64(n) / float64(w)
	}
	return a
}

// step trains on batch b's samples: one forward_backward over the whole
// batch (its groups whole, for the advantages), one optim_step, and a
// published version, unless nothing in it had anything to learn.
func (l *Loop) step(ctx context.Context, b int, r rollout, bs *batchSamples) (Metrics, error) {
	m := Metrics{Kind: "step", Step: b, Time: time.Now().UTC(), Missing: bs.missing, Update: map[string]float64{}}
	trainedAt := l.newest()
	m.batchStats(bs.samples, trainedAt, l.suiteOf)
	if err := l.audit(b, trainedAt, r, bs.samples); err != nil {
		l.log.Warn("train: writing the signal audit", "step", b, "err", err)
	}
	if r.elapsed > 0 {
		m.RolloutSeconds = r.elapsed.Seconds()
		m.EpisodesPerS = float64(len(r.rows)) / m.RolloutSeconds
		m.TokensPerS = float64(m.GeneratedTokens) / m.RolloutSeconds
	}
	begin := time.Now()
	var fb service.ForwardBackwardResult
	if len(bs.samples) > 0 { // none: every trial failed before the env took a step
		var err error
		fb, err = l.cfg.Trainer.ForwardBackward(ctx, service.ForwardBackwardRequest{Samples: bs.samples,
			Estimator: l.cfg.Estimator, TrajectoryMean: l.cfg.TrajectoryMean, CapNegative: l.cfg.CapNegative,
			Loss: l.cfg.Loss})
		if err != nil {
			return m, fmt.Errorf("train: step %d: forward_backward: %w", b, err)
		}
	}
	m.Loss, m.Conversion, m.Tokens = finite(fb.Loss), fb.Conversion, fb.Tokens
	for k, v := range fb.Metrics {
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			m.Update[k] = v
		}
	}
	version := trainedAt
	if fb.Tokens > 0 {
		or, err := l.cfg.Trainer.OptimStep(ctx, l.adamAt(trainedAt+1))
		if err != nil {
			return m, fmt.Errorf("train: step %d: optim_step: %w", b, err)
		}
		m.GradNorm, m.Trained = finite(or.GradNorm), true
		m.TrainSeconds = time.Since(begin).Seconds()
		pub := time.Now()
		v, err := l.cfg.Trainer.SaveWeightsForSampler(ctx)
		if err != nil {
			return m, fmt.Errorf("train: step %d: publishing: %w", b, err)
		}
		m.PublishMS = float64(time.Since(pub).Microseconds()) / 1000
		l.published(v)
		version = v.Step
	} else {
		m.TrainSeconds = time.Since(begin).Seconds()
	}
	m.Version = version
	l.mu.Lock()
	l.trained, l.version = b, version
	l.signal()
	l.mu.Unlock()
	return m, nil
}

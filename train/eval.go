package train

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"time"

	"github.com/nextstate-rl/nextstate/agent"
	"github.com/nextstate-rl/nextstate/agent/report"
	"github.com/nextstate-rl/nextstate/agent/rundir"
)

// evaluate plays the held-out tasks EvalK times each at temperature 0 on the
// newest version (no version is published while it runs: it runs between
// steps), as `nextstate run` would, into eval/step-NNNNNN.
func (l *Loop) evaluate(ctx context.Context, step int) (*EvalMetrics, error) {
	begin := time.Now()
	dir := filepath.Join(l.cfg.Dir, "eval", fmt.Sprintf("step-%06d", step))
	version := l.newest()
	r := &agent.Runner{Client: l.cfg.Gym, Agent: l.greedy, Tasks: l.cfg.Eval, Known: l.cfg.Known, K: l.cfg.EvalK,
		Concurrency: l.cfg.Concurrency, Seed: l.cfg.Seed, PassThreshold: l.cfg.PassThreshold, Dir: dir,
		Info: rundir.RunInfo{Run: fmt.Sprintf("%s/eval-%06d", l.run, step), Model: l.cfg.Policy.Model,
			BaseURL: l.cfg.Policy.BaseURL, Temperature: l.greedy.Temperature(), MaxTurns: l.cfg.Policy.MaxTurns},
		Logger: l.log}
	if _, err := r.Run(ctx); err != nil {
		return nil, fmt.Errorf("evaluation at step %d: %w", step, err)
	}
	res, err := rundir.ReadResultsFile(filepath.Join(dir, rundir.ResultsFile))
	if err != nil {
		return nil, err
	}
	em := &EvalMetrics{Kind: "eval", Step: step, Version: version, Time: time.Now().UTC(), Suites: map[string]Estimate{},
		Dir: dir}
	all := map[string][]float64{}           // by task
	by := map[string]map[string][]float64{} // by suite, then task
	for _, row := range res.Rows {
		em.Trials++
		if row.Status == rundir.StatusInfraError {
			em.Infra++
			continue
		}
		v := 0.0
		if row.Status == rundir.StatusPassed {
			v = 1
		}
		all[row.Task] = append(all[row.Task], v)
		suite := l.cfg.EvalSuite[row.Task]
		if by[suite] == nil {
			by[suite] = map[string][]float64{}
		}
		by[suite][row.Task] = append(by[suite][row.Task], v)
	}
	em.Pass1 = estimate(all)
	for s, vs := range by {
		em.Suites[s] = estimate(vs)
	}
	em.Seconds = time.Since(begin).Seconds()
	return em, nil
}

// estimate is the mean of the trials' values with report's bootstrap
// interval over tasks: a resample draws tasks, each with all its trials.
// A task's trials are not independent draws (at temperature 0 a task
// without randomness plays the same episode each time), so resampling
// trials would narrow the interval by copies of one observation.
func estimate(byTask map[string][]float64) Estimate {
	var e Estimate
	if len(byTask) == 0 {
		return e
	}
	tasks := make([]string, 0, len(byTask))
	for t := range byTask {
		tasks = append(tasks, t)
	}
	sort.Strings(tasks) // the bootstrap's draws are seeded: a fixed order repeats them
	means := make([]float64, 0, len(tasks))
	for _, t := range tasks {
		sum := 0.0
		for _, v := range byTask[t] {
			sum += v
		}
		e.Mean += sum
		e.N += len(byTask[t])
		means = append(means, sum/float64(len(byTask[t])))
	}
	e.Mean /= float64(e.N)
	iv := report.Bootstrap(means, report.BootstrapResamples, report.BootstrapLevel, report.BootstrapSeed)
	e.Low, e.High = iv.Low, iv.High
	return e
}

package train

import (
	"context"
	"fmt"
	"path/filepath"
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
	all := []float64{}
	by := map[string][]float64{}
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
		all = append(all, v)
		suite := l.cfg.EvalSuite[row.Task]
		by[suite] = append(by[suite], v)
	}
	em.Pass1 = estimate(all)
	for s, vs := range by {
		em.Suites[s] = estimate(vs)
	}
	em.Seconds = time.Since(begin).Seconds()
	return em, nil
}

// estimate is the mean of values with report's bootstrap interval.
func estimate(values []float64) Estimate {
	e := Estimate{N: len(values)}
	if len(values) == 0 {
		return e
	}
	for _, v := range values {
		e.Mean += v
	}
	e.Mean /= float64(len(values))
	iv := report.Bootstrap(values, report.BootstrapResamples, report.BootstrapLevel, report.BootstrapSeed)
	e.Low, e.High = iv.Low, iv.High
	return e
}

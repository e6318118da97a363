package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/nextstate-rl/nextstate/agent/rundir"
	"github.com/nextstate-rl/nextstate/client"
	"github.com/nextstate-rl/nextstate/gym"
)

// Runner plays the trials of a run: K samples of each task (a GRPO group
// per task), at most Concurrency episodes in flight, with an Agent or with
// the tasks' oracles, writing the run directory (results.jsonl,
// trajectories/, blobs/, run.json). A directory that already holds rows
// is resumed: trials whose last row is passed, failed or agent_error are
// skipped, infra_error ones and those without a row are run again.
type Runner struct {
	// Client is a connection to the gym server the sessions run on.
	Client *client.Client
	// Agent plays the episodes, unless Oracle is set.
	Agent *Agent
	// Oracle plays each task with its kind's reference solution
	// (gym.OracleFor on the task as given here, verifier data included).
	Oracle bool
	// Tasks are the tasks to run, with their verifier data for oracles.
	Tasks []gym.Task
	// Known holds the task ids the server's catalog has; those sessions
	// are created by id, the others with the task inline.
	Known map[string]bool
	// K is the samples per task (default 1); Concurrency the episodes in
	// flight (default 8).
	K, Concurrency int
	// Seed derives each trial's reset seed, with the task id and sample
	// index, so a trial has the same seed in every rerun.
	Seed int64
	// PassThreshold is the reward a trial must reach to pass (default 1).
	PassThreshold float64
	// Dir is the run directory.
	Dir string
	// Info is written to Dir/run.json. A directory whose run.json names
	// another model, oracle mode or seed is refused.
	Info rundir.RunInfo
	// Progress, when set, is called once before the first trial and after
	// each trial, from one goroutine at a time.
	Progress func(Progress)
	// Logger; nil means slog.Default().
	Logger *slog.Logger
}

// Progress is where a run stands.
type Progress struct {
	Total    int // trials in the run
	Done     int // trials with a row (resumed ones included); infra errors count
	Resumed  int // trials skipped because an earlier run finished them
	Ran      int // trials run by this process so far
	Passed   int
	Scored   int // passed, failed or agent_error
	Infra    int // infra errors so far (rerun to retry)
	Elapsed  time.Duration
	Last     *rundir.Result
	Inflight int
}

// ETA estimates the time left from this process's pace.
func (p Progress) ETA() time.Duration {
	if p.Ran == 0 {
		return 0
	}
	left := p.Total - p.Done
	return time.Duration(float64(p.Elapsed) / float64(p.Ran) * float64(left))
}

// TrialSeed is the reset seed of a trial: the same for the same run seed,
// task and sample, different across samples, in [0, 2^31).
func TrialSeed(seed int64, task string, sample int) int64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d\x00%s\x00%d", seed, task, sample)
	return int64(h.Sum64() & 0x7fffffff)
}

type trial struct {
	task   *gym.Task
	sample int
	id     string
	seed   int64
}

// Run plays every trial not finished yet and returns the summary of the
// whole selection (resumed trials included). When ctx ends, Run stops
// starting trials, abandons those in flight (they get no row, so a rerun
// plays them), and returns an error wrapping ctx.Err() once every write
// has finished: the directory is left resumable. ErrFatal from an
// episode, or a failed write, stops the run the same way and is returned.
func (r *Runner) Run(ctx context.Context) (Summary, error) {
	log, err := r.setDefaults()
	if err != nil {
		return Summary{}, err
	}
	if err := r.writeInfo(); err != nil {
		return Summary{}, err
	}
	w, rows, err := openResults(r.Dir)
	if err != nil {
		return Summary{}, err
	}
	st, todo := r.plan(rows)
	if st.p.Resumed > 0 {
		log.Info("resuming a run", "dir", r.Dir, "finished", st.p.Resumed, "to_run", len(todo))
	}
	if r.Progress != nil {
		r.Progress(st.p)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	r.playAll(ctx, cancel, w, st, todo)
	cerr := w.close()

	final := make([]rundir.Result, 0, len(st.last))
	for _, row := range st.last {
		final = append(final, row)
	}
	sum := Summarize(final, st.want, r.K)
	switch {
	case st.writeErr != nil:
		return sum, st.writeErr
	case st.fatal != nil:
		return sum, st.fatal
	case ctx.Err() != nil:
		return sum, fmt.Errorf("run interrupted with %d of %d trials done: %w", st.p.Done, st.p.Total, context.Cause(ctx))
	}
	return sum, cerr
}

// setDefaults fills the Runner's defaults and checks it.
func (r *Runner) setDefaults() (*slog.Logger, error) {
	log := r.Logger
	if log == nil {
		log = slog.Default()
	}
	if r.K <= 0 {
		r.K = 1
	}
	if r.Concurrency <= 0 {
		r.Concurrency = 8
	}
	if r.PassThreshold == 0 {
		r.PassThreshold = 1
	}
	if r.Client == nil || (r.Agent == nil && !r.Oracle) {
		return nil, errors.New("agent: a Runner needs a Client, and an Agent unless Oracle is set")
	}
	if len(r.Tasks) == 0 {
		return nil, errors.New("agent: the run has no tasks")
	}
	return log, nil
}

// runState is where a run stands: its progress, the last row of each
// trial, and what stopped it. mu guards it once the trials run, and the
// Progress calls.
type runState struct {
	mu              sync.Mutex
	p               Progress
	last            map[string]rundir.Result // trial id -> its last row
	want            map[string]bool          // the trials of the selection
	fatal, writeErr error
	start           time.Time
}

// plan reads the rows already there: the trials of the selection that
// have a scored row are done; the others (no row, or an infra error) are
// to run.
func (r *Runner) plan(rows []rundir.Result) (*runState, []trial) {
	st := &runState{last: map[string]rundir.Result{}, want: map[string]bool{}}
	for _, row := range rows {
		st.last[row.TrialID] = row
	}
	var todo []trial
	for i := range r.Tasks {
		t := &r.Tasks[i]
		for k := range r.K {
			id := rundir.TrialID(t.ID, k)
			st.want[id] = true
			st.p.Total++
			if row, ok := st.last[id]; ok && row.Status != rundir.StatusInfraError {
				st.p.Done++
				st.p.Resumed++
				st.p.Scored++
				if row.Status == rundir.StatusPassed {
					st.p.Passed++
				}
				continue
			}
			todo = append(todo, trial{task: t, sample: k, id: id, seed: TrialSeed(r.Seed, t.ID, k)})
		}
	}
	return st, todo
}

// playAll plays the trials on Concurrency workers until they are done or
// ctx ends, writing each one's row; cancel stops the run on ErrFatal or a
// failed write.
func (r *Runner) playAll(ctx context.Context, cancel context.CancelCauseFunc, w *resultsWriter, st *runState, todo []trial) {
	st.start = time.Now()
	jobs := make(chan trial)
	var wg sync.WaitGroup
	for range min(r.Concurrency, max(len(todo), 1)) {
		wg.Go(func() {
			for t := range jobs {
				r.playOne(ctx, cancel, w, st, t)
			}
		})
	}
feed:
	for _, t := range todo {
		select {
		case jobs <- t:
		case <-ctx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()
}

// playOne plays a trial, writes its row and reports the progress.
func (r *Runner) playOne(ctx context.Context, cancel context.CancelCauseFunc, w *resultsWriter, st *runState, t trial) {
	st.mu.Lock()
	st.p.Inflight++
	st.mu.Unlock()
	row, traj, err := r.play(ctx, t)
	st.mu.Lock()
	st.p.Inflight--
	st.mu.Unlock()
	if err != nil {
		if errors.Is(err, ErrFatal) {
			st.mu.Lock()
			if st.fatal == nil {
				st.fatal = err
			}
			st.mu.Unlock()
			cancel(err)
		}
		return // interrupted: no row, a rerun plays it
	}
	if err := w.write(row, traj); err != nil {
		st.mu.Lock()
		if st.writeErr == nil {
			st.writeErr = fmt.Errorf("writing the results of %s: %w", t.id, err)
		}
		st.mu.Unlock()
		cancel(err)
		return
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	st.last[row.TrialID] = *row
	st.p.Ran++
	st.p.Done++
	if row.Status == rundir.StatusInfraError {
		st.p.Infra++
	} else {
		st.p.Scored++
		if row.Status == rundir.StatusPassed {
			st.p.Passed++
		}
	}
	st.p.Elapsed, st.p.Last = time.Since(st.start), row
	if r.Progress != nil {
		r.Progress(st.p)
	}
}

// writeInfo writes run.json, or checks that the one there is for the same
// model, oracle mode and seed and refreshes it.
func (r *Runner) writeInfo() error {
	if err := os.MkdirAll(r.Dir, 0o755); err != nil {
		return err
	}
	path := filepath.Join(r.Dir, rundir.RunFile)
	info := r.Info
	info.K, info.Concurrency, info.Oracle, info.Seed, info.PassThreshold = r.K, r.Concurrency, r.Oracle, r.Seed, r.PassThreshold
	info.Trials = len(r.Tasks) * r.K
	if r.Agent != nil && info.Model == "" {
		info.Model = r.Agent.Model()
	}
	if r.Oracle {
		info.Model = "oracle"
	}
	info.Updated = time.Now().UTC()
	if info.Started.IsZero() {
		info.Started = info.Updated
	}
	if b, err := os.ReadFile(path); err == nil {
		var old rundir.RunInfo
		if err := json.Unmarshal(b, &old); err != nil {
			return fmt.Errorf("%s is not a run.json: %w", path, err)
		}
		if old.Model != info.Model || old.Oracle != info.Oracle || old.Seed != info.Seed {
			return fmt.Errorf("%s holds a run of model %q (oracle %v, seed %d), not of model %q (oracle %v, seed %d): give another --out to start a new run",
				r.Dir, old.Model, old.Oracle, old.Seed, info.Model, info.Oracle, info.Seed)
		}
		info.Started = old.Started
		if old.Run != "" {
			info.Run = old.Run
		}
	}
	r.Info = info
	b, _ := json.MarshalIndent(info, "", "  ")
	return rundir.WriteFile(path, append(b, '\n'))
}

// play runs one trial and makes its row and trajectory. The error is
// non-nil only when the trial was interrupted (ctx ended) or ErrFatal.
func (r *Runner) play(ctx context.Context, t trial) (*rundir.Result, *rundir.Trajectory, error) {
	began := time.Now()
	row := &rundir.Result{TrialID: t.id, Task: t.task.ID, Env: t.task.Env, Sample: t.sample, Seed: t.seed,
		Trajectory: rundir.TrajectoryPath(t.task.ID, t.sample), Model: r.Info.Model}
	finish := func(ep *Episode) (*rundir.Result, *rundir.Trajectory, error) {
		row.DurationMS = time.Since(began).Milliseconds()
		row.FinishedAt = time.Now().UTC()
		traj := &rundir.Trajectory{TrialID: t.id, Task: t.task.ID, Env: t.task.Env, Instruction: t.task.Instruction,
			Seed: t.seed, Model: row.Model, Steps: []rundir.Step{}}
		if ep != nil {
			row.Reward, row.Terminated, row.Truncated = ep.Reward, ep.Terminated, ep.Truncated
			row.PromptTokens, row.CompletionTokens = int64(ep.PromptTokens), int64(ep.CompletionTokens)
			row.Failure = ep.Failure
			for _, s := range ep.Steps {
				switch {
				case s.Step > 0:
					row.Steps++
				case s.Failure != nil && s.Failure.Reason == gym.RefusedReason && row.Refused < gym.MaxRefusedRecorded:
					row.Refused++ // the gym recorded it (step.refused)
				}
			}
			traj.Reset.Observation, traj.Reset.Info = ep.Reset.Observation, ep.Reset.Info
			if ep.Reset.Instruction != "" {
				traj.Instruction = ep.Reset.Instruction
			}
			traj.Steps, traj.Outcome = ep.Steps, ep.Reward
		}
		row.Status = r.status(row)
		return row, traj, nil
	}

	var opts gym.Options
	var oracle gym.Oracle
	if r.Oracle {
		o, err := gym.OracleFor(t.task)
		if err != nil {
			row.Failure = &gym.Failure{Fault: gym.FaultAgent, Reason: "no_oracle", Message: err.Error()}
			return finish(nil)
		}
		if oo, ok := o.(gym.OracleOptions); ok {
			opts = oo.ResetOptions()
		}
		oracle = o
	}
	req := gym.CreateRequest{Env: t.task.Env, Seed: t.seed, Options: opts, Run: r.Info.Run,
		Labels: map[string]string{"trial": t.id, "group": t.task.ID, "sample": fmt.Sprint(t.sample)}}
	if r.Known[t.task.ID] {
		req.TaskID = t.task.ID
	} else {
		req.Task = t.task
	}
	sess, reset, err := r.create(ctx, req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		row.Failure = failureOf(err)
		return finish(nil)
	}
	row.Session = sess.ID()
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		sess.Close(cctx)
	}()

	var ep *Episode
	if r.Oracle {
		ep, err = playOracle(ctx, sess, reset, oracle)
	} else {
		tools, terr := ToolsFor(reset)
		if terr != nil {
			row.Failure = &gym.Failure{Fault: gym.FaultInfra, Reason: "bad_tools", Message: terr.Error()}
			return finish(nil)
		}
		ep, err = r.Agent.Play(ctx, sess, Start{Reset: reset, Tools: tools, Seed: t.seed})
	}
	if err != nil {
		return nil, nil, err
	}
	return finish(ep)
}

// status decides a trial's status from its row.
func (r *Runner) status(row *rundir.Result) rundir.Status {
	switch {
	case row.Failure != nil && row.Failure.Fault == gym.FaultInfra:
		return rundir.StatusInfraError
	case row.Failure != nil:
		return rundir.StatusAgentError
	case row.Reward >= r.PassThreshold:
		return rundir.StatusPassed
	}
	return rundir.StatusFailed
}

// create makes a session, waiting out over-capacity and draining answers
// (with their retry hints) until ctx ends.
func (r *Runner) create(ctx context.Context, req gym.CreateRequest) (*client.Session, gym.ResetResult, error) {
	for {
		s, res, err := r.Client.Create(ctx, req)
		var ce *gym.CapacityError
		if err == nil || !errors.As(err, &ce) && !errors.Is(err, gym.ErrDraining) {
			return s, res, err
		}
		wait := time.Second
		if ce != nil && ce.RetryAfter > 0 {
			wait = ce.RetryAfter
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, res, ctx.Err()
		case <-t.C:
		}
	}
}

// playOracle plays an episode with a task's oracle. When the oracle has
// nothing more to send before the episode ended, one empty message is
// sent (how an agent with nothing to add ends a conversation); if that
// does not end it either, the episode stops, truncated.
func playOracle(ctx context.Context, sess Session, reset gym.ResetResult, o gym.Oracle) (*Episode, error) {
	ep := &Episode{Reset: reset}
	obs, info := reset.Observation, reset.Info
	ended := false
	for {
		a, done, err := o.Next(obs, info)
		if err != nil {
			ep.Failure, ep.Truncated = &gym.Failure{Fault: gym.FaultAgent, Reason: "oracle_error", Message: err.Error()}, true
			break
		}
		if done || len(a.Parts) == 0 {
			if ended {
				ep.Truncated, ep.EndReason = true, "oracle_done"
				break
			}
			ended, a = true, gym.TextAction("")
		}
		res, err := sess.Step(ctx, a)
		if err != nil {
			if ctx.Err() != nil {
				return ep, fmt.Errorf("episode interrupted: %w", ctx.Err())
			}
			ep.Failure, ep.Truncated = failureOf(err), true
			if errors.Is(err, gym.ErrBadAction) {
				ep.Failure.Fault, ep.Failure.Reason = gym.FaultAgent, gym.RefusedReason
			}
			ep.Steps = append(ep.Steps, rundir.Step{Action: a, Failure: ep.Failure})
			break
		}
		ep.Steps = append(ep.Steps, rundir.Step{Step: res.Step, Action: a, Observation: res.Observation, Reward: res.Reward,
			Terminated: res.Terminated, Truncated: res.Truncated, Info: res.Info, Failure: res.Failure})
		if res.Failure != nil || res.Terminated || res.Truncated {
			ep.Terminated, ep.Truncated, ep.Failure = res.Terminated, res.Truncated, res.Failure
			break
		}
		obs, info = res.Observation, res.Info
	}
	ep.Reward = outcome(ep.Steps)
	return ep, nil
}

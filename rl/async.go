package rl

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nextstate-rl/nextstate/gym"
)

// Reasons a step is not judged, in JudgeResult.Reason.
const (
	ReasonQueueFull   = "queue_full"    // the Judger's queue was full when the step was submitted
	ReasonTimeout     = "timeout"       // no vote was valid and the judge timed out
	ReasonNoValidVote = "no_valid_vote" // every vote was malformed or failed
	ReasonBadInput    = "bad_input"     // the prompt could not be built (template, image)
	ReasonClosed      = "closed"        // the Judger closed before judging the step
	ReasonPanic       = "panic"         // the Scorer panicked
)

// DefaultSource is the Source of the judge's reward events.
const DefaultSource = "judge:prm"

// StepRef names a judged step: its session, episode, number and id, as in
// its step event. Run, Env and Task are copied to the reward event.
type StepRef struct {
	Session string
	Episode int
	Step    int
	StepID  string
	Run     string
	Env     string
	Task    string
}

// JudgeResult is what the Judger delivers for each submitted step, exactly
// once: a verdict, or the reason the step was not judged.
type JudgeResult struct {
	Ref StepRef
	// Verdict is nil when the judge never ran (queue full, closed, bad
	// input); it is set, with votes, when the votes were not valid.
	Verdict *Verdict
	// Reason is "" for a judged step (at least one valid vote), else one
	// of the Reason constants.
	Reason string
	// Err is the error behind a Reason, if any.
	Err error
	// Source names the judge in the reward event ("judge:prm").
	Source string
	Model  string
	// Elapsed is the time from Submit to the result.
	Elapsed time.Duration
}

// Judged reports whether the step got a process reward.
func (r JudgeResult) Judged() bool { return r.Reason == "" && r.Verdict != nil }

// Reward is the step's process reward: the mean of the valid votes, 0 when
// the step was not judged.
func (r JudgeResult) Reward() float64 {
	if r.Verdict == nil {
		return 0
	}
	return r.Verdict.Reward
}

// Hint is the step's selected hint, "" if none.
func (r JudgeResult) Hint() string {
	if r.Verdict == nil {
		return ""
	}
	return r.Verdict.Hint
}

// Event returns the reward event for gym.Manager.AddReward. A step that
// was not judged gets an event too, with reward 0 and info "judged" false
// and "reason", so the record says why; consumers read info.judged before
// the reward. Info keys: judged, reason, error, model, votes (score,
// valid, timed_out, hint, error per vote), valid, invalid, timeouts, hint.
func (r JudgeResult) Event() gym.Event {
	reward := r.Reward()
	info := gym.Info{"judged": r.Judged()}
	if r.Reason != "" {
		info["reason"] = r.Reason
	}
	if r.Err != nil {
		info["error"] = r.Err.Error()
	}
	if r.Model != "" {
		info["model"] = r.Model
	}
	if v := r.Verdict; v != nil {
		votes := make([]map[string]any, len(v.Votes))
		for i, vote := range v.Votes {
			m := map[string]any{"valid": vote.Valid}
			if vote.Valid {
				m["score"] = vote.Score
			}
			if vote.TimedOut {
				m["timed_out"] = true
			}
			if vote.Hint != "" {
				m["hint"] = vote.Hint
			}
			if vote.Err != nil {
				m["error"] = vote.Err.Error()
			}
			votes[i] = m
		}
		info["votes"] = votes
		info["valid"], info["invalid"], info["timeouts"] = v.Valid, v.Invalid, v.Timeouts
		if v.Hint != "" {
			info["hint"] = v.Hint
		}
	}
	source := r.Source
	if source == "" {
		source = DefaultSource
	}
	return gym.Event{Type: gym.EventReward, Session: r.Ref.Session, Run: r.Ref.Run, Env: r.Ref.Env, Task: r.Ref.Task,
		Episode: r.Ref.Episode, Step: r.Ref.Step, StepID: r.Ref.StepID, Reward: &reward, Source: source, Info: info}
}

// JudgerConfig sizes a Judger. Zero fields take the defaults in brackets.
type JudgerConfig struct {
	// Workers is how many steps are judged at once [4].
	Workers int
	// Queue is how many submitted steps may wait [256]; past it, Submit
	// answers ReasonQueueFull at once.
	Queue int
	// Source names the judge in the reward events [judge:prm].
	Source string
	// Model is copied to the results; NewJudger takes it from a *Judge.
	Model string
	// Tracker, if set, is told of every Submit before it is queued and of
	// every result after deliver returns.
	Tracker *Tracker
}

// Judger judges steps off the step path: Submit queues a step and returns
// at once; a fixed set of workers runs the Scorer and hands each result to
// the deliver function. Every Submit gets exactly one result: a verdict, or
// a reason it was not judged (queue full, timed out, closed).
//
// deliver is called from the workers concurrently, and, for a full queue
// or a closed Judger, on Submit's own goroutine before Submit returns; it
// must be quick (the server's is one store append) and must not call
// Submit or Close.
type Judger struct {
	scorer  Scorer
	cfg     JudgerConfig
	deliver func(JudgeResult)

	mu     sync.RWMutex // guards closed and the send on jobs
	closed bool
	jobs   chan job

	base   context.Context // cancelled when Close gives up waiting
	cancel context.CancelFunc
	wg     sync.WaitGroup
	done   chan struct{}
	once   sync.Once

	submitted, dropped, finished, inFlight atomic.Int64
	errFull, errClosed                     error
}

type job struct {
	ref   StepRef
	in    JudgeInput
	start time.Time
}

// NewJudger starts a Judger's workers. deliver receives every result.
func NewJudger(s Scorer, cfg JudgerConfig, deliver func(JudgeResult)) *Judger {
	if s == nil || deliver == nil {
		panic("rl: NewJudger needs a Scorer and a deliver function")
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 4
	}
	if cfg.Queue <= 0 {
		cfg.Queue = 256
	}
	if cfg.Source == "" {
		cfg.Source = DefaultSource
	}
	if j, ok := s.(*Judge); ok && cfg.Model == "" {
		cfg.Model = j.Model()
	}
	base, cancel := context.WithCancel(context.Background())
	g := &Judger{scorer: s, cfg: cfg, deliver: deliver, jobs: make(chan job, cfg.Queue),
		base: base, cancel: cancel, done: make(chan struct{}),
		errFull:   fmt.Errorf("%d steps are already waiting for the judge", cfg.Queue),
		errClosed: errors.New("the judger is closed")}
	for range cfg.Workers {
		g.wg.Go(g.work)
	}
	return g
}

// Submit queues a step for judging and returns without waiting. Over the
// queue's length, or after Close, the step's result (ReasonQueueFull,
// ReasonClosed) is delivered before Submit returns.
func (g *Judger) Submit(ref StepRef, in JudgeInput) {
	if t := g.cfg.Tracker; t != nil {
		t.Submitted(ref)
	}
	g.submitted.Add(1)
	now := time.Now()
	g.mu.RLock()
	if g.closed {
		g.mu.RUnlock()
		g.finish(JudgeResult{Ref: ref, Reason: ReasonClosed, Err: g.errClosed}, now)
		return
	}
	select {
	case g.jobs <- job{ref: ref, in: in, start: now}:
		g.mu.RUnlock()
	default:
		g.mu.RUnlock()
		g.dropped.Add(1)
		g.finish(JudgeResult{Ref: ref, Reason: ReasonQueueFull, Err: g.errFull}, now)
	}
}

func (g *Judger) work() {
	for jb := range g.jobs {
		if g.base.Err() != nil {
			g.finish(JudgeResult{Ref: jb.ref, Reason: ReasonClosed, Err: errors.New("the judger closed before judging the step")}, jb.start)
			continue
		}
		g.inFlight.Add(1)
		res := g.judge(jb)
		g.inFlight.Add(-1)
		g.finish(res, jb.start)
	}
}

// judge runs the Scorer on one step, confining a panic to it.
func (g *Judger) judge(jb job) (res JudgeResult) {
	res.Ref = jb.ref
	defer func() {
		if p := recover(); p != nil {
			res = JudgeResult{Ref: jb.ref, Reason: ReasonPanic, Err: fmt.Errorf("the judge panicked: %v", p)}
		}
	}()
	v, err := g.scorer.Score(g.base, jb.in)
	switch {
	case g.base.Err() != nil:
		res.Reason, res.Err = ReasonClosed, errors.New("the judger closed while judging the step")
		if len(v.Votes) > 0 {
			res.Verdict = &v
		}
	case err != nil:
		res.Reason, res.Err = ReasonBadInput, err
	case v.Valid > 0:
		res.Verdict = &v
	case v.TimedOut:
		res.Verdict, res.Reason = &v, ReasonTimeout
	default:
		res.Verdict, res.Reason = &v, ReasonNoValidVote
	}
	return res
}

func (g *Judger) finish(res JudgeResult, start time.Time) {
	res.Source, res.Model, res.Elapsed = g.cfg.Source, g.cfg.Model, time.Since(start)
	g.deliver(res)
	if t := g.cfg.Tracker; t != nil {
		t.Judged(res) // after deliver: the reward event is recorded before the trajectory completes
	}
	g.finished.Add(1)
}

// Close stops taking steps and lets the workers judge what is queued. If ctx
// ends first, the judging still under way is cancelled and every step not
// yet judged is delivered with ReasonClosed; Close then returns ctx's
// error once the workers have exited. Close is idempotent: later calls wait
// for the same end.
func (g *Judger) Close(ctx context.Context) error {
	g.once.Do(func() {
		g.mu.Lock()
		g.closed = true
		close(g.jobs)
		g.mu.Unlock()
		go func() { // owned: it ends when the workers do
			g.wg.Wait()
			g.cancel()
			close(g.done)
		}()
	})
	select {
	case <-g.done:
		return nil
	case <-ctx.Done():
		g.cancel()
		<-g.done
		return ctx.Err()
	}
}

// JudgerStats counts a Judger's steps.
type JudgerStats struct {
	Submitted int64 // Submit calls
	Dropped   int64 // answered ReasonQueueFull
	Finished  int64 // results delivered
	Queued    int   // waiting for a worker
	InFlight  int64 // being judged
}

// Stats returns the Judger's counters.
func (g *Judger) Stats() JudgerStats {
	return JudgerStats{Submitted: g.submitted.Load(), Dropped: g.dropped.Load(), Finished: g.finished.Load(),
		Queued: len(g.jobs), InFlight: g.inFlight.Load()}
}

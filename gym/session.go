package gym

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"
)

// Session drives one Env through episodes on behalf of one client. It owns
// the ordering of requests (one at a time; the server keeps each
// connection's requests for a session in arrival order), step ids,
// limits and deadlines, and recording: every reset and step is appended to
// the Recorder before its result is returned. A Session outlives the
// connection that created it; any connection may address it by ID.
//
// All methods are safe for concurrent use; they serialize on the session.
type Session struct {
	ID   string
	Run  string
	Kind string

	m      *Manager
	reg    registered
	env    Env
	labels map[string]string

	mu      sync.Mutex // held for the whole of a request
	task    *Task
	limits  Limits
	episode int
	step    int
	over    bool // the episode terminated or was truncated
	refused int  // the episode's refused actions recorded (EventRefused)
	closed  bool
	started time.Time // episode start
	steps   stepLog

	lastActive time.Time // when the last request began or ended; guarded by Manager.mu
	busy       int32     // requests in flight, guarded by Manager.mu
}

// StepResult is a step's answer, as recorded.
type StepResult struct {
	Transition
	Session string   `json:"session"`
	Episode int      `json:"episode"`
	Step    int      `json:"step"`
	StepID  string   `json:"step_id,omitempty"`
	Seq     int64    `json:"seq"`
	Failure *Failure `json:"failure,omitempty"`
	// Replayed is true when the step id had been seen: the answer is the
	// recorded one and the action was not run again.
	Replayed bool `json:"replayed,omitempty"`
}

// ResetResult is the answer to a reset: the first observation of an episode.
type ResetResult struct {
	Session     string      `json:"session"`
	Episode     int         `json:"episode"`
	Task        string      `json:"task,omitempty"`
	Instruction string      `json:"instruction,omitempty"`
	Observation Observation `json:"observation"`
	Info        Info        `json:"info,omitempty"`
	Limits      Limits      `json:"limits"`
	Seq         int64       `json:"seq"`
}

// Task returns the task of the current episode.
func (s *Session) Task() *Task {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.task
}

// Reset starts a new episode. A nil task keeps the current one.
func (s *Session) Reset(ctx context.Context, task *Task, seed int64, opts Options) (ResetResult, error) {
	if err := s.m.enter(s); err != nil {
		return ResetResult{}, err
	}
	defer s.m.leave(s)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ResetResult{}, fmt.Errorf("%w: %s", ErrSessionClosed, s.ID)
	}
	if task == nil {
		task = s.task
	}
	if task.Env != "" && task.Env != s.Kind {
		return ResetResult{}, fmt.Errorf("%w: task %q is for %s, the session runs %s", ErrBadRequest, task.ID, task.Env, s.Kind)
	}
	res, err := s.reset(ctx, task, seed, opts)
	if f := FailureOf(err); f != nil && f.Fault == FaultInfra {
		s.closeLocked(context.WithoutCancel(ctx), CloseInfra, f)
	}
	return res, err
}

func (s *Session) reset(ctx context.Context, task *Task, seed int64, opts Options) (res ResetResult, err error) {
	limits := task.Limits.Or(s.reg.spec.Limits).Or(s.m.cfg.Limits)
	rctx, cancel := context.WithTimeout(ctx, time.Duration(limits.StepTimeout))
	defer cancel()
	start := time.Now()
	obs, info, err := s.guard(func() (Observation, Info, error) { return s.env.Reset(rctx, task, seed, opts) })
	obs = obs.orEmpty()
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			err = InfraFault("reset_timeout", fmt.Errorf("reset took longer than %s", time.Duration(limits.StepTimeout)))
		}
		// The env is half reset: no step may reach it before a reset
		// succeeds.
		s.over = true
		return res, err
	}
	s.task, s.limits = task, limits
	s.episode++
	s.step, s.over, s.refused, s.started = 0, false, 0, time.Now()
	ev := &Event{
		Type: EventReset, Time: s.started, Session: s.ID, Run: s.Run, Env: s.Kind, Task: task.ID,
		Episode: s.episode, Seed: &seed, Instruction: task.Instruction, Observation: &obs, Info: info,
		DurationUS: time.Since(start).Microseconds(),
	}
	if err := s.m.record(ctx, ev); err != nil {
		return res, err
	}
	return ResetResult{
		Session: s.ID, Episode: s.episode, Task: task.ID, Instruction: task.Instruction,
		Observation: obs, Info: info, Limits: limits, Seq: ev.Seq,
	}, nil
}

// Step applies action and returns the next state. stepID, if not empty, makes
// the step idempotent: a step id seen before is answered from the record
// (Replayed set) without running the action again, and reusing it for a
// different action is an ErrStepIDReused error. An action that does not
// match the kind's schema is an *ActionError and consumes no step; it is
// recorded as an EventRefused (the refusal is the next state a policy is
// trained on), the episode's first MaxRefusedRecorded of them.
//
// A step that hits a limit (max steps, episode deadline, the step's own
// deadline) is truncated; a failing env truncates the episode with a
// Failure that says whose fault it was, and an infrastructure failure also
// closes the session.
func (s *Session) Step(ctx context.Context, stepID string, action Action) (StepResult, error) {
	return s.StepTurn(ctx, stepID, action, nil)
}

// StepTurn is Step with the policy's side of the step: turn, when not nil,
// is recorded on the step event (Event.Turn) for training samples; the env
// never sees it. A replayed step id is answered from the record as by Step,
// whatever turn comes with it, and records nothing.
func (s *Session) StepTurn(ctx context.Context, stepID string, action Action, turn *Turn) (StepResult, error) {
	if err := s.m.enter(s); err != nil {
		return StepResult{}, err
	}
	defer s.m.leave(s)
	var sum [32]byte // the action's fingerprint, for the step log
	if stepID != "" {
		sum = action.fingerprint()
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if stepID != "" {
		if res, err, ok := s.replay(ctx, stepID, sum, action); ok {
			return res, err
		}
	}
	if s.closed {
		return StepResult{}, fmt.Errorf("%w: %s", ErrSessionClosed, s.ID)
	}
	if s.over {
		return StepResult{}, ErrEpisodeOver
	}
	if err := s.checkAction(action); err != nil {
		return StepResult{}, s.refuse(ctx, stepID, sum, action, turn, err)
	}

	res, elapsed, closeAfter := s.runStep(ctx, action)
	res.StepID = stepID
	ev := &Event{
		Type: EventStep, Time: time.Now(), Session: s.ID, Run: s.Run, Env: s.Kind, Task: s.task.ID,
		Episode: s.episode, Step: res.Step, StepID: stepID, Action: &action, Observation: &res.Observation,
		Reward: &res.Reward, Terminated: res.Terminated, Truncated: res.Truncated, Info: res.Info,
		Failure: res.Failure, DurationUS: elapsed.Microseconds(), Turn: turn,
	}
	if err := s.m.record(ctx, ev); err != nil {
		// The step ran but cannot be acknowledged: the record is the
		// product, so the session cannot go on.
		s.closeLocked(context.WithoutCancel(ctx), CloseInfra, FailureOf(err))
		return StepResult{}, err
	}
	res.Seq = ev.Seq
	// The answer's info is the event's public one: the verifier's details
	// (expected answers, hidden test output) stay in the record; the agent
	// sees only the reward.
	res.Info = ev.Public().Info
	if stepID != "" {
		s.steps.put(s.m.stepLogKeep(), stepID, &loggedStep{sum: sum, res: res})
	}
	if closeAfter {
		s.closeLocked(context.WithoutCancel(ctx), CloseInfra, res.Failure)
	}
	return res, nil
}

// checkAction checks an action against the kind's schema and the parts'
// own rules.
func (s *Session) checkAction(action Action) *ActionError {
	// The schema reads the action's JSON form only when its native check
	// does not accept the action (see Schema.ValidateAction).
	if err := s.reg.action.ValidateAction(action, func() []byte {
		raw, _ := json.Marshal(action) // an Action always encodes
		return raw
	}); err != nil {
		return &ActionError{Kind: s.Kind, Err: err}
	}
	for _, p := range action.Parts {
		if err := p.check(); err != nil {
			return &ActionError{Kind: s.Kind, Err: err}
		}
	}
	return nil
}

// MaxRefusedRecorded bounds the refused actions of one episode that are
// recorded (EventRefused): past it they are still refused, and not
// recorded, so that a client cannot grow the record without taking steps.
const MaxRefusedRecorded = 64

// RefusedReason is the failure reason of a refused action's event.
const RefusedReason = "bad_action"

// refuse records a refused action, the episode's first MaxRefusedRecorded,
// as an EventRefused numbered as the step it would have been, and returns
// the refusal. A step id is remembered with it, so that a retry (the same
// action) is answered the same way and not recorded twice; the id is not
// used up: another action may take it. An event the store cannot take
// closes the session, as a step's does.
func (s *Session) refuse(ctx context.Context, stepID string, sum [32]byte, action Action, turn *Turn, refusal *ActionError) error {
	if s.refused >= MaxRefusedRecorded {
		return refusal
	}
	ev := &Event{
		Type: EventRefused, Time: time.Now(), Session: s.ID, Run: s.Run, Env: s.Kind, Task: s.task.ID,
		Episode: s.episode, Step: s.step + 1, StepID: stepID, Action: &action, Turn: turn,
		Failure: &Failure{Fault: FaultAgent, Reason: RefusedReason, Message: refusal.Error()},
	}
	if err := s.m.record(ctx, ev); err != nil {
		s.closeLocked(context.WithoutCancel(ctx), CloseInfra, FailureOf(err))
		return err
	}
	s.refused++
	if stepID != "" {
		s.steps.put(s.m.stepLogKeep(), stepID, &loggedStep{sum: sum, err: refusal})
	}
	return refusal
}

// runStep calls the env under the step's deadline and applies the limits.
// It returns how long the env took and whether the session must close (an
// infrastructure failure).
func (s *Session) runStep(ctx context.Context, action Action) (StepResult, time.Duration, bool) {
	s.step++
	res := StepResult{Session: s.ID, Episode: s.episode, Step: s.step, Transition: Transition{Observation: Observation{Parts: []Part{}}}}
	timeout := time.Duration(s.limits.StepTimeout)
	episodeLeft := time.Duration(s.limits.EpisodeTimeout) - time.Since(s.started)
	if s.limits.EpisodeTimeout > 0 && episodeLeft <= 0 {
		s.over = true
		res.Truncated = true
		res.Info = Info{"truncated_by": "episode_timeout"}
		return res, 0, false
	}
	byEpisode := s.limits.EpisodeTimeout > 0 && (timeout <= 0 || episodeLeft < timeout)
	if byEpisode {
		timeout = episodeLeft
	}
	sctx, cancel := ctx, context.CancelFunc(func() {})
	if timeout > 0 {
		sctx, cancel = context.WithTimeout(ctx, timeout)
	}
	start := time.Now()
	var tr Transition
	_, _, err := s.guard(func() (Observation, Info, error) {
		var err error
		tr, err = s.env.Step(sctx, action)
		return tr.Observation, tr.Info, err
	})
	cancel()
	elapsed := time.Since(start)
	closeAfter := false
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			why := "step_timeout"
			if byEpisode {
				why = "episode_timeout"
			}
			var fe *FaultError
			if !errors.As(err, &fe) {
				err = AgentFault(why, fmt.Errorf("the action ran longer than %s", timeout.Round(time.Millisecond)))
			}
		}
		res.Failure = FailureOf(err)
		res.Truncated = true
		res.Info = Info{"truncated_by": res.Failure.Reason}
		closeAfter = res.Failure.Fault == FaultInfra
	} else {
		res.Transition = tr
		res.Observation = tr.Observation.orEmpty()
	}
	if !res.Terminated && !res.Truncated && s.limits.MaxSteps > 0 && s.step >= s.limits.MaxSteps {
		res.Truncated = true
		res.Info = withInfo(res.Info, "truncated_by", "max_steps")
	}
	if res.Terminated && res.Failure == nil {
		if v, ok := s.env.(Verifier); ok {
			s.verify(ctx, v, &res)
		}
	}
	if res.Terminated || res.Truncated {
		s.over = true
	}
	return res, elapsed, closeAfter
}

// verify runs the env's verifier after the terminating action; its verdict
// becomes the step's reward.
func (s *Session) verify(ctx context.Context, v Verifier, res *StepResult) {
	vctx, cancel := context.WithTimeout(ctx, time.Duration(s.limits.StepTimeout))
	defer cancel()
	var reward float64
	var info Info
	_, _, err := s.guard(func() (Observation, Info, error) {
		var err error
		reward, info, err = v.Verify(vctx)
		return Observation{}, nil, err
	})
	var fe *FaultError
	if errors.As(err, &fe) && fe.Fault == FaultAgent {
		// The agent left nothing the verifier could judge (it broke what
		// the verifier needs, or its work is over a limit): a failed
		// episode, scored as one.
		res.Failure = FailureOf(err)
		res.Reward = 0
		res.Info = withInfo(res.Info, InfoVerifier, Info{"error": err.Error(), "reason": fe.Reason})
		res.Info["reward_source"] = SourceVerifier
		return
	}
	if err != nil {
		// The verdict is unknown: the episode is cut off, not failed.
		res.Failure = FailureOf(InfraFault("verifier", err))
		res.Terminated, res.Truncated = false, true
		return
	}
	res.Reward = reward
	res.Info = withInfo(res.Info, InfoVerifier, info)
	res.Info["reward_source"] = SourceVerifier
}

// withInfo sets key in a copy of info, so an env's own map is never changed
// behind its back.
func withInfo(info Info, key string, v any) Info {
	out := make(Info, len(info)+1)
	for k, x := range info {
		out[k] = x
	}
	out[key] = v
	return out
}

// guard runs f and turns a panic into an infrastructure failure, so a
// panicking env fails only its own session.
func (s *Session) guard(f func() (Observation, Info, error)) (obs Observation, info Info, err error) {
	defer func() {
		if p := recover(); p != nil {
			s.m.log().Error("env panicked", "session", s.ID, "kind", s.Kind, "panic", p, "stack", string(debug.Stack()))
			err = InfraFault("panic", fmt.Errorf("env %s panicked: %v", s.Kind, p))
		}
	}()
	return f()
}

// Close ends the session and its env. It is idempotent.
func (s *Session) Close(ctx context.Context) error {
	return s.m.Close(ctx, s.ID, CloseClient)
}

// closeLocked closes the env and records why, once. s.mu is held.
func (s *Session) closeLocked(ctx context.Context, reason string, f *Failure) error {
	if s.closed {
		return nil
	}
	s.closed = true
	cctx, cancel := context.WithTimeout(ctx, s.m.cfg.CloseTimeout)
	defer cancel()
	var cerr error
	func() {
		defer func() {
			if p := recover(); p != nil {
				cerr = fmt.Errorf("env %s panicked in Close: %v", s.Kind, p)
			}
		}()
		cerr = s.env.Close(cctx)
	}()
	if cerr != nil && f == nil {
		f = FailureOf(InfraFault("close", cerr))
	}
	s.m.forget(s)
	ev := &Event{Type: EventSessionClosed, Time: time.Now(), Session: s.ID, Run: s.Run, Env: s.Kind,
		Episode: s.episode, Reason: reason, Failure: f}
	if s.task != nil {
		ev.Task = s.task.ID
	}
	if err := s.m.record(cctx, ev); err != nil {
		return err
	}
	return cerr
}

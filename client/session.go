package client

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"sync/atomic"

	"github.com/nextstate-rl/nextstate/gym"
	"github.com/nextstate-rl/nextstate/wire"
)

// Session is a handle on a server-side session. The session lives on the
// server, not in the handle: it outlives connections, and a handle keeps
// working across reconnects. A Session is safe for concurrent use, though
// the server runs one session's requests one at a time, in arrival order.
type Session struct {
	c       *Client
	id      string
	prefix  string // step ids are prefix + counter
	n       atomic.Uint64
	lastSeq atomic.Int64
}

// ID returns the session's id.
func (s *Session) ID() string { return s.id }

// LastSeq returns the highest event seq this handle has seen for the
// session, in the answers to its own calls (create, reset, step, resume).
// Resume(ctx, s.LastSeq()) fetches what it has not seen.
func (s *Session) LastSeq() int64 { return s.lastSeq.Load() }

func (s *Session) observe(seq int64) {
	for {
		cur := s.lastSeq.Load()
		if seq <= cur || s.lastSeq.CompareAndSwap(cur, seq) {
			return
		}
	}
}

// nextStepID returns a step id unique to this handle: the session id, a
// random per-handle part (so two handles on one session never collide) and
// a counter.
func (s *Session) nextStepID() string {
	return s.prefix + strconv.FormatUint(s.n.Add(1), 10)
}

// Step applies action and returns the next state, under a fresh step id.
// After a reconnect the step is sent again with the same id, and the
// server answers from its record (Replayed set) if it had run it. Errors
// are *StepError, which carries the id for a retry with StepWithID.
func (s *Session) Step(ctx context.Context, action gym.Action) (gym.StepResult, error) {
	return s.StepWithID(ctx, s.nextStepID(), action)
}

// StepWithID is Step under a step id the caller chose, for retrying a step
// whose outcome is unknown: a step id the server has seen is answered from
// its record, without running the action again; the same id with a
// different action is an ErrStepIDReused error. An empty stepID makes the
// step not idempotent: it is then never sent twice, and a lost answer is
// an error wrapping ErrConnectionLost.
func (s *Session) StepWithID(ctx context.Context, stepID string, action gym.Action) (gym.StepResult, error) {
	var res gym.StepResult
	err := s.c.call(ctx, wire.MethodSessionStep, wire.StepParams{Session: s.id, StepID: stepID, Action: action}, &res, stepID != "")
	if err != nil {
		return res, &StepError{Session: s.id, StepID: stepID, Err: err}
	}
	s.observe(res.Seq)
	return res, nil
}

// StepTurn is Step with the policy's side of the step (gym.Turn: the
// prompt, the response, token ids and log-probs), which the server records
// with the step for training samples.
func (s *Session) StepTurn(ctx context.Context, action gym.Action, turn *gym.Turn) (gym.StepResult, error) {
	stepID := s.nextStepID()
	var res gym.StepResult
	err := s.c.call(ctx, wire.MethodSessionStep, wire.StepParams{Session: s.id, StepID: stepID, Action: action, Turn: turn}, &res, true)
	if err != nil {
		return res, &StepError{Session: s.id, StepID: stepID, Err: err}
	}
	s.observe(res.Seq)
	return res, nil
}

// Reset starts a new episode; p.Session is set to the session's id. With
// neither TaskID nor Task the current task is kept. A reset is never sent
// twice: a lost answer is an error wrapping ErrConnectionLost, and Resume
// tells whether the reset happened.
func (s *Session) Reset(ctx context.Context, p wire.ResetParams) (gym.ResetResult, error) {
	p.Session = s.id
	var res gym.ResetResult
	if err := s.c.call(ctx, wire.MethodSessionReset, p, &res, false); err != nil {
		return res, err
	}
	s.observe(res.Seq)
	return res, nil
}

// Close ends the session on the server and releases its env. It is
// idempotent: closing a closed session is not an error.
func (s *Session) Close(ctx context.Context) error {
	return s.c.call(ctx, wire.MethodSessionClose, wire.CloseParams{Session: s.id}, nil, true)
}

// Resume returns the session's recorded events with a seq above afterSeq,
// in seq order, fetching page after page until there are no more; Live
// says whether the session can still be stepped. A closed session keeps
// its events. Pass LastSeq() to get exactly the events this handle missed.
func (s *Session) Resume(ctx context.Context, afterSeq int64) (wire.ResumeResult, error) {
	out := wire.ResumeResult{Session: s.id, LastSeq: afterSeq, Events: []gym.Event{}}
	for {
		var res wire.ResumeResult
		err := s.c.call(ctx, wire.MethodSessionResume, wire.ResumeParams{Session: s.id, AfterSeq: out.LastSeq, Limit: resumePage}, &res, true)
		if err != nil {
			return out, err
		}
		out.Live = res.Live
		out.Events = append(out.Events, res.Events...)
		if n := len(res.Events); n > 0 {
			out.LastSeq = res.Events[n-1].Seq
			s.observe(out.LastSeq)
		}
		if !res.More || len(res.Events) == 0 {
			return out, nil
		}
	}
}

// resumePage is the events asked for per session.resume call, small enough
// that a page of events with inline images stays under the read limit.
const resumePage = 1000

// nonce returns a short random string.
func nonce() string {
	var b [6]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

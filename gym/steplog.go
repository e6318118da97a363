package gym

import (
	"context"
	"fmt"
	"hash/maphash"
)

// StepReader is a Recorder that can read a recorded step back: the one
// recorded in session under stepID, and whether there is one. The store
// is one (store.Store.StepEvent). With one, a session keeps the last
// stepLogWhole answers and, of older step ids, only what tells a retry
// from a reuse; it answers the retry of an older step from the record.
// Without one, it keeps every answer it remembers.
type StepReader interface {
	StepEvent(ctx context.Context, session, stepID string) (*Event, bool, error)
}

const (
	// stepLogSize is how many step ids a session remembers: a retry of
	// one of them is answered from the record, its reuse for another
	// action refused (ErrStepIDReused).
	stepLogSize = 4096
	// stepLogWhole is how many of them keep their answer whole when the
	// Recorder is a StepReader: a client retries the steps it had in
	// flight when its connection dropped, almost always the last one.
	stepLogWhole = 4
)

// stepLog remembers a session's step ids. The newest keep their whole
// answer (whole); older ones only the action's fingerprint and whether it
// was refused (seen, keyed by a hash of the id: no pointers, so the
// garbage collector has nothing to trace in it, which matters with
// 10,000 sessions of thousands of steps).
type stepLog struct {
	keep       int // answers kept whole; 0 until the first put
	whole      map[string]*loggedStep
	wholeOrder []string
	seen       map[uint64]seenStep
	seenOrder  []uint64
}

type loggedStep struct {
	sum [32]byte
	res StepResult
	err error // a refused action's refusal: its retry is answered with it, not recorded again
}

type seenStep struct {
	sum     [32]byte
	refused bool
}

var stepIDSeed = maphash.MakeSeed()

func (l *stepLog) put(keep int, id string, s *loggedStep) {
	if l.whole == nil {
		l.keep, l.whole, l.seen = keep, map[string]*loggedStep{}, map[uint64]seenStep{}
	}
	if _, ok := l.whole[id]; ok { // a refused action's id, now taken by another action
		l.whole[id] = s
		return
	}
	l.whole[id] = s
	l.wholeOrder = append(l.wholeOrder, id)
	if len(l.wholeOrder) <= l.keep {
		return
	}
	old := l.wholeOrder[0]
	l.wholeOrder = l.wholeOrder[1:]
	ls := l.whole[old]
	delete(l.whole, old)
	h := maphash.String(stepIDSeed, old)
	l.seen[h] = seenStep{sum: ls.sum, refused: ls.err != nil}
	l.seenOrder = append(l.seenOrder, h)
	if len(l.seenOrder) > stepLogSize-l.keep {
		delete(l.seen, l.seenOrder[0])
		l.seenOrder = l.seenOrder[1:]
	}
}

// replay answers a step id the session has seen: ok is false when it has
// not (the step is new), or when it was refused and comes now with
// another action (a refused action does not use up its step id: only its
// retry, the same action, is answered again). s.mu is held.
func (s *Session) replay(ctx context.Context, stepID string, sum [32]byte, action Action) (res StepResult, err error, ok bool) {
	l := &s.steps
	if w := l.whole[stepID]; w != nil {
		switch {
		case w.err != nil && w.sum != sum:
			return StepResult{}, nil, false
		case w.sum != sum:
			return StepResult{}, fmt.Errorf("%w: %q", ErrStepIDReused, stepID), true
		case w.err != nil:
			return StepResult{}, w.err, true
		}
		r := w.res
		r.Replayed = true
		return r, nil, true
	}
	seen, found := l.seen[maphash.String(stepIDSeed, stepID)]
	if !found || seen.refused && seen.sum != sum {
		return StepResult{}, nil, false
	}
	if seen.sum != sum {
		return StepResult{}, fmt.Errorf("%w: %q", ErrStepIDReused, stepID), true
	}
	if seen.refused {
		// Refused again, as the check is the same; not recorded again.
		if refusal := s.checkAction(action); refusal != nil {
			return StepResult{}, refusal, true
		}
		return StepResult{}, nil, false
	}
	sr, _ := s.m.cfg.Recorder.(StepReader)
	if sr == nil {
		return StepResult{}, nil, false // not kept: the log holds every answer without a reader
	}
	ev, found, err := sr.StepEvent(ctx, s.ID, stepID)
	if err != nil {
		return StepResult{}, InfraFault("store", fmt.Errorf("reading back step %q: %w", stepID, err)), true
	}
	if !found {
		return StepResult{}, nil, false // another id with the same hash: a new step
	}
	return ev.StepResult(), nil, true
}

// stepLogKeep is how many answers a session keeps whole (see StepReader).
func (m *Manager) stepLogKeep() int {
	if _, ok := m.cfg.Recorder.(StepReader); ok {
		return stepLogWhole
	}
	return stepLogSize
}

// StepResult is the answer a recorded step event gives a retry of its
// step id (Replayed set): the event's public form (Public), as the step's
// own answer was. An image or file the store moved to a blob is a
// reference in it.
func (e *Event) StepResult() StepResult {
	pub := e.Public()
	res := StepResult{Session: pub.Session, Episode: pub.Episode, Step: pub.Step, StepID: pub.StepID, Seq: pub.Seq,
		Failure: pub.Failure, Replayed: true}
	res.Terminated, res.Truncated, res.Info = pub.Terminated, pub.Truncated, pub.Info
	if pub.Observation != nil {
		res.Observation = *pub.Observation
	}
	if pub.Reward != nil {
		res.Reward = *pub.Reward
	}
	return res
}

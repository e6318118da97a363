package rl

import (
	"sort"
	"sync"

	"github.com/nextstate-rl/nextstate/gym"
)

// TrajectoryKey names one episode of one session.
type TrajectoryKey struct {
	Session string
	Episode int
}

// Outcome is how an episode ended.
type Outcome struct {
	// Reward is the outcome reward as the verifier gave it (before Mix's
	// OutcomeMap): 1 or 0 for pass/fail, a fraction of tests passed, ...;
	// 0 for an episode that did not terminate (OutcomeOf).
	Reward float64
	// Terminated and Truncated are the last step's (gym's meanings).
	Terminated bool
	Truncated  bool
	// Failure labels an episode that ended on a failure; an infrastructure
	// failure masks the whole trajectory out of training.
	Failure *gym.Failure
}

// TrajectoryState is a complete trajectory's signal: its outcome and the
// result of every judge submitted for it, by step number.
type TrajectoryState struct {
	Key     TrajectoryKey
	Outcome Outcome
	// Results holds one JudgeResult per submitted step, sorted by step
	// number (a step submitted twice keeps its last result).
	Results []JudgeResult
}

// Result returns the judge result of step number step, if any.
func (s *TrajectoryState) Result(step int) (JudgeResult, bool) {
	i := sort.Search(len(s.Results), func(i int) bool { return s.Results[i].Ref.Step >= step })
	if i < len(s.Results) && s.Results[i].Ref.Step == step {
		return s.Results[i], true
	}
	return JudgeResult{}, false
}

// Tracker follows trajectories until they are complete: their outcome is in
// and every judge submitted for them has delivered its result (a verdict,
// or a reason such as a timeout, recorded as such). It then calls
// onComplete once, outside its lock, and forgets the trajectory.
//
// The server reports the outcome after it submitted the judge of the
// terminating step, so the last step is waited for. A result for a
// trajectory already completed starts no new one. Safe for concurrent use.
type Tracker struct {
	onComplete func(*TrajectoryState)

	mu    sync.Mutex
	open  map[TrajectoryKey]*tracked
	late  int
	known map[TrajectoryKey]bool // completed keys, to tell late results apart
	order []TrajectoryKey        // completed keys, oldest first, bounded
}

type tracked struct {
	pending int
	outcome *Outcome
	results map[int]JudgeResult // by step number
}

// maxRemembered bounds how many completed trajectories a Tracker
// remembers, to recognize late results.
const maxRemembered = 4096

// NewTracker returns a Tracker that hands complete trajectories to
// onComplete.
func NewTracker(onComplete func(*TrajectoryState)) *Tracker {
	if onComplete == nil {
		panic("rl: NewTracker needs an onComplete function")
	}
	return &Tracker{onComplete: onComplete, open: map[TrajectoryKey]*tracked{}, known: map[TrajectoryKey]bool{}}
}

func (t *Tracker) get(k TrajectoryKey) *tracked {
	tr := t.open[k]
	if tr == nil {
		tr = &tracked{results: map[int]JudgeResult{}}
		t.open[k] = tr
	}
	return tr
}

// Submitted records that a judge was submitted for a step.
func (t *Tracker) Submitted(ref StepRef) {
	k := TrajectoryKey{ref.Session, ref.Episode}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.known[k] {
		t.late++
		return
	}
	t.get(k).pending++
}

// Judged records a judge's result.
func (t *Tracker) Judged(res JudgeResult) {
	k := TrajectoryKey{res.Ref.Session, res.Ref.Episode}
	t.mu.Lock()
	tr := t.open[k]
	if tr == nil || tr.pending == 0 {
		t.late++
		t.mu.Unlock()
		return
	}
	tr.pending--
	tr.results[res.Ref.Step] = res
	st := t.completeLocked(k, tr)
	t.mu.Unlock()
	if st != nil {
		t.onComplete(st)
	}
}

// SetOutcome records how an episode ended. A second outcome replaces the
// first while the trajectory is still open.
func (t *Tracker) SetOutcome(k TrajectoryKey, o Outcome) {
	t.mu.Lock()
	if t.known[k] {
		t.late++
		t.mu.Unlock()
		return
	}
	tr := t.get(k)
	tr.outcome = &o
	st := t.completeLocked(k, tr)
	t.mu.Unlock()
	if st != nil {
		t.onComplete(st)
	}
}

// completeLocked returns the state of a complete trajectory and forgets it.
func (t *Tracker) completeLocked(k TrajectoryKey, tr *tracked) *TrajectoryState {
	if tr.outcome == nil || tr.pending > 0 {
		return nil
	}
	t.retireLocked(k)
	st := &TrajectoryState{Key: k, Outcome: *tr.outcome, Results: make([]JudgeResult, 0, len(tr.results))}
	for _, r := range tr.results {
		st.Results = append(st.Results, r)
	}
	sort.Slice(st.Results, func(i, j int) bool { return st.Results[i].Ref.Step < st.Results[j].Ref.Step })
	return st
}

// retireLocked forgets an open trajectory and remembers its key.
func (t *Tracker) retireLocked(k TrajectoryKey) {
	delete(t.open, k)
	t.known[k] = true
	t.order = append(t.order, k)
	if len(t.order) > maxRemembered {
		delete(t.known, t.order[0])
		t.order = t.order[1:]
	}
}

// Pending returns how many judges of a trajectory are still out and
// whether its outcome is in; open is false for a trajectory the Tracker
// does not hold (never seen, or complete already).
func (t *Tracker) Pending(k TrajectoryKey) (judges int, outcome bool, open bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	tr := t.open[k]
	if tr == nil {
		return 0, false, false
	}
	return tr.pending, tr.outcome != nil, true
}

// Open returns how many trajectories are not complete yet.
func (t *Tracker) Open() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.open)
}

// Late counts the submissions, results and outcomes that came after their
// trajectory was complete; they are ignored.
func (t *Tracker) Late() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.late
}

// Forget drops an open trajectory without completing it (a session that
// will never report an outcome) and returns whether it was open; what
// comes for it later counts as late.
func (t *Tracker) Forget(k TrajectoryKey) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, ok := t.open[k]
	if ok {
		t.retireLocked(k)
	}
	return ok
}

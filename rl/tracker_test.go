package rl

import (
	"testing"

	"github.com/nextstate-rl/nextstate/gym"
)

func judged(i int, reward float64) JudgeResult {
	v := &Verdict{Tally: Tally{Reward: reward, Valid: 1}}
	return JudgeResult{Ref: ref(i), Verdict: v}
}

func TestTrackerCompletesWhenAllIn(t *testing.T) {
	var got []*TrajectoryState
	tr := NewTracker(func(st *TrajectoryState) { got = append(got, st) })
	k := TrajectoryKey{"s1", 1}
	tr.Submitted(ref(1))
	tr.Submitted(ref(2))
	tr.Judged(judged(2, -1))
	tr.SetOutcome(k, Outcome{Reward: 1, Terminated: true})
	if len(got) != 0 {
		t.Fatal("complete with a judge still out")
	}
	if n, outcome, open := tr.Pending(k); n != 1 || !outcome || !open {
		t.Fatalf("Pending = %d, %v, %v; want 1, true, true", n, outcome, open)
	}
	tr.Judged(judged(1, 0.5))
	if len(got) != 1 {
		t.Fatalf("%d completions, want 1", len(got))
	}
	st := got[0]
	if st.Key != k || st.Outcome.Reward != 1 || len(st.Results) != 2 || st.Results[0].Ref.Step != 1 || st.Results[1].Ref.Step != 2 {
		t.Fatalf("state %+v", st)
	}
	if r, ok := st.Result(2); !ok || r.Reward() != -1 {
		t.Fatalf("Result(2) = %+v, %v", r, ok)
	}
	if _, ok := st.Result(3); ok {
		t.Fatal("Result(3) found")
	}
	if tr.Open() != 0 {
		t.Fatalf("Open = %d", tr.Open())
	}
	// Anything later is counted and ignored.
	tr.Judged(judged(1, 1))
	tr.SetOutcome(k, Outcome{Reward: 0})
	tr.Submitted(ref(3))
	if tr.Late() != 3 || len(got) != 1 || tr.Open() != 0 {
		t.Fatalf("late %d, completions %d, open %d", tr.Late(), len(got), tr.Open())
	}
}

func TestTrackerOutcomeLastAndUnjudged(t *testing.T) {
	var got []*TrajectoryState
	tr := NewTracker(func(st *TrajectoryState) { got = append(got, st) })
	tr.Submitted(ref(1))
	tr.Submitted(ref(2))
	tr.Judged(JudgeResult{Ref: ref(1), Reason: ReasonQueueFull})
	tr.Judged(JudgeResult{Ref: ref(2), Reason: ReasonTimeout, Verdict: &Verdict{TimedOut: true, Tally: Tally{Timeouts: 3}}})
	if len(got) != 0 {
		t.Fatal("complete before its outcome")
	}
	fail := &gym.Failure{Fault: gym.FaultInfra, Reason: "sandbox_died"}
	tr.SetOutcome(TrajectoryKey{"s1", 1}, Outcome{Truncated: true, Failure: fail})
	if len(got) != 1 || got[0].Outcome.Failure != fail || got[0].Results[0].Reason != ReasonQueueFull || got[0].Results[1].Reason != ReasonTimeout {
		t.Fatalf("completions %+v", got)
	}
	// A trajectory with no judges completes on its outcome.
	tr.SetOutcome(TrajectoryKey{"s2", 1}, Outcome{Reward: 0, Terminated: true})
	if len(got) != 2 || len(got[1].Results) != 0 {
		t.Fatalf("no judges: %+v", got)
	}
}

func TestTrackerForgetAndStrays(t *testing.T) {
	tr := NewTracker(func(*TrajectoryState) { t.Fatal("nothing should complete") })
	// A result nobody submitted is a stray.
	tr.Judged(judged(1, 1))
	if tr.Late() != 1 || tr.Open() != 0 {
		t.Fatalf("stray: late %d, open %d", tr.Late(), tr.Open())
	}
	tr.Submitted(ref(1))
	if !tr.Forget(TrajectoryKey{"s1", 1}) || tr.Forget(TrajectoryKey{"s1", 1}) || tr.Open() != 0 {
		t.Fatal("Forget")
	}
	tr.Judged(judged(1, 1))
	if tr.Late() != 2 {
		t.Fatalf("late %d after Forget", tr.Late())
	}
	if _, _, open := tr.Pending(TrajectoryKey{"nope", 1}); open {
		t.Fatal("unknown trajectory open")
	}
}

package rl

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nextstate-rl/nextstate/gym"
)

// collector gathers delivered results.
type collector struct {
	mu  sync.Mutex
	res []JudgeResult
	got chan struct{} // one send per result, buffered
}

func newCollector(n int) *collector { return &collector{got: make(chan struct{}, n)} }

func (c *collector) deliver(r JudgeResult) {
	c.mu.Lock()
	c.res = append(c.res, r)
	c.mu.Unlock()
	c.got <- struct{}{}
}

// wait waits for n results, failing the test after a generous deadline
// (a guard against a hang, not a timing assertion).
func (c *collector) wait(t *testing.T, n int) []JudgeResult {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for range n {
		select {
		case <-c.got:
		case <-deadline:
			t.Fatalf("waited for %d results, got %d", n, len(c.results()))
		}
	}
	return c.results()
}

func (c *collector) results() []JudgeResult {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]JudgeResult(nil), c.res...)
}

func ref(i int) StepRef {
	return StepRef{Session: "s1", Episode: 1, Step: i, StepID: fmt.Sprintf("st-%d", i), Run: "r", Env: "terminal-v1", Task: "t1"}
}

// byStepID indexes results, failing on a step delivered twice.
func byStepID(t *testing.T, rs []JudgeResult) map[string]JudgeResult {
	t.Helper()
	m := map[string]JudgeResult{}
	for _, r := range rs {
		if _, dup := m[r.Ref.StepID]; dup {
			t.Fatalf("step %s delivered twice", r.Ref.StepID)
		}
		m[r.Ref.StepID] = r
	}
	return m
}

func TestJudgerDeliversAndEvent(t *testing.T) {
	s := newScriptedJudge(t, nil)
	j := testJudge(t, s, nil)
	c := newCollector(8)
	g := NewJudger(j, JudgerConfig{Workers: 2}, c.deliver)
	g.Submit(ref(1), JudgeInput{Kind: KindTerminal, Action: "ACT_GOOD"})
	g.Submit(ref(2), JudgeInput{Kind: KindTerminal, Action: "ACT_BAD"})
	rs := byStepID(t, c.wait(t, 2))
	if err := g.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	good, bad := rs["st-1"], rs["st-2"]
	if !good.Judged() || good.Reward() != 1 || good.Hint() != "" || good.Source != "judge:prm" || good.Model != "judge-1" {
		t.Fatalf("good: %+v", good)
	}
	if !bad.Judged() || bad.Reward() != -1 || bad.Hint() != "Run ls -la first: the config file is hidden." {
		t.Fatalf("bad: %+v", bad)
	}
	// The event goes into gym.Manager.AddReward as it is.
	var recorded []gym.Event
	m := gym.NewManager(gym.Config{Recorder: gym.RecorderFunc(func(_ context.Context, ev *gym.Event) error {
		ev.Seq = int64(len(recorded) + 1)
		recorded = append(recorded, *ev)
		return nil
	})})
	t.Cleanup(func() { _ = m.Shutdown(context.Background()) })
	if _, err := m.AddReward(context.Background(), bad.Event()); err != nil {
		t.Fatal(err)
	}
	ev := recorded[0]
	if ev.Type != gym.EventReward || ev.Session != "s1" || ev.StepID != "st-2" || ev.Step != 2 || ev.Episode != 1 ||
		ev.Run != "r" || ev.Env != "terminal-v1" || ev.Task != "t1" || ev.Source != "judge:prm" || *ev.Reward != -1 {
		t.Fatalf("event %+v", ev)
	}
	if ev.Info["judged"] != true || ev.Info["hint"] != bad.Hint() || ev.Info["valid"] != 3 || ev.Info["model"] != "judge-1" {
		t.Fatalf("event info %+v", ev.Info)
	}
	if votes := ev.Info["votes"].([]map[string]any); len(votes) != 3 || votes[0]["score"] != -1 || votes[0]["valid"] != true {
		t.Fatalf("event votes %+v", votes)
	}
	if st := g.Stats(); st.Submitted != 2 || st.Finished != 2 || st.Dropped != 0 || st.Queued != 0 || st.InFlight != 0 {
		t.Fatalf("stats %+v", st)
	}
}

func TestJudgerReasons(t *testing.T) {
	s := newScriptedJudge(t, nil)
	// The hanging call gets a short per-call timeout; the others a long
	// one, so a loaded machine cannot time them out instead.
	short := testJudge(t, s, func(c *JudgeConfig) { c.Timeout = gym.Duration(20 * time.Millisecond); c.Retries = -1 })
	long := testJudge(t, s, func(c *JudgeConfig) { c.Timeout = gym.Duration(time.Minute); c.Retries = -1 })
	c := newCollector(8)
	gs := NewJudger(short, JudgerConfig{Source: "judge:test"}, c.deliver)
	gl := NewJudger(long, JudgerConfig{Source: "judge:test"}, c.deliver)
	gs.Submit(ref(1), JudgeInput{Action: "ACT_SLOW"})
	gl.Submit(ref(2), JudgeInput{Action: "ACT_NOBOX"})
	gl.Submit(ref(3), JudgeInput{Kind: KindGUI, Action: "ACT_GOOD", After: &gym.Blob{Ref: "sha256:00"}})
	rs := byStepID(t, c.wait(t, 3))
	for _, g := range []*Judger{gs, gl} {
		if err := g.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	slow, nobox, bad := rs["st-1"], rs["st-2"], rs["st-3"]
	if slow.Judged() || slow.Reason != ReasonTimeout || slow.Verdict == nil || !slow.Verdict.TimedOut || slow.Reward() != 0 {
		t.Fatalf("slow: %+v", slow)
	}
	ev := slow.Event()
	if *ev.Reward != 0 || ev.Info["judged"] != false || ev.Info["reason"] != "timeout" || ev.Info["timeouts"] != 3 || ev.Source != "judge:test" {
		t.Fatalf("timeout event %+v", ev)
	}
	if nobox.Reason != ReasonNoValidVote || nobox.Verdict.Invalid != 3 {
		t.Fatalf("nobox: %+v", nobox)
	}
	if bad.Reason != ReasonBadInput || bad.Verdict != nil || bad.Err == nil {
		t.Fatalf("bad input: %+v", bad)
	}
}

// blockingScorer hangs until its ctx ends, counting the calls under way.
type blockingScorer struct {
	started chan string
}

func (b *blockingScorer) Score(ctx context.Context, in JudgeInput) (Verdict, error) {
	b.started <- in.Action
	<-ctx.Done()
	return Verdict{}, ctx.Err()
}

func TestSubmitNeverBlocks(t *testing.T) {
	// One worker on a judge that never answers, a queue of two: the first
	// step is taken, two wait, the rest are answered queue_full at once.
	b := &blockingScorer{started: make(chan string, 16)}
	c := newCollector(16)
	g := NewJudger(b, JudgerConfig{Workers: 1, Queue: 2}, c.deliver)
	g.Submit(ref(1), JudgeInput{Action: "a1"})
	<-b.started // the worker holds step 1
	for i := 2; i <= 10; i++ {
		g.Submit(ref(i), JudgeInput{Action: fmt.Sprint("a", i)})
	}
	// Steps 4 to 10 were answered before their Submit returned.
	rs := byStepID(t, c.results())
	if len(rs) != 7 {
		t.Fatalf("%d results after the Submits, want 7 queue_full", len(rs))
	}
	for i := 4; i <= 10; i++ {
		if r := rs[fmt.Sprint("st-", i)]; r.Reason != ReasonQueueFull || r.Judged() || r.Event().Info["reason"] != "queue_full" {
			t.Fatalf("step %d: %+v", i, r)
		}
	}
	if st := g.Stats(); st.Dropped != 7 || st.Queued != 2 || st.InFlight != 1 {
		t.Fatalf("stats %+v", st)
	}
	// Close gives up at once: the held step and the queued ones are closed.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := g.Close(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Close = %v, want context.Canceled", err)
	}
	rs = byStepID(t, c.wait(t, 10))
	for i := 1; i <= 3; i++ {
		if r := rs[fmt.Sprint("st-", i)]; r.Reason != ReasonClosed {
			t.Fatalf("step %d after Close: %+v", i, r)
		}
	}
	// After Close, Submit answers closed; Close again returns.
	g.Submit(ref(11), JudgeInput{})
	if rs := c.wait(t, 1); rs[len(rs)-1].Reason != ReasonClosed || rs[len(rs)-1].Ref.StepID != "st-11" {
		t.Fatalf("submit after close: %+v", rs[len(rs)-1])
	}
	if err := g.Close(context.Background()); err != nil {
		t.Fatalf("second Close = %v", err)
	}
	if st := g.Stats(); st.Submitted != 11 || st.Finished != 11 {
		t.Fatalf("stats %+v: every submitted step gets one result", st)
	}
}

func TestSubmitNeverBlocksOnAHangingEndpoint(t *testing.T) {
	// The real Judge against an endpoint that never answers, with a long
	// per-call timeout: Submit still returns at once.
	s := newScriptedJudge(t, nil)
	j := testJudge(t, s, func(c *JudgeConfig) { c.Votes = 1 })
	c := newCollector(16)
	g := NewJudger(j, JudgerConfig{Workers: 1, Queue: 1}, c.deliver)
	g.Submit(ref(1), JudgeInput{Action: "ACT_SLOW"})
	for s.callCount() < 1 { // the worker is in the call
		time.Sleep(time.Millisecond)
	}
	for i := 2; i <= 6; i++ {
		g.Submit(ref(i), JudgeInput{Action: "ACT_SLOW"})
	}
	if n := len(c.results()); n != 4 {
		t.Fatalf("%d results before Close, want 4 queue_full (steps 3 to 6)", n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := g.Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Close = %v", err)
	}
	rs := byStepID(t, c.wait(t, 2))
	if rs["st-1"].Reason != ReasonClosed || rs["st-2"].Reason != ReasonClosed {
		t.Fatalf("after Close: %+v / %+v", rs["st-1"], rs["st-2"])
	}
}

func TestCloseDrains(t *testing.T) {
	s := newScriptedJudge(t, nil)
	j := testJudge(t, s, func(c *JudgeConfig) { c.Votes = 1 })
	c := newCollector(32)
	g := NewJudger(j, JudgerConfig{Workers: 2, Queue: 32}, c.deliver)
	for i := 1; i <= 20; i++ {
		g.Submit(ref(i), JudgeInput{Action: "ACT_GOOD"})
	}
	if err := g.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	rs := byStepID(t, c.results())
	if len(rs) != 20 {
		t.Fatalf("%d results after a draining Close, want 20", len(rs))
	}
	for id, r := range rs {
		if !r.Judged() || r.Reward() != 1 {
			t.Fatalf("%s: %+v", id, r)
		}
	}
}

type panickyScorer struct{}

func (panickyScorer) Score(context.Context, JudgeInput) (Verdict, error) { panic("boom") }

func TestJudgerConfinesPanics(t *testing.T) {
	c := newCollector(4)
	g := NewJudger(panickyScorer{}, JudgerConfig{Workers: 1}, c.deliver)
	g.Submit(ref(1), JudgeInput{})
	g.Submit(ref(2), JudgeInput{})
	rs := c.wait(t, 2)
	if err := g.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if r.Reason != ReasonPanic || r.Err == nil {
			t.Fatalf("%+v", r)
		}
	}
}

func TestJudgerWithTracker(t *testing.T) {
	s := newScriptedJudge(t, nil)
	// The hanging call gets a short per-call timeout, the others a long one
	// (a loaded machine cannot time them out); one tracker follows both.
	short := testJudge(t, s, func(c *JudgeConfig) { c.Votes = 1; c.Timeout = gym.Duration(20 * time.Millisecond); c.Retries = -1 })
	long := testJudge(t, s, func(c *JudgeConfig) { c.Votes = 1; c.Timeout = gym.Duration(time.Minute); c.Retries = -1 })
	done := make(chan *TrajectoryState, 1)
	tr := NewTracker(func(st *TrajectoryState) { done <- st })
	c := newCollector(8)
	g := NewJudger(long, JudgerConfig{Tracker: tr}, c.deliver)
	defer g.Close(context.Background())
	gs := NewJudger(short, JudgerConfig{Tracker: tr}, c.deliver)
	defer gs.Close(context.Background())
	g.Submit(ref(2), JudgeInput{Action: "ACT_BAD"})
	g.Submit(ref(1), JudgeInput{Action: "ACT_GOOD"})
	gs.Submit(ref(3), JudgeInput{Action: "ACT_SLOW"})
	tr.SetOutcome(TrajectoryKey{"s1", 1}, Outcome{Reward: 1, Terminated: true})
	var st *TrajectoryState
	select {
	case st = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the trajectory never completed")
	}
	if len(st.Results) != 3 || st.Results[0].Ref.Step != 1 || st.Results[1].Ref.Step != 2 || st.Results[2].Ref.Step != 3 {
		t.Fatalf("results %+v", st.Results)
	}
	if st.Results[0].Reward() != 1 || st.Results[1].Reward() != -1 || st.Results[2].Reason != ReasonTimeout {
		t.Fatalf("results %+v", st.Results)
	}
	if tr.Open() != 0 {
		t.Fatalf("%d trajectories still open", tr.Open())
	}
}

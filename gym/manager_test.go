package gym_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nextstate-rl/nextstate/gym"
	"github.com/nextstate-rl/nextstate/gym/gymtest"
)

func TestCreateErrors(t *testing.T) {
	m, _ := newManager(t, gym.Config{})
	ctx := t.Context()
	for _, tc := range []struct {
		req  gym.CreateRequest
		want error
		says string
	}{
		{gym.CreateRequest{}, gym.ErrBadRequest, `say which env`},
		{gym.CreateRequest{Env: "nope-v1"}, gym.ErrUnknownKind, "registered: echo-v1, guess-v1, gymtest-"},
		{gym.CreateRequest{TaskID: "no-such-task"}, gym.ErrUnknownTask, `"no-such-task"`},
		{gym.CreateRequest{Env: "echo-v1", TaskID: "guess-1-100"}, gym.ErrUnknownTask, `"guess-1-100"`},
		{gym.CreateRequest{Task: &gym.Task{Env: "echo-v1"}}, gym.ErrBadRequest, "no id"},
		{gym.CreateRequest{Env: "echo-v1", Task: &gym.Task{ID: "x", Env: "guess-v1"}}, gym.ErrBadRequest, "is for guess-v1, not echo-v1"},
	} {
		_, _, err := m.Create(ctx, tc.req)
		if !errors.Is(err, tc.want) || !strings.Contains(fmt.Sprint(err), tc.says) {
			t.Errorf("create %+v: got %v, want %v saying %q", tc.req, err, tc.want, tc.says)
		}
	}
	if m.Len() != 0 {
		t.Errorf("%d sessions live after failed creates", m.Len())
	}
}

func TestCreateResetFailureClosesWithReasonCreate(t *testing.T) {
	m, mem := newManager(t, gym.Config{})
	_, _, err := m.Create(t.Context(), gym.CreateRequest{Env: scriptName, Options: gym.Options{"fail_reset": true}})
	if f := gym.FailureOf(err); f == nil || f.Fault != gym.FaultInfra || f.Reason != "boot" {
		t.Fatalf("got %v, want the env's infra fault", err)
	}
	evs := mem.Events()
	if len(evs) != 2 || evs[0].Type != gym.EventSessionCreated || evs[1].Type != gym.EventSessionClosed ||
		evs[1].Reason != gym.CloseCreate || evs[1].Failure == nil || evs[1].Failure.Reason != "boot" {
		t.Errorf("events %+v, want session.created then session.closed (create, boot)", evs)
	}
	if m.Len() != 0 {
		t.Errorf("%d sessions live", m.Len())
	}
}

func TestCapacity(t *testing.T) {
	m, _ := newManager(t, gym.Config{MaxSessions: 2})
	a := create(t, m, gym.CreateRequest{Env: "echo-v1"})
	create(t, m, gym.CreateRequest{Env: "echo-v1"})
	done := make(chan error, 1)
	go func() {
		_, _, err := m.Create(context.Background(), gym.CreateRequest{Env: "echo-v1"})
		done <- err
	}()
	var err error
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Create over capacity hangs; it must fail at once")
	}
	var ce *gym.CapacityError
	if !errors.As(err, &ce) || ce.Max != 2 || ce.Limit != "sessions" || ce.RetryAfter <= 0 {
		t.Fatalf("got %v (%#v), want a *gym.CapacityError with max 2 and a retry hint", err, ce)
	}
	if !strings.Contains(err.Error(), "retry after") {
		t.Errorf("error %q gives no retry hint", err)
	}
	if err := a.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	create(t, m, gym.CreateRequest{Env: "echo-v1"})
}

func TestDrain(t *testing.T) {
	m, _ := newManager(t, gym.Config{})
	s := create(t, m, gym.CreateRequest{Env: "echo-v1"})
	m.Drain()
	if _, _, err := m.Create(t.Context(), gym.CreateRequest{Env: "echo-v1"}); !errors.Is(err, gym.ErrDraining) {
		t.Errorf("create while draining: got %v, want gym.ErrDraining", err)
	}
	step(t, s, "still served") // live sessions go on
}

func TestIdleReaper(t *testing.T) {
	clock := newTestClock()
	m, mem := newManager(t, gym.Config{IdleTTL: time.Minute, ReapInterval: 5 * time.Millisecond, Now: clock.now})
	entered, gate := make(chan struct{}), make(chan struct{})
	busy := create(t, m, gym.CreateRequest{Env: scriptName, Options: gym.Options{"entered": entered, "gate": gate}})
	stepped := make(chan gym.StepResult, 1)
	go func() {
		res, err := busy.Step(context.Background(), "", gym.TextAction("gate"))
		if err != nil {
			t.Error(err)
		}
		stepped <- res
	}()
	<-entered
	// idle is created after busy's request began, so when idle is reaped,
	// busy has been quiet for as long: only its request keeps it. The
	// clock stands still until both are past the idle TTL.
	idle := create(t, m, gym.CreateRequest{Env: "echo-v1"})
	clock.advance(2 * time.Minute)
	waitFor(t, "the idle session to be reaped", func() bool {
		_, err := m.Get(idle.ID)
		return errors.Is(err, gym.ErrUnknownSession)
	})
	ev, ok := closedEvent(mem, idle.ID)
	if !ok || ev.Reason != gym.CloseIdle {
		t.Errorf("idle session's close event %+v, want reason %q", ev, gym.CloseIdle)
	}
	if _, err := idle.Step(t.Context(), "", gym.TextAction("hi")); !errors.Is(err, gym.ErrSessionClosed) {
		t.Errorf("step on a reaped session: got %v, want gym.ErrSessionClosed", err)
	}
	if _, err := m.Get(busy.ID); err != nil {
		t.Fatalf("the reaper closed a session with a request in flight: %v", err)
	}
	close(gate)
	if res := <-stepped; res.Observation.Text() != "through" {
		t.Errorf("gated step: %+v", res)
	}
	clock.advance(2 * time.Minute)
	waitFor(t, "the formerly busy session to be reaped once quiet", func() bool { return m.Len() == 0 })
}

func TestReaperCollectsAbandonedSessions(t *testing.T) {
	before := runtime.NumGoroutine()
	clock := newTestClock()
	m, mem := newManager(t, gym.Config{IdleTTL: time.Minute, ReapInterval: 10 * time.Millisecond, Now: clock.now})
	const n = 1000
	var wg sync.WaitGroup
	ids := make(chan string, n)
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < n; i += 8 {
				s, _, err := m.Create(context.Background(), gym.CreateRequest{Env: "echo-v1", Seed: int64(i)})
				if err != nil {
					t.Error(err)
					return
				}
				if _, err := s.Step(context.Background(), fmt.Sprint("s", i), gym.TextAction("hi")); err != nil {
					t.Error(err)
				}
				ids <- s.ID // and abandon it
			}
		})
	}
	wg.Wait()
	close(ids)
	clock.advance(2 * time.Minute)
	waitFor(t, "every abandoned session to be reaped", func() bool { return m.Len() == 0 })
	for id := range ids {
		if ev, ok := closedEvent(mem, id); !ok || ev.Reason != gym.CloseIdle {
			t.Fatalf("session %s: close event %+v, want reason idle", id, ev)
		}
	}
	// The manager's own reaper is the only goroutine left: back to the
	// baseline plus one, and to the baseline after Shutdown.
	waitFor(t, "goroutines to return to the baseline", func() bool { return runtime.NumGoroutine() <= before+1 })
	if err := m.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the reaper to stop", func() bool { return runtime.NumGoroutine() <= before })
}

func TestMaxStepsTruncates(t *testing.T) {
	m, mem := newManager(t, gym.Config{})
	s := create(t, m, gym.CreateRequest{Task: &gym.Task{ID: "three", Env: "echo-v1", Limits: gym.Limits{MaxSteps: 3}}})
	for i := 1; i <= 3; i++ {
		res := step(t, s, "x")
		if want := i == 3; res.Truncated != want || res.Terminated {
			t.Fatalf("step %d: truncated %v terminated %v", i, res.Truncated, res.Terminated)
		}
		if i == 3 && (res.Info["truncated_by"] != "max_steps" || res.Failure != nil) {
			t.Errorf("step 3: info %v failure %v, want truncated_by=max_steps and no failure", res.Info, res.Failure)
		}
	}
	if _, err := s.Step(t.Context(), "", gym.TextAction("x")); !errors.Is(err, gym.ErrEpisodeOver) {
		t.Errorf("step 4: got %v, want gym.ErrEpisodeOver", err)
	}
	evs := mem.Session(s.ID)
	if last := evs[len(evs)-1]; last.Type != gym.EventStep || !last.Truncated || last.Info["truncated_by"] != "max_steps" {
		t.Errorf("last event %+v, want the truncated step", last)
	}
	// A terminating last step is terminated, not truncated.
	s = create(t, m, gym.CreateRequest{Task: &gym.Task{ID: "one", Env: "echo-v1", Limits: gym.Limits{MaxSteps: 1}}})
	if res := step(t, s, "/done"); !res.Terminated || res.Truncated {
		t.Errorf("terminating on the last allowed step: terminated %v truncated %v", res.Terminated, res.Truncated)
	}
}

func TestStepTimeoutIsTheAgentsFault(t *testing.T) {
	m, mem := newManager(t, gym.Config{})
	for _, tc := range []struct {
		limits gym.Limits
		reason string
	}{
		{gym.Limits{StepTimeout: gym.Duration(20 * time.Millisecond)}, "step_timeout"},
		{gym.Limits{EpisodeTimeout: gym.Duration(20 * time.Millisecond)}, "episode_timeout"},
	} {
		s := create(t, m, gym.CreateRequest{Task: &gym.Task{ID: "slow", Env: scriptName, Limits: tc.limits}})
		res := step(t, s, "block")
		want := gym.Failure{Fault: gym.FaultAgent, Reason: tc.reason}
		if res.Failure == nil || res.Failure.Fault != want.Fault || res.Failure.Reason != want.Reason {
			t.Fatalf("%s: failure %+v, want %+v", tc.reason, res.Failure, want)
		}
		if !res.Truncated || res.Terminated || res.Info["truncated_by"] != tc.reason {
			t.Errorf("%s: truncated %v terminated %v info %v", tc.reason, res.Truncated, res.Terminated, res.Info)
		}
		// The agent's timeout ends the episode, not the session.
		if _, err := s.Step(t.Context(), "", gym.TextAction("x")); !errors.Is(err, gym.ErrEpisodeOver) {
			t.Errorf("%s: next step got %v, want gym.ErrEpisodeOver", tc.reason, err)
		}
		if _, err := s.Reset(t.Context(), nil, 1, nil); err != nil {
			t.Errorf("%s: reset after a timeout: %v", tc.reason, err)
		}
		if tc.reason == "step_timeout" {
			step(t, s, "again")
		}
		if _, ok := closedEvent(mem, s.ID); ok {
			t.Errorf("%s: the session closed", tc.reason)
		}
	}
}

func TestAgentFaultKeepsSession(t *testing.T) {
	m, _ := newManager(t, gym.Config{})
	s := create(t, m, gym.CreateRequest{Env: scriptName})
	res := step(t, s, "agent")
	if res.Failure == nil || res.Failure.Fault != gym.FaultAgent || res.Failure.Reason != "bad_command" || !res.Truncated {
		t.Fatalf("got %+v", res)
	}
	if _, err := m.Get(s.ID); err != nil {
		t.Errorf("an agent fault closed the session: %v", err)
	}
}

func TestPanicFailsOnlyItsSession(t *testing.T) {
	m, mem := newManager(t, gym.Config{})
	bad := create(t, m, gym.CreateRequest{Env: scriptName})
	good := create(t, m, gym.CreateRequest{Env: scriptName})
	res := step(t, bad, "panic")
	if res.Failure == nil || res.Failure.Fault != gym.FaultInfra || res.Failure.Reason != "panic" ||
		!strings.Contains(res.Failure.Message, "scripted panic") || !res.Truncated {
		t.Fatalf("panicking step: %+v, want a truncated step with an infra failure naming the panic", res)
	}
	if _, err := m.Get(bad.ID); !errors.Is(err, gym.ErrUnknownSession) {
		t.Errorf("the panicking session is still live: %v", err)
	}
	if ev, ok := closedEvent(mem, bad.ID); !ok || ev.Reason != gym.CloseInfra || ev.Failure == nil || ev.Failure.Reason != "panic" {
		t.Errorf("close event %+v, want reason infra with the panic failure", ev)
	}
	if _, err := bad.Step(t.Context(), "", gym.TextAction("x")); !errors.Is(err, gym.ErrSessionClosed) {
		t.Errorf("step after the panic: got %v, want gym.ErrSessionClosed", err)
	}
	if res := step(t, good, "fine"); res.Observation.Text() != "fine" {
		t.Errorf("the other session: %+v", res)
	}
}

func TestInfraFaultClosesSession(t *testing.T) {
	m, mem := newManager(t, gym.Config{})
	s := create(t, m, gym.CreateRequest{Env: scriptName})
	res, err := s.Step(t.Context(), "die-1", gym.TextAction("infra"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Failure == nil || res.Failure.Fault != gym.FaultInfra || res.Failure.Reason != "sandbox_died" || !res.Truncated {
		t.Fatalf("got %+v", res)
	}
	if ev, ok := closedEvent(mem, s.ID); !ok || ev.Reason != gym.CloseInfra || ev.Failure == nil || ev.Failure.Reason != "sandbox_died" {
		t.Errorf("close event %+v, want reason infra, failure sandbox_died", ev)
	}
	evs := mem.Session(s.ID)
	if st := evs[len(evs)-2]; st.Type != gym.EventStep || st.Failure == nil || st.Failure.Fault != gym.FaultInfra {
		t.Errorf("the failed step is not recorded with its failure: %+v", st)
	}
}

func TestVerifier(t *testing.T) {
	m, mem := newManager(t, gym.Config{})
	s := create(t, m, gym.CreateRequest{Env: scriptName})
	res := step(t, s, "end")
	// The verifier's 0.75 replaces the env's own 0.25.
	if !res.Terminated || res.Reward != 0.75 || res.Info["reward_source"] != "verifier" {
		t.Fatalf("got %+v, want terminated with the verifier's reward", res)
	}
	if _, leaked := res.Info["verifier"]; leaked {
		t.Errorf("the agent's answer carries the verifier's details: %v", res.Info)
	}
	evs := mem.Session(s.ID)
	if last := evs[len(evs)-1]; last.Type != gym.EventStep || last.Reward == nil || *last.Reward != 0.75 {
		t.Errorf("recorded step %+v, want the verifier's reward", last)
	} else if v, _ := last.Info["verifier"].(gym.Info); v["checked"] != true {
		t.Errorf("recorded info %v lacks the verifier's info", last.Info)
	}

	// A verifier that fails leaves the outcome unknown: truncated, infra.
	s = create(t, m, gym.CreateRequest{Env: scriptName, Options: gym.Options{"verify_err": true}})
	res = step(t, s, "end")
	if res.Terminated || !res.Truncated || res.Failure == nil || res.Failure.Fault != gym.FaultInfra || res.Failure.Reason != "verifier" {
		t.Errorf("failing verifier: %+v, want truncated with an infra failure", res)
	}

	// A verifier that says the agent broke what it needs fails the
	// episode: terminated, reward 0, the agent's fault.
	s = create(t, m, gym.CreateRequest{Env: scriptName, Options: gym.Options{"verify_agent_err": true}})
	res = step(t, s, "end")
	if !res.Terminated || res.Truncated || res.Reward != 0 || res.Failure == nil || res.Failure.Fault != gym.FaultAgent ||
		res.Failure.Reason != "verifier_environment_broken" || res.Info["reward_source"] != "verifier" {
		t.Errorf("verifier blaming the agent: %+v, want terminated, reward 0, an agent failure", res)
	}
	evs = mem.Session(s.ID)
	if v, _ := evs[len(evs)-1].Info["verifier"].(gym.Info); v["reason"] != "verifier_environment_broken" {
		t.Errorf("recorded verifier info %v", evs[len(evs)-1].Info["verifier"])
	}
}

func TestGuessVerifier(t *testing.T) {
	m, mem := newManager(t, gym.Config{})
	task := &gym.Task{ID: "one", Env: "guess-v1", Data: []byte(`{"low":5,"high":5}`)}
	s := create(t, m, gym.CreateRequest{Task: task, Seed: 9})
	res := step(t, s, "5")
	if !res.Terminated || res.Reward != 1 || res.Info["reward_source"] != "verifier" {
		t.Fatalf("got %+v", res)
	}
	evs := mem.Session(s.ID)
	if v, _ := evs[len(evs)-1].Info["verifier"].(gym.Info); v["secret"] != 5 {
		t.Errorf("recorded info.verifier %v, want secret 5", evs[len(evs)-1].Info["verifier"])
	}
}

func TestRecorderFailureClosesSession(t *testing.T) {
	boom := errors.New("disk full")
	var mu sync.Mutex
	var closed []gym.Event
	var seq int64
	rec := gym.RecorderFunc(func(_ context.Context, ev *gym.Event) error {
		mu.Lock()
		defer mu.Unlock()
		if ev.Type == gym.EventStep && ev.Action.Text() == "fail" {
			return boom
		}
		seq++
		ev.Seq = seq
		if ev.Type == gym.EventSessionClosed {
			closed = append(closed, *ev)
		}
		return nil
	})
	m, _ := newManager(t, gym.Config{Recorder: rec})
	s := create(t, m, gym.CreateRequest{Env: "echo-v1"})
	step(t, s, "ok")
	_, err := s.Step(t.Context(), "id-1", gym.TextAction("fail"))
	if !errors.Is(err, boom) {
		t.Fatalf("got %v, want the recorder's error", err)
	}
	if f := gym.FailureOf(err); f.Fault != gym.FaultInfra || f.Reason != "store" {
		t.Errorf("failure %+v, want infra/store", f)
	}
	if _, err := s.Step(t.Context(), "id-1", gym.TextAction("fail")); !errors.Is(err, gym.ErrSessionClosed) {
		t.Errorf("retry after a failed record: got %v, want gym.ErrSessionClosed (the step was never acknowledged)", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(closed) != 1 || closed[0].Reason != gym.CloseInfra || closed[0].Failure == nil || closed[0].Failure.Reason != "store" {
		t.Errorf("close events %+v, want one with reason infra, failure store", closed)
	}
}

func TestAddReward(t *testing.T) {
	m, mem := newManager(t, gym.Config{})
	r := 0.5
	full := gym.Event{Session: "s_1", StepID: "st_1", Reward: &r, Source: "judge:prm"}
	for _, tc := range []struct {
		name string
		edit func(*gym.Event)
	}{
		{"session", func(e *gym.Event) { e.Session = "" }},
		{"step_id", func(e *gym.Event) { e.StepID = "" }},
		{"reward", func(e *gym.Event) { e.Reward = nil }},
		{"source", func(e *gym.Event) { e.Source = "" }},
	} {
		ev := full
		tc.edit(&ev)
		if _, err := m.AddReward(t.Context(), ev); !errors.Is(err, gym.ErrBadRequest) || !strings.Contains(err.Error(), tc.name) {
			t.Errorf("reward without %s: got %v, want gym.ErrBadRequest naming it", tc.name, err)
		}
	}
	seq, err := m.AddReward(t.Context(), full)
	if err != nil || seq == 0 {
		t.Fatalf("AddReward: %d, %v", seq, err)
	}
	evs := mem.Events()
	if len(evs) != 1 || evs[0].Type != gym.EventReward || evs[0].Seq != seq || evs[0].Time.IsZero() || *evs[0].Reward != 0.5 {
		t.Errorf("recorded %+v", evs)
	}
}

func TestShutdown(t *testing.T) {
	m, mem := newManager(t, gym.Config{})
	var ss []*gym.Session
	for range 3 {
		ss = append(ss, create(t, m, gym.CreateRequest{Env: "echo-v1"}))
	}
	if err := m.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	for _, s := range ss {
		if ev, ok := closedEvent(mem, s.ID); !ok || ev.Reason != gym.CloseShutdown {
			t.Errorf("session %s: close event %+v, want reason shutdown", s.ID, ev)
		}
		if _, err := s.Step(t.Context(), "", gym.TextAction("x")); !errors.Is(err, gym.ErrSessionClosed) {
			t.Errorf("step after shutdown: %v", err)
		}
	}
	if m.Len() != 0 {
		t.Errorf("%d sessions after shutdown", m.Len())
	}
	n := len(mem.Events())
	if err := m.Shutdown(t.Context()); err != nil {
		t.Errorf("second Shutdown: %v", err)
	}
	if len(mem.Events()) != n {
		t.Errorf("second Shutdown recorded more events")
	}
	if _, _, err := m.Create(t.Context(), gym.CreateRequest{Env: "echo-v1"}); !errors.Is(err, gym.ErrDraining) {
		t.Errorf("create after shutdown: got %v, want gym.ErrDraining", err)
	}
}

// A busy session must not keep Shutdown from closing the others, and it is
// closed itself once its request ends.
func TestShutdownPastDeadlineClosesEverySession(t *testing.T) {
	m, mem := newManager(t, gym.Config{})
	entered, gate := make(chan struct{}), make(chan struct{})
	busy := create(t, m, gym.CreateRequest{Env: scriptName, Options: gym.Options{"entered": entered, "gate": gate}})
	var idle []*gym.Session
	for range 8 {
		idle = append(idle, create(t, m, gym.CreateRequest{Env: "echo-v1"}))
	}
	stepped := make(chan error, 1)
	go func() {
		_, err := busy.Step(context.Background(), "", gym.TextAction("gate"))
		stepped <- err
	}()
	<-entered
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := m.Shutdown(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Shutdown with a busy session and a done ctx: got %v, want context.Canceled", err)
	}
	for _, s := range idle {
		waitFor(t, "idle session "+s.ID+" to close", func() bool {
			ev, ok := closedEvent(mem, s.ID)
			return ok && ev.Reason == gym.CloseShutdown
		})
	}
	close(gate)
	if err := <-stepped; err != nil {
		t.Errorf("the in-flight step: %v", err)
	}
	waitFor(t, "the busy session to close after its step", func() bool {
		ev, ok := closedEvent(mem, busy.ID)
		return ok && ev.Reason == gym.CloseShutdown
	})
}

func TestBadActionConsumesNoStep(t *testing.T) {
	m, mem := newManager(t, gym.Config{})
	s := create(t, m, gym.CreateRequest{Env: "echo-v1"})
	call := gym.Action{Parts: []gym.Part{{Type: gym.PartToolCall, ToolCall: &gym.ToolCall{Function: gym.FunctionCall{Name: "f", Arguments: "{}"}}}}}
	_, err := s.Step(t.Context(), "a", call)
	var ae *gym.ActionError
	var se *gym.SchemaError
	if !errors.Is(err, gym.ErrBadAction) || !errors.As(err, &ae) || !errors.As(err, &se) {
		t.Fatalf("got %v, want an *ActionError wrapping ErrBadAction and a *SchemaError", err)
	}
	if ae.Kind != "echo-v1" || len(se.Problems) != 1 || se.Problems[0] != `at /parts/0/type: got "tool_call", want "text"` {
		t.Errorf("kind %q problems %q", ae.Kind, se.Problems)
	}
	if _, err := s.Step(t.Context(), "b", gym.Action{}); !errors.Is(err, gym.ErrBadAction) {
		t.Errorf("no parts: got %v", err)
	}
	if res := step(t, s, "ok"); res.Step != 1 {
		t.Errorf("first valid step is step %d, want 1", res.Step)
	}
	var types []string
	for _, ev := range mem.Session(s.ID) {
		types = append(types, string(ev.Type))
	}
	if got := strings.Join(types, " "); got != "session.created reset step.refused step.refused step" {
		t.Errorf("events %q, want created, reset, the two refusals, one step", got)
	}
}

// A refused action is recorded (the refusal is a next state to train on)
// with its turn, numbered as the step it would have been; a retried step
// id is answered with the same refusal and not recorded again, and the id
// is not used up; at most
// MaxRefusedRecorded an episode are recorded, and a reset starts anew.
func TestRefusedActionRecorded(t *testing.T) {
	m, mem := newManager(t, gym.Config{})
	s := create(t, m, gym.CreateRequest{Env: "echo-v1"})
	ctx := t.Context()
	bad := gym.Action{Parts: []gym.Part{{Type: gym.PartToolCall, ToolCall: &gym.ToolCall{Function: gym.FunctionCall{Name: "f", Arguments: "{}"}}}}}
	turn := &gym.Turn{Response: "<tool_call>f</tool_call>", Model: "m"}
	step(t, s, "one")
	_, first := s.StepTurn(ctx, "r1", bad, turn)
	_, again := s.StepTurn(ctx, "r1", bad, turn)
	if !errors.Is(first, gym.ErrBadAction) || again == nil || again.Error() != first.Error() {
		t.Fatalf("refusal %v, its retry %v: want the same refusal", first, again)
	}
	var refused []gym.Event
	for _, ev := range mem.Session(s.ID) {
		if ev.Type == gym.EventRefused {
			refused = append(refused, ev)
		}
	}
	if len(refused) != 1 {
		t.Fatalf("%d step.refused events, want 1 (a retried step id is not recorded again)", len(refused))
	}
	ev := refused[0]
	if ev.Step != 2 || ev.StepID != "r1" || ev.Episode != 1 || ev.Turn == nil || ev.Turn.Response != turn.Response ||
		ev.Action == nil || ev.Observation != nil || ev.Failure == nil || ev.Failure.Fault != gym.FaultAgent ||
		ev.Failure.Reason != gym.RefusedReason || ev.Failure.Message != first.Error() {
		t.Errorf("step.refused event %+v (failure %+v)", ev, ev.Failure)
	}
	// The refused action's id is not used up: another action takes it.
	if res, err := s.Step(ctx, "r1", gym.TextAction("two")); err != nil || res.Step != 2 || res.Replayed {
		t.Errorf("a valid action under the refused one's step id: step %d replayed %v, %v; want step 2, run", res.Step, res.Replayed, err)
	}

	count := func() int {
		n := 0
		for _, ev := range mem.Session(s.ID) {
			if ev.Type == gym.EventRefused {
				n++
			}
		}
		return n
	}
	for i := range gym.MaxRefusedRecorded + 3 {
		if _, err := s.Step(ctx, "", bad); !errors.Is(err, gym.ErrBadAction) {
			t.Fatalf("refusal %d: %v", i, err)
		}
	}
	if n := count(); n != gym.MaxRefusedRecorded {
		t.Errorf("%d refusals recorded in one episode, want the cap, %d", n, gym.MaxRefusedRecorded)
	}
	if _, err := s.Reset(ctx, nil, 1, gym.Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Step(ctx, "", bad); !errors.Is(err, gym.ErrBadAction) {
		t.Fatal(err)
	}
	if n := count(); n != gym.MaxRefusedRecorded+1 {
		t.Errorf("%d refusals recorded after a reset and one more, want %d", n, gym.MaxRefusedRecorded+1)
	}
}

func TestEmptyTextActionIsValid(t *testing.T) {
	m, _ := newManager(t, gym.Config{})
	s := create(t, m, gym.CreateRequest{Env: "echo-v1"})
	res, err := s.Step(t.Context(), "", gym.TextAction(""))
	if err != nil {
		t.Fatalf("an empty command is a valid text action: %v", err)
	}
	if len(res.Observation.Parts) != 1 || res.Observation.Parts[0].Text != "" {
		t.Errorf("got %+v", res.Observation)
	}
}

func TestStepIDs(t *testing.T) {
	m, mem := newManager(t, gym.Config{})
	s := create(t, m, gym.CreateRequest{Env: "echo-v1"})
	ctx := t.Context()
	first, err := s.Step(ctx, "one", gym.TextAction("a"))
	if err != nil {
		t.Fatal(err)
	}
	again, err := s.Step(ctx, "one", gym.TextAction("a"))
	if err != nil || !again.Replayed || again.Step != first.Step || again.Seq != first.Seq {
		t.Fatalf("retry: %+v, %v", again, err)
	}
	if _, err := s.Step(ctx, "one", gym.TextAction("b")); !errors.Is(err, gym.ErrStepIDReused) {
		t.Errorf("reuse: got %v, want gym.ErrStepIDReused", err)
	}
	if res := step(t, s, "c"); res.Step != 2 {
		t.Errorf("step after a retry is %d, want 2", res.Step)
	}
	// A replay answers even after the episode ended.
	end, err := s.Step(ctx, "end", gym.TextAction("/done"))
	if err != nil || !end.Terminated {
		t.Fatal(end, err)
	}
	if again, err := s.Step(ctx, "end", gym.TextAction("/done")); err != nil || !again.Replayed || !again.Terminated {
		t.Errorf("retry of the ending step: %+v, %v", again, err)
	}
	if n := len(mem.Session(s.ID)); n != 5 {
		t.Errorf("%d events, want created, reset and 3 steps", n)
	}
}

func TestConcurrentStepsSerialize(t *testing.T) {
	m, _ := newManager(t, gym.Config{})
	s := create(t, m, gym.CreateRequest{Env: "echo-v1"})
	const workers, each = 8, 50
	var wg sync.WaitGroup
	var mu sync.Mutex
	seen := map[int]bool{}
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				res, err := s.Step(context.Background(), fmt.Sprintf("%d-%d", w, i), gym.TextAction("x"))
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				seen[res.Step] = true
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	for i := 1; i <= workers*each; i++ {
		if !seen[i] {
			t.Fatalf("step %d missing: %d distinct step numbers for %d steps", i, len(seen), workers*each)
		}
	}
}

func TestResetChecksKind(t *testing.T) {
	m, _ := newManager(t, gym.Config{})
	s := create(t, m, gym.CreateRequest{Env: "echo-v1"})
	if _, err := s.Reset(t.Context(), &gym.Task{ID: "g", Env: "guess-v1"}, 0, nil); !errors.Is(err, gym.ErrBadRequest) {
		t.Errorf("reset with another kind's task: got %v, want gym.ErrBadRequest", err)
	}
	rr, err := s.Reset(t.Context(), &gym.Task{ID: "e2", Env: "echo-v1", Instruction: "second"}, 0, nil)
	if err != nil || rr.Episode != 2 || rr.Task != "e2" || s.Task().ID != "e2" {
		t.Errorf("reset with a new task: %+v, %v", rr, err)
	}
}

// TestLabels records a session's labels on its session.created event and
// keeps the reserved prefix for nextstate.
func TestLabels(t *testing.T) {
	m, mem := newManager(t, gym.Config{})
	s := create(t, m, gym.CreateRequest{Env: "echo-v1", Labels: map[string]string{"policy": "qwen3-0.6b"}})
	if evs := mem.Session(s.ID); evs[0].Type != gym.EventSessionCreated || evs[0].Labels["policy"] != "qwen3-0.6b" {
		t.Errorf("created event %+v lacks the labels", evs[0])
	}
	_, _, err := m.Create(t.Context(), gym.CreateRequest{Env: "echo-v1", Labels: map[string]string{"nextstate.owner": "me"}})
	if !errors.Is(err, gym.ErrBadRequest) || !strings.Contains(err.Error(), "reserved") {
		t.Errorf("reserved label: %v, want a bad request naming the reserved prefix", err)
	}
}

// TestEmptyTextAndObservation: an empty text action ({"type":"text"}, as an
// empty command or pressing Enter) is valid, and an env's empty observation
// is answered as {"parts":[]}, never null.
func TestEmptyTextAndObservation(t *testing.T) {
	m, _ := newManager(t, gym.Config{})
	s := create(t, m, gym.CreateRequest{Env: "echo-v1"})
	var a gym.Action
	if err := json.Unmarshal([]byte(`{"parts":[{"type":"text"}]}`), &a); err != nil {
		t.Fatal(err)
	}
	res, err := s.Step(t.Context(), "", a)
	if err != nil {
		t.Fatalf("empty text action: %v", err)
	}
	b, _ := json.Marshal(res.Observation)
	if string(b) != `{"parts":[{"type":"text"}]}` {
		t.Errorf("echo of an empty text: %s", b)
	}
	s2 := create(t, m, gym.CreateRequest{Env: scriptName})
	res = step(t, s2, "end")
	if b, _ := json.Marshal(res); !strings.Contains(string(b), `"observation":{"parts":[`) {
		t.Errorf("an empty observation encodes as %s", b)
	}
}

// confKind is a kind that needs configuring, for TestConfigurer.
type confKind struct {
	mu          sync.Mutex
	configured  int
	shutdown    int
	failFirst   bool
	seenSetting string
}

func (k *confKind) Spec() gym.Spec {
	return gym.Spec{Name: "gymtest-conf-v1", Description: "needs Configure", ActionSchema: gym.PartsSchema(1, 1, gym.PartText),
		ObservationSchema: gym.PartsSchema(0, 1, gym.PartText)}
}

func (k *confKind) Configure(_ context.Context, s gym.Settings) (gym.Instance, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.configured++
	k.seenSetting = s["sandbox"]
	if k.failFirst && k.configured == 1 {
		return nil, errors.New("backend not ready")
	}
	return k, nil
}

func (k *confKind) Shutdown(context.Context) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.shutdown++
	return nil
}

func (k *confKind) New(context.Context) (gym.Env, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.configured == 0 || (k.failFirst && k.configured == 1) {
		return nil, errors.New("New before a successful Configure")
	}
	return &echoLike{}, nil
}

type echoLike struct{}

func (echoLike) Reset(context.Context, *gym.Task, int64, gym.Options) (gym.Observation, gym.Info, error) {
	return gym.TextObservation("hi"), nil, nil
}
func (echoLike) Step(_ context.Context, a gym.Action) (gym.Transition, error) {
	return gym.Transition{Observation: gym.TextObservation(a.Text())}, nil
}
func (echoLike) Close(context.Context) error { return nil }

var theConfKind = &confKind{failFirst: true}

func init() { gym.Register(theConfKind) }

// TestConfigurer: Configure runs once it succeeds (a failure is an infra
// error and is retried), with the manager's settings; Shutdown runs once.
func TestConfigurer(t *testing.T) {
	k := theConfKind
	k.mu.Lock() // the kind is registered once: its counts start over with each run (-count)
	k.configured, k.shutdown, k.seenSetting = 0, 0, ""
	k.mu.Unlock()
	m := gym.NewManager(gym.Config{Settings: gym.Settings{"sandbox": "bwrap"}})
	_, _, err := m.Create(t.Context(), gym.CreateRequest{Env: "gymtest-conf-v1"})
	if f := gym.FailureOf(err); f == nil || f.Fault != gym.FaultInfra || !strings.Contains(err.Error(), "backend not ready") {
		t.Fatalf("first create: %v, want an infra failure from Configure", err)
	}
	for range 3 {
		if _, _, err := m.Create(t.Context(), gym.CreateRequest{Env: "gymtest-conf-v1"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	m.Shutdown(t.Context())
	if k.configured != 2 || k.shutdown != 1 || k.seenSetting != "bwrap" {
		t.Errorf("configured %d times, shut down %d times, setting %q; want 2, 1, bwrap", k.configured, k.shutdown, k.seenSetting)
	}
}

// perManagerKind is a kind whose Instances keep the settings they were
// made with, for TestConfigurerPerManager. Its own New is never called by
// a Manager.
type perManagerKind struct{}

func (perManagerKind) Spec() gym.Spec {
	return gym.Spec{Name: "gymtest-conf-each-v1", Description: "an Instance per Manager",
		ActionSchema: gym.PartsSchema(1, 1, gym.PartText), ObservationSchema: gym.PartsSchema(0, 1, gym.PartText)}
}

func (perManagerKind) New(context.Context) (gym.Env, error) {
	return nil, errors.New("the registered kind made an env: the Manager did not ask its Instance")
}

func (perManagerKind) Configure(_ context.Context, s gym.Settings) (gym.Instance, error) {
	return &perManagerInstance{setting: s["sandbox"]}, nil
}

// perManagerInstance is one Manager's perManagerKind: its envs' reset
// observation is the setting it was configured with.
type perManagerInstance struct {
	setting  string
	mu       sync.Mutex
	shutdown int
}

func (i *perManagerInstance) New(context.Context) (gym.Env, error) { return settingEnv{i.setting}, nil }

func (i *perManagerInstance) Shutdown(context.Context) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.shutdown++
	return nil
}

func (i *perManagerInstance) shutdowns() int {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.shutdown
}

// settingEnv answers its reset with the setting its Instance was made with.
type settingEnv struct{ setting string }

func (e settingEnv) Reset(context.Context, *gym.Task, int64, gym.Options) (gym.Observation, gym.Info, error) {
	return gym.TextObservation(e.setting), nil, nil
}
func (settingEnv) Step(_ context.Context, a gym.Action) (gym.Transition, error) {
	return gym.Transition{Observation: gym.TextObservation(a.Text()), Terminated: true}, nil
}
func (settingEnv) Close(context.Context) error { return nil }

func init() { gym.Register(perManagerKind{}) }

// TestConfigurerPerManager: two Managers of one process configure a kind
// each with their own settings; each Manager's envs come from its own
// Instance, and each Manager's Shutdown shuts down its own only.
func TestConfigurerPerManager(t *testing.T) {
	const kind = "gymtest-conf-each-v1"
	ctx := t.Context()
	m1 := gym.NewManager(gym.Config{Settings: gym.Settings{"sandbox": "one"}})
	m2 := gym.NewManager(gym.Config{Settings: gym.Settings{"sandbox": "two"}})
	defer m2.Shutdown(ctx)
	if m1.Instance(kind) != nil {
		t.Error("an Instance before the kind's first session")
	}
	opened := func(m *gym.Manager, want string) *perManagerInstance {
		t.Helper()
		_, res, err := m.Create(ctx, gym.CreateRequest{Env: kind})
		if err != nil {
			t.Fatal(err)
		}
		if got := res.Observation.Text(); got != want {
			t.Errorf("a session's env sees setting %q, want %q, its Manager's", got, want)
		}
		inst, ok := m.Instance(kind).(*perManagerInstance)
		if !ok || inst.setting != want {
			t.Fatalf("the Manager's Instance is %#v, want one configured with %q", m.Instance(kind), want)
		}
		return inst
	}
	i1, i2 := opened(m1, "one"), opened(m2, "two")
	if again := opened(m1, "one"); again != i1 {
		t.Error("a Manager configured the kind again for its second session")
	}
	if _, _, err := m1.Create(ctx, gym.CreateRequest{Env: "echo-v1"}); err != nil {
		t.Fatal(err)
	}
	if m1.Instance("echo-v1") != nil || m1.Instance("no-such-v1") != nil {
		t.Error("an Instance of a kind that needs no configuring, or of no kind")
	}

	if err := m1.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if i1.shutdowns() != 1 || i2.shutdowns() != 0 {
		t.Fatalf("after the first Manager's Shutdown: its Instance shut down %d times, the other's %d; want 1 and 0",
			i1.shutdowns(), i2.shutdowns())
	}
	if m1.Instance(kind) != nil {
		t.Error("a shut-down Manager still holds an Instance")
	}
	if got := opened(m2, "two"); got != i2 {
		t.Error("the second Manager lost its Instance when the first shut down")
	}
	if err := m2.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	m1.Shutdown(ctx)
	if i1.shutdowns() != 1 || i2.shutdowns() != 1 {
		t.Errorf("after both Shutdowns: Instances shut down %d and %d times, want once each", i1.shutdowns(), i2.shutdowns())
	}
}

// TestStepLogOlderIDs: a retry of a step id older than the answers a
// session keeps whole is answered as the step was, from the record when
// the Recorder reads steps back and from memory when it does not; reusing
// it for another action is refused; an old refused id is refused again
// without a second record, and is free for another action.
func TestStepLogOlderIDs(t *testing.T) {
	for _, tc := range []struct {
		name   string
		reader bool
	}{{"reader", true}, {"no-reader", false}} {
		t.Run(tc.name, func(t *testing.T) {
			mem := &gymtest.Memory{}
			var rec gym.Recorder = mem
			if !tc.reader {
				rec = gym.RecorderFunc(mem.Append) // no StepEvent
			}
			m, _ := newManager(t, gym.Config{Recorder: rec})
			s := create(t, m, gym.CreateRequest{Env: "echo-v1"})
			ctx := t.Context()
			_, refused := s.Step(ctx, "bad", gym.Action{})
			var ae *gym.ActionError
			if !errors.As(refused, &ae) {
				t.Fatalf("an empty action: %v, want an ActionError", refused)
			}
			answers := map[string]gym.StepResult{}
			for i := range 20 {
				id := fmt.Sprint("s", i)
				res, err := s.Step(ctx, id, gym.TextAction(id))
				if err != nil {
					t.Fatal(err)
				}
				answers[id] = res
			}
			recorded := len(mem.Session(s.ID))
			for _, id := range []string{"s0", "s10", "s19"} {
				again, err := s.Step(ctx, id, gym.TextAction(id))
				want := answers[id]
				if err != nil || !again.Replayed || again.Seq != want.Seq || again.Step != want.Step ||
					again.Observation.Text() != want.Observation.Text() || again.StepID != id {
					t.Errorf("retry of %s: %+v, %v; want the answer %+v replayed", id, again, err, want)
				}
				if _, err := s.Step(ctx, id, gym.TextAction("other")); !errors.Is(err, gym.ErrStepIDReused) {
					t.Errorf("reuse of %s: %v, want gym.ErrStepIDReused", id, err)
				}
			}
			if _, err := s.Step(ctx, "bad", gym.Action{}); err == nil || err.Error() != refused.Error() {
				t.Errorf("retry of the refused step: %v, want %v", err, refused)
			}
			if n := len(mem.Session(s.ID)); n != recorded {
				t.Errorf("%d events after the retries, want %d: nothing recorded again", n, recorded)
			}
			if res, err := s.Step(ctx, "bad", gym.TextAction("good")); err != nil || res.Replayed || res.Step != 21 {
				t.Errorf("a valid action under the old refused id: %+v, %v; want step 21, run", res, err)
			}
		})
	}
}

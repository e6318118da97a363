package gymtest_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/nextstate-rl/nextstate/gym"
	"github.com/nextstate-rl/nextstate/gym/gymtest"
)

// kind is a configurable test kind; each flaw breaks one rule CheckKind
// enforces.
type kind struct {
	name  string
	spec  func(*gym.Spec)
	reset func(e *env) gym.Observation
	step  func(e *env, a gym.Action) gym.Transition
}

func (k kind) Spec() gym.Spec {
	s := gym.Spec{
		Name:              k.name,
		Description:       "a gymtest test kind",
		ActionSchema:      gym.PartsSchema(1, 1, gym.PartToolCall),
		ObservationSchema: gym.PartsSchema(1, 0, gym.PartText),
		Tasks:             []gym.Task{{ID: k.name + "-task", Instruction: "call tools"}},
	}
	if k.spec != nil {
		k.spec(&s)
	}
	return s
}

func (k kind) New(context.Context) (gym.Env, error) { return &env{k: k}, nil }

type env struct {
	k    kind
	n    int
	seed int64
	eps  int // episodes begun; never reset
}

func (e *env) Reset(_ context.Context, _ *gym.Task, seed int64, _ gym.Options) (gym.Observation, gym.Info, error) {
	e.n, e.seed = 0, seed
	if e.k.reset != nil {
		return e.k.reset(e), nil, nil
	}
	return gym.TextObservation(fmt.Sprintf("seed %d", seed)), nil, nil
}

func (e *env) Step(_ context.Context, a gym.Action) (gym.Transition, error) {
	e.n++
	if e.k.step != nil {
		return e.k.step(e, a), nil
	}
	return gym.Transition{Observation: gym.TextObservation(fmt.Sprintf("%d: %s", e.n, a.Parts[0].ToolCall.Function.Name)),
		Reward: float64(e.n), Terminated: e.n == 3}, nil
}

func (e *env) Close(context.Context) error { return nil }

var kinds = []kind{
	{name: "gymtest-good-v1"},
	{name: "gymtest-sloppy-v1", spec: func(s *gym.Spec) {
		s.Description = ""
		s.Tasks = append(s.Tasks, gym.Task{ID: "other", Env: "echo-v7"}, gym.Task{ID: "gymtest-sloppy-v1-task"})
	}},
	{name: "gymtest-noschema-v1", spec: func(s *gym.Spec) { s.ObservationSchema = nil }},
	{name: "gymtest-random-v1", step: func(e *env, a gym.Action) gym.Transition {
		return gym.Transition{Observation: gym.TextObservation(fmt.Sprint(rand.Int64()))}
	}},
	{name: "gymtest-sticky-v1", reset: func(e *env) gym.Observation {
		// Shows state that outlives the episode.
		e.eps++
		return gym.TextObservation(fmt.Sprintf("episode %d", e.eps))
	}},
	{name: "gymtest-badobs-v1", step: func(e *env, a gym.Action) gym.Transition {
		return gym.Transition{Observation: gym.Observation{Parts: a.Parts}}
	}},
}

func init() {
	for _, k := range kinds {
		gym.Register(k)
	}
}

// recorder is a testing.TB that keeps failures instead of reporting them.
type recorder struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	runtime.Goexit()
}

func (r *recorder) Failed() bool { return len(r.errs) > 0 }

// check runs CheckKind on name and returns what it reported.
func check(t *testing.T, name string, cases ...gymtest.Case) []string {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		gymtest.CheckKind(r, name, cases...)
	}()
	<-done
	return r.errs
}

func TestCheckKindPassesGoodKind(t *testing.T) {
	gymtest.CheckKind(t, "gymtest-good-v1")
}

func TestCheckKindFindsFlaws(t *testing.T) {
	for _, tc := range []struct {
		kind string
		want []string
	}{
		{"gymtest-sloppy-v1", []string{"no description", `built-in task "other" is for "echo-v7"`,
			`task id "gymtest-sloppy-v1-task" appears twice`}},
		{"gymtest-noschema-v1", []string{"no observation schema"}},
		{"gymtest-random-v1", []string{"determinism: step 1 differs between two sessions"}},
		{"gymtest-sticky-v1", []string{"a reset with the same seed on the same session differs"}},
		{"gymtest-badobs-v1", []string{"step 1: observation", "at /parts/0/type"}},
		{"gymtest-no-such-v1", []string{`unknown env kind "gymtest-no-such-v1"`}},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			errs := check(t, tc.kind)
			all := strings.Join(errs, "\n")
			for _, w := range tc.want {
				if !strings.Contains(all, w) {
					t.Errorf("CheckKind did not report %q; it reported:\n%s", w, all)
				}
			}
		})
	}
}

func TestCheckKindCases(t *testing.T) {
	call := func(name string) gym.Action {
		return gym.Action{Parts: []gym.Part{{Type: gym.PartToolCall, ToolCall: &gym.ToolCall{
			Function: gym.FunctionCall{Name: name, Arguments: "{}"}}}}}
	}
	task := &gym.Task{ID: "inline", Instruction: "call f"}
	gymtest.CheckKind(t, "gymtest-good-v1",
		gymtest.Case{Task: task, Seed: 5, Actions: []gym.Action{call("f"), call("g"), call("h"), call("never sent")}},
		gymtest.Case{Task: task, Seed: 6, Actions: []gym.Action{call("f")}})

	// An action the schema rejects is the case's mistake, and said so.
	errs := check(t, "gymtest-good-v1", gymtest.Case{Task: task, Actions: []gym.Action{gym.TextAction("hi")}})
	if all := strings.Join(errs, "\n"); !strings.Contains(all, "step 1") || !strings.Contains(all, "does not match the schema") {
		t.Errorf("a case with an invalid action: got\n%s", all)
	}
	if errs := check(t, "gymtest-good-v1", gymtest.Case{Task: task}); len(errs) == 0 || !strings.Contains(errs[0], "no actions") {
		t.Errorf("a case without actions: got %q", errs)
	}
}

func TestSampleActions(t *testing.T) {
	for _, types := range [][]gym.PartType{{gym.PartText}, {gym.PartToolCall}, {gym.PartToolResult},
		{gym.PartGUIAction}, {gym.PartImage}, {gym.PartFile}, nil} {
		s, err := gym.CompileSchema(gym.PartsSchema(2, 4, types...))
		if err != nil {
			t.Fatal(err)
		}
		as := gymtest.SampleActions(s)
		if len(as) == 0 {
			t.Errorf("types %v: no sample actions", types)
		}
		for _, a := range as {
			if len(a.Parts) != 2 || (types != nil && a.Parts[0].Type != types[0]) {
				t.Errorf("types %v: sample %+v", types, a)
			}
		}
	}
}

func TestMemory(t *testing.T) {
	var m gymtest.Memory
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() {
			m.Append(context.Background(), &gym.Event{Type: gym.EventStep, Session: fmt.Sprint(i % 2)})
		})
	}
	wg.Wait()
	evs := m.Events()
	if len(evs) != 50 {
		t.Fatalf("%d events", len(evs))
	}
	for i, ev := range evs {
		if ev.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d", i, ev.Seq)
		}
	}
	if n := len(m.Session("0")); n != 25 {
		t.Errorf("session 0 has %d events, want 25", n)
	}
}

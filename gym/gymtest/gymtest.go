// Package gymtest checks that an env kind keeps the gym's contract, as
// Gymnasium's check_env and check_step_determinism do for Python envs. Every
// env kind's tests call CheckKind once with the kind's name, after the
// kind's package has registered it:
//
//	func TestConformance(t *testing.T) {
//		gymtest.CheckKind(t, "guess-v1") // built-in tasks, seed 1, generated actions
//	}
//
// or with cases that drive the kind through the states worth checking:
//
//	task := &gym.Task{ID: "t", Env: "terminal-v1", Instruction: "make a file", Data: data}
//	gymtest.CheckKind(t, "terminal-v1", gymtest.Case{Task: task, Seed: 7,
//		Actions: []gym.Action{gym.TextAction("touch f"), gym.TextAction("ls")}})
//
// For every case CheckKind runs real Sessions on a private gym.Manager that
// records into a Memory (CheckKindSettings gives that Manager the kind's
// settings), and reports every broken rule with t.Errorf (or t.Fatalf where
// going on makes no sense):
//
//   - the Spec is well formed: its name is the kind's and carries a version
//     ("name-vN"), it has a description, both schemas are present and
//     compile, limits are not negative, and the built-in tasks have unique
//     ids, belong to the kind and validate;
//   - reset and every step return observations that match the
//     ObservationSchema;
//   - determinism: a second fresh session with the same task, seed and
//     actions sees the same observations, rewards and terminated/truncated
//     flags, and so does the first session after a reset with the same seed;
//   - ordering: stepping an episode that has ended is gym.ErrEpisodeOver
//     (the case's episode, or one cut off by a one-step limit), a reset
//     starts the next episode with a higher episode number and steps
//     counted from 1 again;
//   - bad actions (a part type the kind does not accept, an empty parts
//     list where the schema wants a part, an unknown part type, a part
//     whose payload does not match its type) are errors matching
//     gym.ErrBadAction and consume no step;
//   - step ids: a retried step id is answered with Replayed set and the
//     same result, without running the action or advancing the step count;
//     the same id with a different action is gym.ErrStepIDReused;
//   - Close is idempotent, and stepping or resetting a closed session is
//     gym.ErrSessionClosed or gym.ErrUnknownSession;
//   - events: each session's record is session.created, reset, steps (and
//     further resets and rewards), session.closed, with increasing seqs,
//     one step event per step actually run, numbered from 1 in each episode.
//
// Steps after an episode ends are not sent: a case's remaining actions are
// dropped once the episode terminates or is truncated. With no cases,
// CheckKind uses each built-in task (or, if the kind has none, an empty task)
// with seed 1 and two valid actions generated from the action schema;
// a kind whose schema accepts none of the generated actions must pass cases.
//
// CheckKind does not check what a kind's observations mean; the kind's own
// tests do that.
package gymtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nextstate-rl/nextstate/gym"
)

// Case is one episode for CheckKind to run: Task (its Env may be left empty)
// reset with Seed, then Actions in order until the episode ends.
type Case struct {
	Task    *gym.Task
	Seed    int64
	Actions []gym.Action
}

// Memory is a gym.Recorder that keeps every event, for tests. It numbers
// events from 1 in the order they arrive. It reads steps back
// (gym.StepReader), as the store does. The zero value is ready to use, and
// it is safe for concurrent use.
type Memory struct {
	mu     sync.Mutex
	events []gym.Event
}

// Append assigns ev.Seq and keeps a copy of ev.
func (m *Memory) Append(_ context.Context, ev *gym.Event) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	ev.Seq = int64(len(m.events) + 1)
	m.events = append(m.events, *ev)
	return nil
}

// StepEvent returns the latest step event of session recorded under
// stepID, as the store's does.
func (m *Memory) StepEvent(_ context.Context, session, stepID string) (*gym.Event, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := len(m.events) - 1; i >= 0; i-- {
		if ev := m.events[i]; ev.Type == gym.EventStep && ev.Session == session && ev.StepID == stepID {
			return &ev, true, nil
		}
	}
	return nil, false, nil
}

// Events returns the events recorded so far, in order.
func (m *Memory) Events() []gym.Event {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]gym.Event(nil), m.events...)
}

// Session returns the events of one session, in order.
func (m *Memory) Session(id string) []gym.Event {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []gym.Event
	for _, ev := range m.events {
		if ev.Session == id {
			out = append(out, ev)
		}
	}
	return out
}

// CheckKind runs the conformance checks on a registered kind; see the
// package doc for what it checks.
func CheckKind(t testing.TB, kind string, cases ...Case) {
	t.Helper()
	CheckKindSettings(t, kind, nil, cases...)
}

// CheckKindSettings is CheckKind on Managers that configure the kind with
// settings (gym.Config.Settings), for a kind whose checks need one: a web
// page's clock far beyond the checks' work, say.
func CheckKindSettings(t testing.TB, kind string, settings gym.Settings, cases ...Case) {
	t.Helper()
	spec, action, observation, ok := checkSpec(t, kind)
	if !ok {
		return
	}
	if len(cases) == 0 {
		actions := SampleActions(action)
		if len(actions) == 0 {
			t.Fatalf("gymtest: %s: none of the generated actions matches the action schema; pass Cases with valid actions", kind)
		}
		tasks := spec.Tasks
		if len(tasks) == 0 {
			tasks = []gym.Task{{ID: kind + "-gymtest", Env: kind}}
		}
		for i := range tasks {
			cases = append(cases, Case{Task: &tasks[i], Seed: 1, Actions: actions})
		}
	}
	bad := badActions(action)
	for i, c := range cases {
		ck := &checker{t: t, kind: kind, settings: settings, observation: observation, bad: bad}
		ck.run(i, c)
	}
}

// checkSpec checks the kind's Spec and compiles its schemas.
func checkSpec(t testing.TB, kind string) (gym.Spec, *gym.Schema, *gym.Schema, bool) {
	t.Helper()
	spec, err := gym.Lookup(kind)
	if err != nil {
		t.Fatalf("gymtest: %v (import the kind's package for its side effect)", err)
	}
	ok := true
	fail := func(format string, args ...any) {
		t.Helper()
		ok = false
		t.Errorf("gymtest: %s: spec: "+format, append([]any{kind}, args...)...)
	}
	if spec.Name != kind {
		fail("registered as %q but Spec().Name is %q", kind, spec.Name)
	}
	if _, _, err := gym.ParseKindName(spec.Name); err != nil {
		fail("%v", err)
	}
	if strings.TrimSpace(spec.Description) == "" {
		fail("no description: env.describe shows it to clients")
	}
	var action, observation *gym.Schema
	for _, s := range []struct {
		name string
		doc  json.RawMessage
		out  **gym.Schema
	}{{"action schema", spec.ActionSchema, &action}, {"observation schema", spec.ObservationSchema, &observation}} {
		if len(s.doc) == 0 {
			fail("no %s (build one with gym.PartsSchema)", s.name)
			continue
		}
		c, err := gym.CompileSchema(s.doc)
		if err != nil {
			fail("%s does not compile: %v", s.name, err)
			continue
		}
		*s.out = c
	}
	if l := spec.Limits; l.MaxSteps < 0 || l.StepTimeout < 0 || l.EpisodeTimeout < 0 {
		fail("negative limits %+v", l)
	}
	seen := map[string]bool{}
	for i := range spec.Tasks {
		task := spec.Tasks[i]
		if seen[task.ID] {
			fail("built-in task id %q appears twice", task.ID)
		}
		seen[task.ID] = true
		if task.Env != "" && task.Env != kind {
			fail("built-in task %q is for %q", task.ID, task.Env)
		}
		task.Env = kind
		if err := task.Validate(); err != nil {
			fail("built-in task: %v", err)
		}
	}
	return spec, action, observation, ok
}

// SampleActions returns up to two different actions that the compiled
// action schema accepts, built from one sample part of each part type:
// text "1" and "hello", a tool call, a tool result, a GUI "wait", a small
// image and a file, each alone or repeated to meet a minimum of parts.
func SampleActions(schema *gym.Schema) []gym.Action {
	var out []gym.Action
	for _, p := range sampleParts() {
		for n := 1; n <= 4 && len(out) < 2; n++ {
			a := gym.Action{Parts: make([]gym.Part, n)}
			for i := range a.Parts {
				a.Parts[i] = p
			}
			if validAction(schema, a) == nil {
				out = append(out, a)
				break
			}
		}
	}
	return out
}

func sampleParts() []gym.Part {
	png := []byte("\x89PNG\r\n\x1a\n")
	return []gym.Part{
		gym.TextPart("1"),
		gym.TextPart("hello"),
		{Type: gym.PartToolCall, ToolCall: &gym.ToolCall{ID: "call_1", Type: "function",
			Function: gym.FunctionCall{Name: "noop", Arguments: "{}"}}},
		{Type: gym.PartToolResult, ToolResult: &gym.ToolResult{CallID: "call_1", Name: "noop", Content: "ok"}},
		{Type: gym.PartGUIAction, GUIAction: &gym.GUIAction{Action: "wait", Ms: 1}},
		{Type: gym.PartImage, Image: &gym.Blob{MIME: "image/png", Data: png, Size: int64(len(png))}},
		{Type: gym.PartFile, File: &gym.File{Path: "gymtest.txt", Blob: gym.Blob{MIME: "text/plain", Data: []byte("hi")}}},
	}
}

func validAction(schema *gym.Schema, a gym.Action) error {
	raw, err := json.Marshal(a)
	if err != nil {
		return err
	}
	return schema.Validate(raw)
}

// badActions returns actions the gym must reject before the env sees them.
func badActions(schema *gym.Schema) []gym.Action {
	var out []gym.Action
	// A part type the kind does not accept.
	for _, p := range sampleParts() {
		if a := (gym.Action{Parts: []gym.Part{p}}); validAction(schema, a) != nil {
			out = append(out, a)
			break
		}
	}
	if a := (gym.Action{Parts: []gym.Part{}}); validAction(schema, a) != nil {
		out = append(out, a)
	}
	return append(out,
		gym.Action{Parts: []gym.Part{{Type: "gymtest_no_such_type", Text: "x"}}},
		gym.Action{Parts: []gym.Part{{Type: gym.PartText, Text: "x",
			ToolCall: &gym.ToolCall{Function: gym.FunctionCall{Name: "f", Arguments: "{}"}}}}},
	)
}

// checker runs one Case.
type checker struct {
	t           testing.TB
	kind        string
	settings    gym.Settings // the Managers'
	observation *gym.Schema
	bad         []gym.Action
	prefix      string
}

func (c *checker) errorf(format string, args ...any) {
	c.t.Helper()
	c.t.Errorf(c.prefix+format, args...)
}

func (c *checker) fatalf(format string, args ...any) {
	c.t.Helper()
	c.t.Fatalf(c.prefix+format, args...)
}

// step is what determinism compares.
type step struct {
	Observation json.RawMessage
	Reward      float64
	Terminated  bool
	Truncated   bool
}

func (s step) String() string {
	return fmt.Sprintf("observation %s, reward %v, terminated %v, truncated %v", s.Observation, s.Reward, s.Terminated, s.Truncated)
}

func stepOf(tr gym.Transition) step {
	obs, _ := json.Marshal(tr.Observation)
	return step{Observation: obs, Reward: tr.Reward, Terminated: tr.Terminated, Truncated: tr.Truncated}
}

func jsonOf(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("<%v>", err)
	}
	return string(b)
}

func (c *checker) run(i int, cs Case) {
	t := c.t
	t.Helper()
	if cs.Task == nil {
		c.prefix = fmt.Sprintf("gymtest: %s: case %d: ", c.kind, i)
		c.fatalf("no task")
	}
	task := *cs.Task
	if task.Env == "" {
		task.Env = c.kind
	}
	c.prefix = fmt.Sprintf("gymtest: %s: case %d (task %q, seed %d): ", c.kind, i, task.ID, cs.Seed)
	if len(cs.Actions) == 0 {
		c.fatalf("no actions")
	}

	mem := &Memory{}
	m := gym.NewManager(gym.Config{Recorder: mem, Settings: c.settings, Logger: slog.New(slog.NewTextHandler(tbWriter{t}, nil))})
	defer func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(t.Context()), time.Minute)
		defer cancel()
		if err := m.Shutdown(ctx); err != nil {
			c.errorf("shutdown: %v", err)
		}
	}()
	ctx := t.Context()
	create := func(task gym.Task) (*gym.Session, gym.ResetResult) {
		t.Helper()
		s, res, err := m.Create(ctx, gym.CreateRequest{Task: &task, Seed: cs.Seed})
		if err != nil {
			c.fatalf("create: %v", err)
		}
		if res.Episode != 1 || res.Session != s.ID {
			c.errorf("create: reset result has episode %d, session %q; want 1, %q", res.Episode, res.Session, s.ID)
		}
		c.checkObservation("reset", res.Observation)
		return s, res
	}

	// Session A runs the case with every misuse interleaved; B runs it
	// plainly. If the misuse touched the env, they differ.
	a, ra := create(task)
	stepsA, overA := c.runChecked(ctx, a, cs.Actions)
	b, rb := create(task)
	stepsB := c.runPlain(ctx, b, cs.Actions)

	if x, y := jsonOf(ra.Observation), jsonOf(rb.Observation); x != y {
		c.errorf("determinism: two resets with the same task and seed differ:\n  %s\n  %s", x, y)
	}
	if len(stepsA) != len(stepsB) {
		c.errorf("determinism: same actions ended the episode after %d steps, then after %d", len(stepsA), len(stepsB))
	}
	for k := range min(len(stepsA), len(stepsB)) {
		if x, y := stepsA[k], stepsB[k]; x.String() != y.String() {
			c.errorf("determinism: step %d differs between two sessions with the same task, seed and actions:\n  %s\n  %s", k+1, x, y)
		}
	}

	// Ordering on A: a stepped-out episode refuses steps; reset starts
	// episode 2, the same as the first from the same seed.
	if overA {
		if _, err := a.Step(ctx, "gymtest-after-end", cs.Actions[0]); !errors.Is(err, gym.ErrEpisodeOver) {
			c.errorf("step after the episode ended: got %v, want gym.ErrEpisodeOver", err)
		}
	}
	rr, err := a.Reset(ctx, nil, cs.Seed, nil)
	if err != nil {
		c.fatalf("second reset: %v", err)
	}
	if rr.Episode != 2 {
		c.errorf("second reset: episode %d, want 2", rr.Episode)
	}
	c.checkObservation("second reset", rr.Observation)
	if x, y := jsonOf(ra.Observation), jsonOf(rr.Observation); x != y {
		c.errorf("determinism: a reset with the same seed on the same session differs from the first:\n  %s\n  %s", x, y)
	}
	ranA := len(stepsA)
	if res, err := a.Step(ctx, "", cs.Actions[0]); err != nil {
		c.errorf("first step of episode 2: %v", err)
	} else {
		ranA++
		if res.Episode != 2 || res.Step != 1 {
			c.errorf("first step of episode 2 is episode %d step %d, want episode 2 step 1", res.Episode, res.Step)
		}
		if len(stepsB) > 0 && stepOf(res.Transition).String() != stepsB[0].String() {
			c.errorf("determinism: first step after a reset with the same seed differs from a fresh session's:\n  %s\n  %s",
				stepOf(res.Transition), stepsB[0])
		}
	}

	// Session C is cut off by a one-step limit, whatever the kind does.
	one := task
	one.Limits.MaxSteps = 1
	cc, _ := create(one)
	ranC := 0
	if res, err := cc.Step(ctx, "", cs.Actions[0]); err != nil {
		c.errorf("one-step episode: %v", err)
	} else {
		ranC++
		if !res.Terminated && !res.Truncated {
			c.errorf("one-step episode: the step hit max_steps 1 but is neither terminated nor truncated")
		} else if _, err := cc.Step(ctx, "", cs.Actions[0]); !errors.Is(err, gym.ErrEpisodeOver) {
			c.errorf("one-step episode: second step got %v, want gym.ErrEpisodeOver", err)
		}
	}

	// Close is idempotent; a closed session refuses requests.
	for _, s := range []*gym.Session{a, b, cc} {
		for k := range 2 {
			if err := s.Close(ctx); err != nil {
				c.errorf("close #%d of session %s: %v", k+1, s.ID, err)
			}
		}
	}
	if _, err := a.Step(ctx, "", cs.Actions[0]); !closedErr(err) {
		c.errorf("step on a closed session: got %v, want gym.ErrSessionClosed or gym.ErrUnknownSession", err)
	}
	if _, err := a.Reset(ctx, nil, cs.Seed, nil); !closedErr(err) {
		c.errorf("reset on a closed session: got %v, want gym.ErrSessionClosed or gym.ErrUnknownSession", err)
	}
	if _, err := m.Get(a.ID); !errors.Is(err, gym.ErrUnknownSession) {
		c.errorf("Manager.Get of a closed session: got %v, want gym.ErrUnknownSession", err)
	}

	c.checkEvents(mem, a.ID, ranA)
	c.checkEvents(mem, b.ID, len(stepsB))
	c.checkEvents(mem, cc.ID, ranC)
}

func closedErr(err error) bool {
	return errors.Is(err, gym.ErrSessionClosed) || errors.Is(err, gym.ErrUnknownSession)
}

func (c *checker) checkObservation(where string, obs gym.Observation) {
	c.t.Helper()
	raw, err := json.Marshal(obs)
	if err != nil {
		c.errorf("%s: observation does not encode: %v", where, err)
		return
	}
	if err := c.observation.Validate(raw); err != nil {
		c.errorf("%s: observation %s %v", where, raw, err)
	}
}

// runChecked steps s through actions and, around every step, sends bad
// actions, retries the step id and reuses it for another action. It
// returns the steps run and whether the episode ended.
func (c *checker) runChecked(ctx context.Context, s *gym.Session, actions []gym.Action) ([]step, bool) {
	c.t.Helper()
	var out []step
	for i, action := range actions {
		id := fmt.Sprintf("gymtest-%d", i+1)
		for _, bad := range c.bad {
			// A rejected action does not use up the step id either.
			_, err := s.Step(ctx, id, bad)
			if !errors.Is(err, gym.ErrBadAction) {
				c.errorf("step %d: bad action %s: got %v, want an error matching gym.ErrBadAction", i+1, jsonOf(bad), err)
			}
		}
		res, err := s.Step(ctx, id, action)
		if err != nil {
			c.errorf("step %d (%s): %v", i+1, jsonOf(action), err)
			return out, false
		}
		if res.Step != i+1 || res.Episode != 1 || res.Replayed || res.StepID != id {
			c.errorf("step %d: got episode %d step %d (step id %q, replayed %v), want episode 1 step %d (step id %q): "+
				"bad actions and retries must not use up steps", i+1, res.Episode, res.Step, res.StepID, res.Replayed, i+1, id)
		}
		c.checkObservation(fmt.Sprintf("step %d", i+1), res.Observation)
		out = append(out, stepOf(res.Transition))

		again, err := s.Step(ctx, id, action)
		if err != nil {
			c.errorf("step %d retried with the same step id: %v", i+1, err)
		} else {
			if !again.Replayed {
				c.errorf("step %d retried with the same step id: Replayed is false", i+1)
			}
			again.Replayed = false
			if x, y := jsonOf(res), jsonOf(again); x != y {
				c.errorf("step %d retried with the same step id: answer differs:\n  %s\n  %s", i+1, x, y)
			}
		}
		other := gym.Action{Parts: append(append([]gym.Part(nil), action.Parts...), gym.TextPart("gymtest: another action"))}
		if _, err := s.Step(ctx, id, other); !errors.Is(err, gym.ErrStepIDReused) {
			c.errorf("step %d: step id reused for another action: got %v, want gym.ErrStepIDReused", i+1, err)
		}
		if res.Terminated || res.Truncated {
			return out, true
		}
	}
	return out, false
}

// runPlain steps s through actions without step ids.
func (c *checker) runPlain(ctx context.Context, s *gym.Session, actions []gym.Action) []step {
	c.t.Helper()
	var out []step
	for i, action := range actions {
		res, err := s.Step(ctx, "", action)
		if err != nil {
			c.errorf("step %d (%s) in a second session: %v", i+1, jsonOf(action), err)
			return out
		}
		out = append(out, stepOf(res.Transition))
		if res.Terminated || res.Truncated {
			break
		}
	}
	return out
}

// checkEvents checks one closed session's record; steps is how many steps
// it ran.
func (c *checker) checkEvents(mem *Memory, id string, steps int) {
	c.t.Helper()
	evs := mem.Session(id)
	var types []string
	for _, ev := range evs {
		types = append(types, string(ev.Type))
	}
	fail := func(format string, args ...any) {
		c.t.Helper()
		c.errorf("events of session %s [%s]: "+format, append([]any{id, strings.Join(types, " ")}, args...)...)
	}
	if len(evs) < 3 || evs[0].Type != gym.EventSessionCreated || evs[1].Type != gym.EventReset ||
		evs[len(evs)-1].Type != gym.EventSessionClosed {
		fail("want session.created, reset, steps..., session.closed")
		return
	}
	var lastSeq int64
	episode, stepN, nsteps := 0, 0, 0
	for k, ev := range evs {
		if ev.Seq <= lastSeq {
			fail("seq %d after %d: seqs must increase", ev.Seq, lastSeq)
		}
		lastSeq = ev.Seq
		if ev.Env != c.kind {
			fail("event %d names env %q", k, ev.Env)
		}
		switch ev.Type {
		case gym.EventSessionCreated:
			if k != 0 {
				fail("session.created at %d", k)
			}
		case gym.EventSessionClosed:
			if k != len(evs)-1 {
				fail("session.closed at %d, before the end", k)
			}
			if ev.Reason == "" {
				fail("session.closed has no reason")
			}
		case gym.EventReset:
			if ev.Episode != episode+1 {
				fail("reset of episode %d after episode %d", ev.Episode, episode)
			}
			episode, stepN = ev.Episode, 0
			if ev.Observation == nil {
				fail("reset event has no observation")
			}
		case gym.EventStep:
			nsteps++
			stepN++
			if ev.Episode != episode || ev.Step != stepN {
				fail("step event is episode %d step %d, want episode %d step %d", ev.Episode, ev.Step, episode, stepN)
			}
			if ev.Action == nil || ev.Observation == nil || ev.Reward == nil {
				fail("step event %d lacks its action, observation or reward", ev.Step)
			}
		case gym.EventRefused:
			if ev.Episode != episode || ev.Step != stepN+1 || ev.Action == nil || ev.Failure == nil ||
				ev.Failure.Fault != gym.FaultAgent || ev.Observation != nil || ev.Reward != nil {
				fail("step.refused event (episode %d step %d, failure %v) is not an agent's refused action before step %d of episode %d",
					ev.Episode, ev.Step, ev.Failure, stepN+1, episode)
			}
		case gym.EventReward:
		default:
			fail("unknown event type %q", ev.Type)
		}
	}
	if nsteps != steps {
		fail("%d step events for %d steps run: retried and refused steps must not be recorded as steps", nsteps, steps)
	}
}

// tbWriter sends the manager's log lines to the test log.
type tbWriter struct{ t testing.TB }

func (w tbWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

package gym_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/nextstate-rl/nextstate/gym"
	"github.com/nextstate-rl/nextstate/gym/gymtest"
	_ "github.com/nextstate-rl/nextstate/gym/testenvs"
)

// scriptKind is a test kind whose action text says what its Step does:
//
//	block   wait until the step's deadline and return ctx.Err()
//	gate    close Options["entered"], then wait for Options["gate"] (or ctx)
//	panic   panic
//	infra   fail with an infrastructure fault (sandbox_died)
//	agent   fail with the agent's fault (bad_command)
//	end     terminate; the verifier runs (fails if Options["verify_err"],
//	        as the agent's fault if Options["verify_agent_err"])
//	else    echo the text
//
// Reset fails when Options["fail_reset"] is set.
type scriptKind struct{}

const scriptName = "gymtest-script-v1"

func init() { gym.Register(scriptKind{}) }

func (scriptKind) Spec() gym.Spec {
	return gym.Spec{
		Name:              scriptName,
		Description:       "a scripted kind for the gym's own tests",
		ActionSchema:      gym.PartsSchema(1, 1, gym.PartText),
		ObservationSchema: gym.PartsSchema(1, 1, gym.PartText),
		Limits:            gym.Limits{StepTimeout: gym.Duration(10 * time.Second)},
	}
}

func (scriptKind) New(context.Context) (gym.Env, error) { return &scriptEnv{}, nil }

type scriptEnv struct{ opts gym.Options }

func (e *scriptEnv) Reset(_ context.Context, task *gym.Task, seed int64, opts gym.Options) (gym.Observation, gym.Info, error) {
	if opts["fail_reset"] != nil {
		return gym.Observation{}, nil, gym.InfraFault("boot", errors.New("the sandbox did not start"))
	}
	e.opts = opts
	return gym.TextObservation(fmt.Sprintf("task %s seed %d", task.ID, seed)), nil, nil
}

func (e *scriptEnv) Step(ctx context.Context, a gym.Action) (gym.Transition, error) {
	switch t := a.Text(); t {
	case "block":
		<-ctx.Done()
		return gym.Transition{}, ctx.Err()
	case "gate":
		close(e.opts["entered"].(chan struct{}))
		select {
		case <-e.opts["gate"].(chan struct{}):
			return gym.Transition{Observation: gym.TextObservation("through")}, nil
		case <-ctx.Done():
			return gym.Transition{}, ctx.Err()
		}
	case "panic":
		panic("scripted panic")
	case "infra":
		return gym.Transition{}, gym.InfraFault("sandbox_died", errors.New("the sandbox exited"))
	case "agent":
		return gym.Transition{}, gym.AgentFault("bad_command", errors.New("no such command"))
	case "end":
		return gym.Transition{Observation: gym.TextObservation("the end"), Reward: 0.25, Terminated: true}, nil
	default:
		return gym.Transition{Observation: gym.TextObservation(t)}, nil
	}
}

func (e *scriptEnv) Verify(context.Context) (float64, gym.Info, error) {
	if e.opts["verify_err"] != nil {
		return 0, nil, errors.New("the hidden tests did not run")
	}
	if e.opts["verify_agent_err"] != nil {
		return 0, nil, gym.AgentFault("verifier_environment_broken", errors.New("the agent removed what the tests read"))
	}
	return 0.75, gym.Info{"checked": true}, nil
}

func (e *scriptEnv) Close(context.Context) error { return nil }

var quiet = slog.New(slog.DiscardHandler)

// newManager returns a manager recording into a Memory, shut down when the
// test ends.
// testClock is a clock that stands still until the test moves it on
// (gym.Config.Now).
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func newTestClock() *testClock { return &testClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)} }

func (c *testClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func newManager(t testing.TB, cfg gym.Config) (*gym.Manager, *gymtest.Memory) {
	t.Helper()
	mem := &gymtest.Memory{}
	if cfg.Recorder == nil {
		cfg.Recorder = mem
	}
	if cfg.Logger == nil {
		cfg.Logger = quiet
	}
	m := gym.NewManager(cfg)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		m.Shutdown(ctx)
	})
	return m, mem
}

func create(t testing.TB, m *gym.Manager, req gym.CreateRequest) *gym.Session {
	t.Helper()
	s, _, err := m.Create(context.Background(), req)
	if err != nil {
		t.Fatalf("create %+v: %v", req, err)
	}
	return s
}

func step(t testing.TB, s *gym.Session, text string) gym.StepResult {
	t.Helper()
	res, err := s.Step(context.Background(), "", gym.TextAction(text))
	if err != nil {
		t.Fatalf("step %q: %v", text, err)
	}
	return res
}

// waitFor polls cond until it holds, failing the test if it does not
// within a generous deadline (the deadline guards against a hang; it is not
// a timing assertion).
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// closedEvent returns a session's session.closed event, if recorded.
func closedEvent(mem *gymtest.Memory, id string) (gym.Event, bool) {
	for _, ev := range mem.Session(id) {
		if ev.Type == gym.EventSessionClosed {
			return ev, true
		}
	}
	return gym.Event{}, false
}

func TestScriptKindConforms(t *testing.T) {
	gymtest.CheckKind(t, scriptName)
}

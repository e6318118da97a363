package tau2test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nextstate-rl/nextstate/envs/toolcall"
	"github.com/nextstate-rl/nextstate/envs/toolcall/tau2"
	"github.com/nextstate-rl/nextstate/gym"
	"github.com/nextstate-rl/nextstate/gym/gymtest"
)

// DataDir is a tau2 folder of the shared data, found from the module root
// (../shared/data/NAME); the test skips when it is absent, or when is (the
// domain's detector) does not take it.
func DataDir(t testing.TB, name string, is func(dir string) bool) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the package directory")
		}
		dir = parent
	}
	d := filepath.Join(dir, "..", "shared", "data", name)
	if !is(d) {
		t.Skipf("tau2 data not found at %s (../shared/data/%s from the module root)", d, name)
	}
	return d
}

// NewEnv makes an Env of a kind named kind over domain d, closed when the
// test ends.
func NewEnv(t testing.TB, kind string, d toolcall.Domain) *toolcall.Env {
	t.Helper()
	env, err := toolcall.NewKind(toolcall.Config{Name: kind}, d).New(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { env.Close(context.Background()) })
	return env.(*toolcall.Env)
}

// Call is an action of one tool call, its arguments args as JSON.
func Call(name string, args any) gym.Action {
	b, _ := json.Marshal(args)
	return RawCall(name, string(b))
}

// RawCall is an action of one tool call with arguments as they are.
func RawCall(name, args string) gym.Action {
	return gym.Action{Parts: []gym.Part{{Type: gym.PartToolCall, ToolCall: &gym.ToolCall{
		Type: "function", Function: gym.FunctionCall{Name: name, Arguments: args}}}}}
}

// Result is the single tool result of a step.
func Result(t testing.TB, tr gym.Transition) *gym.ToolResult {
	t.Helper()
	for _, p := range tr.Observation.Parts {
		if p.Type == gym.PartToolResult {
			return p.ToolResult
		}
	}
	t.Fatalf("no tool result in %+v", tr.Observation)
	return nil
}

// Play resets env on task (solo) and sends actions until the episode
// ends, then verifies. It fails on a step error or an unfinished episode.
func Play(t testing.TB, env *toolcall.Env, task *gym.Task, actions []gym.Action) (float64, gym.Info) {
	t.Helper()
	ctx := context.Background()
	if _, _, err := env.Reset(ctx, task, 1, gym.Options{"user": tau2.ModeSolo}); err != nil {
		t.Fatalf("%s: reset: %v", task.ID, err)
	}
	for i, a := range actions {
		tr, err := env.Step(ctx, a)
		if err != nil {
			t.Fatalf("%s: step %d: %v", task.ID, i+1, err)
		}
		if tr.Truncated {
			t.Fatalf("%s: step %d truncated: %v", task.ID, i+1, tr.Info)
		}
		if tr.Terminated {
			if i != len(actions)-1 {
				t.Fatalf("%s: the episode ended at step %d of %d", task.ID, i+1, len(actions))
			}
			r, info, err := env.Verify(ctx)
			if err != nil {
				t.Fatalf("%s: verify: %v", task.ID, err)
			}
			return r, info
		}
	}
	t.Fatalf("%s: the episode did not end after %d actions", task.ID, len(actions))
	return 0, nil
}

// MustContain fails the test for each of subs that s does not contain.
func MustContain(t testing.TB, s string, subs ...string) {
	t.Helper()
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			t.Errorf("%.400q does not contain %q", s, sub)
		}
	}
}

// OracleSessions plays the tasks ids of suite by their oracles through a
// gym.Manager's sessions, as `nextstate serve --tasks` serves them (the
// built-in tasks too), and fails for each that does not end with the
// verifier's reward 1.
func OracleSessions(t *testing.T, suite *gym.Suite, ids ...string) {
	t.Helper()
	cat := gym.NewCatalog()
	if err := cat.AddSuite(suite); err != nil {
		t.Fatal(err)
	}
	m := gym.NewManager(gym.Config{Tasks: cat, Recorder: &gymtest.Memory{}})
	defer m.Shutdown(context.Background())
	ctx := context.Background()
	for _, id := range ids {
		task, ok := cat.Get("", id)
		if !ok {
			t.Fatalf("no task %s", id)
		}
		o, err := gym.OracleFor(task)
		if err != nil {
			t.Fatal(err)
		}
		sess, res, err := m.Create(ctx, gym.CreateRequest{TaskID: id, Options: o.(gym.OracleOptions).ResetOptions()})
		if err != nil {
			t.Fatalf("%s: create: %v", id, err)
		}
		obs, info := res.Observation, res.Info
		var last gym.StepResult
		for {
			a, done, err := o.Next(obs, info)
			if err != nil {
				t.Fatal(err)
			}
			if done {
				break
			}
			if last, err = sess.Step(ctx, "", a); err != nil {
				t.Fatalf("%s: step: %v", id, err)
			}
			obs, info = last.Observation, last.Info
		}
		if !last.Terminated || last.Reward != 1 || last.Info["reward_source"] != "verifier" {
			t.Errorf("%s: last step %+v, want terminated with verifier reward 1", id, last.Transition)
		}
		sess.Close(ctx)
	}
}

// BenchReplay replays each task's script (its oracle's actions) through
// env in solo mode, b.N times over: reset, the steps, and the verifier,
// which must give 1. It reports tool-call steps per second (the steps
// alone), ns per step, and episodes per second (reset, steps and verify
// together).
func BenchReplay(b *testing.B, env *toolcall.Env, tasks []gym.Task, scripts [][]gym.Action) {
	ctx := context.Background()
	opts := gym.Options{"user": tau2.ModeSolo}
	var steps, episodes int
	var stepTime time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		for i := range tasks {
			if _, _, err := env.Reset(ctx, &tasks[i], 1, opts); err != nil {
				b.Fatal(err)
			}
			start := time.Now()
			for _, a := range scripts[i] {
				if _, err := env.Step(ctx, a); err != nil {
					b.Fatal(err)
				}
			}
			stepTime += time.Since(start)
			steps += len(scripts[i])
			r, _, err := env.Verify(ctx)
			if err != nil || r != 1 {
				b.Fatalf("%s: reward %v, %v", tasks[i].ID, r, err)
			}
			episodes++
		}
	}
	b.ReportMetric(float64(steps)/stepTime.Seconds(), "steps/s")
	b.ReportMetric(float64(stepTime.Nanoseconds())/float64(steps), "ns/step")
	b.ReportMetric(float64(episodes)/b.Elapsed().Seconds(), "episodes/s")
}

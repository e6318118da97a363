package retail

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nextstate-rl/nextstate/envs/toolcall"
	"github.com/nextstate-rl/nextstate/envs/toolcall/tau2"
	"github.com/nextstate-rl/nextstate/gym"
)

// dataDir is tau2's retail folder in the shared data, found from the
// module root (../shared/data/tau2-retail); tests skip when it is absent.
func dataDir(t testing.TB) string {
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
	d := filepath.Join(dir, "..", "shared", "data", "tau2-retail")
	if !IsRetailDir(d) {
		t.Skipf("tau2 retail data not found at %s (../shared/data/tau2-retail from the module root)", d)
	}
	return d
}

// realTasks loads the 114 tau2 retail tasks.
func realTasks(t testing.TB) []gym.Task {
	t.Helper()
	ts, err := LoadDir(dataDir(t))
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

func smokeTask(t testing.TB, n int) *gym.Task {
	t.Helper()
	for _, task := range SmokeTasks() {
		if task.ID == fmt.Sprintf("tau2-retail-smoke-%d", n) {
			return &task
		}
	}
	t.Fatalf("no smoke task %d", n)
	return nil
}

// newEnv makes an Env of a kind over a fresh Domain (no user simulator
// unless the test sets one).
func newEnv(t testing.TB, d *Domain) *toolcall.Env {
	t.Helper()
	if d == nil {
		d = NewDomain()
	}
	env, err := toolcall.NewKind(toolcall.Config{Name: KindName}, d).New(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { env.Close(context.Background()) })
	return env.(*toolcall.Env)
}

func call(name string, args any) gym.Action {
	b, _ := json.Marshal(args)
	return gym.Action{Parts: []gym.Part{{Type: gym.PartToolCall, ToolCall: &gym.ToolCall{
		Type: "function", Function: gym.FunctionCall{Name: name, Arguments: string(b)}}}}}
}

func rawCall(name, args string) gym.Action {
	return gym.Action{Parts: []gym.Part{{Type: gym.PartToolCall, ToolCall: &gym.ToolCall{
		Type: "function", Function: gym.FunctionCall{Name: name, Arguments: args}}}}}
}

// result is the single tool result of a step.
func result(t testing.TB, tr gym.Transition) *gym.ToolResult {
	t.Helper()
	for _, p := range tr.Observation.Parts {
		if p.Type == gym.PartToolResult {
			return p.ToolResult
		}
	}
	t.Fatalf("no tool result in %+v", tr.Observation)
	return nil
}

// play resets env on task (solo) and sends actions until the episode
// ends, then verifies. It fails on a step error or an unfinished episode.
func play(t testing.TB, env *toolcall.Env, task *gym.Task, actions []gym.Action) (float64, gym.Info) {
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

func oracleActions(t testing.TB, task *gym.Task) []gym.Action {
	t.Helper()
	c, err := CriteriaOf(task)
	if err != nil || c == nil {
		t.Fatalf("%s: criteria: %v", task.ID, err)
	}
	return OracleActions(c)
}

func mustContain(t testing.TB, s string, subs ...string) {
	t.Helper()
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			t.Errorf("%.400q does not contain %q", s, sub)
		}
	}
}

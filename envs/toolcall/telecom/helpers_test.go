package telecom

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/nextstate-rl/nextstate/envs/toolcall"
	"github.com/nextstate-rl/nextstate/envs/toolcall/tau2"
	"github.com/nextstate-rl/nextstate/envs/toolcall/tau2/tau2test"
	"github.com/nextstate-rl/nextstate/gym"
)

// dataDir is tau2's telecom folder in the shared data
// (../shared/data/tau2-telecom from the module root); tests skip without it.
func dataDir(t testing.TB) string { return tau2test.DataDir(t, "tau2-telecom", IsTelecomDir) }

// realTasks loads the 20 tau2 telecom tasks of tasks_small.json.
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
		if task.ID == fmt.Sprintf("tau2-telecom-smoke-%d", n) {
			return &task
		}
	}
	t.Fatalf("no smoke task %d", n)
	return nil
}

// startWorld is a task's world at its initial state.
func startWorld(t testing.TB, d *Domain, task *gym.Task) *world {
	t.Helper()
	data, err := TaskDataOf(task)
	if err != nil {
		t.Fatal(err)
	}
	src, err := d.source(task.Dir, data.Builtin)
	if err != nil {
		t.Fatal(err)
	}
	w, err := initialWorld(src, data)
	if err != nil {
		t.Fatalf("%s: %v", task.ID, err)
	}
	return w
}

// content is a call's result as the agent reads it: the tool's output or
// its error.
func content(t testing.TB, w *world, side, name, args string) string {
	t.Helper()
	out, err := w.call(side, name, json.RawMessage(args))
	if msg, ok := toolcall.IsToolError(err); ok {
		return msg
	}
	if err != nil {
		t.Fatalf("%s(%s): %v", name, args, err)
	}
	s, _ := out.(string)
	return s
}

// newEnv makes an Env of a kind over d, or a fresh Domain when d is nil
// (no user simulator unless d is a configured one).
func newEnv(t testing.TB, d toolcall.Domain) *toolcall.Env {
	t.Helper()
	if d == nil {
		d = NewDomain()
	}
	return tau2test.NewEnv(t, KindName, d)
}

var (
	call        = tau2test.Call
	result      = tau2test.Result
	play        = tau2test.Play
	mustContain = tau2test.MustContain
)

func oracleActions(t testing.TB, task *gym.Task) []gym.Action {
	t.Helper()
	c, err := CriteriaOf(task)
	if err != nil || c == nil {
		t.Fatalf("%s: criteria: %v", task.ID, err)
	}
	return tau2.OracleActions(c)
}

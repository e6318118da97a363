package retail

import (
	"fmt"
	"testing"

	"github.com/nextstate-rl/nextstate/envs/toolcall"
	"github.com/nextstate-rl/nextstate/envs/toolcall/tau2/tau2test"
	"github.com/nextstate-rl/nextstate/gym"
)

// dataDir is tau2's retail folder in the shared data
// (../shared/data/tau2-retail from the module root); tests skip without it.
func dataDir(t testing.TB) string { return tau2test.DataDir(t, "tau2-retail", IsRetailDir) }

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
	rawCall     = tau2test.RawCall
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
	return OracleActions(c)
}

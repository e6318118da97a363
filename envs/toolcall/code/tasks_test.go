package code_test

import (
	"context"
	"encoding/json"
	"flag"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nextstate-rl/nextstate/envs/toolcall"
	"github.com/nextstate-rl/nextstate/envs/toolcall/code"
	"github.com/nextstate-rl/nextstate/gym"
)

var allTasks = flag.Bool("code.all", false, "TestSolutions: play the oracle on every task of the set, not a sample of 20")

// The shipped task set loads as `nextstate serve --tasks` loads it: at
// least 200 valid tasks of the three categories, each with an answer that
// is an exact number and a solution.
func TestTaskFile(t *testing.T) {
	suite, err := gym.LoadSuite(filepath.Join("tasks", "math.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if len(suite.Tasks) < 200 {
		t.Errorf("%d tasks, want at least 200", len(suite.Tasks))
	}
	if embedded := code.MathTasks(); len(embedded) != len(suite.Tasks) {
		t.Errorf("the embedded set has %d tasks, the file %d", len(embedded), len(suite.Tasks))
	}
	cats, topics := map[string]int{}, map[string]bool{}
	for _, task := range suite.Tasks {
		cat := task.Labels["category"]
		cats[cat]++
		topics[task.Labels["topic"]] = true
		if !strings.HasPrefix(task.ID, "math-"+cat+"-") || task.Env != code.KindName {
			t.Errorf("task %s: env %s, category %q", task.ID, task.Env, cat)
		}
		var d code.TaskData
		var v code.VerifierData
		if json.Unmarshal(task.Data, &d) != nil || d.Problem == "" || json.Unmarshal(task.Verifier, &v) != nil || v.Solution == "" {
			t.Errorf("task %s: data %s, verifier %s", task.ID, task.Data, task.Verifier)
		}
		if a := code.Normalize(v.Answer); a.Value == nil || a.String() != v.Answer {
			t.Errorf("task %s: the answer %q is not an exact number in canonical form (%v)", task.ID, v.Answer, a.Err)
		}
	}
	for _, c := range []string{"arithmetic", "algebra", "combinatorics"} {
		if cats[c] < 60 {
			t.Errorf("category %s has %d tasks, want at least 60", c, cats[c])
		}
	}
	if len(topics) < 20 {
		t.Errorf("%d topics, want at least 20", len(topics))
	}
	// The built-in tasks do not collide with the set's ids.
	cat := gym.NewCatalog()
	if err := cat.AddSuite(suite); err != nil {
		t.Errorf("the set next to the built-in tasks: %v", err)
	}
}

// Each task's Python solution, played by the oracle through a session,
// prints the reference answer: a sample of 20 spread over the set, or
// every task with -code.all.
func TestSolutions(t *testing.T) {
	settings := needBwrap(t)
	settings["code.pool"] = "2"
	h := newHarness(t, settings)
	tasks := code.MathTasks()
	step := len(tasks) / 20
	if *allTasks {
		step = 1
	}
	for i := 0; i < len(tasks); i += step {
		task := tasks[i]
		s, last := playOracle(t, h, task)
		if last.Reward != 1 {
			t.Errorf("%s: reward %v: %v", task.ID, last.Reward, h.verdict(s))
		}
		s.Close(t.Context())
	}
}

// restarter is what an Env that keeps its sandbox across resets calls
// (see the package doc, Sandboxes).
type restarter interface {
	Restart(ctx context.Context, task *gym.Task, seed int64, opts gym.Options) (toolcall.Episode, error)
}

// A restarted episode starts clean: the first restart takes a fresh
// sandbox and snapshots it, later ones restore it in place.
func TestRestart(t *testing.T) {
	settings := needBwrap(t)
	ctx := t.Context()
	d, err := code.NewDomain().Configure(ctx, settings)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := d.Shutdown(ctx); err != nil {
			t.Error(err)
		}
		if left := stateDirs(t, settings["sandbox.dir"]); len(left) != 0 {
			t.Errorf("sandboxes left after Shutdown: %v", left)
		}
	}()
	opts := gym.Options{"mode": code.ModeSession}
	run := func(ep toolcall.Episode, src string) string {
		t.Helper()
		args, _ := json.Marshal(map[string]string{"code": src})
		r, err := ep.Call(ctx, code.ToolCode, args)
		if err != nil {
			t.Fatal(err)
		}
		return r.Content
	}
	dirty := "import os\nopen('/workspace/mark', 'w').write('x')\nv = 1\nprint(sorted(os.listdir('/workspace')))"
	clean := "import os\nprint(sorted(os.listdir('/workspace')), 'v' in globals())"
	ep, err := d.Start(ctx, &sumTask, 1, opts)
	if err != nil {
		t.Fatal(err)
	}
	if got := run(ep, dirty); got != "['mark']\n" {
		t.Fatalf("episode 1: %q", got)
	}
	var dirs []string
	for i := 2; i <= 4; i++ {
		r, ok := ep.(restarter)
		if !ok {
			t.Fatalf("the episode has no Restart method")
		}
		if ep, err = r.Restart(ctx, &sumTask, 1, opts); err != nil {
			t.Fatal(err)
		}
		if got := run(ep, clean); got != "[] False\n" {
			t.Errorf("episode %d starts with %q; want an empty workspace and no variables", i, got)
		}
		run(ep, dirty)
		now := stateDirs(t, settings["sandbox.dir"])
		if len(now) != 1 {
			t.Fatalf("episode %d: %d sandboxes, want 1", i, len(now))
		}
		dirs = append(dirs, now[0])
	}
	if dirs[1] != dirs[0] || dirs[2] != dirs[0] {
		t.Errorf("the sandbox was not kept across restarts: %v", dirs)
	}
	// A bad option ends the episode all the same, and frees its sandbox.
	if _, err := ep.(restarter).Restart(ctx, &sumTask, 1, gym.Options{"mode": "x"}); err == nil {
		t.Error("Restart with a bad option succeeded")
	}
	if left := stateDirs(t, settings["sandbox.dir"]); len(left) != 0 {
		t.Errorf("a failed Restart left %v", left)
	}
}

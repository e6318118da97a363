package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/nextstate-rl/nextstate/agent/rundir"
	"github.com/nextstate-rl/nextstate/gym"
)

func calcTasks(t *testing.T) []gym.Task {
	t.Helper()
	spec, err := gym.Lookup(calcKind)
	if err != nil {
		t.Fatal(err)
	}
	return spec.Tasks
}

// contractKeys are the keys of a results.jsonl row (docs: issue 7's contract).
var contractKeys = []string{"trial_id", "task", "env", "sample", "seed", "status", "reward", "process_reward", "terminated",
	"truncated", "steps", "failure", "session", "duration_ms", "prompt_tokens", "completion_tokens", "model", "trajectory", "finished_at"}

func readLines(t *testing.T, path string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, l := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		var m map[string]any
		if err := json.Unmarshal(l, &m); err != nil {
			t.Fatalf("%s: line %q: %v", path, l, err)
		}
		out = append(out, m)
	}
	return out
}

func TestRunnerKSamplesPerTask(t *testing.T) {
	c := gymServer(t)
	llm := newScripted(t, false, calcPolicy("native"))
	dir := t.TempDir()
	var progress []Progress
	r := &Runner{Client: c, Agent: mustAgent(t, Config{BaseURL: llm.URL()}), Tasks: calcTasks(t), K: 3, Concurrency: 4,
		Seed: 9, Dir: dir, Info: rundir.RunInfo{Run: "test-k", Suite: []string{calcKind}}, Logger: quietLog(),
		Known:    map[string]bool{"calc-2-3": true}, // the others go inline
		Progress: func(p Progress) { progress = append(progress, p) }}
	sum, err := r.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if sum.Trials != 9 || sum.Passed != 9 || sum.Pass1 != 1 || sum.PassK != 1 || sum.MeanReward != 1 || sum.Tasks != 3 {
		t.Errorf("summary %+v; want 9 trials of 3 tasks, all passed", sum)
	}
	if n := len(progress); n != 10 || progress[0].Done != 0 || progress[n-1].Done != 9 || progress[n-1].Total != 9 {
		t.Errorf("progress calls %d, last %+v", n, progress[len(progress)-1])
	}
	rows := readLines(t, filepath.Join(dir, "results.jsonl"))
	if len(rows) != 9 {
		t.Fatalf("%d rows, want 9", len(rows))
	}
	seeds := map[string]map[float64]bool{}
	for _, row := range rows {
		var keys []string
		for k := range row {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		want := slices.Clone(contractKeys)
		sort.Strings(want)
		if !slices.Equal(keys, want) {
			t.Errorf("row keys %v, want the contract's %v", keys, want)
		}
		task := row["task"].(string)
		if row["trial_id"] != task+"#"+jsonInt(row["sample"]) || row["status"] != "passed" || row["env"] != calcKind ||
			row["process_reward"] != nil || row["failure"] != nil || row["model"] != "scripted" || row["steps"] != 2.0 {
			t.Errorf("row %v", row)
		}
		if seeds[task] == nil {
			seeds[task] = map[float64]bool{}
		}
		seeds[task][row["seed"].(float64)] = true
		if row["seed"].(float64) != float64(TrialSeed(9, task, int(row["sample"].(float64)))) {
			t.Errorf("seed %v of %v is not the derived one", row["seed"], row["trial_id"])
		}
		var traj rundir.Trajectory
		b, err := os.ReadFile(filepath.Join(dir, row["trajectory"].(string)))
		if err != nil || json.Unmarshal(b, &traj) != nil || traj.TrialID != row["trial_id"] || len(traj.Steps) != 2 || traj.Outcome != 1 {
			t.Errorf("trajectory %v: %v %+v", row["trajectory"], err, traj)
		}
		if len(traj.Steps) > 0 && (traj.Steps[0].Response == "" || len(traj.Steps[0].MessagesTail) == 0 || !bytes.Contains(b, []byte(`"judge":null`))) {
			t.Errorf("trajectory step %+v: want the response, the new messages and a null judge", traj.Steps[0])
		}
		// The session is labelled with its group (the task) and trial.
		res, err := c.Attach(row["session"].(string)).Resume(context.Background(), 0)
		if err != nil || len(res.Events) == 0 || res.Events[0].Labels["group"] != task || res.Events[0].Labels["trial"] != row["trial_id"] ||
			res.Events[0].Run != "test-k" {
			t.Errorf("session events %+v, %v; want labels group and trial and run test-k", res.Events, err)
		}
	}
	for task, s := range seeds {
		if len(s) != 3 {
			t.Errorf("task %s: %d distinct seeds over 3 samples", task, len(s))
		}
	}
	var info rundir.RunInfo
	b, _ := os.ReadFile(filepath.Join(dir, "run.json"))
	if err := json.Unmarshal(b, &info); err != nil || info.Model != "scripted" || info.K != 3 || info.Trials != 9 || info.Started.IsZero() {
		t.Errorf("run.json %s: %v", b, err)
	}
}

// readResults reads a results.jsonl's rows.
func readResults(path string) ([]rundir.Result, error) {
	res, err := rundir.ReadResultsFile(path)
	return res.Rows, err
}

func jsonInt(v any) string { b, _ := json.Marshal(v); return string(b) }

// TestRunnerResumes cuts a run off, leaves a half-written last line as a
// killed process would, and runs again: finished trials are skipped, the
// infrastructure's failures and the unfinished trials are run, and the
// results end complete.
func TestRunnerResumes(t *testing.T) {
	flaky.Delete("calc-10-4")
	c := gymServer(t)
	native := calcPolicy("native")
	var mu sync.Mutex
	calls := map[string]int{} // first user message -> model calls
	llm := newScripted(t, false, func(r llmRequest) llmReply {
		ms := r.msgs()
		mu.Lock()
		calls[ms[1].text()]++
		mu.Unlock()
		last := ms[len(ms)-1]
		flakyTask := strings.Contains(ms[1].text(), "Add 10 and -4")
		switch {
		case len(ms) == 2 && flakyTask:
			return llmReply{ToolCalls: []map[string]any{nativeCall("f", "flaky", `{}`)}}
		case last.Role == "tool" && last.text() == "fine this time":
			return native(llmRequest{Messages: r.Messages[:2]})
		}
		return native(r)
	})
	dir := t.TempDir()
	tasks := calcTasks(t)
	newRunner := func() *Runner {
		return &Runner{Client: c, Agent: mustAgent(t, Config{BaseURL: llm.URL()}), Tasks: tasks, K: 2, Concurrency: 1,
			Dir: dir, Logger: quietLog(), Info: rundir.RunInfo{Run: "resume"}}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r1 := newRunner()
	r1.Progress = func(p Progress) {
		if p.Done == 4 {
			cancel()
		}
	}
	sum, err := r1.Run(ctx)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted run: %v, want context.Canceled", err)
	}
	rows, err := readResults(filepath.Join(dir, "results.jsonl"))
	if err != nil || len(rows) != 4 || sum.Missing != 2 {
		t.Fatalf("%d rows after the interruption (%v), summary %+v; want 4, 2 missing", len(rows), err, sum)
	}
	statuses := map[string]rundir.Status{}
	for _, row := range rows {
		statuses[row.TrialID] = row.Status
		if _, err := os.Stat(filepath.Join(dir, row.Trajectory)); err != nil {
			t.Errorf("row %s names a missing trajectory: %v", row.TrialID, err)
		}
	}
	if statuses["calc-10-4#0"] != rundir.StatusInfraError || statuses["calc-2-3#0"] != rundir.StatusPassed {
		t.Fatalf("statuses %v; want calc-10-4#0 an infra error (the flaky tool) and calc-2-3#0 passed", statuses)
	}
	// A killed writer leaves half a line.
	f, _ := os.OpenFile(filepath.Join(dir, "results.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"trial_id":"calc-7-7#0","status":"pass`)
	f.Close()

	mu.Lock()
	before := map[string]int{}
	for k, v := range calls {
		before[k] = v
	}
	mu.Unlock()
	var resumed int
	r2 := newRunner()
	r2.Progress = func(p Progress) { resumed = p.Resumed }
	sum, err = r2.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if resumed != 3 || sum.Trials != 6 || sum.Passed != 6 || sum.Missing != 0 || sum.InfraErrors != 0 {
		t.Errorf("rerun: %d resumed, summary %+v; want 3 skipped and all 6 passed", resumed, sum)
	}
	mu.Lock()
	if d := calls["Add 2 and 3 with the add tool, then submit the sum."] - before["Add 2 and 3 with the add tool, then submit the sum."]; d != 0 {
		t.Errorf("the finished task calc-2-3 was played again (%d model calls)", d)
	}
	mu.Unlock()
	lines := readLines(t, filepath.Join(dir, "results.jsonl")) // every line parses: the half line is gone
	if len(lines) != 7 {
		t.Errorf("%d lines, want 4 + 3 (the infra error retried, two never run)", len(lines))
	}
	final, _ := readResults(filepath.Join(dir, "results.jsonl"))
	for _, row := range final {
		if row.Status != rundir.StatusPassed {
			t.Errorf("final %s: %s", row.TrialID, row.Status)
		}
	}
}

func TestRunnerOracle(t *testing.T) {
	c := gymServer(t)
	dir := t.TempDir()
	r := &Runner{Client: c, Oracle: true, Tasks: calcTasks(t), K: 2, Concurrency: 3, Dir: dir, Logger: quietLog(),
		Known: map[string]bool{"calc-2-3": true, "calc-10-4": true, "calc-7-7": true}}
	sum, err := r.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if sum.Passed != 6 || sum.Pass1 != 1 {
		t.Errorf("oracle run %+v, want every trial passed", sum)
	}
	rows, _ := readResults(filepath.Join(dir, "results.jsonl"))
	if len(rows) != 6 || rows[0].Model != "oracle" || rows[0].Steps != 2 {
		t.Errorf("rows %+v", rows)
	}
	// A rerun into the same directory with a model is refused.
	r2 := &Runner{Client: c, Agent: mustAgent(t, Config{BaseURL: "http://127.0.0.1:1/v1"}), Tasks: calcTasks(t), Dir: dir, Logger: quietLog()}
	if _, err := r2.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "another --out") {
		t.Errorf("a model run into an oracle run's directory: %v", err)
	}
}

func TestRunnerStopsWhenTheModelRefusesEverything(t *testing.T) {
	c := gymServer(t)
	llm := newScripted(t, false, func(llmRequest) llmReply {
		return llmReply{Status: 401, Body: `{"error":{"message":"Incorrect API key"}}`}
	})
	r := &Runner{Client: c, Agent: mustAgent(t, Config{BaseURL: llm.URL()}), Tasks: calcTasks(t), K: 4, Concurrency: 2,
		Dir: t.TempDir(), Logger: quietLog()}
	_, err := r.Run(context.Background())
	if !errors.Is(err, ErrFatal) || !strings.Contains(err.Error(), "model_auth") {
		t.Fatalf("err %v, want ErrFatal (model_auth)", err)
	}
	if n := llm.calls.Load(); n > 4 {
		t.Errorf("%d calls after the endpoint refused the key; the run should stop", n)
	}
}

func TestRunnerInfraFailureIsLabelled(t *testing.T) {
	c := gymServer(t)
	llm := newScripted(t, false, func(llmRequest) llmReply {
		return llmReply{ToolCalls: []map[string]any{nativeCall("x", "crash", `{}`)}}
	})
	dir := t.TempDir()
	r := &Runner{Client: c, Agent: mustAgent(t, Config{BaseURL: llm.URL()}), Tasks: calcTasks(t)[:1], Dir: dir, Logger: quietLog()}
	sum, err := r.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	rows, _ := readResults(filepath.Join(dir, "results.jsonl"))
	if sum.InfraErrors != 1 || len(rows) != 1 || rows[0].Failure == nil || rows[0].Failure.Reason != "crashed" || !rows[0].Truncated {
		t.Errorf("summary %+v rows %+v; want one infra error, reason crashed", sum, rows)
	}
}

func TestRunnerPassAtK(t *testing.T) {
	for _, tc := range []struct {
		n, c, k int
		want    float64
	}{{10, 3, 1, 0.3}, {5, 0, 3, 0}, {4, 2, 2, 1 - 1.0/6}, {3, 3, 8, 1}, {2, 1, 8, 1}, {8, 1, 8, 1}, {0, 0, 1, 0}} {
		if got := PassAtK(tc.n, tc.c, tc.k); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("PassAtK(%d, %d, %d) = %v, want %v", tc.n, tc.c, tc.k, got, tc.want)
		}
	}
	rows := []rundir.Result{{TrialID: "a#0", Task: "a", Status: rundir.StatusPassed, Reward: 1}, {TrialID: "a#1", Task: "a", Status: rundir.StatusFailed},
		{TrialID: "b#0", Task: "b", Status: rundir.StatusAgentError}, {TrialID: "b#1", Task: "b", Status: rundir.StatusInfraError}}
	s := Summarize(rows, nil, 2)
	if s.Pass1 != 0.25 || s.PassK != 0.5 || s.AgentErrors != 1 || s.InfraErrors != 1 || s.MeanReward != 0.25 {
		t.Errorf("summary %+v", s)
	}
}

package report

import (
	"errors"
	"io/fs"
	"math"
	"strings"
	"testing"

	"github.com/nextstate-rl/nextstate/agent/rundir"
)

func TestLastRowWins(t *testing.T) {
	dir := runDir(t, []string{
		row(t, "a#0", "a", "infra_error", 0, map[string]any{"failure": infraFailure("sandbox_died")}),
		row(t, "a#1", "a", "failed", 0, map[string]any{"sample": 1}),
		row(t, "a#0", "a", "failed", 0.5, nil),
		row(t, "a#0", "a", "passed", 1, map[string]any{"steps": 7}), // the retry's retry
	}, nil)
	r := load(t, dir)
	if len(r.Trials) != 2 || r.Summary.Trials != 2 || r.Summary.Superseded != 2 {
		t.Fatalf("trials %d (summary %d), superseded %d; want 2, 2, 2", len(r.Trials), r.Summary.Trials, r.Summary.Superseded)
	}
	a0 := r.Trials[0]
	if a0.TrialID != "a#0" || a0.Status != rundir.StatusPassed || a0.Steps != 7 || a0.Line != 4 {
		t.Errorf("a#0 = %+v, want the last row (line 4, passed, 7 steps)", a0)
	}
	s := r.Summary
	if s.InfraErrors != 0 || s.Scored != 2 || s.Passed != 1 || s.PassAt1 != 0.5 {
		t.Errorf("summary %+v: the superseded infra row must not count", s)
	}
}

func TestMalformedLine(t *testing.T) {
	good := row(t, "a#0", "a", "passed", 1, nil)
	cases := []struct {
		name, line, want string
	}{
		{"not json", `{"trial_id": "a#1", "task": `, "line 3: not a JSON result row"},
		{"wrong type", `{"trial_id": "a#1", "task": "a", "status": "passed", "reward": "high"}`, "line 3: not a JSON result row"},
		{"no trial id", row(t, "", "a", "passed", 1, nil), `line 3: missing "trial_id"`},
		{"no task", row(t, "a#1", "", "passed", 1, nil), `line 3: missing "task"`},
		{"bad status", row(t, "a#1", "a", "ok", 1, nil), `line 3: unknown status "ok" (accepted: passed, failed, agent_error, infra_error)`},
		{"bad fault", row(t, "a#1", "a", "failed", 0, map[string]any{"failure": map[string]any{"fault": "judge", "reason": "x"}}), `line 3: unknown failure fault "judge" (accepted: agent, infra)`},
		{"negative", row(t, "a#1", "a", "failed", 0, map[string]any{"steps": -1}), "line 3: sample, steps"},
		{"escaping path", row(t, "a#1", "a", "failed", 0, map[string]any{"trajectory": "../../etc/passwd"}), "line 3: trajectory path"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// Line 2 is blank: blank lines are skipped but counted.
			dir := runDir(t, []string{good, "", tc.line, good}, nil)
			_, err := Load(dir)
			if err == nil || !strings.Contains(err.Error(), rundir.ResultsFile+" "+tc.want) {
				t.Fatalf("error %v, want one containing %q", err, rundir.ResultsFile+" "+tc.want)
			}
		})
	}
}

func TestMissingResults(t *testing.T) {
	_, err := Load(t.TempDir())
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "run directory") {
		t.Fatalf("error %v, want a not-exist error about the run directory", err)
	}
}

func TestEmptyResults(t *testing.T) {
	r := load(t, runDir(t, nil, nil))
	if r.Summary.Trials != 0 || r.Summary.ScoredTasks != 0 || len(r.Summary.Ks) != 0 {
		t.Errorf("summary of nothing: %+v", r.Summary)
	}
	if !strings.Contains(r.Summary.String(), "no scored trials") {
		t.Errorf("String() = %q", r.Summary.String())
	}
}

func TestRunInfo(t *testing.T) {
	r := load(t, runDir(t, nil, map[string]string{rundir.RunFile: `{"suite":"s1","k":4,"oracle":true,"extra":{"a":[1, 2]}}`}))
	for k, want := range map[string]string{"suite": "s1", "k": "4", "oracle": "true", "extra": `{"a":[1,2]}`, "absent": ""} {
		if got := r.Run.Get(k); got != want {
			t.Errorf("Get(%q) = %q, want %q", k, got, want)
		}
	}
	if strings.Join(r.Run.Keys, ",") != "extra,k,oracle,suite" {
		t.Errorf("keys %v", r.Run.Keys)
	}
	if r := load(t, runDir(t, nil, nil)); r.Run != nil {
		t.Errorf("no run.json: Run = %+v, want nil", r.Run)
	}
	_, err := Load(runDir(t, nil, map[string]string{rundir.RunFile: `[1,2]`}))
	if err == nil || !strings.Contains(err.Error(), "run.json: not a JSON object") {
		t.Errorf("error %v", err)
	}
}

// TestInfraExcluded: infrastructure failures count in no rate or mean, are
// counted apart, and a task with only such trials is not scored.
func TestInfraExcluded(t *testing.T) {
	dir := runDir(t, []string{
		row(t, "a#0", "a", "passed", 1, nil),
		row(t, "a#1", "a", "failed", 0, map[string]any{"sample": 1}),
		row(t, "a#2", "a", "infra_error", 0, map[string]any{"sample": 2, "failure": infraFailure("sandbox_died")}),
		// failed, but by the infrastructure's fault: not the agent's.
		row(t, "a#3", "a", "failed", 0, map[string]any{"sample": 3, "failure": infraFailure("browser_crashed")}),
		// infra_error without a label.
		row(t, "b#0", "b", "infra_error", 0, nil),
		row(t, "c#0", "c", "agent_error", 0, map[string]any{"failure": map[string]any{"fault": "agent", "reason": "timeout"}}),
		row(t, "c#1", "c", "passed", 0.5, map[string]any{"sample": 1}),
	}, nil)
	r := load(t, dir)
	s := r.Summary
	if s.InfraErrors != 3 || s.Scored != 4 || s.Passed != 2 || s.Failed != 1 || s.AgentErrors != 1 {
		t.Fatalf("counts: %+v", s)
	}
	if s.Tasks != 3 || s.ScoredTasks != 2 || s.MinSamples != 2 || s.MaxSamples != 2 {
		t.Fatalf("tasks: %+v", s)
	}
	// a: 1 of 2, c: 1 of 2 (infra trials not in n).
	if s.PassAt1 != 0.5 || s.PassAtK[2] != 1 || math.Abs(s.MeanReward-(0.5+0.25)/2) > 1e-12 {
		t.Errorf("pass@1 %v, pass@2 %v, mean reward %v", s.PassAt1, s.PassAtK[2], s.MeanReward)
	}
	byTask := map[string]TaskStats{}
	for _, ts := range r.Tasks {
		byTask[ts.Task] = ts
	}
	if a := byTask["a"]; a.Trials != 4 || a.Infra != 2 || a.Scored != 2 || a.Passed != 1 || a.PassRate != 0.5 {
		t.Errorf("task a: %+v", a)
	}
	if b := byTask["b"]; b.Scored != 0 || b.Infra != 1 || b.PassRate != 0 {
		t.Errorf("task b: %+v", b)
	}
	want := map[string]int{"infra/sandbox_died": 1, "infra/browser_crashed": 1, "infra/unlabelled": 1,
		"agent/not_solved": 1, "agent/timeout": 1}
	got := map[string]int{}
	for _, c := range r.Failures {
		got[string(c.Fault)+"/"+c.Reason] = c.Count
	}
	if len(got) != len(want) {
		t.Errorf("taxonomy %v, want %v", got, want)
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("taxonomy %s = %d, want %d (all: %v)", k, got[k], n, got)
		}
	}
	for i, c := range r.Failures {
		if i > 0 && c.Fault == "infra" && r.Failures[i-1].Fault == "agent" {
			t.Errorf("infrastructure classes must come first: %v", r.Failures)
		}
	}
	if g := r.ByEnv; len(g) != 1 || g[0].Infra != 3 || g[0].Scored != 4 || g[0].ScoredTasks != 2 {
		t.Errorf("by env: %+v", g)
	}
}

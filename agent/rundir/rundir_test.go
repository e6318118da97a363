package rundir

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nextstate-rl/nextstate/gym"
)

func TestReadResults(t *testing.T) {
	row := func(id, status string) string {
		return `{"trial_id":"` + id + `","task":"t","status":"` + status + `","prompt_tokens":3000000000}`
	}
	text := row("t#0", "infra_error") + "\n\n" + row("t#1", "failed") + "\n" + row("t#0", "passed") + "\n"
	res, err := ReadResults(strings.NewReader(text + `{"trial_id":"t#2","sta`))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 2 || res.Rows[0].TrialID != "t#0" || res.Rows[0].Status != StatusPassed || res.Rows[0].Line != 4 ||
		res.Rows[1].TrialID != "t#1" || res.Superseded != 1 {
		t.Fatalf("rows %+v, superseded %d; want t#0 (its last row, line 4) then t#1, 1 superseded", res.Rows, res.Superseded)
	}
	if !res.Cut || res.Complete != int64(len(text)) {
		t.Fatalf("cut %v, complete %d; want the half line cut, %d bytes complete", res.Cut, res.Complete, len(text))
	}
	if res.Rows[0].PromptTokens != 3000000000 {
		t.Fatalf("prompt tokens %d: token counts are int64", res.Rows[0].PromptTokens)
	}
	// A whole last row without its newline counts.
	res, err = ReadResults(strings.NewReader(text + row("t#2", "failed")))
	if err != nil || len(res.Rows) != 3 || res.Cut || res.Complete != int64(len(text+row("t#2", "failed"))) {
		t.Fatalf("a last row without a newline: %+v, %v", res, err)
	}
	// A bad line that is not the last one is an error naming it.
	for name, bad := range map[string]string{"cut": `{"trial_id":"t#2","sta`, "bad status": row("t#2", "ok")} {
		if _, err := ReadResults(strings.NewReader(text + bad + "\n" + row("t#3", "passed") + "\n")); err == nil ||
			!strings.Contains(err.Error(), ResultsFile+" line 5: ") {
			t.Errorf("%s: error %v, want one naming line 5", name, err)
		}
	}
}

func TestReadResultsFile(t *testing.T) {
	dir := t.TempDir()
	if _, err := ReadResultsFile(filepath.Join(dir, ResultsFile)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
	if err := WriteFile(filepath.Join(dir, ResultsFile), []byte(`{"trial_id":"a#0","task":"a","status":"passed"}`+"\n")); err != nil {
		t.Fatal(err)
	}
	res, err := ReadResultsFile(filepath.Join(dir, ResultsFile))
	if err != nil || len(res.Rows) != 1 {
		t.Fatalf("%+v, %v", res, err)
	}
	if fi, err := os.Stat(filepath.Join(dir, ResultsFile)); err != nil || fi.Mode().Perm() != 0o644 {
		t.Fatalf("WriteFile's file: %v, %v", fi.Mode(), err)
	}
	if des, _ := os.ReadDir(dir); len(des) != 1 {
		t.Fatalf("WriteFile left %d files", len(des))
	}
}

func TestTrajectoryPath(t *testing.T) {
	if p := TrajectoryPath("calc-2-3", 1); p != "trajectories/calc-2-3.1.json" {
		t.Errorf("plain id: %s", p)
	}
	a, b := TrajectoryPath("a/b", 0), TrajectoryPath("a?b", 0)
	if a == b || !strings.HasPrefix(a, "trajectories/a_b-") || strings.ContainsAny(strings.TrimPrefix(a, "trajectories/"), "/?") {
		t.Errorf("unsafe ids: %s %s; want safe and distinct names", a, b)
	}
	if id := TrialID("calc-2-3", 1); id != "calc-2-3#1" {
		t.Errorf("TrialID = %s", id)
	}
	if p := BlobPath("image/png", []byte("x")); !strings.HasPrefix(p, "blobs/") || !strings.HasSuffix(p, ".png") || len(p) != len("blobs/")+64+4 {
		t.Errorf("BlobPath = %s", p)
	}
}

func TestFailureClass(t *testing.T) {
	cases := []struct {
		r      Result
		fault  string
		reason string
	}{
		{Result{Status: StatusFailed}, "agent", "not_solved"},
		{Result{Status: StatusFailed, Truncated: true}, "agent", "truncated"},
		{Result{Status: StatusAgentError}, "agent", "unlabelled"},
		{Result{Status: StatusInfraError}, "infra", "unlabelled"},
		{Result{Status: StatusAgentError, Failure: &gym.Failure{Fault: gym.FaultAgent, Reason: "timeout"}}, "agent", "timeout"},
		// An infra_error row whose failure says agent: infra wins, the agent is not blamed.
		{Result{Status: StatusInfraError, Failure: &gym.Failure{Fault: gym.FaultAgent, Reason: "timeout"}}, "infra", "timeout"},
		{Result{Status: StatusFailed, Failure: &gym.Failure{Fault: gym.FaultInfra}}, "infra", "unlabelled"},
	}
	for _, tc := range cases {
		f, r, ok := tc.r.FailureClass()
		if !ok || string(f) != tc.fault || r != tc.reason {
			t.Errorf("%+v: got %s/%s/%v, want %s/%s", tc.r, f, r, ok, tc.fault, tc.reason)
		}
	}
	if _, _, ok := (&Result{Status: StatusPassed}).FailureClass(); ok {
		t.Error("a passed trial has no failure class")
	}
}

func TestBlobFile(t *testing.T) {
	for ref, want := range map[string]string{
		"blobs/ab.png": "blobs/ab.png", "sha256:ab": "blobs/ab.png",
		"../x.png": "", "/etc/passwd": "", "": "", "sha256:../../x": "",
	} {
		got, ok := BlobFile(ref)
		if ok != (want != "") || got != want {
			t.Errorf("BlobFile(%q) = %q, %v; want %q", ref, got, ok, want)
		}
	}
}

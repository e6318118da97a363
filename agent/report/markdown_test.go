package report

import (
	"bytes"
	"flag"
	"math"
	"os"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite testdata/run.report.md from the current output")

const fixture = "testdata/run"

// TestFixtureSummary checks the numbers of the hand-written fixture
// against values computed by hand: hello n=4 c=2 (its sample 1 was retried:
// the infra_error row is superseded by a failed one), form n=4 c=1, order
// n=4 c=4 (plus one infra failure), broken: one infra failure, not scored.
func TestFixtureSummary(t *testing.T) {
	r := load(t, fixture)
	s := r.Summary
	ints := map[string][2]int{
		"trials": {s.Trials, 14}, "superseded": {s.Superseded, 1}, "tasks": {s.Tasks, 4},
		"scored tasks": {s.ScoredTasks, 3}, "scored": {s.Scored, 12}, "passed": {s.Passed, 7},
		"failed": {s.Failed, 4}, "agent errors": {s.AgentErrors, 1}, "infra": {s.InfraErrors, 2},
		"min samples": {s.MinSamples, 4}, "max samples": {s.MaxSamples, 4},
		"judged":        {s.ProcessRewardTrials, 3},
		"prompt tokens": {int(s.PromptTokens), 22200}, "completion tokens": {int(s.CompletionTokens), 1440},
	}
	for name, v := range ints {
		if v[0] != v[1] {
			t.Errorf("%s = %d, want %d", name, v[0], v[1])
		}
	}
	floats := map[string][2]float64{
		"pass@1":              {s.PassAt1, (0.5 + 0.25 + 1) / 3},
		"pass@2":              {s.PassAtK[2], (5.0/6 + 0.5 + 1) / 3},
		"pass@4":              {s.PassAtK[4], 1},
		"mean reward":         {s.MeanReward, (0.5625 + 0.375 + 1) / 3},
		"mean process reward": {s.MeanProcessReward, 0.5},
	}
	for name, v := range floats {
		if math.Abs(v[0]-v[1]) > 1e-12 {
			t.Errorf("%s = %.6f, want %.6f", name, v[0], v[1])
		}
	}
	if s.PassAtK[1] != s.PassAt1 || len(s.Ks) != 3 {
		t.Errorf("ks %v, pass@k %v", s.Ks, s.PassAtK)
	}
	if s.Duration != 44400*time.Millisecond {
		t.Errorf("duration %v", s.Duration)
	}
	for _, iv := range []struct {
		iv Interval
		m  float64
	}{{s.PassAt1CI, s.PassAt1}, {s.MeanRewardCI, s.MeanReward}} {
		if !(iv.iv.Low <= iv.m && iv.m <= iv.iv.High) || iv.iv.Units != 3 {
			t.Errorf("interval %+v does not contain %v", iv.iv, iv.m)
		}
	}
	if out := s.String(); !strings.Contains(out, "pass@1: 0.583") || !strings.Contains(out, "pass@4: 1.000") {
		t.Errorf("String() = %q", out)
	}
}

// TestMarkdownGolden compares report.md of the fixture with
// testdata/run.report.md (go test -update rewrites it; read the diff).
func TestMarkdownGolden(t *testing.T) {
	r := load(t, fixture)
	var buf bytes.Buffer
	if err := r.Markdown(&buf); err != nil {
		t.Fatal(err)
	}
	const golden = "testdata/run.report.md"
	if *update {
		if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got := buf.String(); got != string(want) {
		gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
		for i := range max(len(gl), len(wl)) {
			var g, w string
			if i < len(gl) {
				g = gl[i]
			}
			if i < len(wl) {
				w = wl[i]
			}
			if g != w {
				t.Fatalf("report.md differs from %s at line %d:\n got: %s\nwant: %s", golden, i+1, g, w)
			}
		}
	}
	// Key lines, whatever the golden file says.
	for _, line := range []string{
		"| pass@1 | 0.583 (95% CI ",
		"| pass@2 | 0.778 |",
		"| Mean reward | 0.646 (95% CI ",
		"| Scored trials | 12 (infrastructure failures excluded: 2) |",
		"| hello | terminal-v1 | test | 4 | 0 | 4 | 2 | 0.500 | 0.562 | 2.8 | not\\_solved ×2 |",
		"| infra | sandbox\\_died | 1 | order#2 | container exited unexpectedly |",
		"| hello#0 | passed | 1 | 2 |  | [json](trajectories/hello-0.json) |",
	} {
		if !strings.Contains(buf.String(), line) {
			t.Errorf("report.md lacks %q", line)
		}
	}
}

// TestMarkdownEscapes: text from tasks and failures cannot break the
// tables or inject HTML, and links are percent-encoded.
func TestMarkdownEscapes(t *testing.T) {
	dir := runDir(t, []string{
		row(t, "x|y#0", "x|y <b>", "failed", 0, map[string]any{
			"trajectory": "trajectories/x|y (1).json",
			"failure":    map[string]any{"fault": "agent", "reason": "bad", "message": "line one\nline <two> | three"},
		}),
	}, nil)
	var buf bytes.Buffer
	if err := load(t, dir).Markdown(&buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{`| x\|y \<b\> |`, `line one line \<two\> \| three`, `[json](trajectories/x%7Cy%20%281%29.json)`} {
		if !strings.Contains(out, want) {
			t.Errorf("report.md lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "<b>") || strings.Contains(out, "<two>") {
		t.Errorf("unescaped HTML in report.md:\n%s", out)
	}
}

package report

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nextstate-rl/nextstate/agent/rundir"
)

// benchRun writes a run of tasks×samples trials, each with a trajectory of
// steps steps (a tool call and a 1 KiB tool result each).
func benchRun(b *testing.B, tasks, samples, steps int) string {
	b.Helper()
	dir := b.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "trajectories"), 0o755); err != nil {
		b.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, rundir.ResultsFile))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	out := strings.Repeat("output line\n", 85)
	for ti := range tasks {
		for s := range samples {
			id := fmt.Sprintf("task-%03d#%d", ti, s)
			status, reward := "failed", 0.0
			if (ti+s)%3 == 0 {
				status, reward = "passed", 1
			}
			file := fmt.Sprintf("trajectories/task-%03d-%d.json", ti, s)
			row := map[string]any{"trial_id": id, "task": fmt.Sprintf("task-%03d", ti), "env": "terminal-v1",
				"sample": s, "status": status, "reward": reward, "steps": steps, "duration_ms": 1000,
				"prompt_tokens": 1000, "completion_tokens": 100, "trajectory": file}
			line, _ := json.Marshal(row)
			f.Write(append(line, '\n'))
			tr := rundir.Trajectory{TrialID: id, Task: row["task"].(string), Instruction: "Do the thing.", Outcome: reward}
			for i := range steps {
				st := rundir.Step{Step: i + 1, Response: "I run a command."}
				st.Action.Parts = append(st.Action.Parts, partToolCall("shell_exec", `{"command":"ls -la"}`))
				st.Observation.Parts = append(st.Observation.Parts, partToolResult(out))
				tr.Steps = append(tr.Steps, st)
			}
			tb, _ := json.Marshal(tr)
			if err := os.WriteFile(filepath.Join(dir, file), tb, 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	return dir
}

// BenchmarkReport: 200 tasks × 8 samples, 10 steps each (1600 trajectories, ~17 MB).
func BenchmarkReport(b *testing.B) {
	dir := benchRun(b, 200, 8, 10)
	b.Run("Load", func(b *testing.B) {
		for b.Loop() {
			if _, err := Load(dir); err != nil {
				b.Fatal(err)
			}
		}
	})
	r, err := Load(dir)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("Markdown", func(b *testing.B) {
		for b.Loop() {
			if err := r.Markdown(io.Discard); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("HTML", func(b *testing.B) {
		var n countWriter
		for b.Loop() {
			n = 0
			if err := r.HTML(&n); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(n)/1e6, "MB/page")
	})
}

type countWriter int64

func (c *countWriter) Write(p []byte) (int, error) { *c += countWriter(len(p)); return len(p), nil }

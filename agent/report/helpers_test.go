package report

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nextstate-rl/nextstate/agent/rundir"
	"github.com/nextstate-rl/nextstate/gym"
)

// row is a results.jsonl row with the contract's fields; extra overrides
// or adds fields.
func row(t *testing.T, id, task, status string, reward float64, extra map[string]any) string {
	t.Helper()
	m := map[string]any{
		"trial_id": id, "task": task, "env": "terminal-v1", "sample": 0, "seed": 0,
		"status": status, "reward": reward, "process_reward": nil, "terminated": true,
		"truncated": false, "steps": 1, "failure": nil, "session": "s", "duration_ms": 10,
		"prompt_tokens": 1, "completion_tokens": 1, "model": "m", "trajectory": "",
		"finished_at": "2026-01-01T00:00:00Z",
	}
	for k, v := range extra {
		m[k] = v
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// runDir makes a run directory holding results.jsonl of the given lines
// and the given other files (path relative to the directory: content).
func runDir(t *testing.T, lines []string, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	write(t, filepath.Join(dir, rundir.ResultsFile), strings.Join(lines, "\n")+"\n")
	for p, content := range files {
		write(t, filepath.Join(dir, filepath.FromSlash(p)), content)
	}
	return dir
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func load(t *testing.T, dir string) *Report {
	t.Helper()
	r, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func infraFailure(reason string) map[string]any {
	return map[string]any{"fault": "infra", "reason": reason, "message": "the " + reason + " happened"}
}

func partToolCall(name, args string) gym.Part {
	return gym.Part{Type: gym.PartToolCall, ToolCall: &gym.ToolCall{ID: "c", Type: "function",
		Function: gym.FunctionCall{Name: name, Arguments: args}}}
}

func partToolResult(content string) gym.Part {
	return gym.Part{Type: gym.PartToolResult, ToolResult: &gym.ToolResult{CallID: "c", Content: content}}
}

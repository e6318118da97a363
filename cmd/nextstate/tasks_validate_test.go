package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nextstate-rl/nextstate/sandbox"
	_ "github.com/nextstate-rl/nextstate/sandbox/bwrap"
)

func TestTasksValidate(t *testing.T) {
	b, err := sandbox.Open(context.Background(), "bwrap", sandbox.Options{Dir: t.TempDir()})
	if errors.Is(err, sandbox.ErrUnavailable) {
		t.Skipf("the bwrap sandbox is unavailable here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	b.Close(context.Background())

	// Two smoke tasks, copied, and a broken one whose oracle fails.
	dir := t.TempDir()
	for _, name := range []string{"files-organize", "interactive-quiz"} {
		if err := os.CopyFS(filepath.Join(dir, name), os.DirFS(filepath.Join("..", "..", "envs", "terminal", "tasks", name))); err != nil {
			t.Fatal(err)
		}
	}
	run := func(args ...string) (string, error) {
		c := newTasksValidate()
		var out, errOut bytes.Buffer
		c.SetOut(&out)
		c.SetErr(&errOut)
		c.SetArgs(append(args, "--set", "sandbox.dir="+t.TempDir()))
		err := c.ExecuteContext(t.Context())
		return out.String(), err
	}
	out, err := run(dir)
	if err != nil {
		t.Fatalf("validate: %v\n%s", err, out)
	}
	for _, s := range []string{"TASK", "BUILD", "NOTHING", "ORACLE", "files-organize", "interactive-quiz", "2 valid, 0 invalid"} {
		if !strings.Contains(out, s) {
			t.Errorf("table does not show %q:\n%s", s, out)
		}
	}

	os.WriteFile(filepath.Join(dir, "files-organize", "solution.sh"), []byte("true\n"), 0o644)
	out, err = run("--json", filepath.Join(dir, "files-organize"))
	if err == nil || !strings.Contains(err.Error(), "1 of 1 tasks are invalid") {
		t.Errorf("a failing oracle: %v", err)
	}
	var rep ValidateReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("--json printed %q: %v", out, err)
	}
	if len(rep.Tasks) != 1 || rep.Tasks[0].OK || rep.Tasks[0].Oracle >= 1 || rep.Tasks[0].OracleTests == nil || rep.Invalid != 1 {
		t.Errorf("report %+v", rep)
	}

	// Terminal-Bench's run-tests.sh template installs its runner from the
	// network: offline it validates by default (the sandbox's pytest runs
	// its tests), and run as the script the table names the network.
	offline := filepath.Join("..", "..", "envs", "terminal", "testdata", "tasks", "offline-uv")
	if out, err := run(offline); err != nil || !strings.Contains(out, "1 valid, 0 invalid") {
		t.Errorf("offline-uv, auto: %v\n%s", err, out)
	}
	out, err = run("--tests-runner", "script", offline)
	if err == nil || !strings.Contains(out, "needs the network, which the sandbox does not have") || !strings.Contains(out, "--tests-runner pytest") {
		t.Errorf("offline-uv, script: %v\n%s", err, out)
	}
}

// tasks list reads Terminal-Bench folders, and shows no tests.
func TestTasksListTerminalBench(t *testing.T) {
	out, err := run(t, "tasks", "list", "--json", "--env", "terminal-v1", filepath.Join("..", "..", "envs", "terminal", "tasks"))
	if err != nil {
		t.Fatal(err)
	}
	var tasks []struct {
		ID       string          `json:"id"`
		Env      string          `json:"env"`
		Verifier json.RawMessage `json:"verifier"`
	}
	if err := json.Unmarshal([]byte(out), &tasks); err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	for _, tk := range tasks {
		found[tk.ID] = true
		if tk.Verifier != nil {
			t.Errorf("%s: the verifier's inputs are listed", tk.ID)
		}
	}
	if !found["git-recover"] || !found["terminal-git-recover"] {
		t.Errorf("listed %v", found)
	}
}

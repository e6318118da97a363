package terminal_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nextstate-rl/nextstate/envs/terminal"
	"github.com/nextstate-rl/nextstate/gym"
	"github.com/nextstate-rl/nextstate/gym/gymtest"
)

// writeTask writes a Terminal-Bench task folder and loads it.
func writeTask(t testing.TB, files map[string]string) gym.Task {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "task")
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	task, err := terminal.LoadTask(dir)
	if err != nil {
		t.Fatal(err)
	}
	return task
}

// A small task: make /app/answer.txt hold 42.
var answerTask = map[string]string{
	"task.yaml":    "instruction: Write 42 into /app/answer.txt.\nmax_agent_timeout_sec: 60\nmax_test_timeout_sec: 30\nauthor_name: test\n",
	"Dockerfile":   "FROM nextstate/base\nWORKDIR /app\nCOPY seed.txt /app/\n",
	"seed.txt":     "seed\n",
	"run-tests.sh": "#!/bin/bash\nexec pytest -p no:cacheprovider -rA \"$TEST_DIR/test_outputs.py\"\n",
	"tests/test_outputs.py": "def test_answer():\n    assert open('/app/answer.txt').read().strip() == '42'\n\n" +
		"def test_seed_kept():\n    assert open('/app/seed.txt').read() == 'seed\\n'\n",
	"solution.sh": "echo 42 > /app/answer.txt\n",
}

// harness runs sessions on a private manager that records every event.
type harness struct {
	t   testing.TB
	m   *gym.Manager
	mem *gymtest.Memory
	dir string // the bwrap state directory
}

func newHarness(t *testing.T) *harness { return newHarnessOn(t, needBwrap(t)) }

// newHarnessOn is newHarness on the sandbox backend settings name.
func newHarnessOn(t testing.TB, settings gym.Settings) *harness {
	mem := &gymtest.Memory{}
	h := &harness{t: t, mem: mem, dir: settings["sandbox.dir"],
		m: gym.NewManager(gym.Config{Recorder: mem, Settings: settings, Logger: slog.New(slog.DiscardHandler)})}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := h.m.Shutdown(ctx); err != nil {
			t.Error(err)
		}
	})
	return h
}

func (h *harness) create(task gym.Task, opts gym.Options) (*gym.Session, gym.ResetResult) {
	h.t.Helper()
	s, res, err := h.m.Create(h.t.Context(), gym.CreateRequest{Task: &task, Options: opts})
	if err != nil {
		h.t.Fatal(err)
	}
	return s, res
}

func (h *harness) step(s *gym.Session, parts ...gym.Part) gym.StepResult {
	h.t.Helper()
	res, err := s.Step(h.t.Context(), "", gym.Action{Parts: parts})
	if err != nil {
		h.t.Fatal(err)
	}
	if res.Failure != nil {
		h.t.Fatalf("step failed: %+v", res.Failure)
	}
	return res
}

// verdict returns the verifier's info recorded for session s.
func (h *harness) verdict(s *gym.Session) map[string]any {
	h.t.Helper()
	var out map[string]any
	for _, ev := range h.mem.Session(s.ID) {
		if v, ok := ev.Info["verifier"]; ok {
			b, _ := json.Marshal(v)
			json.Unmarshal(b, &out)
		}
	}
	return out
}

func call(name string, args any) gym.Part {
	b, _ := json.Marshal(args)
	return gym.Part{Type: gym.PartToolCall, ToolCall: &gym.ToolCall{ID: "call_" + name, Type: "function",
		Function: gym.FunctionCall{Name: name, Arguments: string(b)}}}
}

func results(t *testing.T, res gym.StepResult) []gym.ToolResult {
	t.Helper()
	var out []gym.ToolResult
	for _, p := range res.Observation.Parts {
		if p.Type != gym.PartToolResult {
			t.Fatalf("part %+v is not a tool result", p)
		}
		out = append(out, *p.ToolResult)
	}
	return out
}

var submit = call("submit", map[string]any{})

func TestConformance(t *testing.T) {
	needBwrap(t)
	task := writeTask(t, answerTask)
	tasks := terminal.SmokeTasks()
	var quiz gym.Task
	for _, x := range tasks {
		if x.ID == "terminal-interactive-quiz" {
			quiz = x
		}
	}
	gymtest.CheckKind(t, terminal.KindName,
		gymtest.Case{Task: &task, Seed: 1, Actions: []gym.Action{
			gym.TextAction("cd /tmp && export GREETING=hi"),
			{Parts: []gym.Part{call("shell_exec", map[string]any{"command": "pwd; echo $GREETING; cat /app/seed.txt"}),
				call("write_file", map[string]any{"path": "answer.txt", "content": "42\n"}),
				call("no_such_tool", map[string]any{})}},
			{Parts: []gym.Part{submit}},
		}},
		// A task of the built-in suite; the episode is cut by the step limit.
		gymtest.Case{Task: &quiz, Seed: 3, Actions: []gym.Action{gym.TextAction("ls"), gym.TextAction("true")}},
		// A task without files: a bare shell.
		gymtest.Case{Task: &gym.Task{ID: "bare", Instruction: "look around"}, Seed: 1,
			Actions: []gym.Action{gym.TextAction("echo hello"), gym.TextAction("exit 3")}},
	)
}

func TestShellTools(t *testing.T) {
	h := newHarness(t)
	s, rr := h.create(writeTask(t, answerTask), nil)
	if !strings.Contains(rr.Observation.Text(), "Write 42") || rr.Info["workdir"] != "/app" {
		t.Errorf("reset: %+v %v", rr.Observation, rr.Info)
	}
	if tools, ok := rr.Info["tools"].([]map[string]any); !ok || len(tools) != 5 {
		t.Errorf("reset info tools: %T %v", rr.Info["tools"], rr.Info["tools"])
	}

	// A text part is a command; cd and exported variables persist.
	res := h.step(s, gym.TextPart("cd /tmp && export X=persisted && pwd"))
	if got := res.Observation.Text(); got != "/tmp\n[exit code 0]" {
		t.Errorf("text command: %q", got)
	}
	// Parallel calls, each answered in order; a bad call is the agent's
	// mistake, answered with what the tool expects.
	res = h.step(s,
		call("shell_exec", map[string]any{"command": "echo $X; pwd"}),
		call("shell_exec", map[string]any{"command": "echo oops >&2; (exit 3)"}),
		gym.Part{Type: gym.PartToolCall, ToolCall: &gym.ToolCall{ID: "bad", Function: gym.FunctionCall{Name: "shell_exec", Arguments: `{"cmd":`}}},
		call("write_file", map[string]any{"path": "notes/a.txt", "content": "A\n"}),
		call("shell_exec", map[string]any{"command": "cat /app/notes/a.txt"}),
		call("shell_exec", map[string]any{"command": "sleep 30", "timeout": 0.5}),
		call("shell_exec", map[string]any{"command": "echo still here"}),
		call("write_file", map[string]any{"path": "/usr/not-writable.txt", "content": "x"}),
	)
	rs := results(t, res)
	want := []struct {
		content string
		isErr   bool
	}{
		{"persisted\n/tmp\n[exit code 0]", false},
		{"oops\n[exit code 3]", false},
		{`the arguments of shell_exec are not valid JSON`, true},
		{"wrote 2 bytes to /app/notes/a.txt", false},
		{"A\n[exit code 0]", false},
		{"[timed out after 500ms: the command was interrupted]", false},
		{"still here\n[exit code 0]", false},
		{"write_file: cannot write /usr/not-writable.txt", true},
	}
	if len(rs) != len(want) {
		t.Fatalf("%d results for %d calls: %+v", len(rs), len(want), rs)
	}
	for i, w := range want {
		if !strings.Contains(rs[i].Content, w.content) || rs[i].IsError != w.isErr {
			t.Errorf("call %d: %+v, want %q (error %v)", i, rs[i], w.content, w.isErr)
		}
	}
	if rs[2].CallID != "bad" || rs[0].Name != "shell_exec" {
		t.Errorf("results carry the call ids and names: %+v", rs)
	}
	calls, _ := res.Info["calls"].([]gym.Info)
	if len(calls) != 8 || calls[5]["timed_out"] != true || calls[1]["exit_code"] != 3 || calls[2]["error"] != "bad_call" {
		t.Errorf("info calls %v", res.Info["calls"])
	}
	if res.Terminated || res.Truncated {
		t.Error("the episode ended")
	}

	// The terminal: an interactive program driven with keys, its screen read.
	res = h.step(s, call("shell_send_keys", map[string]any{"keys": []string{"python3 -q", "Enter"}}))
	res = h.step(s, call("shell_send_keys", map[string]any{"keys": []string{"print(6*7)", "Enter"}, "wait": 0.5}),
		call("shell_view", nil))
	rs = results(t, res)
	if !strings.Contains(rs[0].Content, "42") || !strings.Contains(rs[1].Content, ">>>") {
		t.Errorf("terminal: %q / %q", rs[0].Content, rs[1].Content)
	}
	h.step(s, call("shell_send_keys", map[string]any{"keys": "C-d"}))

	// submit ends the episode; the verifier judges it; calls after submit
	// in the same step do not run.
	res = h.step(s, call("shell_exec", map[string]any{"command": "echo 42 > /app/answer.txt"}), submit,
		call("shell_exec", map[string]any{"command": "rm /app/answer.txt"}))
	rs = results(t, res)
	if !res.Terminated || res.Reward != 1 || !rs[2].IsError || !strings.Contains(rs[2].Content, "not run") {
		t.Errorf("submit: reward %v terminated %v results %+v", res.Reward, res.Terminated, rs)
	}
	v := h.verdict(s)
	if v["passed"] != 2.0 || v["total"] != 2.0 {
		t.Errorf("verifier info %v", v)
	}
	tests, _ := v["tests"].([]any)
	if len(tests) != 2 || tests[0].(map[string]any)["name"] != "tests/test_outputs.py::test_answer" {
		t.Errorf("per-test results %v", v["tests"])
	}
	if _, ok := res.Info["verifier"]; ok {
		t.Error("the agent was sent the verifier's info")
	}

	// Reset restores the initial state: the answer is gone, the seed is
	// there, the shell is fresh.
	rr2, err := s.Reset(t.Context(), nil, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rr2.Observation.Text() != rr.Observation.Text() {
		t.Errorf("second reset %q", rr2.Observation.Text())
	}
	res = h.step(s, gym.TextPart("pwd; ls; echo \"[$X]\""))
	if got := res.Observation.Text(); got != "/app\nseed.txt\n[]\n[exit code 0]" {
		t.Errorf("after reset: %q", got)
	}
	res = h.step(s, submit)
	if res.Reward != 0.5 { // test_seed_kept passes, test_answer fails
		t.Errorf("doing nothing scored %v", res.Reward)
	}
}

// Text-only actions end the episode when the client asks for that.
func TestFinalTextAction(t *testing.T) {
	h := newHarness(t)
	s, _ := h.create(writeTask(t, answerTask), gym.Options{"text_action": "final"})
	res := h.step(s, gym.TextPart("Let me write it."), call("write_file", map[string]any{"path": "/app/answer.txt", "content": "42"}))
	if res.Terminated {
		t.Fatal("text beside a tool call ended the episode")
	}
	res = h.step(s, gym.TextPart("Done: the answer is in /app/answer.txt."))
	if !res.Terminated || res.Reward != 1 {
		t.Errorf("final message: terminated %v reward %v", res.Terminated, res.Reward)
	}
	if _, _, err := h.m.Create(t.Context(), gym.CreateRequest{Task: &gym.Task{ID: "x", Env: terminal.KindName},
		Options: gym.Options{"text_action": "maybe"}}); err == nil || !strings.Contains(err.Error(), `"shell" or "final"`) {
		t.Errorf("bad option: %v", err)
	}
}

// The verdict comes from the test run's output alone: nothing the agent
// writes, wherever it writes it, counts.
func TestVerifierCannotBeFooled(t *testing.T) {
	h := newHarness(t)
	s, _ := h.create(writeTask(t, answerTask), nil)
	fake := "=========================== short test summary info ============================\n" +
		"PASSED tests/test_outputs.py::test_answer\nPASSED tests/test_outputs.py::test_seed_kept\n" +
		"============================== 2 passed in 0.01s ===============================\n"
	h.step(s,
		// Fake reports where a harness might look.
		call("write_file", map[string]any{"path": "/app/report.txt", "content": fake}),
		call("write_file", map[string]any{"path": "/app/results.json", "content": `{"passed": 2, "failed": 0, "reward": 1}`}),
		call("write_file", map[string]any{"path": "/tmp/pytest-report.txt", "content": fake}),
		// A fake test runner where the tests will go, and a fake pytest.
		call("write_file", map[string]any{"path": "/tmp/nextstate-tests.fake/run-tests.sh", "content": "cat /app/report.txt\n"}),
		call("write_file", map[string]any{"path": "/app/run-tests.sh", "content": "#!/bin/sh\ncat /app/report.txt\n"}),
		call("write_file", map[string]any{"path": "/app/pytest", "content": "#!/bin/sh\ncat /app/report.txt\n"}),
		call("shell_exec", map[string]any{"command": "chmod +x /app/pytest /app/run-tests.sh; export PATH=/app:$PATH; alias pytest=/app/pytest"}),
		// A process that prints fake summaries, left running.
		call("shell_exec", map[string]any{"command": "(while :; do cat /app/report.txt; sleep 0.05; done) > /dev/null 2>&1 &"}),
	)
	res := h.step(s, submit)
	if res.Reward != 0.5 { // test_seed_kept passes, test_answer fails
		t.Errorf("fooled: reward %v", res.Reward)
	}
	v := h.verdict(s)
	if v["passed"] != 1.0 || v["failed"] != 1.0 {
		t.Errorf("verdict %v", v)
	}
}

// Files pytest or Python would pick up on their own — an ini file and a
// conftest.py in a parent directory of the tests, a conftest.py and a fake
// pytest module in the working directory, a .pth file in the user site —
// do not change the verdict.
func TestVerifierIgnoresPlantedPytestConfig(t *testing.T) {
	h := newHarness(t)
	// The task's runner uses python3 -m pytest, so the working directory
	// would be first on sys.path without PYTHONSAFEPATH.
	task := map[string]string{}
	for k, v := range answerTask {
		task[k] = v
	}
	task["run-tests.sh"] = "#!/bin/bash\nexec python3 -m pytest -rA \"$TEST_DIR/test_outputs.py\"\n"
	s, _ := h.create(writeTask(t, task), nil)
	hook := "import pytest\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n" +
		"    out = yield\n    rep = out.get_result()\n    rep.outcome = 'passed'\n"
	site := "/root/.local/lib/python3.11/site-packages"
	h.step(s,
		call("write_file", map[string]any{"path": "/tmp/pytest.ini", "content": "[pytest]\naddopts = -p conftest_cheat\n"}),
		call("write_file", map[string]any{"path": "/tmp/conftest.py", "content": hook}),
		call("write_file", map[string]any{"path": "/app/conftest.py", "content": hook}),
		call("write_file", map[string]any{"path": "/app/pytest.py", "content": "print('PASSED tests/test_outputs.py::test_answer')\n"}),
		call("shell_exec", map[string]any{"command": "mkdir -p " + site + " && echo 'import os' > " + site + "/cheat.pth"}),
	)
	res := h.step(s, submit)
	if res.Reward != 0.5 { // test_seed_kept passes, test_answer fails
		t.Errorf("fooled by planted pytest files: reward %v, verdict %v", res.Reward, h.verdict(s))
	}
}

// A sandbox killed from outside mid-episode fails the step as the
// infrastructure's fault, and the session closes with that reason.
func TestKilledSandboxIsInfraFailure(t *testing.T) {
	h := newHarness(t)
	s, _ := h.create(writeTask(t, answerTask), nil)
	h.step(s, gym.TextPart("echo alive"))
	killed := 0
	// Every bwrap sandbox of this test keeps its process tree's pid in its
	// state directory.
	pids, _ := filepath.Glob(filepath.Join(h.dir, "*", "pid"))
	for _, p := range pids {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		var pf struct {
			PGID int `json:"pgid"`
			PID1 int `json:"pid1"`
		}
		if json.Unmarshal(b, &pf) == nil && pf.PID1 > 0 {
			// The PID namespace dies with its pid 1.
			if syscall.Kill(pf.PID1, syscall.SIGKILL) == nil {
				killed++
			}
			syscall.Kill(-pf.PGID, syscall.SIGKILL)
			// Wait until it is gone: the kill is asynchronous.
			deadline := time.Now().Add(time.Minute)
			for syscall.Kill(pf.PID1, 0) == nil && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
		}
	}
	if killed == 0 {
		t.Fatalf("found no sandbox to kill in %s (%v)", h.dir, pids)
	}
	var res gym.StepResult
	var err error
	// The shell notices at once or at the next command.
	for i := 0; i < 3; i++ {
		res, err = s.Step(t.Context(), "", gym.TextAction("echo still alive?"))
		if err != nil || res.Failure != nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("step: %v", err)
	}
	if res.Failure == nil || res.Failure.Fault != gym.FaultInfra || !res.Truncated {
		t.Fatalf("want an infra failure, got %+v (observation %q)", res, res.Observation.Text())
	}
	if res.Failure.Reason != "sandbox_died" {
		t.Errorf("reason %q: %s", res.Failure.Reason, res.Failure.Message)
	}
	evs := h.mem.Session(s.ID)
	last := evs[len(evs)-1]
	if last.Type != gym.EventSessionClosed || last.Reason != gym.CloseInfra {
		t.Errorf("last event %+v", last)
	}
	// The kind carries on: a new session works.
	s2, _ := h.create(writeTask(t, answerTask), nil)
	if got := h.step(s2, gym.TextPart("echo ok")).Observation.Text(); got != "ok\n[exit code 0]" {
		t.Errorf("new session: %q", got)
	}
}

// A test run that outlives the task's test timeout scores what it printed:
// nothing, so 0, with the timeout in the info. The run would sleep for
// longer than the step may take (10 min): one not cut at its timeout would
// end the step truncated, not terminated.
func TestTestTimeout(t *testing.T) {
	h := newHarness(t)
	files := map[string]string{}
	for k, v := range answerTask {
		files[k] = v
	}
	files["task.yaml"] = "instruction: wait\nmax_test_timeout_sec: 1\n"
	files["run-tests.sh"] = "#!/bin/bash\nsleep 86400\n"
	s, _ := h.create(writeTask(t, files), nil)
	res := h.step(s, submit)
	if res.Reward != 0 || !res.Terminated {
		t.Errorf("reward %v terminated %v: the test run was not cut at its timeout", res.Reward, res.Terminated)
	}
	if v := h.verdict(s); v["timed_out"] != true {
		t.Errorf("verdict %v", v)
	}
}

// The oracle actions of a solution.yaml drive the terminal.
func TestOracleActions(t *testing.T) {
	files := map[string]string{}
	for k, v := range answerTask {
		files[k] = v
	}
	delete(files, "solution.sh")
	files["solution.yaml"] = "- command: cat > /app/answer.txt\n  append_enter: true\n  min_timeout_sec: 0.3\n" +
		"- command: '42'\n  append_enter: true\n- command: C-d\n- command: test -s /app/answer.txt\n  block: true\n"
	task := writeTask(t, files)
	acts, err := terminal.OracleActions(&task)
	if err != nil {
		t.Fatal(err)
	}
	if len(acts) != 5 {
		t.Fatalf("%d actions", len(acts))
	}
	first := acts[0].Parts[0].ToolCall.Function
	if first.Name != "shell_send_keys" || first.Arguments != `{"keys":["cat \u003e /app/answer.txt","Enter"],"wait":0.3}` {
		t.Errorf("first %+v", first)
	}
	if f := acts[3].Parts[0].ToolCall.Function; f.Name != "shell_exec" {
		t.Errorf("block command %+v", f)
	}
	h := newHarness(t)
	v := terminal.NewValidator(gym.Settings{"sandbox": "bwrap", "sandbox.dir": h.dir})
	defer v.Close(context.Background())
	if r := v.Validate(t.Context(), &task); !r.OK {
		t.Errorf("validate: %+v", r)
	}
	// A task whose oracle fails, and one that passes doing nothing, are
	// reported.
	files["solution.yaml"] = "- echo 41 > /app/answer.txt\n"
	bad := writeTask(t, files)
	if r := v.Validate(t.Context(), &bad); r.OK || r.Oracle != 0.5 || !strings.Contains(r.Err, "oracle solution scores 0.50") {
		t.Errorf("bad oracle: %+v", r)
	}
	files["tests/test_outputs.py"] = "def test_nothing():\n    pass\n"
	easy := writeTask(t, files)
	if r := v.Validate(t.Context(), &easy); r.OK || r.Err != "doing nothing passes the tests" {
		t.Errorf("trivial task: %+v", r)
	}
}

// Setup under bwrap: WORKDIR, ENV, COPY and RUN of the Dockerfile.
func TestBwrapSetup(t *testing.T) {
	h := newHarness(t)
	files := map[string]string{
		"task.yaml":    "instruction: look\n",
		"Dockerfile":   "FROM ghcr.io/example/image:latest AS base\nRUN exit 1\nFROM ubuntu:24.04\nARG NAME=world\nENV GREETING=\"hello ${NAME}\" PATH=/app/bin:$PATH\nWORKDIR /app\nCOPY data/ data/\nCOPY one.txt renamed.txt\nCOPY *.cfg conf/\nWORKDIR sub\nRUN echo \"$GREETING from $(pwd)\" > made.txt && mkdir -p /app/bin && printf '#!/bin/sh\\necho tool\\n' > /app/bin/tool && chmod +x /app/bin/tool\nWORKDIR /app\n",
		"data/a/b.txt": "b\n",
		"one.txt":      "1\n",
		"x.cfg":        "x\n",
		"y.cfg":        "y\n",
	}
	s, _ := h.create(writeTask(t, files), nil)
	got := h.step(s, gym.TextPart("pwd; cat data/a/b.txt renamed.txt conf/x.cfg conf/y.cfg sub/made.txt; echo $GREETING; tool")).Observation.Text()
	want := "/app\nb\n1\nx\ny\nhello world from /app/sub\nhello world\ntool\n[exit code 0]"
	if got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
	// COPY of the whole folder leaves out the tests, the runner and the oracle.
	files2 := map[string]string{}
	for k, v := range answerTask {
		files2[k] = v
	}
	files2["Dockerfile"] = "FROM x\nWORKDIR /app\nCOPY . /app/all/\n"
	s2, _ := h.create(writeTask(t, files2), nil)
	if got := h.step(s2, gym.TextPart("ls -A /app/all")).Observation.Text(); got != "seed.txt\n[exit code 0]" {
		t.Errorf("COPY . copied %q", got)
	}
	// A RUN step that fails (package installs on the read-only root) is
	// a build error that says so.
	files["Dockerfile"] = "FROM debian\nRUN touch /usr/bin/x\n"
	task := writeTask(t, files)
	_, _, err := h.m.Create(t.Context(), gym.CreateRequest{Task: &task})
	var fe *gym.FaultError
	if !errors.As(err, &fe) || fe.Fault != gym.FaultInfra || fe.Reason != "task_build" || !strings.Contains(err.Error(), "--sandbox docker") {
		t.Errorf("failing RUN: %v", err)
	}
}

// Many steps on many sessions at once do not mix up their shells.
func TestConcurrentSessions(t *testing.T) {
	h := newHarness(t)
	task := writeTask(t, answerTask)
	const n = 6
	errs := make(chan error, n)
	for i := range n {
		go func() {
			s, _, err := h.m.Create(context.Background(), gym.CreateRequest{Task: &task})
			if err != nil {
				errs <- err
				return
			}
			defer s.Close(context.Background())
			for j := range 5 {
				res, err := s.Step(context.Background(), "", gym.TextAction(fmt.Sprintf("echo %d-%d", i, j)))
				if err != nil {
					errs <- err
					return
				}
				if got := res.Observation.Text(); got != strconv.Itoa(i)+"-"+strconv.Itoa(j)+"\n[exit code 0]" {
					errs <- fmt.Errorf("session %d step %d: %q", i, j, got)
					return
				}
			}
			errs <- nil
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

package code_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/nextstate-rl/nextstate/envs/toolcall/code"
	"github.com/nextstate-rl/nextstate/gym"
	"github.com/nextstate-rl/nextstate/gym/gymtest"
)

func TestConformance(t *testing.T) {
	needBwrap(t)
	smoke := code.SmokeTasks()
	session := problemTask("session", "What is 6 * 7?", "42")
	session.Data, _ = json.Marshal(code.TaskData{Problem: "What is 6 * 7?", Mode: code.ModeSession})
	gymtest.CheckKind(t, code.KindName,
		// Stateless: a call, then the final answer.
		gymtest.Case{Task: &smoke[0], Seed: 1, Actions: []gym.Action{
			{Parts: []gym.Part{call("print(2 ** 10)"), call("1/0")}},
			gym.TextAction(`The answer is \boxed{1024}.`),
		}},
		// Session mode (the task asks for it): state carries over; bad
		// calls are is_error results; a message without \boxed{} is
		// answered by a reminder.
		gymtest.Case{Task: &session, Seed: 2, Actions: []gym.Action{
			{Parts: []gym.Part{call("x = 6"), call("x * 7")}},
			{Parts: []gym.Part{rawCall(code.ToolCode, `{}`), rawCall(code.ToolCode, `{"code": 7}`), rawCall("python", `{"code": "1"}`)}},
			gym.TextAction("I think it is 42"),
			gym.TextAction(`\boxed{42}`),
		}},
	)
}

// A variable survives between calls in session mode only.
func TestStatelessVsSession(t *testing.T) {
	h := newHarness(t, needBwrap(t))
	for _, mode := range []string{code.ModeStateless, code.ModeSession} {
		t.Run(mode, func(t *testing.T) {
			s, rr := h.create(t, sumTask, gym.Options{"mode": mode})
			defer s.Close(t.Context())
			tools, _ := json.Marshal(rr.Info["tools"])
			if !strings.Contains(string(tools), code.ToolCode) {
				t.Errorf("reset info tools: %s", tools)
			}
			if r := h.run(t, s, "secret = 41\nprint('set')"); r.Content != "set\n" || r.IsError {
				t.Fatalf("first call: %+v", r)
			}
			r := h.run(t, s, "print(secret + 1)")
			if mode == code.ModeSession {
				if r.Content != "42\n" {
					t.Errorf("session: the variable did not survive: %q", r.Content)
				}
			} else if !strings.Contains(r.Content, "NameError: name 'secret' is not defined") || r.IsError {
				t.Errorf("stateless: want a NameError traceback as the result, got %+v", r)
			}
			// A final expression is shown, as in a notebook; None is not.
			if r := h.run(t, s, "import math\nmath.comb(10, 3)"); r.Content != "120\n" {
				t.Errorf("final expression: %q", r.Content)
			}
			if r := h.run(t, s, "None"); r.Content != "(no output)" {
				t.Errorf("no output: %q", r.Content)
			}
			// stdout and stderr keep their order.
			if r := h.run(t, s, "import sys\nprint('a')\nprint('b', file=sys.stderr)\nprint('c')"); r.Content != "a\nb\nc\n" {
				t.Errorf("merged output: %q", r.Content)
			}
		})
	}
}

// Bad Python is a result, not an error: the traceback shows the cell's
// lines and none of the driver's.
func TestTraceback(t *testing.T) {
	h := newHarness(t, needBwrap(t))
	for _, mode := range []string{code.ModeStateless, code.ModeSession} {
		t.Run(mode, func(t *testing.T) {
			s, _ := h.create(t, sumTask, gym.Options{"mode": mode})
			defer s.Close(t.Context())
			r := h.run(t, s, "def f(x):\n    return x / 0\n\nprint('before')\nf(1)")
			for _, want := range []string{"before\n", "Traceback (most recent call last):", `File "<cell `, "return x / 0", "ZeroDivisionError: division by zero"} {
				if !strings.Contains(r.Content, want) {
					t.Errorf("traceback lacks %q:\n%s", want, r.Content)
				}
			}
			if r.IsError || strings.Contains(r.Content, "run_cell") || strings.Contains(r.Content, "<string>") {
				t.Errorf("result %+v: want no error flag and no driver frame", r)
			}
			r = h.run(t, s, "x = (1,")
			if !strings.Contains(r.Content, "SyntaxError") || strings.Contains(r.Content, "Traceback") {
				t.Errorf("syntax error: %q", r.Content)
			}
			r = h.run(t, s, "import sys\nsys.exit(3)")
			if !strings.Contains(r.Content, "SystemExit: 3") {
				t.Errorf("sys.exit: %q", r.Content)
			}
			if r := h.run(t, s, "print('still here')"); r.Content != "still here\n" {
				t.Errorf("after sys.exit: %q", r.Content)
			}
		})
	}
}

// A cell past its timeout is killed and says so; in session mode the
// interpreter is restarted and its state is gone.
func TestTimeout(t *testing.T) {
	h := newHarness(t, needBwrap(t))
	for _, mode := range []string{code.ModeStateless, code.ModeSession} {
		t.Run(mode, func(t *testing.T) {
			s, _ := h.create(t, sumTask, gym.Options{"mode": mode, "timeout": 1})
			defer s.Close(t.Context())
			h.run(t, s, "kept = 1")
			r := h.run(t, s, "print('started', flush=True)\nwhile True:\n    pass")
			if !strings.HasPrefix(r.Content, "started\n") || !strings.Contains(r.Content, "[timed out after 1s") || r.IsError {
				t.Fatalf("timeout: %+v", r)
			}
			if mode == code.ModeSession && !strings.Contains(r.Content, "restarted") {
				t.Errorf("session timeout does not say the interpreter was restarted: %q", r.Content)
			}
			r = h.run(t, s, "print(globals().get('kept'))")
			if r.Content != "None\n" {
				t.Errorf("after the timeout: %q; want the state gone (None)", r.Content)
			}
			if r := h.run(t, s, "kept = 2\nprint(kept)"); r.Content != "2\n" {
				t.Errorf("after the timeout the interpreter does not work: %q", r.Content)
			}
		})
	}
}

// Output over the cap is cut in the middle, with the marker.
func TestOutputCap(t *testing.T) {
	h := newHarness(t, needBwrap(t))
	for _, mode := range []string{code.ModeStateless, code.ModeSession} {
		t.Run(mode, func(t *testing.T) {
			s, _ := h.create(t, sumTask, gym.Options{"mode": mode})
			defer s.Close(t.Context())
			r := h.run(t, s, "print('HEAD')\nfor i in range(20000):\n    print(i)\nprint('TAIL')")
			if len(r.Content) > code.MaxOutput+100 || !strings.HasPrefix(r.Content, "HEAD\n") || !strings.HasSuffix(r.Content, "TAIL\n") {
				t.Errorf("capped output: %d bytes, head %q, tail %q", len(r.Content), r.Content[:min(20, len(r.Content))], r.Content[max(0, len(r.Content)-20):])
			}
			if !strings.Contains(r.Content, "bytes truncated ...]") {
				t.Errorf("no truncation marker in %d bytes", len(r.Content))
			}
			// The interpreter is in step after a capped cell.
			if r := h.run(t, s, "print('next')"); r.Content != "next\n" {
				t.Errorf("after a capped cell: %q", r.Content)
			}
		})
	}
}

// The sandbox has no network.
func TestNoNetwork(t *testing.T) {
	h := newHarness(t, needBwrap(t))
	s, _ := h.create(t, sumTask, nil)
	defer s.Close(t.Context())
	r := h.run(t, s, "import socket\ntry:\n    socket.create_connection(('1.1.1.1', 53), timeout=3)\n    print('connected')\n"+
		"except OSError as e:\n    print('refused:', e)")
	if !strings.HasPrefix(r.Content, "refused:") {
		t.Errorf("network: %q", r.Content)
	}
}

// Allocating 2 GiB fails under the 512 MiB limit: a MemoryError, or the
// kernel kills the process and the result says so.
func TestMemoryCap(t *testing.T) {
	h := newHarness(t, needBwrap(t))
	for _, mode := range []string{code.ModeStateless, code.ModeSession} {
		t.Run(mode, func(t *testing.T) {
			s, _ := h.create(t, sumTask, gym.Options{"mode": mode})
			defer s.Close(t.Context())
			r := h.run(t, s, "b = bytearray(2 << 30)\nprint('allocated', len(b))")
			if strings.Contains(r.Content, "allocated") {
				t.Fatalf("2 GiB allocated under a 512 MiB limit: %q", r.Content)
			}
			if !strings.Contains(r.Content, "MemoryError") && !strings.Contains(r.Content, "may have run out of memory") {
				t.Errorf("memory: %q", r.Content)
			}
			if r := h.run(t, s, "print('ok')"); r.Content != "ok\n" {
				t.Errorf("after the memory error: %q", r.Content)
			}
		})
	}
}

// Calls that do not fit the tool's schema are is_error results that say
// what the tool takes; the episode goes on.
func TestToolErrors(t *testing.T) {
	h := newHarness(t, needBwrap(t))
	s, _ := h.create(t, sumTask, nil)
	defer s.Close(t.Context())
	res := h.step(t, s,
		rawCall(code.ToolCode, `{}`),
		rawCall(code.ToolCode, `{"code": 12}`),
		rawCall(code.ToolCode, `{"code": ""}`),
		rawCall(code.ToolCode, `not json`),
		rawCall("run_python", `{"code": "1"}`),
		call("print('fine')"),
	)
	rs := results(t, res)
	if len(rs) != 6 {
		t.Fatalf("%d results", len(rs))
	}
	for i, r := range rs[:5] {
		if !r.IsError || !strings.Contains(r.Content, "code_interpreter") {
			t.Errorf("call %d: %+v; want an is_error result that names the tool", i, r)
		}
	}
	if !strings.Contains(rs[0].Content, "code") || !strings.Contains(rs[1].Content, "string") {
		t.Errorf("missing code / wrong type: %q, %q", rs[0].Content, rs[1].Content)
	}
	if rs[5].IsError || rs[5].Content != "fine\n" {
		t.Errorf("a good call beside bad ones: %+v", rs[5])
	}
	if n, _ := res.Info["tool_errors_total"].(int); n != 5 && fmt.Sprint(res.Info["tool_errors_total"]) != "5" {
		t.Errorf("tool_errors_total %v, want 5", res.Info["tool_errors_total"])
	}
	if res.Terminated || res.Truncated {
		t.Errorf("bad calls ended the episode: %+v", res.Transition)
	}
}

// The final message ends the episode; the reward is whether its last
// \boxed{} is the reference, and the verifier's info says why.
func TestFinalAnswer(t *testing.T) {
	h := newHarness(t, needBwrap(t))
	cases := []struct {
		message string
		opts    gym.Options
		reward  float64
		reason  string
	}{
		{`So the sum is \boxed{5050}.`, nil, 1, "equal as exact numbers"},
		{`First guess \boxed{5000}, but actually \boxed{5,050}`, nil, 1, "equal as exact numbers"},
		{`\boxed{5051}`, nil, 0, "different numbers"},
		{`\boxed{fifty}`, nil, 0, "not a number"},
		{`The answer is 5050.`, gym.Options{"text_action": "final"}, 0, `no \boxed{...}`},
	}
	for _, c := range cases {
		s, _ := h.create(t, sumTask, c.opts)
		res := h.step(t, s, gym.TextPart(c.message))
		if !res.Terminated || res.Reward != c.reward {
			t.Errorf("%q: terminated %v reward %v; want terminated, reward %v", c.message, res.Terminated, res.Reward, c.reward)
		}
		v := h.verdict(s)
		if reason, _ := v["reason"].(string); !strings.Contains(reason, c.reason) || v["expected"] != "5050" {
			t.Errorf("%q: verdict %v; want a reason with %q and expected 5050", c.message, v, c.reason)
		}
		s.Close(t.Context())
	}
	// Without \boxed{}, a message is answered by a reminder and the
	// episode goes on.
	s, _ := h.create(t, sumTask, nil)
	defer s.Close(t.Context())
	res := h.step(t, s, gym.TextPart("Let me think."))
	if res.Terminated || !strings.Contains(res.Observation.Text(), `\boxed{...}`) {
		t.Errorf("a message without an answer: %+v", res)
	}
}

// Bad reset options are the agent's fault, a task without an answer the
// task's (the infrastructure's); both say what is accepted.
func TestBadOptionsAndTasks(t *testing.T) {
	h := newHarness(t, needBwrap(t))
	for _, opts := range []gym.Options{{"mode": "jupyter"}, {"timeout": 0.5}, {"timeout": "10"}, {"text_action": "shell"}} {
		_, _, err := h.m.Create(t.Context(), gym.CreateRequest{Task: &sumTask, Options: opts})
		var fe *gym.FaultError
		if !errors.As(err, &fe) || fe.Fault != gym.FaultAgent || !strings.Contains(err.Error(), "want") {
			t.Errorf("options %v: %v; want an agent fault that says what is accepted", opts, err)
		}
	}
	noAnswer := gym.Task{ID: "no-answer", Env: code.KindName, Instruction: "What is 2 + 2?"}
	badMode := sumTask
	badMode.Data = json.RawMessage(`{"problem": "x", "mode": "repl"}`)
	for _, task := range []gym.Task{noAnswer, badMode} {
		_, _, err := h.m.Create(t.Context(), gym.CreateRequest{Task: &task})
		var fe *gym.FaultError
		if !errors.As(err, &fe) || fe.Fault != gym.FaultInfra || fe.Reason != "bad_task" {
			t.Errorf("task %s: %v; want a bad_task fault", task.ID, err)
		}
	}
}

// The oracle reaches reward 1 on every smoke task through a gym session.
func TestOracleSmokeTasks(t *testing.T) {
	h := newHarness(t, needBwrap(t))
	tasks := code.SmokeTasks()
	if len(tasks) != 5 {
		t.Errorf("%d smoke tasks, want 5", len(tasks))
	}
	cats := map[string]int{}
	for _, task := range tasks {
		cats[task.Labels["category"]]++
		s, last := playOracle(t, h, task)
		if !last.Terminated || last.Reward != 1 {
			t.Errorf("%s: oracle got reward %v (terminated %v): %v", task.ID, last.Reward, last.Terminated, h.verdict(s))
		}
		s.Close(t.Context())
	}
	if len(cats) != 3 {
		t.Errorf("smoke tasks cover categories %v, want all three", cats)
	}
	if _, err := gym.OracleFor(&sumTask); err != nil {
		t.Error(err)
	}
	noSolution := problemTask("x", "p", "1")
	noSolution.Verifier = json.RawMessage(`{"answer": "1"}`)
	if _, err := gym.OracleFor(&noSolution); !errors.Is(err, gym.ErrNoOracle) {
		t.Errorf("a task without a solution: %v, want gym.ErrNoOracle", err)
	}
	badOracle := problemTask("x", "p", "1")
	badOracle.Verifier = json.RawMessage(`{"answer": "1", "oracle": "guess"}`)
	if _, err := gym.OracleFor(&badOracle); err == nil || !strings.Contains(err.Error(), "want solution") {
		t.Errorf("verifier.oracle guess: %v, want an error naming what is accepted", err)
	}
}

// The answer oracle replies with the reference at once, without the tool,
// and that reply scores 1.
func TestOracleAnswer(t *testing.T) {
	h := newHarness(t, needBwrap(t))
	task := problemTask("direct", "What is 51 + 29?", "80")
	task.Verifier = json.RawMessage(`{"answer": "80", "oracle": "answer"}`)
	o, err := gym.OracleFor(&task)
	if err != nil {
		t.Fatal(err)
	}
	s, rr := h.create(t, task, nil)
	defer s.Close(t.Context())
	a, done, err := o.Next(rr.Observation, rr.Info)
	if err != nil || done || len(a.Parts) != 1 || a.Parts[0].Type != gym.PartText {
		t.Fatalf("first action %+v (done %v, %v), want one text reply", a, done, err)
	}
	last := h.step(t, s, a.Parts...)
	if !last.Terminated || last.Reward != 1 {
		t.Errorf("the answer oracle got reward %v (terminated %v): %v", last.Reward, last.Terminated, h.verdict(s))
	}
}

// After a session closes, its sandbox is gone: its state directory, and
// every process in it (the persistent interpreter's too).
func TestCloseLeavesNothing(t *testing.T) {
	settings := needBwrap(t)
	h := newHarness(t, settings)
	for _, mode := range []string{code.ModeStateless, code.ModeSession} {
		t.Run(mode, func(t *testing.T) {
			s, _ := h.create(t, sumTask, gym.Options{"mode": mode})
			h.run(t, s, "import subprocess\nsubprocess.Popen(['sleep', '600'])\nprint('spawned')")
			dirs := stateDirs(t, settings["sandbox.dir"])
			if len(dirs) != 1 {
				t.Fatalf("%d sandboxes while the session runs, want 1: %v", len(dirs), dirs)
			}
			pid := sandboxPID(t, dirs[0])
			if !alive(pid) {
				t.Fatalf("the sandbox's pid %d does not run", pid)
			}
			if err := s.Close(t.Context()); err != nil {
				t.Fatal(err)
			}
			if left := stateDirs(t, settings["sandbox.dir"]); len(left) != 0 {
				t.Errorf("state directories left after Close: %v", left)
			}
			if alive(pid) {
				t.Errorf("the sandbox's pid %d runs after Close", pid)
			}
		})
	}
}

func stateDirs(t testing.TB, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	return out
}

func sandboxPID(t testing.TB, state string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(state, "pid"))
	if err != nil {
		t.Fatal(err)
	}
	var pf struct {
		PID1 int `json:"pid1"`
	}
	if err := json.Unmarshal(b, &pf); err != nil || pf.PID1 == 0 {
		t.Fatalf("pid file %s: %v", b, err)
	}
	return pf.PID1
}

func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || !strings.HasPrefix(strings.TrimSpace(s[i+1:]), "Z")
}

// A task's files are in the working directory before the first call, in
// both interpreter modes and after a restart of the Env; a path that
// leaves the working directory is refused when the task loads.
func TestTaskFiles(t *testing.T) {
	h := newHarness(t, needBwrap(t))
	for _, mode := range []string{code.ModeStateless, code.ModeSession} {
		data, _ := json.Marshal(code.TaskData{Problem: "What is the sum of the numbers in data.txt?", Mode: mode,
			Files: map[string]string{"data.txt": "12\n30\n", "in/more.txt": "x"}})
		ver, _ := json.Marshal(code.VerifierData{Answer: "42",
			Solution: "import os; assert os.path.exists('in/more.txt'); print(sum(int(x) for x in open('data.txt')))"})
		task := gym.Task{ID: "files-" + mode, Env: code.KindName, Data: data, Verifier: ver}
		s, last := playOracle(t, h, task)
		if !last.Terminated || last.Reward != 1 {
			t.Errorf("%s: the oracle reading the task's file got reward %v: %v", mode, last.Reward, h.verdict(s))
		}
		s.Close(t.Context())
	}
	for _, bad := range []string{"../x", "/etc/x", `a\b`} {
		data, _ := json.Marshal(code.TaskData{Problem: "p", Files: map[string]string{bad: "x"}})
		task := gym.Task{ID: "bad", Env: code.KindName, Data: data, Verifier: json.RawMessage(`{"answer": "1"}`)}
		_, _, err := h.m.Create(t.Context(), gym.CreateRequest{Task: &task})
		if err == nil || !strings.Contains(err.Error(), "not a relative path") {
			t.Errorf("file %q: %v, want the path refused", bad, err)
		}
	}
}

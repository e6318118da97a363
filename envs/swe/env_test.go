package swe_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nextstate-rl/nextstate/envs/swe"
	"github.com/nextstate-rl/nextstate/gym"
	"github.com/nextstate-rl/nextstate/gym/gymtest"
)

// settings are a manager's settings for swe-v1 in tests: bwrap in a
// directory of the test's, which is checked to be empty at the end.
func settings(t *testing.T) gym.Settings {
	t.Helper()
	openBackend(t, "bwrap") // skips when bwrap is unavailable
	dir := t.TempDir()
	t.Cleanup(func() {
		if left, _ := os.ReadDir(dir); len(left) > 0 {
			t.Errorf("sandboxes left behind in %s: %d entries", dir, len(left))
		}
	})
	return gym.Settings{"sandbox": "bwrap", "sandbox.dir": dir, swe.SettingWorkDir: filepath.Join(tmpRoot, "work"),
		swe.SettingGoModCache: goModCache(t)}
}

type harnessM struct {
	t   *testing.T
	m   *gym.Manager
	mem *gymtest.Memory
}

// newManager starts a manager that records into memory; it is shut down
// (closing every sandbox) before the test's cleanups check for leftovers.
// With a backend name, it uses that backend instead of bwrap.
func newManager(t *testing.T, backend ...string) *harnessM {
	s := settings(t)
	if len(backend) > 0 {
		openBackend(t, backend[0]) // skips when it is unavailable
		s["sandbox"] = backend[0]
	}
	mem := &gymtest.Memory{}
	h := &harnessM{t: t, mem: mem, m: gym.NewManager(gym.Config{Recorder: mem, Settings: s, Logger: slog.New(slog.DiscardHandler)})}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := h.m.Shutdown(ctx); err != nil {
			t.Error(err)
		}
	})
	return h
}

func (h *harnessM) create(task gym.Task) (*gym.Session, gym.ResetResult) {
	h.t.Helper()
	s, res, err := h.m.Create(h.t.Context(), gym.CreateRequest{Task: &task})
	if err != nil {
		h.t.Fatal(err)
	}
	return s, res
}

func (h *harnessM) step(s *gym.Session, parts ...gym.Part) gym.StepResult {
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

// verdict is the verifier's info recorded for session s.
func (h *harnessM) verdict(s *gym.Session) map[string]any {
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

func edit(args map[string]any) gym.Part { return call(swe.ToolEditor, args) }

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

var submit = call(swe.ToolSubmit, map[string]any{})

func task(t *testing.T, which, id string) gym.Task {
	t.Helper()
	in := instance(t, which, id)
	task, err := in.Task()
	if err != nil {
		t.Fatal(err)
	}
	return task
}

func TestConformance(t *testing.T) {
	// A manager of this test's configures the kind first, so the
	// checker's managers share its settings (the kind is one per process).
	h := newManager(t)
	py := task(t, "python", "local__inventory-1")
	s, _ := h.create(py)
	defer s.Close(context.Background())
	gymtest.CheckKind(t, swe.KindName,
		gymtest.Case{Task: &py, Seed: 1, Actions: []gym.Action{
			gym.TextAction("cd inventory && export X=1 && pwd"),
			{Parts: []gym.Part{
				call(swe.ToolExec, map[string]any{"command": "echo $X; ls"}),
				edit(map[string]any{"command": "view", "path": "/testbed/inventory/store.py", "view_range": []int{1, 4}}),
				edit(map[string]any{"command": "str_replace", "path": "/testbed/inventory/store.py", "old_str": "count", "new_str": "n"}),
				call("no_such_tool", map[string]any{}),
			}},
			{Parts: []gym.Part{submit}},
		}},
		gymtest.Case{Task: &py, Seed: 2, Actions: []gym.Action{gym.TextAction("git status --short"), gym.TextAction("true")}},
	)
}

// The agent's sandbox holds the repository at its base commit, with one
// commit of history, and neither the gold patch nor the test patch.
func TestAgentSandboxHidesTheAnswer(t *testing.T) {
	h := newManager(t)
	tk := task(t, "python", "local__textutil-1")
	s, rr := h.create(tk)
	if !strings.Contains(rr.Observation.Text(), "slugify keeps punctuation") || rr.Info["workdir"] != swe.Workdir ||
		rr.Info["language"] != "python" {
		t.Errorf("reset: %q %v", rr.Observation.Text(), rr.Info)
	}
	if tools, ok := rr.Info["tools"].([]map[string]any); !ok || len(tools) != 3 {
		t.Errorf("reset info tools: %v", rr.Info["tools"])
	}
	res := h.step(s, call(swe.ToolExec, map[string]any{"command": "git log --oneline | wc -l; git status --short | wc -l; " +
		"grep -rl test_slugify_punctuation /testbed /tmp /root 2>/dev/null | wc -l; grep -c 're.findall' textutil/core.py"}))
	if got := results(t, res)[0].Content; got != "1\n0\n0\n0\n[exit code 1]" {
		t.Errorf("the agent's sandbox: %q", got)
	}
}

// A Go instance's sandbox has the toolchain and the module cache,
// read-only, no network, and none of the module cache's copies of the
// repository's own module (another version may hold the fix).
func TestAgentSandboxGo(t *testing.T) {
	h := newManager(t)
	mod := goModCache(t)
	for name, body := range map[string]string{
		"example.com/intmath@v0.2.0/intmath.go":            "// FIXED version\n",
		"cache/download/example.com/intmath/@v/v0.2.0.zip": "FIXED zip\n",
		"example.com/other@v1.0.0/other.go":                "package other\n",
		"cache/download/example.com/other/@v/v1.0.0.mod":   "module example.com/other\n",
	} {
		p := filepath.Join(mod, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s, rr := h.create(task(t, "go", "local__intmath-1"))
	defer s.Close(context.Background())
	if rr.Info["language"] != "go" {
		t.Errorf("reset info: %v", rr.Info)
	}
	res := h.step(s, call(swe.ToolExec, map[string]any{"command": "find /root/.cache/go-build -type f | wc -l | awk '$1 > 500 {print \"seeded\"}'; " +
		"ls -a /root/.cache/go-build | grep -c nextstate; cd /nextstate/gomod; " +
		"find example.com/intmath@v0.2.0 cache/download/example.com/intmath -type f | wc -l; ls example.com/other@v1.0.0; " +
		"grep -r FIXED . 2>/dev/null | wc -l; touch x 2>/dev/null || echo read-only; cd /testbed; " +
		"go env GOPROXY GOFLAGS GOTOOLCHAIN; go vet ./... && go test ./strs 2>&1 | grep -c '^ok'"}))
	want := "seeded\n0\n0\nother.go\n0\nread-only\noff\n-mod=mod -buildvcs=false\nlocal\n1\n[exit code 0]"
	if got := results(t, res)[0].Content; got != want {
		t.Errorf("the Go sandbox: %q, want %q", got, want)
	}
}

// An episode: the agent fixes the bug with the editor, submits, and the
// verifier resolves it; a second episode that only edits the tests is not.
func TestEpisodeResolves(t *testing.T) {
	h := newManager(t)
	tk := task(t, "python", "local__inventory-1")
	s, _ := h.create(tk)
	res := h.step(s,
		edit(map[string]any{"command": "str_replace", "path": "/testbed/inventory/store.py",
			"old_str": "        self._stock[name] = self._stock.get(name, 0) - count",
			"new_str": "        have = self._stock.get(name, 0)\n        if count > have:\n" +
				"            raise ValueError(f\"cannot remove {count} {name}: only {have} in stock\")\n        self._stock[name] = have - count"}),
		edit(map[string]any{"command": "create", "path": "/testbed/NOTES.md", "file_text": "fixed remove\n"}),
		call(swe.ToolExec, map[string]any{"command": "python3 -m pytest -q -p no:cacheprovider tests 2>&1 | tail -1"}),
	)
	rs := results(t, res)
	if rs[0].IsError || !strings.Contains(rs[0].Content, "has been edited") || rs[1].IsError || !strings.Contains(rs[2].Content, "3 passed") {
		t.Fatalf("edits: %+v", rs)
	}
	res = h.step(s, submit)
	if !res.Terminated || res.Reward != 1 {
		t.Errorf("submit: terminated %v reward %v %v", res.Terminated, res.Reward, results(t, res))
	}
	if c := results(t, res)[0].Content; !strings.Contains(c, "a diff of 2 files (NOTES.md, inventory/store.py)") {
		t.Errorf("submit answer: %q", c)
	}
	v := h.verdict(s)
	if v["resolved"] != true || v["fail_to_pass_fraction"] != 1.0 || v["pass_to_pass_fraction"] != 1.0 ||
		!strings.Contains(v["model_patch"].(string), "+fixed remove") {
		t.Errorf("verdict: %v", v)
	}
	tests, _ := v["tests"].(map[string]any)
	if tests["tests/test_store.py::TestInventory::test_remove_more_than_stock"] != "pass" || len(tests) != 4 {
		t.Errorf("verdict tests: %v", tests)
	}

	// A new episode starts from the base commit again.
	rr, err := s.Reset(t.Context(), nil, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = rr
	res = h.step(s, call(swe.ToolExec, map[string]any{"command": "git status --short; cat NOTES.md"}))
	if c := results(t, res)[0].Content; !strings.Contains(c, "No such file") {
		t.Errorf("after reset: %q", c)
	}
	h.step(s, edit(map[string]any{"command": "insert", "path": "/testbed/tests/test_store.py", "insert_line": 0,
		"new_str": "import pytest\npytestmark = pytest.mark.skip\n"}))
	res = h.step(s, submit)
	if res.Reward != 0 {
		t.Errorf("a test-only edit: reward %v", res.Reward)
	}
	v = h.verdict(s)
	if v["resolved"] != false || v["error"] != swe.ErrorEmptyPatch || v["fault"] != "agent" {
		t.Errorf("a test-only edit: verdict %v", v)
	}
	s.Close(t.Context())
}

// The oracle (the gold patch through the tools) resolves every instance,
// on bwrap and on docker.
func TestOracle(t *testing.T) {
	for _, backend := range []string{"bwrap", "docker"} {
		t.Run(backend, func(t *testing.T) { testOracle(t, backend) })
	}
}

func testOracle(t *testing.T, backend string) {
	h := newManager(t, backend)
	for _, tk := range []gym.Task{task(t, "python", "local__stats-1"), task(t, "go", "local__intmath-1")} {
		o, err := gym.OracleFor(&tk)
		if err != nil {
			t.Fatal(err)
		}
		s, rr := h.create(tk)
		obs, info := rr.Observation, rr.Info
		var last gym.StepResult
		for range 5 {
			a, done, err := o.Next(obs, info)
			if err != nil {
				t.Fatal(err)
			}
			if done {
				break
			}
			last = h.step(s, a.Parts...)
			obs, info = last.Observation, last.Info
			if last.Terminated {
				break
			}
		}
		if !last.Terminated || last.Reward != 1 {
			t.Errorf("%s oracle: terminated %v reward %v; verdict %v", tk.ID, last.Terminated, last.Reward, h.verdict(s))
		}
		s.Close(t.Context())
	}
	// A task without the gold patch has no oracle.
	tk := task(t, "python", "local__stats-1")
	in, _ := swe.InstanceOf(&tk)
	in.Patch = ""
	bare, _ := in.Task()
	if _, err := gym.OracleFor(&bare); err == nil {
		t.Errorf("a task without a patch has an oracle")
	}
}

// Instances load as a suite: a directory holding instances.jsonl.
func TestSuiteFormat(t *testing.T) {
	instances(t, "python")
	dir := filepath.Join(tmpRoot, "instances-python")
	suite, err := gym.LoadSuite(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(suite.Tasks) != 3 {
		t.Fatalf("%d tasks", len(suite.Tasks))
	}
	for _, tk := range suite.Tasks {
		if tk.Env != swe.KindName || tk.Dir != dir || len(tk.Verifier) == 0 || tk.Split != "test" {
			t.Errorf("task %s: env %s dir %s split %s", tk.ID, tk.Env, tk.Dir, tk.Split)
		}
		pub := tk.Public()
		b, _ := json.Marshal(pub)
		if strings.Contains(string(b), "test_patch") || strings.Contains(string(b), "FAIL_TO_PASS") {
			t.Errorf("the public task holds verifier data: %s", b)
		}
		in, err := swe.InstanceOf(&tk)
		if err != nil || in.TestPatch == "" || len(in.FailToPass) == 0 || !filepath.IsAbs(in.Source) {
			t.Errorf("instance back from task %s: %+v %v", tk.ID, in, err)
		}
	}
}

package gym_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nextstate-rl/nextstate/gym"
)

// writeFiles writes name → content under a new temporary directory.
func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func ids(ts []gym.Task) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.ID)
	}
	slices.Sort(out)
	return out
}

func TestLoadSuiteDirectory(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"suite.yaml": "name: smoke\ndescription: a bit of everything\ntasks:\n  - id: from-suite\n    env: echo-v1\n",
		"one.json":   `{"id":"guess-small","env":"guess-v1","instruction":"guess","split":"test","data":{"low":1,"high":3},"limits":{"max_steps":4,"step_timeout":"2s"}}`,
		"list.yaml":  "- id: list-a\n  env: echo-v1\n  labels: {team: rl}\n- id: list-b\n  env: echo-v1\n  split: test\n",
		"lines.jsonl": `{"id":"line-1","env":"echo-v1"}` + "\n\n" +
			`{"id":"line-2","env":"guess-v1","data":{"low":1,"high":9},"verifier":{"hidden":true}}` + "\n",
		"term/task.yaml":    "env: echo-v1\ninstruction: make a file\n",
		"term/tests/run.sh": "exit 0\n",
		"named/task.json":   `{"id":"named-task","env":"echo-v1"}`,
		"empty/notes.txt":   "no task here",
		"README.md":         "# not a task",
	})
	s, err := gym.LoadSuite(dir)
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "smoke" || s.Description != "a bit of everything" {
		t.Errorf("name %q description %q", s.Name, s.Description)
	}
	want := []string{"from-suite", "guess-small", "line-1", "line-2", "list-a", "list-b", "named-task", "term"}
	if got := ids(s.Tasks); !slices.Equal(got, want) {
		t.Fatalf("tasks %v, want %v", got, want)
	}
	term, _ := s.Task("term")
	if term.Dir != filepath.Join(dir, "term") || term.Instruction != "make a file" {
		t.Errorf("term: Dir %q instruction %q", term.Dir, term.Instruction)
	}
	if named, _ := s.Task("named-task"); named.Dir != filepath.Join(dir, "named") {
		t.Errorf("named-task: Dir %q", named.Dir)
	}
	g, _ := s.Task("guess-small")
	if g.Limits.MaxSteps != 4 || g.Limits.StepTimeout != gym.Duration(2*time.Second) || string(g.Data) != `{"low":1,"high":3}` || g.Dir != "" {
		t.Errorf("guess-small: %+v", g)
	}
	if l, _ := s.Task("list-a"); l.Labels["team"] != "rl" {
		t.Errorf("list-a labels %v", l.Labels)
	}
	l2, _ := s.Task("line-2")
	if l2.Public().Verifier != nil || l2.Verifier == nil {
		t.Errorf("Public must strip only the copy's verifier inputs")
	}
	if got := s.Splits(); !slices.Equal(got, []string{"test", "train"}) {
		t.Errorf("splits %v", got)
	}
	if got := ids(s.Split("test")); !slices.Equal(got, []string{"guess-small", "list-b"}) {
		t.Errorf("test split %v", got)
	}
	if len(s.Split("")) != len(s.Tasks) || len(s.Split("train")) != 6 {
		t.Errorf("split sizes: all %d, train %d", len(s.Split("")), len(s.Split("train")))
	}
	if _, ok := s.Task("nope"); ok {
		t.Error("Task found a missing id")
	}
}

func TestLoadSuiteFiles(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"single.yaml": "id: only\nenv: echo-v1\n",
		"suite.json":  `{"name":"named","tasks":[{"id":"a","env":"echo-v1"},{"id":"b","env":"echo-v1"}]}`,
		"list.json":   `[{"id":"x","env":"echo-v1"}]`,
		"tasks.jsonl": `{"id":"j","env":"echo-v1"}`,
		// A task whose own data has a "tasks" key is still one task.
		"data.json": `{"id":"d","env":"echo-v1","data":{"tasks":["not","a","suite"]}}`,
	})
	for file, want := range map[string]struct {
		name string
		ids  []string
	}{
		"single.yaml": {"single", []string{"only"}},
		"suite.json":  {"named", []string{"a", "b"}},
		"list.json":   {"list", []string{"x"}},
		"tasks.jsonl": {"tasks", []string{"j"}},
		"data.json":   {"data", []string{"d"}},
	} {
		s, err := gym.LoadSuite(filepath.Join(dir, file))
		if err != nil {
			t.Errorf("%s: %v", file, err)
			continue
		}
		if s.Name != want.name || !slices.Equal(ids(s.Tasks), want.ids) {
			t.Errorf("%s: suite %q with %v, want %q with %v", file, s.Name, ids(s.Tasks), want.name, want.ids)
		}
	}
}

func TestLoadSuiteRejects(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
		says  []string
	}{
		{"unknown field", map[string]string{"t.json": `{"id":"t","env":"echo-v1","instructions":"typo"}`},
			[]string{"t.json", `unknown field "instructions"`}},
		{"unknown field in yaml", map[string]string{"t.yaml": "id: t\nenv: echo-v1\nlimit: {max_steps: 3}\n"},
			[]string{"t.yaml", `unknown field "limit"`}},
		{"unknown field in a subdirectory", map[string]string{"sub/task.yaml": "env: echo-v1\nverifer: {}\n"},
			[]string{"task.yaml", `unknown field "verifer"`}},
		{"unknown field in jsonl", map[string]string{"t.jsonl": `{"id":"a","env":"echo-v1"}` + "\n" + `{"id":"b","env":"echo-v1","x":1}`},
			[]string{"t.jsonl:2:", `unknown field "x"`}},
		{"duplicate ids", map[string]string{"a.json": `{"id":"same","env":"echo-v1"}`, "b.yaml": "id: same\nenv: echo-v1\n"},
			[]string{`task id "same" appears twice`}},
		{"reserved label", map[string]string{"t.json": `{"id":"t","env":"echo-v1","labels":{"nextstate.owner":"me"}}`},
			[]string{`task "t"`, `label "nextstate.owner"`, `reserved prefix "nextstate."`}},
		{"unknown kind", map[string]string{"t.json": `{"id":"t","env":"nope-v1"}`},
			[]string{`task "t"`, `unknown env kind "nope-v1"`, "registered: ", "echo-v1", "guess-v1"}},
		{"no id", map[string]string{"t.jsonl": `{"env":"echo-v1"}`}, []string{"task has no id"}},
		{"no env", map[string]string{"t.json": `[{"id":"t"}]`}, []string{`task "t" has no env kind`}},
		{"negative limits", map[string]string{"t.json": `{"id":"t","env":"echo-v1","limits":{"max_steps":-1}}`},
			[]string{"must not be negative"}},
		{"bad duration", map[string]string{"t.json": `{"id":"t","env":"echo-v1","limits":{"step_timeout":"soon"}}`},
			[]string{`duration "soon"`}},
		{"bad yaml", map[string]string{"t.yaml": "id: [unclosed\n"}, []string{"t.yaml", "not YAML"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := gym.LoadSuite(writeFiles(t, tc.files))
			if err == nil {
				t.Fatal("loaded")
			}
			for _, s := range tc.says {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not say %q", err, s)
				}
			}
		})
	}
	if _, err := gym.LoadSuite(filepath.Join(t.TempDir(), "missing")); !os.IsNotExist(err) {
		t.Errorf("missing path: %v", err)
	}
}

func TestCatalog(t *testing.T) {
	c := gym.NewCatalog()
	if tk, ok := c.Get("guess-v1", "guess-1-100"); !ok || tk.Env != "guess-v1" {
		t.Errorf("built-in guess-1-100: %+v, %v", tk, ok)
	}
	if _, ok := c.Get("echo-v1", "guess-1-100"); ok {
		t.Error("Get found a task under another kind")
	}
	if tk, ok := c.Get("", "echo-smoke"); !ok || tk.Env != "echo-v1" {
		t.Errorf("echo-smoke: %+v, %v", tk, ok)
	}
	if got := ids(c.List("guess-v1", "")); !slices.Equal(got, []string{"guess-1-100", "guess-1-1000", "guess-1-50"}) {
		t.Errorf("guess tasks %v", got)
	}
	if got := ids(c.List("guess-v1", "test")); !slices.Equal(got, []string{"guess-1-50"}) {
		t.Errorf("guess test split %v", got)
	}
	if got := c.List("", ""); !slices.IsSortedFunc(got, func(a, b gym.Task) int { return strings.Compare(a.ID, b.ID) }) {
		t.Errorf("List is not sorted by id")
	}

	s := &gym.Suite{Name: "mine", Tasks: []gym.Task{{ID: "m1", Env: "echo-v1"}, {ID: "m2", Env: "echo-v1", Split: "test"}}}
	if err := c.AddSuite(s); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Get("echo-v1", "m2"); !ok || len(c.Suites()) != 1 || len(c.List("echo-v1", "test")) != 1 {
		t.Errorf("after AddSuite: suites %d, echo test tasks %v", len(c.Suites()), ids(c.List("echo-v1", "test")))
	}
	dup := &gym.Suite{Name: "dup", Tasks: []gym.Task{{ID: "new", Env: "echo-v1"}, {ID: "m1", Env: "echo-v1"}}}
	if err := c.AddSuite(dup); err == nil || !strings.Contains(err.Error(), `"m1"`) {
		t.Errorf("duplicate id: %v", err)
	}
	if _, ok := c.Get("", "new"); ok || len(c.Suites()) != 1 {
		t.Error("a rejected suite was partly added")
	}

	// A manager resolves task ids through its catalog.
	m, _ := newManager(t, gym.Config{Tasks: c})
	if m.Tasks() != c {
		t.Error("Tasks() is not the configured catalog")
	}
	sess, rr, err := m.Create(t.Context(), gym.CreateRequest{TaskID: "m2"})
	if err != nil || sess.Kind != "echo-v1" || rr.Task != "m2" {
		t.Errorf("create from the catalog: %+v, %v", rr, err)
	}
}

package tau2

import (
	"os"
	"path/filepath"
	"testing"
)

// A folder is a tau2 domain's by its first task: the domain its
// instructions name, else the name of the folder if it is one of
// tau2-bench's domain folders.
func TestDomainOf(t *testing.T) {
	for _, c := range []struct {
		folder, tasks, name string
		ok                  bool
	}{
		{"x", `[{"id": 0, "user_scenario": {"instructions": {"domain": "airline", "reason_for_call": "r", "task_instructions": "i"}}}]`, "airline", true},
		{"mock", `[{"id": "1", "user_scenario": {"instructions": "Create a task."}}]`, "mock", true},
		{"myshop", `[{"id": "1", "user_scenario": {"instructions": "Cancel my order."}}]`, "", true},
		{"y", `[]`, "", false},
		{"z", `[{"id": "easy", "env": "guess-v1"}]`, "", false},
		{"w", `{"tasks": []}`, "", false},
	} {
		dir := filepath.Join(t.TempDir(), c.folder)
		os.Mkdir(dir, 0o755)
		os.WriteFile(filepath.Join(dir, "tasks.json"), []byte(c.tasks), 0o644)
		if name, ok := DomainOf(dir); name != c.name || ok != c.ok {
			t.Errorf("%s %s: %q %v, want %q %v", c.folder, c.tasks, name, ok, c.name, c.ok)
		}
	}
	if _, ok := DomainOf(t.TempDir()); ok {
		t.Error("an empty folder holds tau2 tasks")
	}
}

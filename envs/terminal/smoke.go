package terminal

import (
	"embed"
	"encoding/json"
	"io/fs"
	"sort"

	"github.com/nextstate-rl/nextstate/gym"
)

// smokeFS holds the smoke suite, the built-in tasks of terminal-v1: the
// same folders `nextstate tasks validate envs/terminal/tasks` reads.
//
//go:embed tasks
var smokeFS embed.FS

// SmokeTasks returns the built-in smoke tasks. They have no Dir: their
// Data names the embedded folder ("builtin"), so they work in any binary.
func SmokeTasks() []gym.Task {
	entries, err := fs.ReadDir(smokeFS, "tasks")
	if err != nil {
		panic("terminal: embedded smoke tasks: " + err.Error())
	}
	var out []gym.Task
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		sub, err := fs.Sub(smokeFS, "tasks/"+e.Name())
		if err != nil {
			panic(err)
		}
		t, err := loadTaskFS(sub, e.Name())
		if err != nil {
			panic("terminal: embedded smoke task " + e.Name() + ": " + err.Error())
		}
		var d TaskData
		json.Unmarshal(t.Data, &d)
		d.Builtin = e.Name()
		t.Data, _ = json.Marshal(d)
		t.ID = "terminal-" + e.Name()
		t.Labels = map[string]string{"suite": "terminal-smoke"}
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

package retail

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/nextstate-rl/nextstate/envs/toolcall/tau2"
	"github.com/nextstate-rl/nextstate/gym"
)

// FormatName is the folder format this package registers (through
// tau2.RegisterDomain, with gym.RegisterSuiteFormat): a tau2 retail folder.
const FormatName = "tau2-retail"

// The files of a tau2 retail folder.
const (
	FileDB     = "db.json"
	FileTasks  = "tasks.json"
	FilePolicy = "policy.md"
	FileSplits = "split_tasks.json"
)

// BuiltinSmoke names the embedded smoke store in TaskData.Builtin.
const BuiltinSmoke = "smoke"

// TaskData is a retail task's gym.Task.Data: what an episode needs besides
// the database and policy, which come from the task's folder (Task.Dir) or,
// for the built-in smoke tasks, from the embedded store Builtin names.
type TaskData struct {
	TaskID       string            `json:"task_id"`           // tau2's id ("0")
	Builtin      string            `json:"builtin,omitempty"` // "smoke": the embedded store
	UserScenario tau2.UserScenario `json:"user_scenario"`
	InitialState json.RawMessage   `json:"initial_state,omitempty"`
}

// ParseCriteria reads an evaluation_criteria (tau2.ParseCriteria) and
// checks that every gold action is the agent's call of a retail tool.
func ParseCriteria(b []byte) (*tau2.Criteria, error) {
	c, err := tau2.ParseCriteria(b)
	if err != nil {
		return nil, err
	}
	for i, a := range c.Actions {
		if _, ok := toolRuns[a.Name]; !ok || a.Name == ToolThink {
			return nil, fmt.Errorf("evaluation_criteria: action %d (%s) calls %q, which is not a retail tool (%s)",
				i, a.ActionID, a.Name, strings.Join(toolNames(), ", "))
		}
		if a.ByUser() {
			return nil, fmt.Errorf("evaluation_criteria: action %d (%s) is the %s's; the retail domain has no user tools", i, a.ActionID, a.Requestor)
		}
	}
	return c, nil
}

func toolNames() []string {
	out := make([]string, len(toolDefs))
	for i, d := range toolDefs {
		out[i] = d.tool.Name
	}
	return out
}

// format is the retail folder format: its tasks are the retail domain's
// (or do not say), and it holds db.json, tasks.json and policy.md.
var format = tau2.DomainFormat{Name: "retail", Files: []string{FileDB, FileTasks, FilePolicy}, Load: LoadDir}

// IsRetailDir reports whether dir is a tau2 retail folder (see format).
func IsRetailDir(dir string) bool { return tau2.IsDomainDir(dir, format) }

// LoadDir reads a tau2 retail folder's tasks (see the package doc).
func LoadDir(dir string) ([]gym.Task, error) {
	tasks, err := os.ReadFile(filepath.Join(dir, FileTasks))
	if err != nil {
		return nil, err
	}
	splits, err := tau2.ReadSplits(dir, FileSplits)
	if err != nil {
		return nil, err
	}
	out, err := parseTasks(tasks, splits, "tau2-retail-", "")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", FileTasks, err)
	}
	for i := range out {
		out[i].Dir = dir
	}
	return out, nil
}

// parseTasks reads a tasks.json into gym tasks with ids prefix+tau2 id.
func parseTasks(b []byte, splits map[string][]string, prefix, builtin string) ([]gym.Task, error) {
	ts, err := tau2.ReadEntries(b)
	if err != nil {
		return nil, err
	}
	splitOf := tau2.SplitIndex(splits)
	out := make([]gym.Task, 0, len(ts))
	for _, t := range ts {
		d := TaskData{TaskID: t.ID, Builtin: builtin, UserScenario: t.UserScenario}
		if t.InitialState != nil {
			if _, err := parseInitialState(t.InitialState); err != nil {
				return nil, fmt.Errorf("task %s: %w", t.ID, err)
			}
			d.InitialState = t.InitialState
		}
		verifier := t.EvaluationCriteria
		if verifier == nil {
			verifier = []byte("null")
		} else if _, err := ParseCriteria(verifier); err != nil {
			return nil, fmt.Errorf("task %s: %w", t.ID, err)
		}
		data, err := json.Marshal(d)
		if err != nil {
			return nil, err
		}
		out = append(out, gym.Task{
			ID: prefix + t.ID, Env: KindName, Instruction: soloInstruction(d.UserScenario),
			Split: splitOf[t.ID], Data: data, Verifier: json.RawMessage(verifier),
			Labels: map[string]string{"suite": strings.TrimSuffix(prefix, "-"), "tau2_id": t.ID},
		})
	}
	return out, nil
}

// initialState is a retail task's initial_state (tau2.InitialState): the
// retail domain has no user database and no user tools.
type initialState struct{ *tau2.InitialState }

func parseInitialState(b []byte) (*initialState, error) {
	s, err := tau2.ParseInitialState(b)
	if err != nil {
		return nil, err
	}
	if s.UserData() != nil {
		return nil, fmt.Errorf("initial_state.initialization_data.user_data: the retail domain has no user database")
	}
	for i, a := range s.InitializationActions {
		if a.EnvType != tau2.RequestorAssistant {
			return nil, fmt.Errorf("initial_state.initialization_actions[%d]: env_type %q; the retail domain has only \"assistant\" tools", i, a.EnvType)
		}
		if _, ok := toolRuns[a.FuncName]; !ok {
			return nil, fmt.Errorf("initial_state.initialization_actions[%d]: %q is not a retail tool", i, a.FuncName)
		}
	}
	return &initialState{s}, nil
}

// apply brings a fresh state to the task's initial state.
func (is *initialState) apply(s *state) error {
	if a := is.AgentData(); a != nil {
		if err := s.applyData(a); err != nil {
			return fmt.Errorf("initial_state.initialization_data: %w", err)
		}
	}
	for i, a := range is.InitializationActions {
		if _, err := toolRuns[a.FuncName](s, a.Arguments); err != nil {
			return fmt.Errorf("initial_state.initialization_actions[%d] (%s): %w", i, a.FuncName, err)
		}
	}
	return nil
}

// smokeFS holds the smoke store: a small invented shop (smoke/db.json,
// smoke/policy.md) and its tasks in tau2's format (smoke/tasks.json).
//
//go:embed smoke
var smokeFS embed.FS

// SmokeTasks returns the built-in smoke tasks, "tau2-retail-smoke-1" and
// on. They have no Dir: their Data names the embedded store ("builtin":
// "smoke"), so they work in any binary.
func SmokeTasks() []gym.Task {
	b, err := smokeFS.ReadFile("smoke/" + FileTasks)
	if err != nil {
		panic("retail: embedded smoke tasks: " + err.Error())
	}
	ts, err := parseTasks(b, nil, "tau2-retail-smoke-", BuiltinSmoke)
	if err != nil {
		panic("retail: embedded smoke tasks: " + err.Error())
	}
	return ts
}

// TaskDataOf reads a retail task's Data.
func TaskDataOf(t *gym.Task) (*TaskData, error) {
	if len(t.Data) == 0 {
		return nil, fmt.Errorf("task %q has no data: load a tau2 retail folder (%s, %s, %s) as a suite", t.ID, FileDB, FileTasks, FilePolicy)
	}
	var d TaskData
	if err := json.Unmarshal(t.Data, &d); err != nil {
		return nil, fmt.Errorf("task %q: data: %w", t.ID, err)
	}
	if d.Builtin != "" && d.Builtin != BuiltinSmoke {
		return nil, fmt.Errorf("task %q: data.builtin %q; the only built-in store is %q", t.ID, d.Builtin, BuiltinSmoke)
	}
	if d.Builtin == "" && t.Dir == "" {
		return nil, fmt.Errorf("task %q has no folder: serve its tau2 folder with --tasks and start it by id", t.ID)
	}
	return &d, nil
}

// CriteriaOf reads a retail task's Verifier; nil when the task has no
// evaluation criteria.
func CriteriaOf(t *gym.Task) (*tau2.Criteria, error) {
	v := bytes.TrimSpace(t.Verifier)
	if len(v) == 0 || string(v) == "null" {
		return nil, nil
	}
	c, err := ParseCriteria(v)
	if err != nil {
		return nil, fmt.Errorf("task %q: %w", t.ID, err)
	}
	return c, nil
}

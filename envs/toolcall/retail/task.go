package retail

import (
	"embed"
	"encoding/json"
	"fmt"
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
	tau2.TaskSource                   // tau2's id; "smoke": the embedded store
	UserScenario    tau2.UserScenario `json:"user_scenario"`
	InitialState    json.RawMessage   `json:"initial_state,omitempty"`
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
func LoadDir(dir string) ([]gym.Task, error) { return builder("tau2-retail-", "").Load(dir, FileTasks) }

// builder makes gym tasks of tau2 retail tasks, ids prefix+tau2 id.
func builder(prefix, builtin string) tau2.Builder {
	return tau2.Builder{Kind: KindName, Prefix: prefix,
		Task: func(e *tau2.Entry) (any, string, error) {
			d := TaskData{TaskSource: tau2.TaskSource{TaskID: e.ID, Builtin: builtin}, UserScenario: e.UserScenario}
			if e.InitialState != nil {
				if _, err := parseInitialState(e.InitialState); err != nil {
					return nil, "", err
				}
				d.InitialState = e.InitialState
			}
			return d, soloInstruction(d.UserScenario), nil
		},
		Criteria: func(b []byte) error { _, err := ParseCriteria(b); return err },
	}
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
	ts, err := builder("tau2-retail-smoke-", BuiltinSmoke).Build(b, nil)
	if err != nil {
		panic("retail: embedded smoke tasks: " + err.Error())
	}
	return ts
}

// TaskDataOf reads a retail task's Data.
func TaskDataOf(t *gym.Task) (*TaskData, error) {
	var d TaskData
	if err := tau2.TaskData(t, &d, BuiltinSmoke, format.Files); err != nil {
		return nil, err
	}
	return &d, nil
}

// CriteriaOf reads a retail task's Verifier; nil when the task has no
// evaluation criteria.
func CriteriaOf(t *gym.Task) (*tau2.Criteria, error) { return tau2.CriteriaOf(t, ParseCriteria) }

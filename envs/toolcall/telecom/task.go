package telecom

import (
	"embed"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/nextstate-rl/nextstate/envs/toolcall/tau2"
	"github.com/nextstate-rl/nextstate/gym"
)

// FormatName is the folder format this package registers (through
// tau2.RegisterDomain, with gym.RegisterSuiteFormat): a tau2 telecom folder.
const FormatName = "tau2-telecom"

// The files of a tau2 telecom folder. The tasks are in tasks.json, else
// tasks_full.json, else tasks_small.json (tau2.TasksFile); the workflow
// policies are optional.
const (
	FileDB             = "db.toml"
	FileUserDB         = "user_db.toml"
	FileMainPolicy     = "main_policy.md"
	FileMainPolicySolo = "main_policy_solo.md"
	FileManual         = "tech_support_manual.md"
	FileWorkflow       = "tech_support_workflow.md"
	FileWorkflowSolo   = "tech_support_workflow_solo.md"
	FileSplits         = "split_tasks.json"
)

// BuiltinSmoke names the embedded smoke data in TaskData.Builtin.
const BuiltinSmoke = "smoke"

// format is the telecom folder format: its tasks are the telecom
// domain's (or do not say), and it holds the databases and the policies.
var format = tau2.DomainFormat{Name: "telecom", Files: []string{FileDB, FileUserDB, FileMainPolicy, FileMainPolicySolo, FileManual}, Load: LoadDir}

// IsTelecomDir reports whether dir is a tau2 telecom folder (see format).
func IsTelecomDir(dir string) bool { return tau2.IsDomainDir(dir, format) }

// TaskData is a telecom task's gym.Task.Data: what an episode needs besides
// the databases and policies, which come from the task's folder (Task.Dir)
// or, for the built-in smoke tasks, from the embedded data Builtin names.
type TaskData struct {
	tau2.TaskSource                   // tau2's id; "smoke": the embedded data
	UserScenario    tau2.UserScenario `json:"user_scenario"`
	Ticket          *string           `json:"ticket,omitempty"` // what a solo agent is told
	InitialState    json.RawMessage   `json:"initial_state,omitempty"`
}

// ParseCriteria reads an evaluation_criteria (tau2.ParseCriteria) and
// checks it against the two toolkits: each gold action a tool of its
// requestor's side, each env assertion a function of its side.
func ParseCriteria(b []byte) (*tau2.Criteria, error) {
	c, err := tau2.ParseCriteria(b)
	if err != nil {
		return nil, err
	}
	for i, a := range c.Actions {
		if f, ok := functions(a.Requestor)[a.Name]; !ok || !f.tool {
			return nil, fmt.Errorf("evaluation_criteria: action %d (%s) calls %q, which is not a tool of the %s (%s)",
				i, a.ActionID, a.Name, sideName(a.Requestor), strings.Join(toolNames(a.Requestor), ", "))
		}
	}
	for i, a := range c.EnvAssertions {
		if _, ok := functions(a.EnvType)[a.FuncName]; !ok {
			return nil, fmt.Errorf("evaluation_criteria: env_assertions[%d] calls %q, which is not a function of the %s's toolkit", i, a.FuncName, a.EnvType)
		}
	}
	return c, nil
}

func sideName(side string) string {
	if side == sideUser {
		return "user (the phone)"
	}
	return "agent"
}

// parseInitialState reads a telecom task's initial_state: its
// initialization_actions are functions of either side's toolkit.
// initialization_data is refused: no tau2 telecom task has it, and tau2
// itself cannot run it (its set_state then gives both toolkits one
// database).
func parseInitialState(b []byte) (*tau2.InitialState, error) {
	s, err := tau2.ParseInitialState(b)
	if err != nil {
		return nil, err
	}
	if s.AgentData() != nil || s.UserData() != nil {
		return nil, fmt.Errorf("initial_state.initialization_data is not supported in the telecom domain (no tau2 telecom task has it): " +
			"set the state up with initialization_actions")
	}
	for i, a := range s.InitializationActions {
		if _, ok := functions(a.EnvType)[a.FuncName]; !ok {
			return nil, fmt.Errorf("initial_state.initialization_actions[%d]: %q is not a function of the %s's toolkit", i, a.FuncName, a.EnvType)
		}
	}
	return s, nil
}

// LoadDir reads a tau2 telecom folder's tasks (see the package doc).
func LoadDir(dir string) ([]gym.Task, error) {
	tf := tau2.TasksFile(dir)
	if tf == "" {
		return nil, fmt.Errorf("no tasks file (tasks.json, tasks_full.json or tasks_small.json)")
	}
	return builder("tau2-telecom-", "").Load(dir, tf)
}

// builder makes gym tasks of tau2 telecom tasks, ids prefix+tau2 id.
func builder(prefix, builtin string) tau2.Builder {
	return tau2.Builder{Kind: KindName, Prefix: prefix,
		Task: func(e *tau2.Entry) (any, string, error) {
			d := &TaskData{TaskSource: tau2.TaskSource{TaskID: e.ID, Builtin: builtin}, UserScenario: e.UserScenario, Ticket: e.Ticket}
			if e.InitialState != nil {
				if _, err := parseInitialState(e.InitialState); err != nil {
					return nil, "", err
				}
				d.InitialState = e.InitialState
			}
			return d, soloInstruction(d), nil
		},
		Criteria: func(b []byte) error { _, err := ParseCriteria(b); return err },
	}
}

// smokeFS holds the smoke data: a small invented carrier (smoke/db.toml,
// smoke/user_db.toml, smoke/*.md) and its tasks in tau2's format
// (smoke/tasks.json).
//
//go:embed smoke
var smokeFS embed.FS

// SmokeTasks returns the built-in smoke tasks, "tau2-telecom-smoke-1" and
// on. They have no Dir: their Data names the embedded data ("builtin":
// "smoke"), so they work in any binary.
func SmokeTasks() []gym.Task {
	b, err := smokeFS.ReadFile("smoke/tasks.json")
	if err != nil {
		panic("telecom: embedded smoke tasks: " + err.Error())
	}
	ts, err := builder("tau2-telecom-smoke-", BuiltinSmoke).Build(b, nil)
	if err != nil {
		panic("telecom: embedded smoke tasks: " + err.Error())
	}
	return ts
}

// TaskDataOf reads a telecom task's Data.
func TaskDataOf(t *gym.Task) (*TaskData, error) {
	var d TaskData
	if err := tau2.TaskData(t, &d, BuiltinSmoke, format.Files); err != nil {
		return nil, err
	}
	return &d, nil
}

// CriteriaOf reads a telecom task's Verifier; nil when the task has no
// evaluation criteria.
func CriteriaOf(t *gym.Task) (*tau2.Criteria, error) { return tau2.CriteriaOf(t, ParseCriteria) }

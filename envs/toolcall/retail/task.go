package retail

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/nextstate-rl/nextstate/gym"
)

// FormatName is the folder format this package registers with
// gym.RegisterSuiteFormat: a tau2 domain folder.
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
	TaskID       string          `json:"task_id"`           // tau2's id ("0")
	Builtin      string          `json:"builtin,omitempty"` // "smoke": the embedded store
	UserScenario UserScenario    `json:"user_scenario"`
	InitialState json.RawMessage `json:"initial_state,omitempty"`
}

// UserScenario is tau2's user_scenario: who the simulated user is and what
// they want. Instructions are structured (Instructions) or a plain string
// (Text).
type UserScenario struct {
	Persona      *string       `json:"persona,omitempty"`
	Instructions *Instructions `json:"-"`
	Text         string        `json:"-"`
}

// Instructions are tau2's structured user instructions.
type Instructions struct {
	Domain           string  `json:"domain"`
	ReasonForCall    string  `json:"reason_for_call"`
	KnownInfo        *string `json:"known_info,omitempty"`
	UnknownInfo      *string `json:"unknown_info,omitempty"`
	TaskInstructions string  `json:"task_instructions"`
}

// UnmarshalJSON reads a user_scenario.
func (u *UserScenario) UnmarshalJSON(b []byte) error {
	var raw struct {
		Persona      *string         `json:"persona"`
		Instructions json.RawMessage `json:"instructions"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	*u = UserScenario{Persona: raw.Persona}
	in := bytes.TrimSpace(raw.Instructions)
	switch {
	case len(in) == 0 || string(in) == "null":
		return errors.New("user_scenario has no instructions")
	case in[0] == '"':
		return json.Unmarshal(in, &u.Text)
	}
	u.Instructions = &Instructions{}
	if err := json.Unmarshal(in, u.Instructions); err != nil {
		return fmt.Errorf("user_scenario.instructions: %w", err)
	}
	return nil
}

// MarshalJSON writes the user_scenario as tau2 has it.
func (u UserScenario) MarshalJSON() ([]byte, error) {
	var in any = u.Text
	if u.Instructions != nil {
		in = u.Instructions
	}
	return json.Marshal(map[string]any{"persona": u.Persona, "instructions": in})
}

// String renders the scenario as tau2 shows it to its user simulator.
func (u UserScenario) String() string {
	var b strings.Builder
	if u.Persona != nil {
		b.WriteString("Persona:\n" + indent(*u.Persona, "\t") + "\n")
	}
	text := u.Text
	if in := u.Instructions; in != nil {
		var lines []string
		lines = append(lines, "Domain: "+in.Domain, "Reason for call:\n"+indent(in.ReasonForCall, "\t"))
		if in.KnownInfo != nil {
			lines = append(lines, "Known info:\n"+indent(*in.KnownInfo, "\t"))
		}
		if in.UnknownInfo != nil {
			lines = append(lines, "Unknown info:\n"+indent(*in.UnknownInfo, "\t"))
		}
		lines = append(lines, "Task instructions:\n"+indent(in.TaskInstructions, "\t"))
		text = strings.Join(lines, "\n")
	}
	b.WriteString("Instructions:\n" + indent(text, "\t"))
	return b.String()
}

// indent prefixes every line that is not blank, as Python's textwrap.indent.
func indent(s, prefix string) string {
	lines := strings.SplitAfter(s, "\n")
	for i, l := range lines {
		if strings.TrimSpace(l) != "" {
			lines[i] = prefix + l
		}
	}
	return strings.Join(lines, "")
}

// Criteria is tau2's evaluation_criteria, the task's gym.Task.Verifier.
type Criteria struct {
	Actions         []Action        `json:"actions"`
	EnvAssertions   json.RawMessage `json:"env_assertions,omitempty"`
	CommunicateInfo []string        `json:"communicate_info"`
	NLAssertions    []string        `json:"nl_assertions"`
	RewardBasis     []string        `json:"reward_basis"`
	// noActions: actions is null (not []), and there are no env
	// assertions: tau2 then skips the database check (reward 1).
	noActions bool
}

// Action is a gold action: a tool call the task expects.
type Action struct {
	ActionID  string          `json:"action_id,omitempty"`
	Requestor string          `json:"requestor,omitempty"` // "assistant" (the default) or "user"
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Info      *string         `json:"info,omitempty"`
	// CompareArgs are the arguments the ACTION check compares; nil: all of
	// the agent's call's arguments, empty: the name alone.
	CompareArgs []string `json:"compare_args"`
}

// Reward components of reward_basis.
const (
	BasisDB           = "DB"
	BasisEnvAssertion = "ENV_ASSERTION"
	BasisNLAssertion  = "NL_ASSERTION"
	BasisAction       = "ACTION"
	BasisCommunicate  = "COMMUNICATE"
)

var bases = []string{BasisDB, BasisEnvAssertion, BasisNLAssertion, BasisAction, BasisCommunicate}

// ParseCriteria reads an evaluation_criteria and checks it: every reward
// basis known, every gold action a retail tool with an object of arguments.
// A missing reward_basis is tau2's default, DB and COMMUNICATE.
func ParseCriteria(b []byte) (*Criteria, error) {
	var c Criteria
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("evaluation_criteria: %w", err)
	}
	var raw map[string]json.RawMessage
	json.Unmarshal(b, &raw)
	if a, ok := raw["actions"]; (!ok || string(bytes.TrimSpace(a)) == "null") && len(c.EnvAssertions) == 0 {
		c.noActions = true
	}
	if string(bytes.TrimSpace(c.EnvAssertions)) == "null" {
		c.EnvAssertions = nil
	}
	if _, ok := raw["reward_basis"]; !ok {
		c.RewardBasis = []string{BasisDB, BasisCommunicate}
	}
	for _, r := range c.RewardBasis {
		if !slices.Contains(bases, r) {
			return nil, fmt.Errorf("evaluation_criteria: reward_basis %q; want %s", r, strings.Join(bases, ", "))
		}
	}
	for i, a := range c.Actions {
		if _, ok := toolRuns[a.Name]; !ok || a.Name == ToolThink {
			return nil, fmt.Errorf("evaluation_criteria: action %d (%s) calls %q, which is not a retail tool (%s)",
				i, a.ActionID, a.Name, strings.Join(toolNames(), ", "))
		}
		if a.Requestor != "" && a.Requestor != "assistant" {
			return nil, fmt.Errorf("evaluation_criteria: action %d (%s) is the %s's; the retail domain has no user tools", i, a.ActionID, a.Requestor)
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(a.Arguments, &obj); err != nil || obj == nil {
			return nil, fmt.Errorf("evaluation_criteria: action %d (%s): arguments must be a JSON object", i, a.ActionID)
		}
	}
	return &c, nil
}

func toolNames() []string {
	out := make([]string, len(toolDefs))
	for i, d := range toolDefs {
		out[i] = d.tool.Name
	}
	return out
}

// tau2Task is one entry of a tau2 tasks.json.
type tau2Task struct {
	ID                 json.RawMessage `json:"id"`
	UserScenario       json.RawMessage `json:"user_scenario"`
	InitialState       json.RawMessage `json:"initial_state"`
	EvaluationCriteria json.RawMessage `json:"evaluation_criteria"`
}

// IsRetailDir reports whether dir is a tau2 retail folder: it holds
// db.json, tasks.json and policy.md.
func IsRetailDir(dir string) bool {
	for _, f := range []string{FileDB, FileTasks, FilePolicy} {
		if fi, err := os.Stat(filepath.Join(dir, f)); err != nil || !fi.Mode().IsRegular() {
			return false
		}
	}
	return true
}

// LoadDir reads a tau2 retail folder's tasks (see the package doc).
func LoadDir(dir string) ([]gym.Task, error) {
	tasks, err := os.ReadFile(filepath.Join(dir, FileTasks))
	if err != nil {
		return nil, err
	}
	var splits map[string][]string
	if b, err := os.ReadFile(filepath.Join(dir, FileSplits)); err == nil {
		if err := json.Unmarshal(b, &splits); err != nil {
			return nil, fmt.Errorf("%s: want an object of split names to task ids: %w", FileSplits, err)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
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
	var ts []tau2Task
	if err := json.Unmarshal(b, &ts); err != nil {
		return nil, fmt.Errorf("want a JSON array of tau2 tasks: %w", err)
	}
	splitOf := splitIndex(splits)
	out := make([]gym.Task, 0, len(ts))
	for i, t := range ts {
		id := strings.Trim(string(bytes.TrimSpace(t.ID)), `"`)
		if id == "" || id == "null" {
			return nil, fmt.Errorf("task %d has no id", i)
		}
		d := TaskData{TaskID: id, Builtin: builtin}
		if err := json.Unmarshal(t.UserScenario, &d.UserScenario); err != nil {
			return nil, fmt.Errorf("task %s: user_scenario: %w", id, err)
		}
		if s := bytes.TrimSpace(t.InitialState); len(s) > 0 && string(s) != "null" {
			if _, err := parseInitialState(s); err != nil {
				return nil, fmt.Errorf("task %s: %w", id, err)
			}
			d.InitialState = t.InitialState
		}
		verifier := bytes.TrimSpace(t.EvaluationCriteria)
		if len(verifier) == 0 {
			verifier = []byte("null")
		}
		if string(verifier) != "null" {
			if _, err := ParseCriteria(verifier); err != nil {
				return nil, fmt.Errorf("task %s: %w", id, err)
			}
		}
		data, err := json.Marshal(d)
		if err != nil {
			return nil, err
		}
		out = append(out, gym.Task{
			ID: prefix + id, Env: KindName, Instruction: soloInstruction(d.UserScenario),
			Split: splitOf[id], Data: data, Verifier: json.RawMessage(verifier),
			Labels: map[string]string{"suite": strings.TrimSuffix(prefix, "-"), "tau2_id": id},
		})
	}
	return out, nil
}

// splitIndex maps task ids to their split: "train" or "test" when a split
// of that name lists the task, else the first other split (by name) that
// does, "base" (tau2's name for all of them) last.
func splitIndex(splits map[string][]string) map[string]string {
	names := make([]string, 0, len(splits))
	for n := range splits {
		names = append(names, n)
	}
	rank := func(n string) int {
		switch n {
		case "train", "test":
			return 0
		case "base":
			return 2
		}
		return 1
	}
	sort.Slice(names, func(i, j int) bool {
		if rank(names[i]) != rank(names[j]) {
			return rank(names[i]) < rank(names[j])
		}
		return names[i] < names[j]
	})
	out := map[string]string{}
	for _, n := range names {
		for _, id := range splits[n] {
			if _, ok := out[id]; !ok {
				out[id] = n
			}
		}
	}
	return out
}

// initialState is tau2's initial_state: database changes and tool calls
// run before the episode starts.
type initialState struct {
	InitializationData *struct {
		AgentData json.RawMessage `json:"agent_data"`
		UserData  json.RawMessage `json:"user_data"`
	} `json:"initialization_data"`
	InitializationActions []struct {
		EnvType   string          `json:"env_type"`
		FuncName  string          `json:"func_name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"initialization_actions"`
	MessageHistory json.RawMessage `json:"message_history"`
}

func parseInitialState(b []byte) (*initialState, error) {
	var s initialState
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("initial_state: %w", err)
	}
	if m := bytes.TrimSpace(s.MessageHistory); len(m) > 0 && string(m) != "null" && string(m) != "[]" {
		return nil, errors.New("initial_state.message_history is not supported (no tau2 retail task uses it): " +
			"give the state as initialization_data or initialization_actions")
	}
	if d := s.InitializationData; d != nil {
		if u := bytes.TrimSpace(d.UserData); len(u) > 0 && string(u) != "null" {
			return nil, errors.New("initial_state.initialization_data.user_data: the retail domain has no user database")
		}
	}
	for i, a := range s.InitializationActions {
		if a.EnvType != "assistant" {
			return nil, fmt.Errorf("initial_state.initialization_actions[%d]: env_type %q; the retail domain has only \"assistant\" tools", i, a.EnvType)
		}
		if _, ok := toolRuns[a.FuncName]; !ok {
			return nil, fmt.Errorf("initial_state.initialization_actions[%d]: %q is not a retail tool", i, a.FuncName)
		}
	}
	return &s, nil
}

// apply brings a fresh state to the task's initial state.
func (is *initialState) apply(s *state) error {
	if d := is.InitializationData; d != nil {
		if a := bytes.TrimSpace(d.AgentData); len(a) > 0 && string(a) != "null" {
			if err := s.applyData(a); err != nil {
				return fmt.Errorf("initial_state.initialization_data: %w", err)
			}
		}
	}
	for i, a := range is.InitializationActions {
		args := a.Arguments
		if len(args) == 0 {
			args = json.RawMessage("{}")
		}
		if _, err := toolRuns[a.FuncName](s, args); err != nil {
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
func CriteriaOf(t *gym.Task) (*Criteria, error) {
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

package tau2

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/nextstate-rl/nextstate/gym"
)

// Entry is one task of a tau2 tasks file, its parts as they are.
type Entry struct {
	ID                 string
	UserScenario       UserScenario
	Ticket             *string
	InitialState       json.RawMessage // nil: none
	EvaluationCriteria json.RawMessage // nil: none
}

// ReadEntries reads a tau2 tasks file: a JSON array of tasks, each with an
// id (a string or a number) and a user_scenario.
func ReadEntries(b []byte) ([]Entry, error) {
	var raw []struct {
		ID                 json.RawMessage `json:"id"`
		UserScenario       json.RawMessage `json:"user_scenario"`
		Ticket             *string         `json:"ticket"`
		InitialState       json.RawMessage `json:"initial_state"`
		EvaluationCriteria json.RawMessage `json:"evaluation_criteria"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("want a JSON array of tau2 tasks: %w", err)
	}
	out := make([]Entry, len(raw))
	for i, t := range raw {
		id := strings.Trim(string(bytes.TrimSpace(t.ID)), `"`)
		if id == "" || id == "null" {
			return nil, fmt.Errorf("task %d has no id", i)
		}
		e := Entry{ID: id, Ticket: t.Ticket, InitialState: orNil(t.InitialState), EvaluationCriteria: orNil(t.EvaluationCriteria)}
		if err := json.Unmarshal(t.UserScenario, &e.UserScenario); err != nil {
			return nil, fmt.Errorf("task %s: user_scenario: %w", id, err)
		}
		out[i] = e
	}
	return out, nil
}

func orNil(b json.RawMessage) json.RawMessage {
	if s := bytes.TrimSpace(b); len(s) == 0 || string(s) == "null" {
		return nil
	}
	return b
}

// ReadSplits reads a folder's split file (split name to task ids); nil
// when there is none.
func ReadSplits(dir, name string) (map[string][]string, error) {
	b, err := os.ReadFile(filepath.Join(dir, name))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var splits map[string][]string
	if err := json.Unmarshal(b, &splits); err != nil {
		return nil, fmt.Errorf("%s: want an object of split names to task ids: %w", name, err)
	}
	return splits, nil
}

// SplitIndex maps task ids to their split: "train" or "test" when a split
// of that name lists the task, else the first other split (by name) that
// does, "base" and "full" (tau2's names for all of them) last.
func SplitIndex(splits map[string][]string) map[string]string {
	names := make([]string, 0, len(splits))
	for n := range splits {
		names = append(names, n)
	}
	rank := func(n string) int {
		switch n {
		case "train", "test":
			return 0
		case "base", "full":
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

// InitialState is tau2's initial_state: changes to the agent's and the
// user's databases, then function calls, run before the episode starts.
type InitialState struct {
	InitializationData *struct {
		AgentData json.RawMessage `json:"agent_data"`
		UserData  json.RawMessage `json:"user_data"`
	} `json:"initialization_data"`
	InitializationActions []EnvCall       `json:"initialization_actions"`
	MessageHistory        json.RawMessage `json:"message_history"`
}

// AgentData is initialization_data.agent_data, nil when there is none.
func (s *InitialState) AgentData() json.RawMessage {
	if s.InitializationData == nil {
		return nil
	}
	return orNil(s.InitializationData.AgentData)
}

// UserData is initialization_data.user_data, nil when there is none.
func (s *InitialState) UserData() json.RawMessage {
	if s.InitializationData == nil {
		return nil
	}
	return orNil(s.InitializationData.UserData)
}

// ParseInitialState reads an initial_state. A message_history is refused:
// no tau2 retail or telecom task has one, and replaying a conversation
// into an episode is not supported.
func ParseInitialState(b []byte) (*InitialState, error) {
	var s InitialState
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("initial_state: %w", err)
	}
	if m := bytes.TrimSpace(s.MessageHistory); len(m) > 0 && string(m) != "null" && string(m) != "[]" {
		return nil, errors.New("initial_state.message_history is not supported (no tau2 retail or telecom task uses it): " +
			"give the state as initialization_data or initialization_actions")
	}
	for i := range s.InitializationActions {
		if err := s.InitializationActions[i].check(); err != nil {
			return nil, fmt.Errorf("initial_state.initialization_actions[%d]: %w", i, err)
		}
	}
	return &s, nil
}

// SplitsFile is a tau2 folder's file of splits (split name to task ids).
const SplitsFile = "split_tasks.json"

// A Builder makes a domain's gym tasks of a tasks file's entries: Kind
// and Prefix give their Env and IDs (Prefix + the tau2 id), Task makes an
// entry's Data and Instruction, Criteria checks its evaluation_criteria
// (the domain's ParseCriteria).
type Builder struct {
	Kind     string
	Prefix   string // "tau2-retail-"
	Task     func(e *Entry) (data any, instruction string, err error)
	Criteria func([]byte) error
}

// Build reads a tasks file into gym tasks: each with its split (from
// splits, see SplitIndex), its evaluation_criteria as the Verifier, and
// the labels "suite" (the prefix without its dash) and "tau2_id".
func (bl Builder) Build(b []byte, splits map[string][]string) ([]gym.Task, error) {
	es, err := ReadEntries(b)
	if err != nil {
		return nil, err
	}
	splitOf := SplitIndex(splits)
	out := make([]gym.Task, 0, len(es))
	for i := range es {
		e := &es[i]
		verifier := e.EvaluationCriteria
		if verifier == nil {
			verifier = []byte("null")
		} else if err := bl.Criteria(verifier); err != nil {
			return nil, fmt.Errorf("task %s: %w", e.ID, err)
		}
		d, instruction, err := bl.Task(e)
		if err != nil {
			return nil, fmt.Errorf("task %s: %w", e.ID, err)
		}
		data, err := json.Marshal(d)
		if err != nil {
			return nil, err
		}
		out = append(out, gym.Task{
			ID: bl.Prefix + e.ID, Env: bl.Kind, Instruction: instruction,
			Split: splitOf[e.ID], Data: data, Verifier: json.RawMessage(verifier),
			Labels: map[string]string{"suite": strings.TrimSuffix(bl.Prefix, "-"), "tau2_id": e.ID},
		})
	}
	return out, nil
}

// Load reads a folder's tasks file (named tasksFile) and its splits
// (SplitsFile), and builds its tasks, each with Dir the folder.
func (bl Builder) Load(dir, tasksFile string) ([]gym.Task, error) {
	b, err := os.ReadFile(filepath.Join(dir, tasksFile))
	if err != nil {
		return nil, err
	}
	splits, err := ReadSplits(dir, SplitsFile)
	if err != nil {
		return nil, err
	}
	out, err := bl.Build(b, splits)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", tasksFile, err)
	}
	for i := range out {
		out[i].Dir = dir
	}
	return out, nil
}

// CriteriaOf reads a task's Verifier with parse (the domain's
// ParseCriteria); nil when the task has no evaluation criteria.
func CriteriaOf(t *gym.Task, parse func([]byte) (*Criteria, error)) (*Criteria, error) {
	v := bytes.TrimSpace(t.Verifier)
	if len(v) == 0 || string(v) == "null" {
		return nil, nil
	}
	c, err := parse(v)
	if err != nil {
		return nil, fmt.Errorf("task %q: %w", t.ID, err)
	}
	return c, nil
}

// TaskSource is what a task's Data says of the built-in data it runs on:
// "" (its folder, Task.Dir) or the name of an embedded data set.
type TaskSource struct {
	TaskID  string `json:"task_id"`           // tau2's id
	Builtin string `json:"builtin,omitempty"` // "smoke": the embedded data
}

// TaskData reads a task's Data into d (a domain's TaskData, which embeds
// TaskSource) and checks its source: the embedded data named smoke, or the
// task's folder; files names what the folder holds, for errors.
func TaskData(t *gym.Task, d interface{ source() *TaskSource }, smoke string, files []string) error {
	if len(t.Data) == 0 {
		return fmt.Errorf("task %q has no data: load a tau2 folder (%s) as a suite", t.ID, strings.Join(files, ", "))
	}
	if err := json.Unmarshal(t.Data, d); err != nil {
		return fmt.Errorf("task %q: data: %w", t.ID, err)
	}
	b := d.source()
	if b.Builtin != "" && b.Builtin != smoke {
		return fmt.Errorf("task %q: data.builtin %q; the only built-in data is %q", t.ID, b.Builtin, smoke)
	}
	if b.Builtin == "" && t.Dir == "" {
		return fmt.Errorf("task %q has no folder: serve its tau2 folder with --tasks and start it by id", t.ID)
	}
	return nil
}

func (s *TaskSource) source() *TaskSource { return s }

// Stamp is the sizes and times of a folder's files that exist, to tell
// when they changed.
func Stamp(dir string, files ...string) string {
	var b strings.Builder
	for _, f := range files {
		if fi, err := os.Stat(filepath.Join(dir, f)); err == nil {
			fmt.Fprintf(&b, "%s %d@%d;", f, fi.Size(), fi.ModTime().UnixNano())
		}
	}
	return b.String()
}

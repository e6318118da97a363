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

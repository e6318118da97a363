package gym

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"sigs.k8s.io/yaml"
)

// Task is one thing to do in one kind of env.
type Task struct {
	ID          string `json:"id"`
	Env         string `json:"env"`
	Instruction string `json:"instruction"`
	// Split is "train", "test", or any name a suite uses; empty means train.
	Split  string `json:"split,omitempty"`
	Limits Limits `json:"limits,omitzero"`
	// Data is the kind's own task input, shown to the env at Reset.
	Data json.RawMessage `json:"data,omitempty"`
	// Verifier holds the verifier's inputs (expected answers, hidden tests).
	// It is never sent to agents: the server strips it from task listings.
	Verifier json.RawMessage   `json:"verifier,omitempty"`
	Labels   map[string]string `json:"labels,omitempty"`
	// Dir is the directory the task was loaded from, for kinds whose tasks
	// carry files (Terminal-Bench, SWE). Not part of the JSON form.
	Dir string `json:"-"`
}

// ReservedLabelPrefix starts labels nextstate sets itself; task files may not.
const ReservedLabelPrefix = "nextstate."

// Validate checks a task's own fields and that its kind is registered.
func (t *Task) Validate() error {
	if t.ID == "" {
		return errors.New("task has no id")
	}
	if t.Env == "" {
		return fmt.Errorf("task %q has no env kind", t.ID)
	}
	if _, err := lookup(t.Env); err != nil {
		return fmt.Errorf("task %q: %w", t.ID, err)
	}
	for k := range t.Labels {
		if strings.HasPrefix(k, ReservedLabelPrefix) {
			return fmt.Errorf("task %q: label %q uses the reserved prefix %q", t.ID, k, ReservedLabelPrefix)
		}
	}
	if t.Limits.MaxSteps < 0 || t.Limits.StepTimeout < 0 || t.Limits.EpisodeTimeout < 0 {
		return fmt.Errorf("task %q: limits must not be negative", t.ID)
	}
	return nil
}

// Public returns a copy without the verifier's inputs, fit to show an agent.
func (t Task) Public() Task {
	t.Verifier = nil
	return t
}

// Suite is a named set of tasks, split into train, test or other splits.
type Suite struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Tasks       []Task `json:"tasks"`
	// Signals holds the suite's training-signal settings; nil for the
	// server's defaults.
	Signals *SuiteSignals `json:"signals,omitempty"`
}

// SuiteSignals are a suite's training-signal settings, which the server
// applies to the trajectories of the suite's tasks.
type SuiteSignals struct {
	// Mix says how outcome and process rewards combine (package rl's Mix:
	// {"c": 1, "gamma": 1, "outcome_map": "identity"}; absent fields keep
	// the defaults). The server checks it when it loads the suite.
	Mix json.RawMessage `json:"mix,omitempty"`
}

// Split returns the tasks of one split ("" is every task). A task with no
// split counts as "train".
func (s *Suite) Split(name string) []Task {
	if name == "" {
		return s.Tasks
	}
	var out []Task
	for _, t := range s.Tasks {
		sp := t.Split
		if sp == "" {
			sp = "train"
		}
		if sp == name {
			out = append(out, t)
		}
	}
	return out
}

// Splits returns the split names in use, sorted.
func (s *Suite) Splits() []string {
	seen := map[string]bool{}
	for _, t := range s.Tasks {
		sp := t.Split
		if sp == "" {
			sp = "train"
		}
		seen[sp] = true
	}
	out := make([]string, 0, len(seen))
	for k := range seen {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Task finds a task by id.
func (s *Suite) Task(id string) (*Task, bool) {
	for i := range s.Tasks {
		if s.Tasks[i].ID == id {
			return &s.Tasks[i], true
		}
	}
	return nil, false
}

// LoadSuite reads tasks from path:
//
//   - a .json, .yaml or .yml file holding one task, a list of tasks, or a
//     suite object {"name":..., "tasks":[...]};
//   - a .jsonl file, one task per line;
//   - a directory: an optional suite.yaml (or suite.json) for name and
//     description, every task file in it as above, and every subdirectory
//     holding a task.yaml or task.json, whose Dir is that subdirectory;
//   - a directory, or a subdirectory of one, that a registered TaskFormat
//     detects (a Terminal-Bench task folder, say) is loaded by that format.
//
// Task ids must be unique and every task must validate.
func LoadSuite(path string) (*Suite, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	s := &Suite{Name: strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))}
	if fi.IsDir() {
		err = loadDir(s, path)
	} else {
		err = loadFile(s, path, true)
	}
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for i := range s.Tasks {
		t := &s.Tasks[i]
		if err := t.Validate(); err != nil {
			return nil, err
		}
		if seen[t.ID] {
			return nil, fmt.Errorf("%s: task id %q appears twice", path, t.ID)
		}
		seen[t.ID] = true
	}
	return s, nil
}

// A TaskFormat reads task directories written for another harness, such
// as Terminal-Bench's (registered by envs/terminal). Detect says whether a
// directory is in the format; Load reads it into a Task (with Dir set).
type TaskFormat struct {
	Name   string
	Detect func(dir string) bool
	Load   func(dir string) (Task, error)
	// LoadMany, set instead of Load, reads a directory that holds many
	// tasks (a tau2 domain, a benchmark's data folder).
	LoadMany func(dir string) ([]Task, error)
}

var (
	formatsMu sync.RWMutex
	formats   []TaskFormat
)

// RegisterTaskFormat adds a task directory format, consulted by LoadSuite
// before the plain task.yaml: for each subdirectory of a directory it
// loads, and for the directory it is given itself (which then is a suite of
// one task). Formats are tried in name order; the first whose Detect says
// yes loads the directory. It panics on a nil func, an empty name or a
// duplicate name, as Register does.
func RegisterTaskFormat(name string, detect func(dir string) bool, load func(dir string) (Task, error)) {
	if name == "" || detect == nil || load == nil {
		panic("gym: RegisterTaskFormat needs a name, a detect and a load func")
	}
	addFormat(TaskFormat{Name: name, Detect: detect, Load: load})
}

// RegisterSuiteFormat adds a directory format that holds many tasks, such
// as a tau2 domain folder (db.json, tasks.json, policy.md). It is consulted
// where RegisterTaskFormat's formats are, and panics likewise.
func RegisterSuiteFormat(name string, detect func(dir string) bool, load func(dir string) ([]Task, error)) {
	if name == "" || detect == nil || load == nil {
		panic("gym: RegisterSuiteFormat needs a name, a detect and a load func")
	}
	addFormat(TaskFormat{Name: name, Detect: detect, LoadMany: load})
}

func addFormat(f TaskFormat) {
	formatsMu.Lock()
	defer formatsMu.Unlock()
	for _, g := range formats {
		if g.Name == f.Name {
			panic("gym: a task format named " + f.Name + " is registered twice")
		}
	}
	formats = append(formats, f)
	sort.Slice(formats, func(i, j int) bool { return formats[i].Name < formats[j].Name })
}

// loadFormat loads dir with the first registered format that detects it;
// ok is false when none does.
func loadFormat(dir string) (ts []Task, ok bool, err error) {
	formatsMu.RLock()
	fs := append([]TaskFormat(nil), formats...)
	formatsMu.RUnlock()
	for _, f := range fs {
		if !f.Detect(dir) {
			continue
		}
		if f.LoadMany != nil {
			ts, err := f.LoadMany(dir)
			if err != nil {
				return nil, true, fmt.Errorf("%s (%s tasks): %w", dir, f.Name, err)
			}
			return ts, true, nil
		}
		t, err := f.Load(dir)
		if err != nil {
			return nil, true, fmt.Errorf("%s (%s task): %w", dir, f.Name, err)
		}
		if t.Dir == "" {
			t.Dir = dir
		}
		if t.ID == "" {
			t.ID = filepath.Base(dir)
		}
		return []Task{t}, true, nil
	}
	return nil, false, nil
}

func loadDir(s *Suite, dir string) error {
	if ts, ok, err := loadFormat(dir); ok {
		if err != nil {
			return err
		}
		s.Tasks = append(s.Tasks, ts...)
		return nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		switch {
		case e.IsDir():
			if ts, ok, err := loadFormat(p); ok {
				if err != nil {
					return err
				}
				s.Tasks = append(s.Tasks, ts...)
				continue
			}
			for _, n := range []string{"task.yaml", "task.yml", "task.json"} {
				tp := filepath.Join(p, n)
				if _, err := os.Stat(tp); err == nil {
					var t Task
					if err := readDoc(tp, &t); err != nil {
						return err
					}
					t.Dir = p
					if t.ID == "" {
						t.ID = e.Name()
					}
					s.Tasks = append(s.Tasks, t)
					break
				}
			}
		case e.Name() == "suite.yaml" || e.Name() == "suite.yml" || e.Name() == "suite.json":
			if err := loadFile(s, p, true); err != nil {
				return err
			}
		case isTaskFile(e.Name()):
			if err := loadFile(s, p, false); err != nil {
				return err
			}
		}
	}
	return nil
}

func isTaskFile(name string) bool {
	switch filepath.Ext(name) {
	case ".json", ".yaml", ".yml", ".jsonl":
		return true
	}
	return false
}

func loadFile(s *Suite, path string, suiteMeta bool) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if filepath.Ext(path) == ".jsonl" {
		for i, line := range bytes.Split(b, []byte("\n")) {
			if len(bytes.TrimSpace(line)) == 0 {
				continue
			}
			var t Task
			if err := strictJSON(line, &t); err != nil {
				return fmt.Errorf("%s:%d: %w", path, i+1, err)
			}
			s.Tasks = append(s.Tasks, t)
		}
		return nil
	}
	j, err := toJSON(path, b)
	if err != nil {
		return err
	}
	j = bytes.TrimSpace(j)
	switch {
	case len(j) > 0 && j[0] == '[':
		var ts []Task
		if err := strictJSON(j, &ts); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		s.Tasks = append(s.Tasks, ts...)
	case hasKey(j, "tasks") || suiteMeta && !hasKey(j, "env"):
		var su Suite
		if err := strictJSON(j, &su); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if su.Name != "" {
			s.Name = su.Name
		}
		if su.Description != "" {
			s.Description = su.Description
		}
		if su.Signals != nil {
			s.Signals = su.Signals
		}
		s.Tasks = append(s.Tasks, su.Tasks...)
	default:
		var t Task
		if err := strictJSON(j, &t); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		s.Tasks = append(s.Tasks, t)
	}
	return nil
}

// hasKey reports whether the JSON object j has key at its top level (a
// task's own data may hold a "tasks" key without being a suite).
func hasKey(j []byte, key string) bool {
	var top map[string]json.RawMessage
	if json.Unmarshal(j, &top) != nil {
		return false
	}
	_, ok := top[key]
	return ok
}

func readDoc(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	j, err := toJSON(path, b)
	if err != nil {
		return err
	}
	if err := strictJSON(j, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

func toJSON(path string, b []byte) ([]byte, error) {
	if filepath.Ext(path) == ".json" {
		return b, nil
	}
	j, err := yaml.YAMLToJSON(b)
	if err != nil {
		return nil, fmt.Errorf("%s: not YAML: %w", path, err)
	}
	return j, nil
}

// strictJSON decodes and rejects unknown fields, so a misspelt key in a task
// file is an error, not a silently ignored setting.
func strictJSON(b []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	return d.Decode(v)
}

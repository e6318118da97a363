package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	"github.com/nextstate-rl/nextstate/agent/rundir"
)

// Files the report writes into a run directory (rundir names the others).
const (
	MarkdownFile = "report.md"
	HTMLFile     = "report.html"
)

// ReadResults reads results.jsonl from r (rundir.ReadResults): the last row
// of each trial id, sorted by task, env, sample and trial id, and how many
// rows later ones replaced.
func ReadResults(r io.Reader) (trials []rundir.Result, superseded int, err error) {
	res, err := rundir.ReadResults(r)
	if err != nil {
		return nil, 0, err
	}
	trials = res.Rows
	sort.SliceStable(trials, func(i, j int) bool {
		a, b := &trials[i], &trials[j]
		if a.Task != b.Task {
			return a.Task < b.Task
		}
		if a.Env != b.Env {
			return a.Env < b.Env
		}
		if a.Sample != b.Sample {
			return a.Sample < b.Sample
		}
		return a.TrialID < b.TrialID
	})
	return trials, res.Superseded, nil
}

// RunInfo is run.json (rundir.RunInfo) as the report shows it: its keys
// and their raw JSON values, sorted by key, whatever the writer put there.
type RunInfo struct {
	Keys   []string
	Values map[string]json.RawMessage
}

// Get returns a value of run.json as display text: strings unquoted,
// anything else as compact JSON; "" when absent.
func (ri *RunInfo) Get(key string) string {
	if ri == nil {
		return ""
	}
	v, ok := ri.Values[key]
	if !ok {
		return ""
	}
	var s string
	if json.Unmarshal(v, &s) == nil {
		return s
	}
	var buf bytes.Buffer
	if json.Compact(&buf, v) == nil {
		return buf.String()
	}
	return string(v)
}

func readRunInfo(path string) (*RunInfo, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s: not a JSON object: %w", rundir.RunFile, err)
	}
	ri := &RunInfo{Values: m}
	for k := range m {
		ri.Keys = append(ri.Keys, k)
	}
	sort.Strings(ri.Keys)
	return ri, nil
}

// ReadTrajectory reads the trajectory file of a trial from the run
// directory dir.
func ReadTrajectory(dir string, t *rundir.Result) (*rundir.Trajectory, error) {
	if t.Trajectory == "" {
		return nil, fmt.Errorf("trial %s has no trajectory file", t.TrialID)
	}
	path := filepath.Join(dir, filepath.FromSlash(t.Trajectory))
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("trial %s: %w", t.TrialID, err)
	}
	var tr rundir.Trajectory
	if err := json.Unmarshal(b, &tr); err != nil {
		return nil, fmt.Errorf("trial %s: %s is not a trajectory file: %w", t.TrialID, t.Trajectory, err)
	}
	return &tr, nil
}

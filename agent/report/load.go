package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/nextstate-rl/nextstate/gym"
)

// Files of a run directory.
const (
	ResultsFile  = "results.jsonl"
	RunFile      = "run.json"
	MarkdownFile = "report.md"
	HTMLFile     = "report.html"
)

// Status is a trial's result.
type Status string

// The statuses a results.jsonl row may carry.
const (
	StatusPassed     Status = "passed"      // reward reached the pass threshold
	StatusFailed     Status = "failed"      // the episode ended below the threshold
	StatusAgentError Status = "agent_error" // the agent's fault ended the trial
	StatusInfraError Status = "infra_error" // the infrastructure's fault ended it: never scored
)

// Statuses lists the accepted statuses.
var Statuses = []Status{StatusPassed, StatusFailed, StatusAgentError, StatusInfraError}

// Trial is one row of results.jsonl: the last row written for its trial id.
// Split is optional (a task without one counts as "train" in the split
// breakdown, as gym.Suite does).
type Trial struct {
	TrialID          string       `json:"trial_id"`
	Task             string       `json:"task"`
	Env              string       `json:"env"`
	Split            string       `json:"split,omitempty"`
	Sample           int          `json:"sample"`
	Seed             int64        `json:"seed"`
	Status           Status       `json:"status"`
	Reward           float64      `json:"reward"`
	ProcessReward    *float64     `json:"process_reward"`
	Terminated       bool         `json:"terminated"`
	Truncated        bool         `json:"truncated"`
	Steps            int          `json:"steps"`
	Failure          *gym.Failure `json:"failure"`
	Session          string       `json:"session"`
	DurationMS       int64        `json:"duration_ms"`
	PromptTokens     int64        `json:"prompt_tokens"`
	CompletionTokens int64        `json:"completion_tokens"`
	Model            string       `json:"model"`
	Trajectory       string       `json:"trajectory"`
	FinishedAt       string       `json:"finished_at"`

	// Line is the row's line number in results.jsonl (from 1).
	Line int `json:"-"`
}

// Infra reports whether the trial is an infrastructure failure, excluded
// from every score: its status is infra_error, or it did not pass and its
// failure is labelled with the infra fault.
func (t *Trial) Infra() bool {
	if t.Status == StatusInfraError {
		return true
	}
	return t.Status != StatusPassed && t.Failure != nil && t.Failure.Fault == gym.FaultInfra
}

// Passed reports whether the trial passed.
func (t *Trial) Passed() bool { return t.Status == StatusPassed }

// FailureClass returns the fault and reason a trial that did not pass is
// counted under in the failure taxonomy; ok is false for a passed trial.
// A labelled failure gives its own; otherwise an infra_error or
// agent_error is "unlabelled", a truncated episode is the agent's
// "truncated", and an episode that ended below the threshold is the
// agent's "not_solved".
func (t *Trial) FailureClass() (fault gym.Fault, reason string, ok bool) {
	switch {
	case t.Passed():
		return "", "", false
	case t.Failure != nil && t.Failure.Fault != "":
		reason = t.Failure.Reason
		if reason == "" {
			reason = "unlabelled"
		}
		if t.Infra() {
			return gym.FaultInfra, reason, true
		}
		return t.Failure.Fault, reason, true
	case t.Status == StatusInfraError:
		return gym.FaultInfra, "unlabelled", true
	case t.Status == StatusAgentError:
		return gym.FaultAgent, "unlabelled", true
	case t.Truncated:
		return gym.FaultAgent, "truncated", true
	default:
		return gym.FaultAgent, "not_solved", true
	}
}

func (t *Trial) check() error {
	if t.TrialID == "" {
		return errors.New(`missing "trial_id"`)
	}
	if t.Task == "" {
		return errors.New(`missing "task"`)
	}
	ok := false
	for _, s := range Statuses {
		ok = ok || t.Status == s
	}
	if !ok {
		return fmt.Errorf("unknown status %q (accepted: passed, failed, agent_error, infra_error)", t.Status)
	}
	if f := t.Failure; f != nil && f.Fault != gym.FaultAgent && f.Fault != gym.FaultInfra {
		return fmt.Errorf("unknown failure fault %q (accepted: agent, infra)", f.Fault)
	}
	if t.Sample < 0 || t.Steps < 0 || t.DurationMS < 0 || t.PromptTokens < 0 || t.CompletionTokens < 0 {
		return errors.New("sample, steps, duration_ms and token counts must not be negative")
	}
	if t.Trajectory != "" && !filepath.IsLocal(filepath.FromSlash(t.Trajectory)) {
		return fmt.Errorf("trajectory path %q is not a relative path inside the run directory", t.Trajectory)
	}
	return nil
}

// ReadResults reads results.jsonl from r. Blank lines are skipped; a line
// that is not a valid row is an error naming it. When a trial id appears
// more than once, the last row wins; superseded counts the rows replaced.
// Trials come back sorted by task, env, sample and trial id.
func ReadResults(r io.Reader) (trials []Trial, superseded int, err error) {
	br := bufio.NewReader(r)
	index := map[string]int{}
	for line := 1; ; line++ {
		b, rerr := br.ReadBytes('\n')
		if rerr != nil && rerr != io.EOF {
			return nil, 0, fmt.Errorf("%s line %d: %w", ResultsFile, line, rerr)
		}
		if b = bytes.TrimSpace(b); len(b) > 0 {
			var t Trial
			if err := json.Unmarshal(b, &t); err != nil {
				return nil, 0, fmt.Errorf("%s line %d: not a JSON result row: %w", ResultsFile, line, err)
			}
			if err := t.check(); err != nil {
				return nil, 0, fmt.Errorf("%s line %d: %w", ResultsFile, line, err)
			}
			t.Line = line
			if i, dup := index[t.TrialID]; dup {
				trials[i] = t
				superseded++
			} else {
				index[t.TrialID] = len(trials)
				trials = append(trials, t)
			}
		}
		if rerr == io.EOF {
			break
		}
	}
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
	return trials, superseded, nil
}

// RunInfo is run.json: the run's configuration (suite, model, base_url, k,
// concurrency, started, oracle, and whatever else the runner records), kept
// as raw JSON values in key order for display.
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
		return nil, fmt.Errorf("%s: not a JSON object: %w", RunFile, err)
	}
	ri := &RunInfo{Values: m}
	for k := range m {
		ri.Keys = append(ri.Keys, k)
	}
	sort.Strings(ri.Keys)
	return ri, nil
}

// Trajectory is a trial's trajectory file (DIR/trajectories/<trial>.json).
type Trajectory struct {
	TrialID     string  `json:"trial_id"`
	Task        string  `json:"task"`
	Env         string  `json:"env"`
	Instruction string  `json:"instruction"`
	Seed        int64   `json:"seed"`
	Model       string  `json:"model"`
	Steps       []Step  `json:"steps"`
	Outcome     float64 `json:"outcome"`
}

// Step is one step of a trajectory: the model's response, the action, the
// next state, its reward and the judge's verdict.
type Step struct {
	Step         int             `json:"step"`
	MessagesTail json.RawMessage `json:"messages_tail,omitempty"`
	Response     string          `json:"response"`
	Action       gym.Action      `json:"action"`
	Observation  gym.Observation `json:"observation"`
	Reward       float64         `json:"reward"`
	Terminated   bool            `json:"terminated"`
	Truncated    bool            `json:"truncated"`
	Info         gym.Info        `json:"info,omitempty"`
	Failure      *gym.Failure    `json:"failure"`
	Judge        *Judge          `json:"judge"`
}

// Judge is the process-reward judge's verdict on a step.
type Judge struct {
	Reward float64 `json:"reward"`
	Votes  []Vote  `json:"votes"`
	Hint   string  `json:"hint"`
}

// Vote is one judge vote.
type Vote struct {
	Score    float64 `json:"score"`
	Hint     string  `json:"hint"`
	Valid    bool    `json:"valid"`
	TimedOut bool    `json:"timed_out,omitempty"`
	Error    string  `json:"error,omitempty"`
}

// ReadTrajectory reads the trajectory file of a trial from the run
// directory dir.
func ReadTrajectory(dir string, t *Trial) (*Trajectory, error) {
	if t.Trajectory == "" {
		return nil, fmt.Errorf("trial %s has no trajectory file", t.TrialID)
	}
	path := filepath.Join(dir, filepath.FromSlash(t.Trajectory))
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("trial %s: %w", t.TrialID, err)
	}
	var tr Trajectory
	if err := json.Unmarshal(b, &tr); err != nil {
		return nil, fmt.Errorf("trial %s: %s is not a trajectory file: %w", t.TrialID, t.Trajectory, err)
	}
	return &tr, nil
}

// blobPath maps an image reference to a file of the run directory:
// "blobs/<sha>.png" as the runner writes it, or the store's "sha256:<hex>"
// (looked for as blobs/<hex>.png). ok is false for anything that would
// leave the directory.
func blobPath(ref string) (string, bool) {
	if hex, found := strings.CutPrefix(ref, "sha256:"); found {
		ref = "blobs/" + hex + ".png"
	}
	p := filepath.FromSlash(ref)
	if ref == "" || !filepath.IsLocal(p) {
		return "", false
	}
	return p, true
}

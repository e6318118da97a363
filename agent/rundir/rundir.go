package rundir

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/nextstate-rl/nextstate/gym"
)

// Files of a run directory.
const (
	ResultsFile     = "results.jsonl"
	RunFile         = "run.json"
	TrajectoriesDir = "trajectories"
	BlobsDir        = "blobs"
)

// Status is a trial's result.
type Status string

// The statuses a results.jsonl row may carry.
const (
	StatusPassed     Status = "passed"      // reward >= the run's pass threshold
	StatusFailed     Status = "failed"      // the episode ended below it
	StatusAgentError Status = "agent_error" // the agent's fault ended it (a bad action, a prompt over the model's context)
	StatusInfraError Status = "infra_error" // the infrastructure's fault ended it: never scored, retried by a rerun
)

// Statuses lists the accepted statuses.
var Statuses = []Status{StatusPassed, StatusFailed, StatusAgentError, StatusInfraError}

// Result is one row of results.jsonl: one trial, an episode of one task
// with one sample index.
type Result struct {
	TrialID string `json:"trial_id"`
	Task    string `json:"task"`
	Env     string `json:"env"`
	// Split is the task's split, for a writer that gives it (the report
	// breaks its numbers down by split); none counts as "train", as
	// gym.Suite does. nextstate run leaves it out.
	Split  string  `json:"split,omitempty"`
	Sample int     `json:"sample"`
	Seed   int64   `json:"seed"`
	Status Status  `json:"status"`
	Reward float64 `json:"reward"`
	// ProcessReward is the trial's mean process reward, when a judge gave
	// one; null otherwise (nextstate run does not ask for it).
	ProcessReward *float64 `json:"process_reward"`
	Terminated    bool     `json:"terminated"`
	Truncated     bool     `json:"truncated"`
	Steps         int      `json:"steps"`
	// Refused counts the actions the gym refused before the env saw them
	// (they do not count as steps); the gym records each, the episode's
	// first gym.MaxRefusedRecorded, and each gives a training sample.
	Refused    int          `json:"refused,omitempty"`
	Failure    *gym.Failure `json:"failure"`
	Session    string       `json:"session"`
	DurationMS int64        `json:"duration_ms"`
	// PromptTokens and CompletionTokens are the model server's counts,
	// summed over the trial's model calls.
	PromptTokens     int64     `json:"prompt_tokens"`
	CompletionTokens int64     `json:"completion_tokens"`
	Model            string    `json:"model"`
	Trajectory       string    `json:"trajectory"` // the trajectory file, relative to the directory
	FinishedAt       time.Time `json:"finished_at"`

	// Line is the row's line number in results.jsonl (from 1), as
	// ReadResults found it.
	Line int `json:"-"`
}

// Infra reports whether the trial is an infrastructure failure, excluded
// from every score: its status is infra_error, or it did not pass and its
// failure is labelled with the infra fault.
func (r *Result) Infra() bool {
	if r.Status == StatusInfraError {
		return true
	}
	return r.Status != StatusPassed && r.Failure != nil && r.Failure.Fault == gym.FaultInfra
}

// Passed reports whether the trial passed.
func (r *Result) Passed() bool { return r.Status == StatusPassed }

// FailureClass returns the fault and reason a trial that did not pass is
// counted under in the failure taxonomy; ok is false for a passed trial.
// A labelled failure gives its own; otherwise an infra_error or
// agent_error is "unlabelled", a truncated episode is the agent's
// "truncated", and an episode that ended below the threshold is the
// agent's "not_solved".
func (r *Result) FailureClass() (fault gym.Fault, reason string, ok bool) {
	switch {
	case r.Passed():
		return "", "", false
	case r.Failure != nil && r.Failure.Fault != "":
		reason = r.Failure.Reason
		if reason == "" {
			reason = "unlabelled"
		}
		if r.Infra() {
			return gym.FaultInfra, reason, true
		}
		return r.Failure.Fault, reason, true
	case r.Status == StatusInfraError:
		return gym.FaultInfra, "unlabelled", true
	case r.Status == StatusAgentError:
		return gym.FaultAgent, "unlabelled", true
	case r.Truncated:
		return gym.FaultAgent, "truncated", true
	default:
		return gym.FaultAgent, "not_solved", true
	}
}

// Check says what makes r not a valid row: no trial_id or task, an
// unknown status or failure fault, a negative count, a trajectory path
// that leaves the directory.
func (r *Result) Check() error {
	if r.TrialID == "" {
		return errors.New(`missing "trial_id"`)
	}
	if r.Task == "" {
		return errors.New(`missing "task"`)
	}
	ok := false
	for _, s := range Statuses {
		ok = ok || r.Status == s
	}
	if !ok {
		return fmt.Errorf("unknown status %q (accepted: passed, failed, agent_error, infra_error)", r.Status)
	}
	if f := r.Failure; f != nil && f.Fault != gym.FaultAgent && f.Fault != gym.FaultInfra {
		return fmt.Errorf("unknown failure fault %q (accepted: agent, infra)", f.Fault)
	}
	if r.Sample < 0 || r.Steps < 0 || r.DurationMS < 0 || r.PromptTokens < 0 || r.CompletionTokens < 0 {
		return errors.New("sample, steps, duration_ms and token counts must not be negative")
	}
	if r.Trajectory != "" && !filepath.IsLocal(filepath.FromSlash(r.Trajectory)) {
		return fmt.Errorf("trajectory path %q is not a relative path inside the run directory", r.Trajectory)
	}
	return nil
}

// Results is what ReadResults read.
type Results struct {
	// Rows are the last row of each trial id, in the order the trial ids
	// first appear.
	Rows []Result
	// Superseded counts the rows a later row of their trial id replaced.
	Superseded int
	// Complete is the length of the lines read, in bytes: the file less a
	// last line cut short. Cut says there was one.
	Complete int64
	Cut      bool
}

// ReadResults reads results.jsonl from r (see the package doc for what is
// accepted).
func ReadResults(r io.Reader) (Results, error) {
	var res Results
	br := bufio.NewReader(r)
	index := map[string]int{}
	for line := 1; ; line++ {
		b, rerr := br.ReadBytes('\n')
		if rerr != nil && rerr != io.EOF {
			return Results{}, fmt.Errorf("%s line %d: %w", ResultsFile, line, rerr)
		}
		last := rerr == io.EOF
		if text := bytes.TrimSpace(b); len(text) > 0 {
			var row Result
			if err := json.Unmarshal(text, &row); err != nil {
				var syn *json.SyntaxError
				if last && (errors.As(err, &syn) || errors.Is(err, io.ErrUnexpectedEOF)) {
					res.Cut = true // a line cut short: left out
					break
				}
				return Results{}, fmt.Errorf("%s line %d: not a JSON result row: %w", ResultsFile, line, err)
			}
			if err := row.Check(); err != nil {
				return Results{}, fmt.Errorf("%s line %d: %w", ResultsFile, line, err)
			}
			row.Line = line
			if i, dup := index[row.TrialID]; dup {
				res.Rows[i] = row
				res.Superseded++
			} else {
				index[row.TrialID] = len(res.Rows)
				res.Rows = append(res.Rows, row)
			}
		}
		res.Complete += int64(len(b))
		if last {
			break
		}
	}
	return res, nil
}

// ReadResultsFile reads the results.jsonl at path with ReadResults; a
// missing file is an error wrapping fs.ErrNotExist.
func ReadResultsFile(path string) (Results, error) {
	f, err := os.Open(path)
	if err != nil {
		return Results{}, err
	}
	defer f.Close()
	res, err := ReadResults(f)
	if err != nil {
		return Results{}, fmt.Errorf("%s: %w", filepath.Dir(path), err)
	}
	return res, nil
}

// RunInfo is run.json: what a run directory holds a run of. A rerun into
// the same directory must agree on Model, Oracle and Seed.
type RunInfo struct {
	Run           string    `json:"run"`
	Suite         []string  `json:"suite"`
	Split         string    `json:"split,omitempty"`
	Tasks         string    `json:"tasks,omitempty"`
	Model         string    `json:"model"`
	BaseURL       string    `json:"base_url,omitempty"`
	K             int       `json:"k"`
	Concurrency   int       `json:"concurrency"`
	Started       time.Time `json:"started"`
	Updated       time.Time `json:"updated"`
	Oracle        bool      `json:"oracle"`
	Seed          int64     `json:"seed"`
	PassThreshold float64   `json:"pass_threshold"`
	MaxTurns      int       `json:"max_turns,omitempty"`
	ContextBudget int       `json:"context_budget,omitempty"`
	Temperature   *float64  `json:"temperature,omitempty"`
	Server        string    `json:"server,omitempty"`
	// Trials is how many trials the run's task selection makes (tasks × k).
	Trials int `json:"trials"`
}

// Trajectory is a trial's file under trajectories/. Images in
// observations and messages are kept in blobs/ and referred to by path.
type Trajectory struct {
	TrialID     string `json:"trial_id"`
	Task        string `json:"task"`
	Env         string `json:"env"`
	Instruction string `json:"instruction"`
	Seed        int64  `json:"seed"`
	Model       string `json:"model"`
	// Reset is the first observation and its info.
	Reset struct {
		Observation gym.Observation `json:"observation"`
		Info        gym.Info        `json:"info,omitempty"`
	} `json:"reset"`
	Steps   []Step  `json:"steps"`
	Outcome float64 `json:"outcome"`
}

// Step is one step of a trajectory: the model's response, the action, the
// next state, its reward and the judge's verdict. A step the gym refused
// (its action did not match the env's action schema) has Step 0 and a
// Failure, and no observation.
type Step struct {
	Step int `json:"step"`
	// MessagesTail holds the messages new in this turn's prompt (images as
	// blob paths).
	MessagesTail json.RawMessage `json:"messages_tail,omitempty"`
	Response     string          `json:"response,omitempty"`
	Action       gym.Action      `json:"action"`
	Observation  gym.Observation `json:"observation"`
	Reward       float64         `json:"reward"`
	Terminated   bool            `json:"terminated"`
	Truncated    bool            `json:"truncated"`
	Info         gym.Info        `json:"info,omitempty"`
	Failure      *gym.Failure    `json:"failure"`
	// Judge is the judge's verdict on the step, when there is one (null
	// from nextstate run, as ProcessReward).
	Judge *Judge `json:"judge"`
	// Turn is the policy's side of the step as the agent sent it to the
	// gym server; the file keeps only Response and MessagesTail of it.
	Turn *gym.Turn `json:"-"`
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

// TrialID names a trial: "<task id>#<sample>".
func TrialID(task string, sample int) string { return task + "#" + strconv.Itoa(sample) }

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// TrajectoryPath is where a trial's trajectory file goes in a run
// directory: trajectories/<task>.<sample>.json, the task id made safe for
// file names (and, when that changed it, suffixed with a short hash of
// the id so that two ids never share a file).
func TrajectoryPath(task string, sample int) string {
	name := unsafeName.ReplaceAllString(task, "_")
	if name != task || name == "" || name[0] == '.' {
		sum := sha256.Sum256([]byte(task))
		name = name + "-" + hex.EncodeToString(sum[:4])
	}
	return TrajectoriesDir + "/" + name + "." + strconv.Itoa(sample) + ".json"
}

// BlobPath is where a run directory keeps an image or file's bytes:
// "blobs/<sha256>.<ext>", the extension from the MIME type.
func BlobPath(mime string, data []byte) string {
	sum := sha256.Sum256(data)
	return BlobsDir + "/" + hex.EncodeToString(sum[:]) + blobExt(mime)
}

func blobExt(mime string) string {
	switch mime {
	case "image/png":
		return ".png"
	case "image/jpeg", "image/jpg":
		return ".jpg"
	case "image/webp":
		return ".webp"
	case "image/gif":
		return ".gif"
	case "application/json":
		return ".json"
	}
	return ".bin"
}

// BlobFile maps an image reference to a file of the run directory:
// "blobs/<sha>.<ext>" as BlobPath names it, or the store's "sha256:<hex>"
// (looked for as blobs/<hex>.png). ok is false for anything that would
// leave the directory.
func BlobFile(ref string) (string, bool) {
	if hex, found := strings.CutPrefix(ref, "sha256:"); found {
		ref = BlobsDir + "/" + hex + ".png"
	}
	p := filepath.FromSlash(ref)
	if ref == "" || !filepath.IsLocal(p) {
		return "", false
	}
	return p, true
}

// WriteFile writes data to path whole: to a temporary file beside it,
// then renamed over it, so a reader never sees half a file.
func WriteFile(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	name := tmp.Name()
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Chmod(0o644)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(name, path)
	}
	if err != nil {
		os.Remove(name)
	}
	return err
}

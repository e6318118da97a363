package agent

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"time"

	"github.com/nextstate-rl/nextstate/gym"
)

// Trial statuses, as results.jsonl writes them.
const (
	StatusPassed     = "passed"      // reward >= the pass threshold
	StatusFailed     = "failed"      // the episode ended below it
	StatusAgentError = "agent_error" // the agent's fault ended it (a bad action, a prompt over the model's context)
	StatusInfraError = "infra_error" // the infrastructure's fault: retried by a rerun
)

// Result is one row of results.jsonl: one trial, an episode of one task
// with one sample index. A rerun appends rows for the trials it retried;
// the last row of a trial id wins.
type Result struct {
	TrialID          string       `json:"trial_id"`
	Task             string       `json:"task"`
	Env              string       `json:"env"`
	Sample           int          `json:"sample"`
	Seed             int64        `json:"seed"`
	Status           string       `json:"status"`
	Reward           float64      `json:"reward"`
	ProcessReward    *float64     `json:"process_reward"`
	Terminated       bool         `json:"terminated"`
	Truncated        bool         `json:"truncated"`
	Steps            int          `json:"steps"`
	Failure          *gym.Failure `json:"failure"`
	Session          string       `json:"session"`
	DurationMS       int64        `json:"duration_ms"`
	PromptTokens     int          `json:"prompt_tokens"`
	CompletionTokens int          `json:"completion_tokens"`
	Model            string       `json:"model"`
	Trajectory       string       `json:"trajectory"`
	FinishedAt       time.Time    `json:"finished_at"`
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

// ReadResults reads a results.jsonl and returns the last row of each
// trial, in the order trials first appear. A last line cut short (the
// process was killed while writing it) is ignored; any other line that
// does not parse is an error. A missing file is no rows.
func ReadResults(path string) ([]Result, error) {
	rows, _, err := readResults(path)
	return rows, err
}

// readResults also returns the length of the file's complete lines.
func readResults(path string) ([]Result, int64, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	good := int64(bytes.LastIndexByte(b, '\n') + 1)
	idx := map[string]int{}
	var rows []Result
	sc := bufio.NewScanner(bytes.NewReader(b[:good]))
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for line := 1; sc.Scan(); line++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var r Result
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil || r.TrialID == "" {
			if err == nil {
				err = errors.New("no trial_id")
			}
			return nil, 0, fmt.Errorf("%s:%d: not a result row: %v", path, line, err)
		}
		if i, ok := idx[r.TrialID]; ok {
			rows[i] = r
			continue
		}
		idx[r.TrialID] = len(rows)
		rows = append(rows, r)
	}
	return rows, good, sc.Err()
}

// resultsWriter appends rows to a run directory's results.jsonl and
// writes the trajectory files and blobs they point to. Each file is
// written whole (a temporary file renamed) before the row that names it,
// so a directory left by a killed run is consistent.
type resultsWriter struct {
	dir string
	mu  sync.Mutex
	f   *os.File
}

// openResults opens dir's results.jsonl for appending, first cutting off
// a last line left incomplete.
func openResults(dir string) (*resultsWriter, []Result, error) {
	for _, d := range []string{dir, filepath.Join(dir, "trajectories"), filepath.Join(dir, "blobs")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, nil, err
		}
	}
	path := filepath.Join(dir, "results.jsonl")
	rows, good, err := readResults(path)
	if err != nil {
		return nil, nil, err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, nil, err
	}
	if err := f.Truncate(good); err != nil {
		f.Close()
		return nil, nil, err
	}
	if _, err := f.Seek(good, io.SeekStart); err != nil {
		f.Close()
		return nil, nil, err
	}
	return &resultsWriter{dir: dir, f: f}, rows, nil
}

// write saves a trial: its blobs, its trajectory file, then its row.
func (w *resultsWriter) write(r *Result, t *Trajectory) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if t != nil {
		if err := w.saveBlobs(t); err != nil {
			return err
		}
		b, err := json.Marshal(t)
		if err != nil {
			return fmt.Errorf("encoding the trajectory of %s: %w", r.TrialID, err)
		}
		if err := writeFileAtomic(filepath.Join(w.dir, filepath.FromSlash(r.Trajectory)), b); err != nil {
			return err
		}
	}
	line, err := json.Marshal(r)
	if err != nil {
		return err
	}
	_, err = w.f.Write(append(line, '\n'))
	return err
}

func (w *resultsWriter) close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	serr := w.f.Sync()
	if err := w.f.Close(); err != nil {
		return err
	}
	return serr
}

// saveBlobs moves the images and binary files of a trajectory's
// observations into blobs/, leaving their paths in Ref.
func (w *resultsWriter) saveBlobs(t *Trajectory) error {
	save := func(o *gym.Observation) error {
		parts := make([]gym.Part, len(o.Parts))
		copy(parts, o.Parts)
		for i, p := range parts {
			var b *gym.Blob
			switch {
			case p.Image != nil:
				c := *p.Image
				parts[i].Image, b = &c, &c
			case p.File != nil && p.File.Path != "tools.json":
				c := *p.File
				parts[i].File, b = &c, &c.Blob
			}
			if b == nil || len(b.Data) == 0 {
				continue
			}
			ref := BlobPath(b.MIME, b.Data)
			path := filepath.Join(w.dir, filepath.FromSlash(ref))
			if _, err := os.Stat(path); err != nil {
				if err := writeFileAtomic(path, b.Data); err != nil {
					return err
				}
			}
			if b.Size == 0 {
				b.Size = int64(len(b.Data))
			}
			b.Ref, b.Data = ref, nil
		}
		o.Parts = parts
		return nil
	}
	if err := save(&t.Reset.Observation); err != nil {
		return err
	}
	for i := range t.Steps {
		if err := save(&t.Steps[i].Observation); err != nil {
			return err
		}
	}
	return nil
}

func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}

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
	return "trajectories/" + name + "." + strconv.Itoa(sample) + ".json"
}

// TrialID names a trial: "<task id>#<sample>".
func TrialID(task string, sample int) string { return task + "#" + strconv.Itoa(sample) }

// Summary sums up the trials of a run.
type Summary struct {
	Trials      int     `json:"trials"`
	Tasks       int     `json:"tasks"`
	K           int     `json:"k"`
	Passed      int     `json:"passed"`
	Failed      int     `json:"failed"`
	AgentErrors int     `json:"agent_errors"`
	InfraErrors int     `json:"infra_errors"`
	Missing     int     `json:"missing"` // trials with no row (an interrupted run)
	Pass1       float64 `json:"pass@1"`
	PassK       float64 `json:"pass@k"`
	MeanReward  float64 `json:"mean_reward"`
}

// Summarize sums up rows (the last row of each trial) for the trials
// named in want (nil: every row), k samples per task. Pass rates are
// unbiased estimates (Chen et al. 2021) over the scored trials of each
// task, infrastructure errors left out, averaged over the tasks that have
// any; agent errors count as failures. MeanReward is likewise the mean
// over tasks of each task's mean reward.
func Summarize(rows []Result, want map[string]bool, k int) Summary {
	s := Summary{K: k}
	type tally struct {
		n, c   int
		reward float64
	}
	tasks := map[string]*tally{}
	seen := 0
	for _, r := range rows {
		if want != nil && !want[r.TrialID] {
			continue
		}
		seen++
		t := tasks[r.Task]
		if t == nil {
			t = &tally{}
			tasks[r.Task] = t
		}
		switch r.Status {
		case StatusPassed:
			s.Passed++
			t.n++
			t.c++
		case StatusFailed:
			s.Failed++
			t.n++
		case StatusAgentError:
			s.AgentErrors++
			t.n++
		default:
			s.InfraErrors++
			continue
		}
		t.reward += r.Reward
	}
	s.Trials = seen
	if want != nil {
		s.Trials = len(want)
		s.Missing = len(want) - seen
	}
	s.Tasks = len(tasks)
	var p1, pk, mr float64
	n := 0
	for _, t := range tasks {
		if t.n == 0 {
			continue
		}
		n++
		p1 += PassAtK(t.n, t.c, 1)
		pk += PassAtK(t.n, t.c, k)
		mr += t.reward / float64(t.n)
	}
	if n > 0 {
		s.Pass1, s.PassK, s.MeanReward = p1/float64(n), pk/float64(n), mr/float64(n)
	}
	return s
}

// PassAtK is the unbiased estimate of pass@k from n samples of which c
// passed: 1 - C(n-c, k)/C(n, k). With fewer than k samples it is the
// estimate at k = n.
func PassAtK(n, c, k int) float64 {
	if n <= 0 {
		return 0
	}
	k = min(k, n)
	if n-c < k {
		return 1
	}
	p := 1.0
	for i := n - c + 1; i <= n; i++ {
		p *= 1 - float64(k)/float64(i)
	}
	return 1 - p
}

package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/nextstate-rl/nextstate/agent/rundir"
	"github.com/nextstate-rl/nextstate/gym"
)

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
func openResults(dir string) (*resultsWriter, []rundir.Result, error) {
	for _, d := range []string{dir, filepath.Join(dir, rundir.TrajectoriesDir), filepath.Join(dir, rundir.BlobsDir)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, nil, err
		}
	}
	path := filepath.Join(dir, rundir.ResultsFile)
	res, err := rundir.ReadResultsFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, nil, err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, nil, err
	}
	if err := f.Truncate(res.Complete); err != nil {
		f.Close()
		return nil, nil, err
	}
	if _, err := f.Seek(res.Complete, io.SeekStart); err != nil {
		f.Close()
		return nil, nil, err
	}
	if err := endLine(f, res.Complete); err != nil {
		f.Close()
		return nil, nil, err
	}
	return &resultsWriter{dir: dir, f: f}, res.Rows, nil
}

// endLine ends a last row written without its newline (by hand), so the
// next row starts a line of its own.
func endLine(f *os.File, size int64) error {
	if size == 0 {
		return nil
	}
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, size-1); err != nil || b[0] == '\n' {
		return err
	}
	_, err := f.Write([]byte{'\n'})
	return err
}

// write saves a trial: its blobs, its trajectory file, then its row.
func (w *resultsWriter) write(r *rundir.Result, t *rundir.Trajectory) error {
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
		if err := rundir.WriteFile(filepath.Join(w.dir, filepath.FromSlash(r.Trajectory)), b); err != nil {
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
func (w *resultsWriter) saveBlobs(t *rundir.Trajectory) error {
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
			ref := rundir.BlobPath(b.MIME, b.Data)
			path := filepath.Join(w.dir, filepath.FromSlash(ref))
			if _, err := os.Stat(path); err != nil {
				if err := rundir.WriteFile(path, b.Data); err != nil {
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
func Summarize(rows []rundir.Result, want map[string]bool, k int) Summary {
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
		case rundir.StatusPassed:
			s.Passed++
			t.n++
			t.c++
		case rundir.StatusFailed:
			s.Failed++
			t.n++
		case rundir.StatusAgentError:
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

package train

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/nextstate-rl/nextstate/agent"
	"github.com/nextstate-rl/nextstate/agent/rundir"
	"github.com/nextstate-rl/nextstate/gym"
)

// batchTasks draws batch b's tasks: Groups of them, each suite drawn by
// its weight and then a task of it uniformly, none twice, from a seed of
// the run's seed and b (so a resumed run draws the same).
func (l *Loop) batchTasks(b int) []gym.Task {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d\x00batch\x00%d", l.cfg.Seed, b)
	rng := rand.New(rand.NewPCG(h.Sum64(), 0x7472616e))
	left := map[string][]gym.Task{}
	for _, t := range l.cfg.Tasks {
		if l.cfg.Mix == nil || l.cfg.Mix[t.Suite] > 0 {
			left[t.Suite] = append(left[t.Suite], t.Task)
		}
	}
	names := sortedKeys(left)
	var out []gym.Task
	for len(out) < l.cfg.Groups {
		total := 0.0
		for _, n := range names {
			if len(left[n]) > 0 {
				total += l.weight(n)
			}
		}
		if total == 0 {
			break
		}
		x := rng.Float64() * total
		pick := ""
		for _, n := range names {
			if len(left[n]) == 0 {
				continue
			}
			pick = n
			if x -= l.weight(n); x < 0 {
				break
			}
		}
		ts := left[pick]
		i := rng.IntN(len(ts))
		out = append(out, ts[i])
		left[pick] = slices.Delete(ts, i, i+1)
	}
	return out
}

func (l *Loop) weight(suite string) float64 {
	if l.cfg.Mix == nil {
		return 1
	}
	return l.cfg.Mix[suite]
}

// batchDir is batch b's run directory; batchRun its sessions' run label.
func (l *Loop) batchDir(b int) string {
	return filepath.Join(l.cfg.Dir, "rollouts", fmt.Sprintf("b%06d", b))
}
func (l *Loop) batchRun(b int) string { return fmt.Sprintf("%s/b%06d", l.run, b) }

// rollout is a played batch: its rows, by trial, and how long it took.
type rollout struct {
	batch   int
	rows    []rundir.Result
	elapsed time.Duration
	// version is the newest weight version when the batch began.
	version int
}

// produce plays the batches from first to the last, each once the steps
// its staleness bound waits for are done, and hands each to the trainer.
func (l *Loop) produce(ctx context.Context, first int, out chan<- rollout) error {
	defer close(out)
	for b := first; b <= l.cfg.Steps; b++ {
		if err := l.waitTrained(ctx, b-1-l.cfg.MaxStaleness); err != nil {
			return err
		}
		r, err := l.play(ctx, b, nil)
		if err != nil {
			return err
		}
		select {
		case out <- r:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// play runs batch b's trials (those its directory does not hold yet, and
// again those named in replay) and returns its rows.
func (l *Loop) play(ctx context.Context, b int, replay []rundir.Result) (rollout, error) {
	dir := l.batchDir(b)
	if len(replay) > 0 {
		if err := supersede(dir, replay); err != nil {
			return rollout{}, err
		}
	}
	begin := time.Now()
	version := l.newest()
	tasks := l.batchTasks(b)
	r := &agent.Runner{Client: l.cfg.Gym, Agent: l.policy, Tasks: tasks, Known: l.cfg.Known, K: l.cfg.GroupSize,
		Concurrency: l.cfg.Concurrency, Seed: batchSeed(l.cfg.Seed, b), PassThreshold: l.cfg.PassThreshold, Dir: dir,
		Info: rundir.RunInfo{Run: l.batchRun(b), Model: l.cfg.Policy.Model, BaseURL: l.cfg.Policy.BaseURL,
			Temperature: l.cfg.Policy.Temperature, MaxTurns: l.cfg.Policy.MaxTurns}, Logger: l.log}
	if _, err := r.Run(ctx); err != nil {
		return rollout{}, fmt.Errorf("batch %d: %w", b, err)
	}
	res, err := rundir.ReadResultsFile(filepath.Join(dir, rundir.ResultsFile))
	if err != nil {
		return rollout{}, fmt.Errorf("batch %d: %w", b, err)
	}
	return rollout{batch: b, rows: res.Rows, elapsed: time.Since(begin), version: version}, nil
}

// batchSeed is the seed the batch's trial seeds derive from.
func batchSeed(seed int64, b int) int64 { return agent.TrialSeed(seed, "batch", b) }

// supersede appends rows for the trials of replay that mark them
// infrastructure errors (their samples were lost), so that the batch's
// Runner plays them again.
func supersede(dir string, replay []rundir.Result) error {
	f, err := os.OpenFile(filepath.Join(dir, rundir.ResultsFile), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	for _, row := range replay {
		row.Status = rundir.StatusInfraError
		row.Failure = &gym.Failure{Fault: gym.FaultInfra, Reason: "samples_lost",
			Message: "the trajectory's training samples never reached the samples stream; played again"}
		row.FinishedAt = time.Now().UTC()
		b, err := json.Marshal(row)
		if err != nil {
			f.Close()
			return err
		}
		if _, err := f.Write(append(b, '\n')); err != nil {
			f.Close()
			return err
		}
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

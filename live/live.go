package live

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/nextstate-rl/nextstate/internal/jsonfile"
	"github.com/nextstate-rl/nextstate/proxy"

	"github.com/nextstate-rl/nextstate/rl"
	"github.com/nextstate-rl/nextstate/store"
	"github.com/nextstate-rl/nextstate/trainer/service"
)

// Files of a live run's directory.
const (
	UpdatesFile = "updates.jsonl" // one Update a line
	StateFile   = "live.json"     // State: where a restart resumes
)

// Config configures a Trainer.
type Config struct {
	// Trainer trains and publishes the policy the proxy serves. Required.
	Trainer service.API
	// Store holds the proxy's samples (run proxy.Run). Required.
	Store *store.Store
	// Run is the samples' run label [proxy.Run].
	Run string
	// User, when set, trains on that user's samples alone (one adapter per
	// user: see Router).
	User string
	// Loss is the objective (trainer/service's LossConfig): binary RL is
	// policy_gradient on the "rl" advantage, OPD on "opd", both on
	// "combined". Required.
	Loss service.LossConfig
	// Estimator is rl's advantage estimator ["plain": A = the vote, as a
	// turn of a conversation has no group to compare with].
	Estimator string
	// CapNegative caps each session's negative weight over its tokens at
	// its positive (trainer/service's cap_negative; a session is a group):
	// with A = the vote, a run of corrections can otherwise push
	// probability to tokens never sampled, and the replies break down.
	CapNegative bool
	// Adam is each update's optimizer step.
	Adam service.AdamParams
	// Batch is the samples of one update [8]. FlushAfter trains a smaller
	// batch once its oldest sample has waited this long [10s].
	Batch      int
	FlushAfter time.Duration
	// Dir receives UpdatesFile and StateFile. Required.
	Dir string
	// SaveEvery saves the training state every this many updates [1];
	// a sample counts as trained, and is never trained on again, only once
	// a saved state holds its update. Negative: never saved, never resumed.
	SaveEvery int
	Log       *slog.Logger
}

// Update is one update's record in UpdatesFile: what it trained on and
// the version it published.
type Update struct {
	N int `json:"update"`
	// Version is the weight version published after it (0 when it had
	// nothing to learn from and published none).
	Version int       `json:"version"`
	Time    time.Time `json:"time"`
	// Samples are its samples: each with its vote, its hint and the
	// version that answered.
	Samples []SampleRecord `json:"samples"`
	// Votes count the samples by vote: "+1", "0", "-1"; Hinted those with
	// a hint.
	Votes  map[string]int `json:"votes"`
	Hinted int            `json:"hinted"`
	// Metrics are forward_backward's (loss terms, entropy, clip
	// fraction, ...), with "grad_norm", "lr" and the conversion's counts.
	Metrics map[string]float64 `json:"metrics"`
	// TrainSeconds and PublishSeconds time the update and the publish.
	TrainSeconds   float64 `json:"train_seconds"`
	PublishSeconds float64 `json:"publish_seconds"`
}

// SampleRecord is one trained sample as an Update lists it.
type SampleRecord struct {
	Offset  int64   `json:"offset"`
	User    string  `json:"user,omitempty"`
	Session string  `json:"session"`
	Step    int     `json:"step"`
	Vote    float64 `json:"vote"`
	Hint    string  `json:"hint,omitempty"`
	// Version answered the turn (nil if the server did not say);
	// Staleness is the version trained at less it.
	Version   *int   `json:"version,omitempty"`
	Staleness *int   `json:"staleness,omitempty"`
	Response  string `json:"response"`
}

// State is StateFile: the updates a saved training state holds and the
// last sample offset they trained on.
type State struct {
	Updates       int       `json:"updates"`
	Offset        int64     `json:"offset"`
	Version       int       `json:"version"`
	TrainingState string    `json:"training_state,omitempty"`
	Updated       time.Time `json:"updated"`
}

// Status is where a Trainer stands (Trainer.Status, and the status
// endpoint's JSON).
type Status struct {
	// Read is the offset of the last sample read from the store; Stored
	// the store's last.
	Read   int64 `json:"read"`
	Stored int64 `json:"stored"`
	// Pending are read and not yet trained on; Trained were.
	Pending int `json:"pending"`
	Trained int `json:"trained"`
	// Updates taken, the newest Version published, and whether an update
	// is running now.
	Updates  int  `json:"updates"`
	Version  int  `json:"version"`
	Training bool `json:"training"`
	// Skipped counts samples of other users (Config.User) and samples
	// that could not be read.
	Skipped int `json:"skipped"`
}

// Idle says whether every stored sample has been read and trained on.
func (s Status) Idle() bool { return s.Read >= s.Stored && s.Pending == 0 && !s.Training }

// Trainer trains the served policy on the proxy's samples as they come.
type Trainer struct {
	cfg Config
	log *slog.Logger

	mu      sync.Mutex
	status  Status
	pending []pendingSample
	saved   State
}

type pendingSample struct {
	offset int64
	at     time.Time
	s      rl.Sample
}

// New checks cfg and reads where a previous run in cfg.Dir stopped.
func New(cfg Config) (*Trainer, error) {
	switch {
	case cfg.Trainer == nil || cfg.Store == nil:
		return nil, errors.New("live: a trainer and the proxy's store are required")
	case cfg.Dir == "":
		return nil, errors.New("live: a run directory is required")
	case len(cfg.Loss.Terms) == 0:
		return nil, errors.New("live: a loss is required")
	case cfg.Batch < 0 || cfg.FlushAfter < 0:
		return nil, errors.New("live: Batch and FlushAfter are 0 (the defaults) or more")
	}
	if cfg.Run == "" {
		cfg.Run = proxy.Run
	}
	if cfg.Estimator == "" {
		cfg.Estimator = rl.EstimatorPlain
	}
	if cfg.Batch == 0 {
		cfg.Batch = 8
	}
	if cfg.FlushAfter == 0 {
		cfg.FlushAfter = 10 * time.Second
	}
	if cfg.SaveEvery == 0 {
		cfg.SaveEvery = 1
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, err
	}
	t := &Trainer{cfg: cfg, log: cfg.Log}
	var st State
	if _, err := jsonfile.Read(filepath.Join(cfg.Dir, StateFile), &st); err != nil {
		return nil, err
	}
	t.saved = st
	t.status.Read, t.status.Updates = st.Offset, st.Updates
	// Busy until Run has loaded and published the saved state.
	t.status.Training = st.TrainingState != "" && cfg.SaveEvery > 0
	return t, nil
}

// Status returns where the trainer stands.
func (t *Trainer) Status() Status {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.status
	s.Pending = len(t.pending)
	s.Stored = t.cfg.Store.LastSampleOffset()
	return s
}

// Run trains until ctx ends: it resumes from the last saved state, if
// any (loading it and publishing it), then reads the samples as the store
// wakes it and takes an update whenever Batch are pending, or fewer once
// the oldest has waited FlushAfter. It returns nil when ctx ends.
func (t *Trainer) Run(ctx context.Context) error {
	if t.saved.TrainingState != "" && t.cfg.SaveEvery > 0 {
		if _, err := t.cfg.Trainer.LoadState(ctx, t.saved.TrainingState); err != nil {
			return fmt.Errorf("live: resuming from %s: %w", t.saved.TrainingState, err)
		}
		v, err := t.cfg.Trainer.SaveWeightsForSampler(ctx)
		if err != nil {
			return fmt.Errorf("live: publishing the resumed weights: %w", err)
		}
		t.mu.Lock()
		t.status.Version, t.status.Training = v.Version, false
		t.mu.Unlock()
		t.log.Info("live: resumed", "updates", t.saved.Updates, "offset", t.saved.Offset, "version", v.Version)
	}
	for {
		changed := t.cfg.Store.SamplesChanged()
		if err := t.read(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		if batch, ok := t.due(time.Now()); ok {
			if err := t.update(ctx, batch); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return err
			}
			continue
		}
		wait := t.cfg.FlushAfter
		t.mu.Lock()
		if len(t.pending) > 0 {
			wait = max(time.Until(t.pending[0].at.Add(t.cfg.FlushAfter)), time.Millisecond)
		}
		t.mu.Unlock()
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil
		case <-changed:
		case <-timer.C:
		}
		timer.Stop()
	}
}

// read takes the samples stored since the last read, keeping at most four
// batches pending (the rest stay in the store until there is room).
// Samples of other users (Config.User) are passed over.
func (t *Trainer) read(ctx context.Context) error {
	for {
		t.mu.Lock()
		after, room := t.status.Read, 4*t.cfg.Batch-len(t.pending)
		t.mu.Unlock()
		if room <= 0 {
			return nil
		}
		now := time.Now()
		scanned := 0
		err := t.cfg.Store.ScanSamples(ctx, store.SampleFilter{Run: t.cfg.Run, AfterOffset: after, Limit: room}, func(ss *store.StoredSample) error {
			scanned++
			var s rl.Sample
			err := json.Unmarshal(ss.Body, &s)
			t.mu.Lock()
			defer t.mu.Unlock()
			t.status.Read = ss.Offset
			switch {
			case err != nil:
				t.status.Skipped++
				t.log.Warn("live: an unreadable sample is skipped", "offset", ss.Offset, "err", err)
			case t.cfg.User != "" && s.Metadata.Origin.User != t.cfg.User:
				t.status.Skipped++
			default:
				t.pending = append(t.pending, pendingSample{offset: ss.Offset, at: now, s: s})
			}
			return nil
		})
		if err != nil || scanned < room {
			return err
		}
	}
}

// due returns the next batch if one is due.
func (t *Trainer) due(now time.Time) ([]pendingSample, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(t.pending)
	if n == 0 || n < t.cfg.Batch && now.Sub(t.pending[0].at) < t.cfg.FlushAfter {
		return nil, false
	}
	batch := t.pending[:min(n, t.cfg.Batch)]
	t.status.Training = true
	return batch, true
}

// update trains on batch, publishes the new weights, records the update
// and, every SaveEvery updates, saves the training state.
func (t *Trainer) update(ctx context.Context, batch []pendingSample) error {
	defer func() {
		t.mu.Lock()
		t.status.Training = false
		t.mu.Unlock()
	}()
	samples := make([]rl.Sample, len(batch))
	for i := range batch {
		samples[i] = batch[i].s
	}
	t.mu.Lock()
	n, current := t.status.Updates+1, t.status.Version
	t.mu.Unlock()
	up := Update{N: n, Time: time.Now(), Votes: map[string]int{}, Metrics: map[string]float64{}}
	begin := time.Now()
	res, err := t.cfg.Trainer.ForwardBackward(ctx, service.ForwardBackwardRequest{Samples: samples, Estimator: t.cfg.Estimator,
		CapNegative: t.cfg.CapNegative, Loss: t.cfg.Loss})
	if err != nil {
		return fmt.Errorf("live: update %d: forward_backward: %w", n, err)
	}
	for k, v := range res.Metrics {
		up.Metrics[k] = v
	}
	if cv := res.Conversion; cv != nil {
		up.Metrics["samples/dropped"], up.Metrics["samples/hinted"] = float64(cv.Dropped), float64(cv.Hinted)
	}
	up.Metrics["tokens"] = float64(res.Tokens)
	version := 0
	if res.Tokens > 0 {
		opt, err := t.cfg.Trainer.OptimStep(ctx, t.cfg.Adam)
		if err != nil {
			return fmt.Errorf("live: update %d: optim_step: %w", n, err)
		}
		up.Metrics["grad_norm"], up.Metrics["lr"] = opt.GradNorm, t.cfg.Adam.LR
		up.TrainSeconds = time.Since(begin).Seconds()
		begin = time.Now()
		v, err := t.cfg.Trainer.SaveWeightsForSampler(ctx)
		if err != nil {
			return fmt.Errorf("live: update %d: publishing: %w", n, err)
		}
		version = v.Version
		up.PublishSeconds = time.Since(begin).Seconds()
	} else {
		up.TrainSeconds = time.Since(begin).Seconds()
	}
	up.Version = version
	for _, p := range batch {
		rec := record(p, current)
		up.Samples = append(up.Samples, rec)
		up.Votes[voteKey(rec.Vote)]++
		if rec.Hint != "" {
			up.Hinted++
		}
	}
	if err := jsonfile.Append(filepath.Join(t.cfg.Dir, UpdatesFile), up); err != nil {
		return err
	}
	last := batch[len(batch)-1].offset
	t.mu.Lock()
	t.pending = t.pending[len(batch):]
	t.status.Updates, t.status.Trained = n, t.status.Trained+len(batch)
	if version > 0 {
		t.status.Version = version
	}
	t.mu.Unlock()
	t.log.Info("live: update", "n", n, "samples", len(batch), "version", version, "votes", up.Votes, "hinted", up.Hinted)
	if t.cfg.SaveEvery > 0 && n%t.cfg.SaveEvery == 0 {
		st, err := t.cfg.Trainer.SaveState(ctx)
		if err != nil {
			return fmt.Errorf("live: update %d: save_state: %w", n, err)
		}
		t.saved = State{Updates: n, Offset: last, Version: version, TrainingState: st.Path, Updated: time.Now()}
		if err := jsonfile.WriteAtomic(filepath.Join(t.cfg.Dir, StateFile), t.saved); err != nil {
			return err
		}
	}
	return nil
}

func record(p pendingSample, current int) SampleRecord {
	m := p.s.Metadata.Origin
	r := SampleRecord{Offset: p.offset, User: m.User, Session: m.Session, Step: m.Step, Vote: p.s.Reward,
		Version: m.WeightVersion, Response: p.s.Response}
	if opd := p.s.Metadata.OPD; opd != nil {
		r.Hint = opd.Hint
	}
	if m.WeightVersion != nil {
		s := current - *m.WeightVersion
		r.Staleness = &s
	}
	return r
}

func voteKey(v float64) string {
	switch {
	case v > 0:
		return "+1"
	case v < 0:
		return "-1"
	}
	return "0"
}

// ReadUpdates reads a live run's UpdatesFile. An update recorded twice
// (taken again after a restart, its state not saved the first time) keeps
// its last record; a last line cut short by a crash is left out.
func ReadUpdates(dir string) ([]Update, error) {
	lines, err := jsonfile.ReadLines[Update](filepath.Join(dir, UpdatesFile))
	if err != nil {
		return nil, err
	}
	var out []Update
	for _, u := range lines {
		out = append(slices.DeleteFunc(out, func(x Update) bool { return x.N >= u.N }), u)
	}
	return out, nil
}

package rl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nextstate-rl/nextstate/gym"
)

// FollowerConfig configures a Follower. Zero fields take the defaults in
// brackets. With no judge configured, nothing is judged and samples are
// still built (process rewards 0, judged false).
type FollowerConfig struct {
	// Store is where the follower reads back the events its intake
	// dropped and the judge's screens, and records the judges' reward
	// events and the samples. Required.
	Store Store
	// Judge configures the judge: endpoint, model, api key, votes (and
	// votes per prompt kind), per-call timeout, retries, templates. With
	// no Endpoint (and no Scorer) no step is judged. Its BlobResolver
	// defaults to reading Store's blobs.
	Judge JudgeConfig
	// Scorer, when set, judges instead of a Judge built from Judge.
	Scorer Scorer
	// Concurrency is how many steps are judged at once [4].
	Concurrency int
	// Queue is how many steps may wait for the judge [256]; a step that
	// finds it full is recorded as not judged, reason queue_full.
	Queue int
	// Kinds and Runs, when not empty, limit judging to the steps of these
	// env kinds and of these runs. Steps of other kinds and runs still
	// give samples, unjudged.
	Kinds []string
	Runs  []string
	// Mix combines outcome and process rewards where the task's suite has
	// no mix of its own; nil means DefaultMix().
	Mix *Mix
	// Suites are the task suites whose Signals.Mix, when set, mixes the
	// rewards of their tasks' trajectories instead of Mix.
	Suites []*gym.Suite
	// Drain bounds how long Close lets the judge finish the steps it has
	// queued; what is left then is recorded as not judged, reason closed
	// [10s].
	Drain time.Duration
	// Backlog caps the committed events waiting for the follower [65536];
	// past it they are read back from the Store instead.
	Backlog int
	// MaxEpisodeSteps bounds the steps of an episode the follower keeps
	// [4096]: an episode that runs longer is let go, its later steps not
	// judged, and it gives no samples (status too_long).
	MaxEpisodeSteps int
	// Logger; nil means slog.Default().
	Logger *slog.Logger
	// OnJudged, when set, is called with each judge result once its
	// reward event is recorded (for metrics), from the goroutines that
	// record them, concurrently.
	OnJudged func(JudgeResult)
	// OnTrajectory, when set, is called once per complete trajectory with
	// its status and the number of samples stored: completed, truncated
	// or aborted (a sample's Status); too_long (MaxEpisodeSteps), 0; error
	// (building or storing them failed), 0. An episode with no step gives
	// no call. It is called from the goroutine that completed the
	// trajectory.
	OnTrajectory func(status string, samples int)
}

// Defaults of FollowerConfig.
const (
	defaultJudgeDrain     = 10 * time.Second
	defaultFollowBacklog  = 65536
	defaultMaxEpisodeStep = 4096
	rewardQueue           = 1024                 // judge results waiting to be recorded
	rewardBatch           = 64                   // judge results recorded together
	rewardLinger          = 5 * time.Millisecond // how long a batch waits to fill
)

// followedTypes are the event types a Follower follows; the others are
// skipped.
var followedTypes = []gym.EventType{gym.EventReset, gym.EventStep, gym.EventRefused, gym.EventSessionClosed}

// A Follower turns committed events into training signal, off the step
// path (see the package doc, The follower). Publish hands it committed
// events and never blocks; one worker goroutine follows each session's
// episode, submits each step to the Judger, and reports outcomes to the
// Tracker. Judge results are recorded in batches by the reward recorder;
// a complete trajectory becomes samples (rollout.go).
//
// Lock order: mu and finMu are leaves: neither is held while the other is
// taken, or while calling out.
type Follower struct {
	st       Store
	log      *slog.Logger
	judger   *Judger // nil: no judge
	tracker  *Tracker
	mix      Mix
	suiteMix map[string]Mix // task id -> its suite's mix
	kinds    map[string]bool
	runs     map[string]bool
	drain    time.Duration
	backlog  int
	maxSteps int

	onJudged     func(JudgeResult)
	onTrajectory func(status string, samples int)

	mu      sync.Mutex
	buf     []committed     // committed events for the worker, in seq order
	lost    bool            // buf overflowed: read what follows from the store
	busy    bool            // the worker is processing a batch
	stopped bool            // the worker is gone: drop everything
	waiters []chan struct{} // flushes waiting for the worker to be idle
	wake    chan struct{}   // cap 1
	gate    chan struct{}   // tests: while set, the worker waits for it to close

	quit chan struct{}
	done chan struct{}

	catchUps atomic.Int64 // times the worker read dropped events back from the store

	// worker-owned
	cursor   int64               // the last event seq handled
	episodes map[string]*episode // the open episode of each session

	finMu    sync.Mutex
	finished map[TrajectoryKey]*episode // ended, waiting for their judges

	rewards chan JudgeResult
	rwg     sync.WaitGroup
}

// NewFollower checks cfg and makes a Follower; Start starts it. Events
// published before Start wait for it.
func NewFollower(cfg FollowerConfig) (*Follower, error) {
	if cfg.Store == nil {
		return nil, errors.New("rl: FollowerConfig.Store is required")
	}
	g := &Follower{st: cfg.Store, log: cfg.Logger, mix: DefaultMix(), suiteMix: map[string]Mix{},
		drain: cfg.Drain, backlog: cfg.Backlog, onJudged: cfg.OnJudged, onTrajectory: cfg.OnTrajectory,
		wake: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{}),
		episodes: map[string]*episode{}, finished: map[TrajectoryKey]*episode{},
		rewards: make(chan JudgeResult, rewardQueue)}
	if g.log == nil {
		g.log = slog.Default()
	}
	if g.drain <= 0 {
		g.drain = defaultJudgeDrain
	}
	if g.backlog <= 0 {
		g.backlog = defaultFollowBacklog
	}
	if g.maxSteps = cfg.MaxEpisodeSteps; g.maxSteps <= 0 {
		g.maxSteps = defaultMaxEpisodeStep
	}
	if cfg.Mix != nil {
		if err := cfg.Mix.Validate(); err != nil {
			return nil, fmt.Errorf("signals: %w", err)
		}
		g.mix = *cfg.Mix
	}
	for _, su := range cfg.Suites {
		if su.Signals == nil || len(su.Signals.Mix) == 0 {
			continue
		}
		m, err := ParseMixJSON(su.Signals.Mix)
		if err != nil {
			return nil, fmt.Errorf("suite %s: signals.mix: %w", su.Name, err)
		}
		for _, t := range su.Tasks {
			g.suiteMix[t.ID] = m
		}
	}
	g.kinds, g.runs = setOf(cfg.Kinds), setOf(cfg.Runs)
	scorer := cfg.Scorer
	if scorer == nil && cfg.Judge.Endpoint != "" {
		jc := cfg.Judge
		if jc.BlobResolver == nil {
			jc.BlobResolver = g.blob
		}
		j, err := NewJudge(jc)
		if err != nil {
			return nil, fmt.Errorf("signals: %w", err)
		}
		scorer = j
	} else if scorer == nil && cfg.Judge.Model != "" {
		return nil, fmt.Errorf("signals: judge model %q has no endpoint: give the judge's URL (--judge-url)", cfg.Judge.Model)
	}
	g.tracker = NewTracker(g.complete)
	if scorer != nil {
		g.judger = NewJudger(scorer, JudgerConfig{Workers: cfg.Concurrency, Queue: cfg.Queue, Model: cfg.Judge.Model},
			func(r JudgeResult) { g.rewards <- r })
	}
	return g, nil
}

func setOf(xs []string) map[string]bool {
	if len(xs) == 0 {
		return nil
	}
	m := make(map[string]bool, len(xs))
	for _, x := range xs {
		m[x] = true
	}
	return m
}

// Start begins following after the events up to seq (those before it, of
// an earlier run of the store's writer, belong to sessions that are gone).
// Call it once; Close stops it.
func (g *Follower) Start(seq int64) {
	g.cursor = seq
	g.rwg.Go(g.recordRewards)
	go g.run() // owned: Close waits for done
}

// blob reads a stored blob for the judge's screens.
func (g *Follower) blob(_ context.Context, ref string) ([]byte, error) {
	rc, err := g.st.Blob(ref)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(io.LimitReader(rc, 64<<20))
}

// Publish hands the follower committed events, in seq order, with their
// JSON as the store encoded it (bodies[i] is evs[i]'s; store.Options'
// OnCommit gives both, in this order). It queues the events
// the follower follows and returns at once; past Backlog the follower
// reads them back from the Store instead. bodies may be nil: the follower
// then encodes the steps it keeps. It keeps an open episode's steps as
// their JSON, which the garbage collector does not trace, and decodes
// them when the episode's samples are built.
func (g *Follower) Publish(evs []*gym.Event, bodies []string) {
	g.mu.Lock()
	queued := false
	for i, ev := range evs {
		switch ev.Type {
		case gym.EventReset, gym.EventStep, gym.EventRefused, gym.EventSessionClosed:
		default:
			continue
		}
		if g.stopped || g.lost {
			break
		}
		if len(g.buf) >= g.backlog {
			g.lost = true // the worker reads the rest back from the store
			break
		}
		c := committed{ev: ev}
		if i < len(bodies) {
			c.body = bodies[i]
		}
		g.buf = append(g.buf, c)
		queued = true
	}
	lost := g.lost
	g.mu.Unlock()
	if queued || lost {
		select {
		case g.wake <- struct{}{}:
		default:
		}
	}
}

// committed is a committed event and its JSON as stored ("" when not
// given).
type committed struct {
	ev   *gym.Event
	body string
}

// run is the worker: it handles committed events in seq order until Close.
func (g *Follower) run() {
	defer close(g.done)
	var spare []committed // the buffer handed back to Publish, reused
	for {
		g.mu.Lock()
		if gate := g.gate; gate != nil {
			g.mu.Unlock()
			select {
			case <-gate:
			case <-g.quit:
				return
			}
			continue
		}
		evs, lost := g.buf, g.lost
		if len(evs) > 0 {
			g.buf = spare[:0]
		}
		g.lost = false
		g.busy = len(evs) > 0 || lost
		if !g.busy {
			for _, w := range g.waiters {
				close(w)
			}
			g.waiters = nil
		}
		g.mu.Unlock()
		if len(evs) == 0 && !lost {
			select {
			case <-g.wake:
				continue
			case <-g.quit:
				return
			}
		}
		for _, c := range evs {
			g.handle(c.ev, c.body)
		}
		if lost {
			g.catchUp()
		}
		clear(evs)
		spare = evs
	}
}

// catchUp handles the events the intake dropped, reading them from the
// store. Events that reach buf meanwhile are handled again only if newer
// than the cursor.
func (g *Follower) catchUp() {
	g.catchUps.Add(1)
	err := g.st.ScanAfter(context.Background(), g.cursor, followedTypes, func(ev *gym.Event) error {
		g.handle(ev, "")
		return nil
	})
	if err != nil {
		g.log.Error("signals: reading events back from the store", "after_seq", g.cursor, "err", err)
	}
}

// Flush waits until the worker has handled every event published so far
// (their steps submitted to the judge, their ended episodes reported).
func (g *Follower) Flush(ctx context.Context) error {
	for {
		g.mu.Lock()
		idle := !g.busy && len(g.buf) == 0 && !g.lost
		var ch chan struct{}
		if !idle {
			ch = make(chan struct{})
			g.waiters = append(g.waiters, ch)
		}
		g.mu.Unlock()
		if idle {
			return nil
		}
		select {
		case g.wake <- struct{}{}: // in case the worker is waiting already
		default:
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("signals: %w", ctx.Err())
		case <-g.done:
			return nil
		}
	}
}

// Close stops the follower once no more events will be published (after
// the sessions are closed): it handles what is queued, ends the episodes
// still open (truncated, the infrastructure's fault: shutdown), lets the
// judge finish (within Drain, then cancels it), records every result, and
// builds the last samples, all bounded by ctx.
func (g *Follower) Close(ctx context.Context) error {
	var errs []error
	if err := g.Flush(ctx); err != nil {
		errs = append(errs, err)
	}
	g.mu.Lock()
	g.stopped = true
	g.mu.Unlock()
	close(g.quit)
	<-g.done
	// Episodes still open (their close was not recorded) end here.
	for _, ep := range g.episodes {
		g.end(ep, Outcome{Truncated: true, Failure: &gym.Failure{Fault: gym.FaultInfra, Reason: "shutdown",
			Message: "the server shut down before the episode ended"}})
	}
	if g.judger != nil {
		jctx, cancel := context.WithTimeout(ctx, g.drain)
		err := g.judger.Close(jctx)
		cancel()
		if err != nil && ctx.Err() != nil {
			errs = append(errs, fmt.Errorf("judge: %w", err))
		}
	}
	close(g.rewards)
	done := make(chan struct{})
	go func() { g.rwg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		errs = append(errs, fmt.Errorf("recording judge results: %w", ctx.Err()))
	}
	return errors.Join(errs...)
}

// recordRewards records judge results as reward events in batches: it
// gathers up to rewardBatch of them (waiting at most rewardLinger for
// more) and appends them at once, so they share a store commit instead of
// each taking one between the steps' commits. A full judge queue makes one
// result per step, so this keeps the judge's cost to the step path to a
// few commits a second.
func (g *Follower) recordRewards() {
	batch := make([]JudgeResult, 0, rewardBatch)
	for {
		res, ok := <-g.rewards
		if !ok {
			return
		}
		batch = append(batch[:0], res)
		linger := time.NewTimer(rewardLinger)
	fill:
		for len(batch) < rewardBatch {
			select {
			case res, ok := <-g.rewards:
				if !ok {
					break fill // closed: record these, then return
				}
				batch = append(batch, res)
			case <-linger.C:
				break fill
			}
		}
		linger.Stop()
		var wg sync.WaitGroup
		for _, res := range batch {
			wg.Go(func() { g.record(res) })
		}
		wg.Wait()
		clear(batch)
	}
}

// record records one judge result, then tells the Tracker, so a trajectory
// completes only once its reward events are in the store.
func (g *Follower) record(res JudgeResult) {
	ev := res.Event()
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	if err := g.st.Append(context.Background(), &ev); err != nil {
		g.log.Warn("signals: recording a judge result", "session", res.Ref.Session, "step_id", res.Ref.StepID, "err", err)
	}
	if g.onJudged != nil {
		g.onJudged(res)
	}
	g.tracker.Judged(res)
}

// JudgeStats returns the Judger's counters; zero without a judge.
func (g *Follower) JudgeStats() JudgerStats {
	if g.judger == nil {
		return JudgerStats{}
	}
	return g.judger.Stats()
}

// Backlog is the number of published events waiting for the worker.
func (g *Follower) Backlog() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.buf)
}

package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nextstate-rl/nextstate/gym"
	"github.com/nextstate-rl/nextstate/rl"
	"github.com/nextstate-rl/nextstate/store"
)

// SignalsConfig configures the next-state signals the server makes from
// its sessions' steps, off the step path: judging each step with an LLM
// judge (package rl) into a process reward and a hint, recorded as reward
// events keyed by the step's id; and, when a trajectory is complete (its
// outcome is in and every judge has answered or timed out), its training
// samples, stored and streamed to subscribers. Zero fields take the
// defaults in brackets. With no judge configured, nothing is judged and
// samples are still built (process rewards 0, judged false).
type SignalsConfig struct {
	// Judge configures the judge: endpoint, model, api key, votes (and
	// votes per prompt kind), per-call timeout, retries, templates. With
	// no Endpoint (and no Scorer) no step is judged.
	Judge rl.JudgeConfig
	// Scorer, when set, judges instead of a Judge built from Judge.
	Scorer rl.Scorer
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
	// no mix of its own (gym.Suite.Signals); nil means rl.DefaultMix().
	Mix *rl.Mix
	// Drain bounds how long Shutdown lets the judge finish the steps it
	// has queued; what is left then is recorded as not judged, reason
	// closed [10s].
	Drain time.Duration
	// Backlog caps the committed events waiting for the signals pipeline
	// [65536]; past it they are read back from the store instead.
	Backlog int
	// MaxEpisodeSteps bounds the steps of an episode the pipeline keeps
	// [4096]: an episode that runs longer is let go, its later steps not
	// judged, and it gives no samples (counted as status too_long).
	MaxEpisodeSteps int
}

// Defaults of SignalsConfig.
const (
	defaultJudgeDrain     = 10 * time.Second
	defaultSignalsBacklog = 65536
	defaultMaxEpisodeStep = 4096
	rewardQueue           = 1024                 // judge results waiting to be recorded
	rewardBatch           = 64                   // judge results recorded together
	rewardLinger          = 5 * time.Millisecond // how long a batch waits to fill
)

// signals is the server's signal pipeline. The store's commit hook hands it
// every committed event (publish, which never blocks); one worker goroutine
// follows each session's episode, submits each step to the Judger, and
// reports outcomes to the Tracker. Judge results are recorded in batches by
// the reward recorder; a complete trajectory becomes samples (samples.go).
//
// Lock order: signals.mu, finMu, instMu and sampleMu are leaves: none is
// held while another is taken, or while calling out.
type signals struct {
	s        *Server
	log      *slog.Logger
	judger   *rl.Judger // nil: no judge
	tracker  *rl.Tracker
	mix      rl.Mix
	suiteMix map[string]rl.Mix // task id -> its suite's mix
	kinds    map[string]bool
	runs     map[string]bool
	drain    time.Duration
	backlog  int
	maxSteps int

	mu      sync.Mutex
	buf     []*gym.Event    // committed events for the worker, in seq order
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

	instMu sync.Mutex
	inst   map[rl.TrajectoryKey]string // instructions from create and reset answers

	finMu    sync.Mutex
	finished map[rl.TrajectoryKey]*episode // ended, waiting for their judges

	rewards chan rl.JudgeResult
	rwg     sync.WaitGroup

	sampleMu sync.Mutex
	sampleCh chan struct{} // closed and replaced when samples are stored
}

// episode is what the worker keeps of an episode until it is complete.
type episode struct {
	key            rl.TrajectoryKey
	run, env, task string
	prompt         string // the judge's prompt kind
	instruction    string
	instSet        bool
	tooLong        bool         // over maxSteps: steps dropped, no samples
	resetText      string       // the first observation, as text
	steps          []*gym.Event // the step events, in order
	history        []rl.Turn    // the judge's view of the steps so far
	lastImage      *gym.Blob    // the latest screen, the next step's "before"
}

func newSignals(s *Server, cfg SignalsConfig, suites []*gym.Suite) (*signals, error) {
	g := &signals{s: s, log: s.log, mix: rl.DefaultMix(), suiteMix: map[string]rl.Mix{},
		drain: cfg.Drain, backlog: cfg.Backlog, wake: make(chan struct{}, 1),
		quit: make(chan struct{}), done: make(chan struct{}), episodes: map[string]*episode{},
		inst: map[rl.TrajectoryKey]string{}, finished: map[rl.TrajectoryKey]*episode{},
		rewards: make(chan rl.JudgeResult, rewardQueue), sampleCh: make(chan struct{})}
	if g.drain <= 0 {
		g.drain = defaultJudgeDrain
	}
	if g.backlog <= 0 {
		g.backlog = defaultSignalsBacklog
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
	for _, su := range suites {
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
		j, err := rl.NewJudge(jc)
		if err != nil {
			return nil, fmt.Errorf("signals: %w", err)
		}
		scorer = j
	} else if scorer == nil && cfg.Judge.Model != "" {
		return nil, fmt.Errorf("signals: judge model %q has no endpoint: give the judge's URL (--judge-url)", cfg.Judge.Model)
	}
	g.tracker = rl.NewTracker(g.complete)
	if scorer != nil {
		g.judger = rl.NewJudger(scorer, rl.JudgerConfig{Workers: cfg.Concurrency, Queue: cfg.Queue, Model: cfg.Judge.Model},
			func(r rl.JudgeResult) { g.rewards <- r })
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

// start begins after the events up to seq (those of an earlier run of the
// server belong to sessions that are gone).
func (g *signals) start(seq int64) {
	g.cursor = seq
	g.rwg.Go(g.recordRewards)
	go g.run() // owned: close waits for done
}

// blob reads a stored blob for the judge's screens.
func (g *signals) blob(_ context.Context, ref string) ([]byte, error) {
	rc, err := g.s.store.Blob(ref)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(io.LimitReader(rc, 64<<20))
}

// publish is called by the store's writer after each commit: it queues the
// events the pipeline follows and returns at once.
func (g *signals) publish(evs []*gym.Event) {
	g.mu.Lock()
	queued := false
	for _, ev := range evs {
		switch ev.Type {
		case gym.EventReset, gym.EventStep, gym.EventSessionClosed:
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
		g.buf = append(g.buf, ev)
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

// run is the worker: it handles committed events in seq order until close.
func (g *signals) run() {
	defer close(g.done)
	var spare []*gym.Event // the buffer handed back to publish, reused
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
		for _, ev := range evs {
			g.handle(ev)
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
func (g *signals) catchUp() {
	g.catchUps.Add(1)
	err := g.s.store.Scan(context.Background(), store.Filter{AfterSeq: g.cursor,
		Types: []gym.EventType{gym.EventReset, gym.EventStep, gym.EventSessionClosed}},
		func(ev *gym.Event) error {
			g.handle(ev)
			return nil
		})
	if err != nil && !errors.Is(err, store.ErrClosed) {
		g.log.Error("signals: reading events back from the store", "after_seq", g.cursor, "err", err)
	}
}

// flush waits until the worker has handled every event published so far.
func (g *signals) flush(ctx context.Context) error {
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

// close stops the pipeline after the sessions are closed: it handles what
// is queued, lets the judge finish (within Drain, then cancels it), records
// every result, and builds the last samples.
func (g *signals) close(ctx context.Context) error {
	var errs []error
	if err := g.flush(ctx); err != nil {
		errs = append(errs, err)
	}
	g.mu.Lock()
	g.stopped = true
	g.mu.Unlock()
	close(g.quit)
	<-g.done
	// Episodes still open (their close was not recorded) end here.
	for _, ep := range g.episodes {
		g.end(ep, rl.Outcome{Truncated: true, Failure: &gym.Failure{Fault: gym.FaultInfra, Reason: "shutdown",
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

// instruction remembers the instruction of an episode from the answer to
// its create or reset, for the judge and for text-only samples.
func (g *signals) instruction(session string, episode int, text string) {
	g.instMu.Lock()
	g.inst[rl.TrajectoryKey{Session: session, Episode: episode}] = text
	g.instMu.Unlock()
}

func (g *signals) takeInstruction(ep *episode) {
	if ep.instSet {
		return
	}
	g.instMu.Lock()
	text, ok := g.inst[ep.key]
	delete(g.inst, ep.key)
	g.instMu.Unlock()
	if !ok {
		if t, found := g.s.mgr.Tasks().Get(ep.env, ep.task); found {
			text = t.Instruction
		}
	}
	ep.instruction, ep.instSet = text, true
}

// handle follows one committed event.
func (g *signals) handle(ev *gym.Event) {
	if ev.Seq <= g.cursor {
		return
	}
	g.cursor = ev.Seq
	switch ev.Type {
	case gym.EventReset:
		if ep := g.episodes[ev.Session]; ep != nil {
			g.end(ep, rl.Outcome{Truncated: true}) // reset before the episode ended
		}
		ep := g.open(ev)
		if ev.Observation != nil {
			ep.resetText = rl.ObservationText(*ev.Observation)
			ep.lastImage = rl.ObservationImage(*ev.Observation)
		}
		ep.prompt = promptKind(ev.Env, ev.Info)
	case gym.EventStep:
		ep := g.episodes[ev.Session]
		if ep == nil || ep.key.Episode != ev.Episode {
			if ep != nil {
				g.end(ep, rl.Outcome{Truncated: true})
			}
			ep = g.open(ev)
			ep.prompt = promptKind(ev.Env, nil)
		}
		g.step(ep, ev)
		if ev.Terminated || ev.Truncated {
			g.end(ep, rl.OutcomeOf(ev))
		}
	case gym.EventSessionClosed:
		if ep := g.episodes[ev.Session]; ep != nil {
			g.end(ep, closedOutcome(ev))
		}
	}
}

func (g *signals) open(ev *gym.Event) *episode {
	ep := &episode{key: rl.TrajectoryKey{Session: ev.Session, Episode: ev.Episode}, run: ev.Run, env: ev.Env, task: ev.Task}
	g.episodes[ev.Session] = ep
	return ep
}

// step records a step and submits it to the judge.
func (g *signals) step(ep *episode, ev *gym.Event) {
	if ep.tooLong {
		return
	}
	if len(ep.steps) >= g.maxSteps {
		g.log.Warn("signals: an episode ran past the steps kept for samples; it gives none", "session", ep.key.Session,
			"episode", ep.key.Episode, "max_steps", g.maxSteps)
		ep.tooLong, ep.steps, ep.history, ep.lastImage = true, nil, nil, nil
		return
	}
	ep.steps = append(ep.steps, ev)
	if !g.judgesEpisode(ep) {
		return // texts are made when the samples are, if at all
	}
	g.takeInstruction(ep)
	action, next := stepTexts(ev)
	var after *gym.Blob
	if ev.Observation != nil {
		after = rl.ObservationImage(*ev.Observation)
	}
	code := rl.ExitCode(ev.Info)
	if g.judges(ev) {
		ref := rl.StepRefOf(ev)
		in := rl.JudgeInput{Kind: ep.prompt, Instruction: ep.instruction, History: ep.history[:len(ep.history):len(ep.history)],
			Step: ev.Step, Action: action, NextState: next, ExitCode: code, Before: ep.lastImage, After: after}
		g.tracker.Submitted(ref)
		g.judger.Submit(ref, in)
	}
	ep.history = append(ep.history, rl.Turn{Action: action, NextState: next, ExitCode: code})
	if after != nil {
		ep.lastImage = after
	}
}

// judgesEpisode says whether an episode's steps go to the judge: there is
// one, and the episode's kind and run are selected.
func (g *signals) judgesEpisode(ep *episode) bool {
	return g.judger != nil && (g.kinds == nil || g.kinds[ep.env]) && (g.runs == nil || g.runs[ep.run])
}

// judges says whether a step of a judged episode goes to the judge: it has
// a step id (the judge's reward event is keyed by it) and the
// infrastructure did not fail it (its trajectory is masked).
func (g *signals) judges(ev *gym.Event) bool {
	return (ev.Failure == nil || ev.Failure.Fault != gym.FaultInfra) && ev.StepID != ""
}

// stepTexts returns a step's action and next state as text.
func stepTexts(ev *gym.Event) (action, next string) {
	if ev.Action != nil {
		action = rl.ActionText(*ev.Action)
	}
	if ev.Observation != nil {
		next = rl.ObservationText(*ev.Observation)
	}
	return action, next
}

// end reports an episode's outcome; the Tracker completes the trajectory
// now or when its last judge answers.
func (g *signals) end(ep *episode, o rl.Outcome) {
	if g.episodes[ep.key.Session] == ep {
		delete(g.episodes, ep.key.Session)
	}
	g.takeInstruction(ep) // for the samples' text; forgets the entry
	g.finMu.Lock()
	g.finished[ep.key] = ep
	g.finMu.Unlock()
	g.tracker.SetOutcome(ep.key, o)
}

// closedOutcome is the outcome of an episode its session's close cut off:
// truncated; the infrastructure's fault when the env failed or the server
// shut down or died (server_restart), the agent's when it closed the
// session or left it idle.
func closedOutcome(ev *gym.Event) rl.Outcome {
	o := rl.Outcome{Truncated: true, Failure: ev.Failure}
	if o.Failure == nil {
		switch ev.Reason {
		case gym.CloseShutdown, gym.CloseInfra, gym.CloseCreate, gym.CloseServerRestart:
			o.Failure = &gym.Failure{Fault: gym.FaultInfra, Reason: ev.Reason, Message: "the session closed before the episode ended: " + ev.Reason}
		}
	}
	return o
}

// promptKind maps an env kind to the judge's prompt kind.
func promptKind(env string, resetInfo gym.Info) string {
	switch {
	case env == "terminal-v1":
		return rl.KindTerminal
	case env == "web-v1" || env == "desktop-v1":
		return rl.KindGUI
	case strings.HasPrefix(env, "swe-"):
		return rl.KindSWE
	case env == "tau2-retail-v1" || env == "bfcl-v1" || env == "code-interpreter-v1":
		return rl.KindToolCall
	}
	if _, ok := resetInfo[gym.InfoTools]; ok {
		return rl.KindToolCall
	}
	return rl.KindDefault
}

// recordRewards records judge results as reward events in batches: it
// gathers up to rewardBatch of them (waiting at most rewardLinger for
// more) and appends them at once, so they share a store commit instead of
// each taking one between the steps' commits. A full judge queue makes one
// result per step, so this keeps the judge's cost to the step path to a
// few commits a second.
func (g *signals) recordRewards() {
	batch := make([]rl.JudgeResult, 0, rewardBatch)
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
func (g *signals) record(res rl.JudgeResult) {
	if _, err := g.s.mgr.AddReward(context.Background(), res.Event()); err != nil {
		g.log.Warn("signals: recording a judge result", "session", res.Ref.Session, "step_id", res.Ref.StepID, "err", err)
	}
	g.s.metrics.judged(res)
	g.tracker.Judged(res)
}

// samplesChanged returns a channel closed when samples are next stored.
func (g *signals) samplesChanged() <-chan struct{} {
	g.sampleMu.Lock()
	defer g.sampleMu.Unlock()
	return g.sampleCh
}

func (g *signals) samplesStored() {
	g.sampleMu.Lock()
	close(g.sampleCh)
	g.sampleCh = make(chan struct{})
	g.sampleMu.Unlock()
}

// judgeStats returns the Judger's counters; zero without a judge.
func (g *signals) judgeStats() rl.JudgerStats {
	if g.judger == nil {
		return rl.JudgerStats{}
	}
	return g.judger.Stats()
}

// backlogLen is the number of events waiting for the worker.
func (g *signals) backlogLen() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.buf)
}

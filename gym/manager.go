package gym

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
)

// Config configures a Manager. Zero fields take the stated defaults.
type Config struct {
	// Recorder receives every event; nil means Discard.
	Recorder Recorder
	// MaxSessions caps live sessions; creating one more is a *CapacityError.
	// Default 16384.
	MaxSessions int
	// IdleTTL closes a session that has had no request for this long.
	// Default 10 minutes.
	IdleTTL time.Duration
	// ReapInterval is how often idle sessions are looked for. Default
	// IdleTTL/4, at least 100ms.
	ReapInterval time.Duration
	// Limits apply where neither the task nor its kind sets one. Defaults:
	// 1000 steps, a 60s step deadline, a 1h episode deadline.
	Limits Limits
	// CloseTimeout bounds an env's Close. Default 30s.
	CloseTimeout time.Duration
	// Tasks resolves task ids given at create; nil knows only the kinds'
	// built-in tasks.
	Tasks *Catalog
	// Logger; nil means slog.Default().
	Logger *slog.Logger
	// Settings are passed to kinds that implement Configurer; each
	// Manager's kinds get its own.
	Settings Settings
	// Now is the clock of the idle TTL: a session's last activity and the
	// reaper's cutoff. nil means time.Now; a test gives a clock it moves
	// on, so that whether a session is idle does not hang on the machine's
	// speed.
	Now func() time.Time
}

// Manager owns the live sessions: it admits them under capacity limits, finds
// them by id, reaps idle ones, and closes them all on Shutdown.
type Manager struct {
	cfg Config

	mu       sync.Mutex
	sessions map[string]*Session
	draining bool

	quit   chan struct{}
	reaper sync.WaitGroup
	once   sync.Once

	confMu    sync.Mutex
	instances map[string]*instanceSlot // by kind name, of kinds that implement Configurer
}

// instanceSlot holds a kind's Instance; its mutex is held while the kind's
// Configure runs, so creates of other kinds do not wait on it.
type instanceSlot struct {
	mu   sync.Mutex
	inst Instance // nil until Configure succeeds, and after Shutdown
}

// NewManager starts a Manager and its idle reaper. Call Shutdown to stop it.
func NewManager(cfg Config) *Manager {
	if cfg.Recorder == nil {
		cfg.Recorder = Discard
	}
	if cfg.MaxSessions <= 0 {
		cfg.MaxSessions = 16384
	}
	if cfg.IdleTTL <= 0 {
		cfg.IdleTTL = 10 * time.Minute
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.ReapInterval <= 0 {
		cfg.ReapInterval = max(cfg.IdleTTL/4, 100*time.Millisecond)
	}
	cfg.Limits = cfg.Limits.Or(Limits{MaxSteps: 1000, StepTimeout: Duration(time.Minute), EpisodeTimeout: Duration(time.Hour)})
	if cfg.CloseTimeout <= 0 {
		cfg.CloseTimeout = 30 * time.Second
	}
	if cfg.Tasks == nil {
		cfg.Tasks = NewCatalog()
	}
	m := &Manager{cfg: cfg, sessions: make(map[string]*Session), quit: make(chan struct{}), instances: map[string]*instanceSlot{}}
	m.reaper.Add(1)
	go m.reap()
	return m
}

func (m *Manager) log() *slog.Logger {
	if m.cfg.Logger != nil {
		return m.cfg.Logger
	}
	return slog.Default()
}

// Tasks returns the manager's task catalog.
func (m *Manager) Tasks() *Catalog { return m.cfg.Tasks }

// CreateRequest asks for a new session.
type CreateRequest struct {
	// Env is the kind name; it may be left empty when Task or TaskID says it.
	Env string `json:"env,omitempty"`
	// TaskID names a task in the manager's catalog.
	TaskID string `json:"task_id,omitempty"`
	// Task is an inline task; it wins over TaskID.
	Task *Task `json:"task,omitempty"`
	Seed int64 `json:"seed,omitempty"`
	// Options are passed to the env's Reset.
	Options Options `json:"options,omitempty"`
	// Run labels the session's events, for filtering and export.
	Run    string            `json:"run,omitempty"`
	Labels map[string]string `json:"labels,omitempty"`
}

// Create admits a session, makes its env and runs the first reset. Over
// capacity it returns a *CapacityError at once; while shutting down,
// ErrDraining.
func (m *Manager) Create(ctx context.Context, req CreateRequest) (*Session, ResetResult, error) {
	task, err := m.resolveTask(req)
	if err != nil {
		return nil, ResetResult{}, err
	}
	reg, err := lookup(task.Env)
	if err != nil {
		return nil, ResetResult{}, err
	}
	s := &Session{ID: newID(), Run: req.Run, Kind: task.Env, m: m, reg: reg, labels: req.Labels, task: task}
	if err := m.admit(s); err != nil {
		return nil, ResetResult{}, err
	}
	// The session is registered but busy, so the reaper leaves it alone
	// and other requests wait on s.mu until the first reset is done.
	s.mu.Lock()
	defer s.mu.Unlock()
	defer m.leave(s)
	env, err := m.newEnv(ctx, reg)
	if err != nil {
		m.forget(s)
		return nil, ResetResult{}, err
	}
	s.env = env
	ev := &Event{Type: EventSessionCreated, Time: time.Now(), Session: s.ID, Run: s.Run, Env: s.Kind, Task: task.ID, Labels: s.labels}
	if err := m.record(ctx, ev); err != nil {
		s.closeLocked(context.WithoutCancel(ctx), CloseCreate, FailureOf(err))
		return nil, ResetResult{}, err
	}
	res, err := s.reset(ctx, task, req.Seed, req.Options)
	if err != nil {
		s.closeLocked(context.WithoutCancel(ctx), CloseCreate, FailureOf(err))
		return nil, ResetResult{}, err
	}
	return s, res, nil
}

// instance returns the Manager's Instance of a kind that implements
// Configurer, configuring it at the first call that finds none (a failed
// Configure is tried again at the next); ok is false for other kinds.
// Calls for other kinds do not wait on a Configure.
func (m *Manager) instance(ctx context.Context, reg registered) (inst Instance, ok bool, err error) {
	c, ok := reg.kind.(Configurer)
	if !ok {
		return nil, false, nil
	}
	m.confMu.Lock()
	slot := m.instances[reg.spec.Name]
	if slot == nil {
		slot = &instanceSlot{}
		m.instances[reg.spec.Name] = slot
	}
	m.confMu.Unlock()
	slot.mu.Lock()
	defer slot.mu.Unlock()
	if slot.inst != nil {
		return slot.inst, true, nil
	}
	inst, err = c.Configure(ctx, m.cfg.Settings)
	if err == nil && inst == nil {
		err = errors.New("its Configure returned no instance")
	}
	if err != nil {
		return nil, true, InfraFault("configure", fmt.Errorf("configuring %s: %w", reg.spec.Name, err))
	}
	slot.inst = inst
	return inst, true, nil
}

// Instance returns the Instance the Manager configured kind with, nil when
// it holds none: the kind does not implement Configurer, none of its
// sessions was created yet, or the Manager was shut down. It is for callers
// that reach into a kind's own API (its pool's counts, say); the Manager
// still owns the Instance and shuts it down. It waits for a Configure
// of the kind under way.
func (m *Manager) Instance(kind string) Instance {
	m.confMu.Lock()
	slot := m.instances[kind]
	m.confMu.Unlock()
	if slot == nil {
		return nil
	}
	slot.mu.Lock()
	defer slot.mu.Unlock()
	return slot.inst
}

// newEnv makes an env of the kind: the Manager's Instance makes it when
// the kind implements Configurer, else the registered kind.
func (m *Manager) newEnv(ctx context.Context, reg registered) (env Env, err error) {
	inst, configured, err := m.instance(ctx, reg)
	if err != nil {
		return nil, err
	}
	defer func() {
		if p := recover(); p != nil {
			err = InfraFault("panic", fmt.Errorf("kind %s panicked in New: %v", reg.spec.Name, p))
		}
	}()
	if configured {
		env, err = inst.New(ctx)
	} else {
		env, err = reg.kind.New(ctx)
	}
	if err == nil && env == nil {
		err = InfraFault("new", fmt.Errorf("kind %s returned no env", reg.spec.Name))
	}
	return env, err
}

func (m *Manager) resolveTask(req CreateRequest) (*Task, error) {
	for k := range req.Labels {
		if strings.HasPrefix(k, ReservedLabelPrefix) {
			return nil, fmt.Errorf("%w: label %q uses the reserved prefix %q", ErrBadRequest, k, ReservedLabelPrefix)
		}
	}
	var t *Task
	switch {
	case req.Task != nil:
		c := *req.Task
		t = &c
		if t.Env == "" {
			t.Env = req.Env
		}
		if err := t.Validate(); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrBadRequest, err)
		}
	case req.TaskID != "":
		var ok bool
		t, ok = m.cfg.Tasks.Get(req.Env, req.TaskID)
		if !ok {
			return nil, fmt.Errorf("%w %q (list them with env.describe or `nextstate tasks list`)", ErrUnknownTask, req.TaskID)
		}
	case req.Env != "":
		if _, err := lookup(req.Env); err != nil {
			return nil, err
		}
		t = &Task{Env: req.Env}
	default:
		return nil, fmt.Errorf("%w: say which env (\"env\") or task (\"task_id\" or \"task\")", ErrBadRequest)
	}
	if req.Env != "" && t.Env != req.Env {
		return nil, fmt.Errorf("%w: task %q is for %s, not %s", ErrBadRequest, t.ID, t.Env, req.Env)
	}
	return t, nil
}

func (m *Manager) admit(s *Session) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.draining {
		return ErrDraining
	}
	if len(m.sessions) >= m.cfg.MaxSessions {
		return &CapacityError{Limit: "sessions", Max: m.cfg.MaxSessions, RetryAfter: time.Second}
	}
	s.busy = 1
	s.lastActive = m.cfg.Now()
	m.sessions[s.ID] = s
	return nil
}

// Get returns a live session.
func (m *Manager) Get(id string) (*Session, error) {
	m.mu.Lock()
	s, ok := m.sessions[id]
	m.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("%w %q: it was never created, or it was closed (closed sessions keep their events)", ErrUnknownSession, id)
	}
	return s, nil
}

// Len returns the number of live sessions.
func (m *Manager) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.sessions)
}

// enter marks a request in flight on s, so the reaper skips it.
func (m *Manager) enter(s *Session) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.sessions[s.ID] != s {
		return fmt.Errorf("%w: %s", ErrSessionClosed, s.ID)
	}
	s.busy++
	s.lastActive = m.cfg.Now()
	return nil
}

func (m *Manager) leave(s *Session) {
	m.mu.Lock()
	s.busy--
	s.lastActive = m.cfg.Now()
	m.mu.Unlock()
}

func (m *Manager) forget(s *Session) {
	m.mu.Lock()
	if m.sessions[s.ID] == s {
		delete(m.sessions, s.ID)
	}
	m.mu.Unlock()
}

func (m *Manager) record(ctx context.Context, ev *Event) error {
	if err := m.cfg.Recorder.Append(ctx, ev); err != nil {
		return InfraFault("store", fmt.Errorf("recording %s event: %w", ev.Type, err))
	}
	return nil
}

// Close closes a session with a reason. Closing an unknown or closed
// session is not an error, so Close is idempotent.
func (m *Manager) Close(ctx context.Context, id, reason string) error {
	m.mu.Lock()
	s, ok := m.sessions[id]
	m.mu.Unlock()
	if !ok {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closeLocked(ctx, reason, nil)
}

// AddReward records a reward that arrived after its step (a judge's vote, a
// late verifier), keyed by the step's id. The session may be closed already;
// the reward joins its record all the same.
func (m *Manager) AddReward(ctx context.Context, ev Event) (int64, error) {
	if ev.Session == "" || ev.StepID == "" || ev.Reward == nil || ev.Source == "" {
		return 0, fmt.Errorf("%w: a reward needs session, step_id, reward and source", ErrBadRequest)
	}
	ev.Type = EventReward
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	if err := m.record(ctx, &ev); err != nil {
		return 0, err
	}
	return ev.Seq, nil
}

// reap closes sessions idle for longer than IdleTTL, until Shutdown.
func (m *Manager) reap() {
	defer m.reaper.Done()
	t := time.NewTicker(m.cfg.ReapInterval)
	defer t.Stop()
	for {
		select {
		case <-m.quit:
			return
		case <-t.C:
		}
		cutoff := m.cfg.Now().Add(-m.cfg.IdleTTL)
		var idle []*Session
		m.mu.Lock()
		for _, s := range m.sessions {
			if s.busy == 0 && s.lastActive.Before(cutoff) {
				idle = append(idle, s)
			}
		}
		m.mu.Unlock()
		for _, s := range idle {
			if !s.mu.TryLock() {
				continue // a request just arrived
			}
			// enter marks a request busy before it takes s.mu, so one may
			// have arrived since the scan: look again under both locks.
			m.mu.Lock()
			stillIdle := s.busy == 0 && s.lastActive.Before(cutoff)
			m.mu.Unlock()
			if !stillIdle {
				s.mu.Unlock()
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), m.cfg.CloseTimeout)
			if err := s.closeLocked(ctx, CloseIdle, nil); err != nil {
				m.log().Warn("closing idle session", "session", s.ID, "err", err)
			}
			cancel()
			s.mu.Unlock()
		}
	}
}

// Drain stops admitting sessions; Create returns ErrDraining from now on.
func (m *Manager) Drain() {
	m.mu.Lock()
	m.draining = true
	m.mu.Unlock()
}

// Shutdown stops admitting, waits for in-flight requests, closes every
// session with reason "shutdown" and stops the reaper. It waits no longer
// than ctx; sessions still busy then are closed after their request ends.
// Shutdown is idempotent.
func (m *Manager) Shutdown(ctx context.Context) error {
	m.Drain()
	m.once.Do(func() { close(m.quit) })
	m.reaper.Wait()
	m.mu.Lock()
	all := make([]*Session, 0, len(m.sessions))
	for _, s := range m.sessions {
		all = append(all, s)
	}
	m.mu.Unlock()
	// Every session gets its close started before Shutdown waits on any,
	// so one busy session cannot keep the others open past ctx; the busy
	// ones close when their request ends. At most shutdownParallel envs
	// close at once; a session waiting for its request holds no slot.
	done := make(chan error, len(all))
	sem := make(chan struct{}, shutdownParallel)
	for _, s := range all {
		go func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			sem <- struct{}{}
			defer func() { <-sem }()
			done <- s.closeLocked(context.WithoutCancel(ctx), CloseShutdown, nil)
		}()
	}
	var firstErr error
	for range all {
		select {
		case err := <-done:
			if err != nil && firstErr == nil {
				firstErr = err
			}
		case <-ctx.Done():
			return fmt.Errorf("shutdown: %d sessions still busy: %w", m.Len(), ctx.Err())
		}
	}
	// Each kind's Instance is shut down once, in name order; a second
	// Shutdown finds none.
	m.confMu.Lock()
	names := slices.Sorted(maps.Keys(m.instances))
	slots := make([]*instanceSlot, len(names))
	for i, name := range names {
		slots[i] = m.instances[name]
	}
	m.confMu.Unlock()
	for i, slot := range slots {
		slot.mu.Lock()
		inst := slot.inst
		slot.inst = nil
		slot.mu.Unlock()
		if inst == nil {
			continue
		}
		if err := inst.Shutdown(ctx); err != nil && firstErr == nil {
			firstErr = fmt.Errorf("shutting down kind %s: %w", names[i], err)
		}
	}
	return firstErr
}

// shutdownParallel bounds how many envs Shutdown closes at once.
const shutdownParallel = 64

func newID() string {
	var b [12]byte
	rand.Read(b[:])
	return "s_" + hex.EncodeToString(b[:])
}

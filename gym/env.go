package gym

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Env is one live environment, driven by exactly one Session. Reset, Step and
// Close are never called concurrently on the same Env; the Session orders
// them, enforces deadlines through ctx, and validates actions against the
// kind's ActionSchema before Step sees them.
//
// Reset starts an episode of task. The seed makes it deterministic: the same
// task, seed and actions give the same observations. Options are the
// client's, free-form per kind. Reset is called again for every new episode
// on the same Env.
//
// Step applies an action and returns the next state. An error returned from
// Step ends the session; wrap it with AgentFault or InfraFault to say whose
// fault it was (unwrapped errors count as the infrastructure's). A mistake the
// agent can recover from (a failed command, a bad tool argument) is not an
// error: it is the observation.
//
// Close releases everything the env holds. It is called once per Env, also
// after a failed Reset or Step, and must not block past ctx.
type Env interface {
	Reset(ctx context.Context, task *Task, seed int64, opts Options) (Observation, Info, error)
	Step(ctx context.Context, action Action) (Transition, error)
	Close(ctx context.Context) error
}

// Kind makes Envs of one kind. A Kind is registered once, by name, from its
// package's init, and serves every Manager of the process, so it keeps
// nothing of one Manager's: a kind that needs settings or resources
// implements Configurer, and its Instances make the envs. New is called
// concurrently.
type Kind interface {
	Spec() Spec
	New(ctx context.Context) (Env, error)
}

// Verifier is implemented by an Env whose outcome is judged after the
// agent's last action, from inputs the agent never saw. The Session calls
// Verify once when an episode terminates, before acknowledging the
// terminating step. Its reward replaces the step's reward (info
// "reward_source" is "verifier"); its info is recorded in the step event
// under InfoVerifier ("verifier") but never sent to the agent: not in the
// step's answer, nor in any event read back (Event.Public). A Verify
// error labelled AgentFault (the agent broke what the verifier needs, or
// left work over a limit) fails the episode: it stays terminated, with
// reward 0 and that failure, and counts in scores and training as any
// failed episode does. Any other Verify error truncates the episode with
// an infrastructure failure: the outcome is unknown, not failed. Only what
// the agent could not have caused may be the latter (docs/architecture.md,
// Whose fault).
type Verifier interface {
	Verify(ctx context.Context) (reward float64, info Info, err error)
}

// Configurer is implemented by kinds that need settings or resources that
// outlive a session, such as a sandbox backend and its warm pools. It is
// the split of database/sql's DriverContext: the registered Kind stays
// stateless, and Configure returns an Instance, the kind as one Manager's
// Settings make it, which holds what they opened. A Manager calls
// Configure once, before the kind's first session, with its Settings; a
// failure makes that kind's sessions fail with the error (as the
// infrastructure's fault) and is retried at the next create. From then on
// the Manager asks the Instance, not the Kind, for new envs, and calls the
// Instance's Shutdown once at its own Shutdown, after every session of the
// kind has closed. Two Managers of one process call Configure each, with
// their own Settings, and get Instances of their own (Manager.Instance
// returns a Manager's). The kind's own New is not called by a Manager; it
// may fail, saying the kind is not configured. The ctx is for Configure's
// own work, not to be kept.
type Configurer interface {
	Configure(ctx context.Context, s Settings) (Instance, error)
}

// Instance is a kind configured by one Manager (Configurer): its Settings
// and what they opened. New makes the Manager's envs of the kind, and is
// called concurrently, as Kind.New is; Shutdown releases everything the
// Instance holds (its envs are closed already) and must not block past
// ctx. A Manager calls Shutdown once; no New follows it.
type Instance interface {
	New(ctx context.Context) (Env, error)
	Shutdown(ctx context.Context) error
}

// Settings are the server's settings for kinds, "name=value" pairs such as
// "sandbox=bwrap" or "docker.hosts=unix:///run/docker.sock". Keys are
// documented by the kinds that read them.
type Settings map[string]string

// Spec describes a kind for env.describe and for validation.
type Spec struct {
	// Name carries a version, as in "guess-v1". A changed contract is a new name.
	Name        string `json:"name"`
	Description string `json:"description"`
	// ActionSchema and ObservationSchema are JSON Schemas of an Action and
	// an Observation object ({"parts":[...]}); see PartsSchema.
	ActionSchema      json.RawMessage `json:"action_schema"`
	ObservationSchema json.RawMessage `json:"observation_schema"`
	// Limits are the defaults for tasks that set none.
	Limits Limits `json:"limits"`
	// Tasks are built-in tasks, such as smoke tasks for the demo.
	Tasks []Task `json:"tasks,omitempty"`
	// JudgePrompt is the prompt kind an LLM judge of the kind's steps uses
	// (package rl's templates): "terminal" (shell tasks), "gui" (web pages
	// and desktops: screens before and after), "swe" (repositories),
	// "toolcall" (function calling), or a kind of the judge's own templates.
	// Empty is "toolcall" for an episode whose reset info lists "tools", else
	// "default". It is not sent on the wire.
	JudgePrompt string `json:"-"`
	// StepRule, when set, is the kind's programmatic judge of a step (a
	// process reward model in Go, which package rl's RuleJudge runs: `serve
	// --judge-rules`, `train --judge rule`): from the instruction, the
	// earlier turns, the action and its next state, the step's score, 1
	// (good), 0 (neutral) or -1 (bad), and how the action should have been
	// different (a hint for on-policy distillation; "" for none). It must be
	// a pure function of its input. It is not sent on the wire.
	StepRule func(RuleInput) (score int, hint string) `json:"-"`
}

// RuleInput is what a Spec.StepRule reads of a step, as text.
type RuleInput struct {
	Instruction string
	// History holds the earlier steps of the episode, oldest first.
	History           []RuleTurn
	Action, NextState string
}

// RuleTurn is one earlier step of a RuleInput.
type RuleTurn struct{ Action, NextState string }

// Info is free-form, JSON-encodable detail next to an observation.
type Info map[string]any

// Options are the client's per-episode settings for Reset.
type Options map[string]any

// Transition is the result of one Step: Gymnasium's (observation, reward,
// terminated, truncated, info). Terminated means the task reached an end
// state (success or failure) and the verifier may run; Truncated means the
// episode was cut off (step limit, deadline, infrastructure) and its outcome
// is unknown. Both may be false; a Session sets Truncated itself when a
// limit is hit.
type Transition struct {
	Observation Observation `json:"observation"`
	Reward      float64     `json:"reward"`
	Terminated  bool        `json:"terminated"`
	Truncated   bool        `json:"truncated"`
	Info        Info        `json:"info,omitempty"`
}

var (
	kindsMu sync.RWMutex
	kinds   = map[string]registered{}
)

type registered struct {
	kind   Kind
	spec   Spec
	action *Schema
}

// Register makes a kind available under its Spec's name. It panics if kind
// is nil, the name lacks a version ("name-vN"), a schema does not compile,
// or the name is taken, as database/sql.Register does.
func Register(kind Kind) {
	if kind == nil {
		panic("gym: Register kind is nil")
	}
	spec := kind.Spec()
	if _, _, err := ParseKindName(spec.Name); err != nil {
		panic("gym: Register: " + err.Error())
	}
	action, err := CompileSchema(spec.ActionSchema)
	if err != nil {
		panic(fmt.Sprintf("gym: Register %s: action schema: %v", spec.Name, err))
	}
	if _, err := CompileSchema(spec.ObservationSchema); err != nil {
		panic(fmt.Sprintf("gym: Register %s: observation schema: %v", spec.Name, err))
	}
	kindsMu.Lock()
	defer kindsMu.Unlock()
	if _, dup := kinds[spec.Name]; dup {
		panic("gym: Register called twice for kind " + spec.Name)
	}
	kinds[spec.Name] = registered{kind: kind, spec: spec, action: action}
}

// Kinds returns the registered kind names, sorted.
func Kinds() []string {
	kindsMu.RLock()
	defer kindsMu.RUnlock()
	out := make([]string, 0, len(kinds))
	for n := range kinds {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Lookup returns the Spec of a registered kind, or an ErrUnknownKind error
// that lists the kinds there are.
func Lookup(name string) (Spec, error) {
	r, err := lookup(name)
	return r.spec, err
}

func lookup(name string) (registered, error) {
	kindsMu.RLock()
	r, ok := kinds[name]
	kindsMu.RUnlock()
	if !ok {
		return registered{}, fmt.Errorf("%w %q (registered: %s)", ErrUnknownKind, name, strings.Join(Kinds(), ", "))
	}
	return r, nil
}

// ParseKindName splits "guess-v1" into "guess" and 1.
func ParseKindName(name string) (base string, version int, err error) {
	i := strings.LastIndex(name, "-v")
	if i <= 0 {
		return "", 0, fmt.Errorf("kind name %q has no version: want name-vN, as in echo-v1", name)
	}
	digits := name[i+2:]
	v, err := strconv.Atoi(digits)
	if err != nil || strings.Trim(digits, "0123456789") != "" { // Atoi takes a sign
		return "", 0, fmt.Errorf("kind name %q has a bad version: want name-vN, as in echo-v1", name)
	}
	return name[:i], v, nil
}

// Limits bound an episode. Zero fields mean "the kind's default", and the
// kind's zero means "the manager's default".
type Limits struct {
	MaxSteps       int      `json:"max_steps,omitempty"`
	StepTimeout    Duration `json:"step_timeout,omitempty"`
	EpisodeTimeout Duration `json:"episode_timeout,omitempty"`
}

// Or fills l's zero fields from d.
func (l Limits) Or(d Limits) Limits {
	if l.MaxSteps == 0 {
		l.MaxSteps = d.MaxSteps
	}
	if l.StepTimeout == 0 {
		l.StepTimeout = d.StepTimeout
	}
	if l.EpisodeTimeout == 0 {
		l.EpisodeTimeout = d.EpisodeTimeout
	}
	return l
}

// Duration is a time.Duration that reads and writes JSON as a string such as
// "30s" (a bare number is taken as seconds).
type Duration time.Duration

// MarshalJSON writes "1m30s".
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON reads "1m30s" or 90.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		v, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("duration %q: want a Go duration such as \"30s\" or \"2m\"", s)
		}
		*d = Duration(v)
		return nil
	}
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return fmt.Errorf("duration %s: want a string such as \"30s\" or a number of seconds", b)
	}
	*d = Duration(f * float64(time.Second))
	return nil
}

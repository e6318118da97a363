package gym

import (
	"context"
	"strings"
	"sync/atomic"
	"time"
)

// EventType names what an Event records.
type EventType string

const (
	EventSessionCreated EventType = "session.created" // a session was admitted
	EventReset          EventType = "reset"           // an episode began; carries the instruction and the first observation
	EventStep           EventType = "step"            // an action and its next state
	EventRefused        EventType = "step.refused"    // an action refused before the env saw it; the episode goes on
	EventReward         EventType = "reward"          // a reward that arrived after its step (verifier, judge)
	EventSessionClosed  EventType = "session.closed"  // a session ended; Reason says why
)

// Event is one entry of the trajectory record. Steps are appended before they
// are acknowledged; rewards that arrive later refer to their step by StepID.
// Seq is assigned by the Recorder: it increases across the whole store, so a
// subscriber or a resuming client asks for the events after a Seq it saw.
type Event struct {
	Seq     int64     `json:"seq"`
	Type    EventType `json:"type"`
	Time    time.Time `json:"time"`
	Session string    `json:"session"`
	Run     string    `json:"run,omitempty"`
	Env     string    `json:"env"`
	Task    string    `json:"task,omitempty"`
	// Episode counts resets within the session, from 1.
	Episode int `json:"episode,omitempty"`
	// Step is the step's index within its episode, from 1 (0 for a reset).
	Step   int    `json:"step,omitempty"`
	StepID string `json:"step_id,omitempty"`
	Seed   *int64 `json:"seed,omitempty"`
	// Instruction is a reset event's: the task's instruction, as the reset's
	// answer gave it to the agent (so, like the first observation, it is
	// public), for the judges and the samples that read the record.
	Instruction string `json:"instruction,omitempty"`

	Action      *Action      `json:"action,omitempty"`
	Observation *Observation `json:"observation,omitempty"`
	Reward      *float64     `json:"reward,omitempty"`
	Terminated  bool         `json:"terminated,omitempty"`
	Truncated   bool         `json:"truncated,omitempty"`
	Info        Info         `json:"info,omitempty"`
	// Turn is the policy's side of a step event, when the agent sent it.
	Turn *Turn `json:"turn,omitempty"`

	// Source names who gave a reward event's reward: "verifier", "judge:prm", ...
	Source string `json:"source,omitempty"`
	// Failure labels a failed step or session end with whose fault it was.
	Failure *Failure `json:"failure,omitempty"`
	// Reason says why a session closed: one of the Close* constants.
	Reason string `json:"reason,omitempty"`
	// Labels are the session's labels, on its session.created event.
	Labels map[string]string `json:"labels,omitempty"`
	// DurationUS is how long the env took, in microseconds.
	DurationUS int64 `json:"duration_us,omitempty"`
}

// Reasons a session closes, recorded in its session.closed event.
const (
	CloseClient   = "client"   // the client closed it
	CloseIdle     = "idle"     // no request for longer than the idle TTL
	CloseShutdown = "shutdown" // the server shut down
	CloseInfra    = "infra"    // the env failed; see the event's Failure
	CloseCreate   = "create"   // the first reset failed
	// CloseServerRestart is recorded by a server that starts on a store
	// holding sessions with no session.closed event: the server that ran
	// them stopped without closing them (a crash, kill -9, power loss).
	// It is the infrastructure's fault.
	CloseServerRestart = "server_restart"
)

// The verifier's marks in events. A verified step event has Info
// InfoVerifier (the verifier's details: expected answers, per-test
// results) and Info "reward_source" SourceVerifier; a reward event the
// verifier gives later has Source SourceVerifier (or "verifier:NAME") and
// its details in Info.
const (
	InfoVerifier   = "verifier"
	SourceVerifier = "verifier"
)

// Public returns a copy of ev fit to show an agent: without the verifier's
// details (expected answers, per-test results), which would let an agent
// that reads its own trajectory learn the answers and replay them after a
// reset. It drops Info "verifier" (where a verified step records them) from
// any event, and the whole Info of a reward event whose Source is the
// verifier's ("verifier" or "verifier:NAME"); rewards themselves stay.
// Public is the one filter between stored events and agents: a step's
// answer, session.resume, events.subscribe, their HTTP mirrors, MCP and
// `nextstate export` (unless --with-verifier) all pass events through it.
// ev is not changed.
func (ev Event) Public() Event {
	if ev.Type == EventReward && (ev.Source == SourceVerifier || strings.HasPrefix(ev.Source, SourceVerifier+":")) {
		ev.Info = nil
		return ev
	}
	if _, ok := ev.Info[InfoVerifier]; ok {
		info := make(Info, len(ev.Info)-1)
		for k, v := range ev.Info {
			if k != InfoVerifier {
				info[k] = v
			}
		}
		if len(info) == 0 {
			info = nil
		}
		ev.Info = info
	}
	return ev
}

// IsPublic reports whether ev is its own Public form: Public would take
// nothing out of it. Only a verified step and a verifier's reward with
// details are not; a sender that holds an event's encoding (the store's,
// say) may send it as it is when IsPublic holds.
func (ev Event) IsPublic() bool {
	if ev.Type == EventReward && (ev.Source == SourceVerifier || strings.HasPrefix(ev.Source, SourceVerifier+":")) {
		return ev.Info == nil
	}
	_, ok := ev.Info[InfoVerifier]
	return !ok
}

// Recorder appends events durably. Append assigns ev.Seq and returns once the
// event will survive a crash of the process; a Session acknowledges a step
// only after that. Append is called concurrently by many sessions.
type Recorder interface {
	Append(ctx context.Context, ev *Event) error
}

// RecorderFunc adapts a function to Recorder.
type RecorderFunc func(ctx context.Context, ev *Event) error

// Append calls f.
func (f RecorderFunc) Append(ctx context.Context, ev *Event) error { return f(ctx, ev) }

// Discard is a Recorder that numbers events and keeps nothing, for tests and
// benchmarks of the gym alone.
var Discard Recorder = &discard{}

type discard struct{ seq atomic.Int64 }

func (d *discard) Append(_ context.Context, ev *Event) error {
	ev.Seq = d.seq.Add(1)
	return nil
}

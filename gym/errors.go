package gym

import (
	"errors"
	"fmt"
	"time"
)

// Errors a Manager and its Sessions return, for errors.Is. The server maps
// each to a stable wire code (docs/protocol.md).
var (
	ErrUnknownKind    = errors.New("unknown env kind")
	ErrUnknownSession = errors.New("unknown session")
	ErrUnknownTask    = errors.New("unknown task")
	ErrBadAction      = errors.New("action does not match the env's action schema")
	ErrBadRequest     = errors.New("bad request")
	ErrSessionClosed  = errors.New("session is closed")
	ErrEpisodeOver    = errors.New("episode is over: reset the session to start a new one")
	ErrStepIDReused   = errors.New("step id was already used for a different action")
	ErrDraining       = errors.New("server is shutting down: no new sessions or requests; steps already running finish")
)

// Fault says whose fault a failure was. Infrastructure faults are never
// scored as the agent's.
type Fault string

const (
	FaultAgent Fault = "agent" // a bad action, the agent's command timing out
	FaultInfra Fault = "infra" // the sandbox died, the browser crashed, the store failed
)

// Failure is a labelled failure as recorded in events and sent on the wire.
type Failure struct {
	Fault   Fault  `json:"fault"`
	Reason  string `json:"reason"`
	Message string `json:"message,omitempty"`
}

// FaultError carries a Fault with an error. Envs return it from Step and
// Reset through AgentFault and InfraFault.
type FaultError struct {
	Fault  Fault
	Reason string // a short stable word: "timeout", "sandbox_died", ...
	Err    error
}

func (e *FaultError) Error() string {
	return fmt.Sprintf("%s fault (%s): %v", e.Fault, e.Reason, e.Err)
}

func (e *FaultError) Unwrap() error { return e.Err }

// AgentFault labels err as the agent's fault.
func AgentFault(reason string, err error) error {
	return &FaultError{Fault: FaultAgent, Reason: reason, Err: err}
}

// InfraFault labels err as the infrastructure's fault.
func InfraFault(reason string, err error) error {
	return &FaultError{Fault: FaultInfra, Reason: reason, Err: err}
}

// FailureOf labels any error: a FaultError keeps its label, anything else is
// the infrastructure's.
func FailureOf(err error) *Failure {
	if err == nil {
		return nil
	}
	var fe *FaultError
	if errors.As(err, &fe) {
		return &Failure{Fault: fe.Fault, Reason: fe.Reason, Message: err.Error()}
	}
	return &Failure{Fault: FaultInfra, Reason: "error", Message: err.Error()}
}

// CapacityError is returned when admitting a session would exceed a limit.
// RetryAfter is a hint for when to try again.
type CapacityError struct {
	Limit      string // "sessions", "sessions_per_kind"
	Max        int
	RetryAfter time.Duration
}

func (e *CapacityError) Error() string {
	return fmt.Sprintf("over capacity: %d %s are live, the maximum; retry after %s", e.Max, e.Limit, e.RetryAfter)
}

// ActionError is an action the kind's schema rejects; it wraps ErrBadAction.
type ActionError struct {
	Kind string
	Err  error
}

func (e *ActionError) Error() string {
	return fmt.Sprintf("action for %s %v", e.Kind, e.Err)
}

func (e *ActionError) Unwrap() []error { return []error{ErrBadAction, e.Err} }

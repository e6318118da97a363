package sbopen

import (
	"context"
	"errors"
	"fmt"

	"github.com/nextstate-rl/nextstate/gym"
	"github.com/nextstate-rl/nextstate/sandbox"
)

// Fault labels an error from sandbox sb for a gym session: a sandbox that
// died (sandbox.ErrGone, or one that is no longer valid after the error)
// is the infrastructure's fault; a deadline or cancellation passes through
// as it is, for the session to label. sb may be nil.
func Fault(sb sandbox.Sandbox, err error) error {
	if !errors.Is(err, sandbox.ErrGone) && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
		if v, ok := sb.(sandbox.Validator); ok && !v.IsValid() {
			err = fmt.Errorf("%w (%w)", sandbox.ErrGone, err)
		}
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return err
	case errors.Is(err, sandbox.ErrGone):
		return gym.InfraFault("sandbox_died", err)
	case errors.Is(err, sandbox.ErrClosed):
		return gym.InfraFault("sandbox_closed", err)
	}
	var fe *gym.FaultError
	if errors.As(err, &fe) {
		return err
	}
	return gym.InfraFault("sandbox", err)
}

// AgentBroke reports whether err, from a tool or program of the agent's
// sandbox sb, is the agent's doing: the sandbox still lives (nothing inside
// can end it, see sandbox.KeeperLoop), so a shell, editor or interpreter
// that failed there is one the agent broke. A sandbox that died or was
// closed, a deadline and a cancellation are not, nor is an error already
// labelled the agent's (it stays as it is). The kinds answer such a call
// with the error and let the episode go on (docs/architecture.md, the
// rule of whose fault).
func AgentBroke(sb sandbox.Sandbox, err error) bool {
	var fe *gym.FaultError
	switch {
	case err == nil, errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled),
		errors.Is(err, sandbox.ErrGone), errors.Is(err, sandbox.ErrClosed):
		return false
	case errors.As(err, &fe) && fe.Fault == gym.FaultAgent:
		return false
	}
	v, ok := sb.(sandbox.Validator)
	return ok && v.IsValid()
}

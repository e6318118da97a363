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

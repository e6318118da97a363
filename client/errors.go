package client

import (
	"errors"
	"fmt"
)

var (
	// ErrConnectionLost is wrapped by the error of a call that the lost
	// connection cut off: with reconnecting off every call in flight, with
	// it on a call that is not safe to send twice (session.create,
	// session.reset, reward.add, a step without a step id) and that had
	// already been written, so its outcome is unknown. It is also the error
	// of everything once the client gives up redialing.
	ErrConnectionLost = errors.New("connection to the nextstate server lost")

	// ErrClosed is returned by calls on a closed Client.
	ErrClosed = errors.New("client is closed")
)

// StepError is the error of Session.Step and StepWithID. It carries the
// step id, so a step whose outcome is unknown (its ctx ended, the
// connection was lost) can be retried with StepWithID and the same id: the
// server then answers from its record instead of running the action twice.
type StepError struct {
	Session string
	StepID  string
	Err     error
}

func (e *StepError) Error() string {
	return fmt.Sprintf("step %s of session %s: %v", e.StepID, e.Session, e.Err)
}

func (e *StepError) Unwrap() error { return e.Err }

// lostError is the error of a call cut off by a lost connection. cause may
// itself wrap ErrConnectionLost.
func lostError(method string, written bool, cause error) error {
	if errors.Is(cause, ErrConnectionLost) {
		if written {
			return fmt.Errorf("client: %s: the request was sent, so its outcome is unknown: %w", method, cause)
		}
		return fmt.Errorf("client: %s: %w", method, cause)
	}
	if written {
		return fmt.Errorf("client: %s: the connection was lost after the request was sent, so its outcome is unknown (%v): %w",
			method, cause, ErrConnectionLost)
	}
	return fmt.Errorf("client: %s: %v: %w", method, cause, ErrConnectionLost)
}

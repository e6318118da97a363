package server

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/nextstate-rl/nextstate/gym"
	"github.com/nextstate-rl/nextstate/store"
)

// cutOffTimeout bounds the restart closes of closeCutOff.
const cutOffTimeout = time.Minute

// closeCutOff records the close of every session the store shows open: a
// server that stopped without closing them (a crash, kill -9, power loss)
// left them so, and no server will step them again. Each gets a
// session.closed event with reason gym.CloseServerRestart and an infra
// failure, so that a client resuming it or a subscriber following it sees
// its end, and a trajectory consumer ends its episode, masked as the
// infrastructure's fault, instead of waiting for it. A server calls it once,
// before it admits sessions; only one server writes a store at a time.
func closeCutOff(st *store.Store, log *slog.Logger) error {
	ctx, cancel := context.WithTimeout(context.Background(), cutOffTimeout)
	defer cancel()
	open, err := st.Unclosed(ctx)
	if err != nil {
		return fmt.Errorf("finding the sessions a stopped server left open: %w", err)
	}
	for _, last := range open {
		ev := &gym.Event{Type: gym.EventSessionClosed, Time: time.Now(), Session: last.Session, Run: last.Run, Env: last.Env,
			Task: last.Task, Episode: last.Episode, Reason: gym.CloseServerRestart,
			Failure: &gym.Failure{Fault: gym.FaultInfra, Reason: gym.CloseServerRestart,
				Message: fmt.Sprintf("the server stopped without closing the session (its last event, seq %d, was recorded %s); it was closed when the server restarted",
					last.Seq, last.Time.UTC().Format(time.RFC3339))}}
		if err := st.Append(ctx, ev); err != nil {
			return fmt.Errorf("closing session %s, which a stopped server left open: %w", last.Session, err)
		}
	}
	if len(open) > 0 {
		log.Info("closed the sessions a stopped server left open", "sessions", len(open), "reason", gym.CloseServerRestart)
	}
	return nil
}

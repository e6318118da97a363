package client

import (
	"context"

	"github.com/nextstate-rl/nextstate/gym"
	"github.com/nextstate-rl/nextstate/wire"
)

// Subscription is a stream of recorded events that survives what would
// break it: when the server ends it (events.ended: a slow consumer, a
// shutdown), when the connection drops, or when its reader falls behind the
// client's buffer, the client subscribes again from the last event it
// queued. Events come out of C in seq order, each once.
type Subscription struct {
	resubscriber[*gym.Event]
	// floor is where to resume from if nothing was queued yet: the
	// store's last seq when the first subscription began (guarded by mu).
	floor    int64
	floorSet bool
}

// Subscribe streams recorded events that match p's filters: those after
// p.AfterSeq from the store first (AfterSeq -1: live events only, from
// now), then live ones. It returns once the server has accepted the
// subscription; ctx bounds that wait only. Close the subscription when
// done; it also ends when the client closes or gives up.
func (c *Client) Subscribe(ctx context.Context, p wire.SubscribeParams) (*Subscription, error) {
	s := &Subscription{}
	s.init(c, s, s, "subscription", p, c.opts.eventBuf)
	if err := s.start(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// resumeAfter is the last event queued, else (live events only, none
// yet) the store's last seq when the first subscription began.
func (s *Subscription) resumeAfter() int64 {
	switch {
	case s.last >= 0:
		return s.last
	case s.floorSet:
		return s.floor
	}
	return s.params.AfterSeq
}

func (s *Subscription) subscribedAt(lastSeq int64) {
	if !s.floorSet {
		s.floor, s.floorSet = lastSeq, true
	}
}

// C returns the channel of events. It is closed when the subscription ends;
// Err then says why.
func (s *Subscription) C() <-chan *gym.Event { return s.ch }

// Err returns why C was closed: nil while it is open and after Close,
// ErrClosed after the client's Close, an error wrapping ErrConnectionLost
// when the client gave up reconnecting, or the server's error when it
// refused to subscribe again.
func (s *Subscription) Err() error { return s.failure() }

// Close ends the subscription, on the server too, and waits until C is
// closed. Events not yet received are dropped. Close is idempotent.
func (s *Subscription) Close() error {
	s.close()
	return nil
}

package client

import (
	"context"
	"errors"
	"fmt"

	"github.com/nextstate-rl/nextstate/wire"
)

// SampleSubscription is a server's stream of training samples (package
// rl's Sample as JSON, with its offset), at least once and in offset
// order. The server sends at most the window's worth of samples past the
// last one acknowledged, then waits for Ack: acknowledge what you have
// processed, at least every window/2 samples, or the stream stops.
//
// It survives what would break it: when the connection drops or the
// server ends the stream, the client subscribes again after the last
// acknowledged offset. Samples the server then sends again are not put on
// C twice; the acknowledged offset is where a new SampleSubscription (in
// another process, after a crash) resumes without losing any.
type SampleSubscription struct {
	resubscriber[wire.StoredSample]
	acked int64 // the highest offset acknowledged: where a resubscription starts (guarded by mu)
}

// SubscribeSamples subscribes to the server's training samples that match
// p's filters (Run, Env, Session) after p.AfterSeq (a sample offset; 0 for
// every stored sample, -1 for new ones only), with p.Window samples in
// flight at most (0: the server's default, 64). It returns once the
// server has accepted; ctx bounds that wait only. Close it when done.
func (c *Client) SubscribeSamples(ctx context.Context, p wire.SubscribeParams) (*SampleSubscription, error) {
	p.Stream = wire.StreamSamples
	s := &SampleSubscription{acked: p.AfterSeq}
	// No bound of its own: the server's window bounds the queue.
	s.init(c, s, s, "samples stream", p, 0)
	if err := s.start(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// resumeAfter is the acknowledged offset: samples past it that were
// queued and not acknowledged come again, and are not put on C twice.
func (s *SampleSubscription) resumeAfter() int64 { return s.acked }

func (s *SampleSubscription) subscribedAt(lastSeq int64) {
	if s.acked < 0 { // "new samples only": from what the server had then
		s.acked, s.last = lastSeq, lastSeq
	}
}

// C returns the channel of samples. It is closed when the subscription
// ends; Err then says why.
func (s *SampleSubscription) C() <-chan wire.StoredSample { return s.ch }

// Err returns why C was closed: nil while it is open and after Close,
// ErrClosed after the client's Close, or the error that stopped it.
func (s *SampleSubscription) Err() error { return s.failure() }

// Acked returns the highest offset acknowledged so far.
func (s *SampleSubscription) Acked() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.acked
}

// Ack acknowledges every sample up to and including offset: the server may
// then send more, and a resubscription starts after it. A connection that
// is down is not an error: the resubscription carries the acknowledgement.
func (s *SampleSubscription) Ack(ctx context.Context, offset int64) error {
	s.mu.Lock()
	if offset > s.acked {
		s.acked = offset
	}
	cur := s.cur
	s.mu.Unlock()
	if cur.id == "" {
		return nil
	}
	var res wire.SamplesAckResult
	err := s.c.do(ctx, &call{method: wire.MethodSamplesAck, pin: cur.cn}, wire.SamplesAckParams{Subscription: cur.id, Offset: offset}, &res)
	var we *wire.Error
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrConnectionLost), errors.As(err, &we) && we.Code == wire.CodeUnknownSub:
		return nil // the stream is being resubscribed after s.acked
	}
	return fmt.Errorf("client: %s: %w", wire.MethodSamplesAck, err)
}

// Close ends the subscription, on the server too, and waits until C is
// closed. Samples not yet received are dropped (and, unacknowledged, sent
// again to the next subscription). Close is idempotent.
func (s *SampleSubscription) Close() error {
	s.close()
	return nil
}

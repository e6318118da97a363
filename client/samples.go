package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

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
	c      *Client
	params wire.SubscribeParams
	ch     chan wire.StoredSample
	wake   chan struct{} // cap 1
	quit   chan struct{} // closed by Close
	done   chan struct{} // closed when run has returned
	ready  chan error    // cap 1: the outcome of the first subscribe
	once   sync.Once
	ctx    context.Context
	cancel context.CancelFunc

	mu      sync.Mutex
	queue   []wire.StoredSample // for C, in offset order
	cur     serverSub
	needSub bool
	stale   []serverSub
	queued  int64 // the highest offset queued for C
	acked   int64 // the highest offset acknowledged: where a resubscription starts
	closed  bool
	err     error
}

// SubscribeSamples subscribes to the server's training samples that match
// p's filters (Run, Env, Session) after p.AfterSeq (a sample offset; 0 for
// every stored sample, -1 for new ones only), with p.Window samples in
// flight at most (0: the server's default, 64). It returns once the
// server has accepted; ctx bounds that wait only. Close it when done.
func (c *Client) SubscribeSamples(ctx context.Context, p wire.SubscribeParams) (*SampleSubscription, error) {
	p.Stream = wire.StreamSamples
	s := &SampleSubscription{
		c: c, params: p, ch: make(chan wire.StoredSample), wake: make(chan struct{}, 1),
		quit: make(chan struct{}), done: make(chan struct{}), ready: make(chan error, 1),
		needSub: true, acked: p.AfterSeq, queued: p.AfterSeq,
	}
	c.mu.Lock()
	switch {
	case c.closed:
		c.mu.Unlock()
		return nil, fmt.Errorf("client: %s: %w", wire.MethodEventsSubscribe, ErrClosed)
	case c.dead != nil:
		c.mu.Unlock()
		return nil, fmt.Errorf("client: %s: %w", wire.MethodEventsSubscribe, c.dead)
	}
	s.ctx, s.cancel = context.WithCancel(c.life)
	c.subs[s] = struct{}{}
	c.wg.Add(1)
	c.mu.Unlock()
	go s.run()
	select {
	case err := <-s.ready:
		if err != nil {
			s.Close()
			return nil, err
		}
		return s, nil
	case <-ctx.Done():
		s.Close()
		return nil, fmt.Errorf("client: %s: %w", wire.MethodEventsSubscribe, ctx.Err())
	}
}

// C returns the channel of samples. It is closed when the subscription
// ends; Err then says why.
func (s *SampleSubscription) C() <-chan wire.StoredSample { return s.ch }

// Err returns why C was closed: nil while it is open and after Close,
// ErrClosed after the client's Close, or the error that stopped it.
func (s *SampleSubscription) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

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
	s.once.Do(func() {
		close(s.quit)
		s.cancel()
	})
	<-s.done
	return nil
}

func (s *SampleSubscription) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// push queues a sample of server subscription n.Subscription on cn. It
// runs on the reader goroutine and never blocks; the server's window
// bounds the queue.
func (s *SampleSubscription) push(cn *conn, n wire.SampleNotification) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur.cn != cn || s.cur.id != n.Subscription || n.Offset <= s.queued {
		return // a stream we dropped, or a sample sent again after a resubscription
	}
	s.queue = append(s.queue, wire.StoredSample{Offset: n.Offset, Sample: n.Sample})
	s.queued = n.Offset
	s.poke()
}

func (s *SampleSubscription) ended(cn *conn, n wire.EndedNotification) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur.cn == cn && s.cur.id == n.Subscription {
		s.c.log.Info("nextstate client: samples stream ended by the server; resubscribing",
			"subscription", n.Subscription, "reason", n.Reason, "acked", s.acked)
		s.cur = serverSub{}
		s.needSub = true
		s.poke()
	}
}

func (s *SampleSubscription) connLost() {
	s.mu.Lock()
	s.cur = serverSub{}
	s.stale = nil
	s.needSub = true
	s.mu.Unlock()
	s.poke()
}

// subscribed runs on the reader goroutine with a subscribe result, before
// any sample of the new stream is read.
func (s *SampleSubscription) subscribed(cn *conn, raw json.RawMessage) {
	var r wire.SubscribeResult
	if err := json.Unmarshal(raw, &r); err != nil {
		return
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		if f, err := encodeRequest(0, wire.MethodEventsUnsubscribe, wire.UnsubscribeParams{Subscription: r.Subscription}); err == nil {
			select {
			case cn.out <- &call{method: wire.MethodEventsUnsubscribe, notify: true, frame: f}:
			default:
			}
		}
		return
	}
	if s.cur.id != "" {
		s.stale = append(s.stale, s.cur)
	}
	s.cur = serverSub{cn: cn, id: r.Subscription}
	s.needSub = false
	if s.acked < 0 { // "new samples only": from what the server had then
		s.acked, s.queued = r.LastSeq, r.LastSeq
	}
	s.mu.Unlock()
	s.c.mu.Lock()
	s.c.subByID[r.Subscription] = s
	s.c.mu.Unlock()
}

// run subscribes, resubscribes and feeds C until Close, the client's
// Close, or an error it cannot get past.
func (s *SampleSubscription) run() {
	defer s.c.wg.Done()
	defer close(s.done)
	defer close(s.ch)
	defer s.cleanup()
	first, failures := true, 0
	defer func() {
		select {
		case <-s.quit:
		case <-s.c.quit:
			s.fail(ErrClosed)
		default:
		}
		if first {
			err := s.Err()
			if err == nil {
				err = fmt.Errorf("client: %s: %w", wire.MethodEventsSubscribe, ErrClosed)
			}
			s.ready <- err
		}
	}()
	for {
		s.mu.Lock()
		stale := s.stale
		s.stale = nil
		need := s.needSub
		var head *wire.StoredSample
		if len(s.queue) > 0 {
			head = &s.queue[0]
		}
		s.mu.Unlock()
		for _, ss := range stale {
			s.unsubscribe(ss)
		}
		if need {
			err := s.subscribe()
			switch {
			case err == nil:
				failures = 0
				if first {
					first = false
					s.ready <- nil
				}
			case s.ctx.Err() != nil:
				return
			case terminal(err) || s.c.isDead():
				s.fail(err)
				return
			default:
				failures++
				s.c.log.Warn("nextstate client: resubscribing to samples failed; retrying", "err", err, "attempt", failures)
				t := time.NewTimer(s.c.policy.backoff(failures))
				select {
				case <-t.C:
				case <-s.quit:
					t.Stop()
					return
				case <-s.c.quit:
					t.Stop()
					return
				}
			}
			continue
		}
		var out chan<- wire.StoredSample
		var v wire.StoredSample
		if head != nil {
			out, v = s.ch, *head
		}
		select {
		case out <- v:
			s.mu.Lock()
			s.queue[0] = wire.StoredSample{}
			s.queue = s.queue[1:]
			s.mu.Unlock()
		case <-s.wake:
		case <-s.quit:
			return
		case <-s.c.quit:
			return
		}
	}
}

func (s *SampleSubscription) fail(err error) {
	s.mu.Lock()
	if s.err == nil {
		s.err = err
	}
	s.mu.Unlock()
}

// subscribe asks for a server-side stream after the acknowledged offset.
func (s *SampleSubscription) subscribe() error {
	s.mu.Lock()
	p := s.params
	p.AfterSeq = s.acked
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(s.ctx, time.Minute)
	defer cancel()
	var res wire.SubscribeResult
	return s.c.do(ctx, &call{method: wire.MethodEventsSubscribe, onResult: s.subscribed}, p, &res)
}

func (s *SampleSubscription) unsubscribe(ss serverSub) {
	s.c.mu.Lock()
	if s.c.subByID[ss.id] == stream(s) && s.c.conn == ss.cn {
		delete(s.c.subByID, ss.id)
	}
	s.c.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(s.ctx), 5*time.Second)
	defer cancel()
	err := s.c.do(ctx, &call{method: wire.MethodEventsUnsubscribe, pin: ss.cn, notify: true}, wire.UnsubscribeParams{Subscription: ss.id}, nil)
	if err != nil {
		s.c.log.Debug("nextstate client: unsubscribing from samples", "subscription", ss.id, "err", err)
	}
}

func (s *SampleSubscription) cleanup() {
	s.mu.Lock()
	cur := s.cur
	s.cur = serverSub{}
	s.queue = nil
	s.closed = true
	s.mu.Unlock()
	if cur.id != "" {
		s.unsubscribe(cur)
	}
	s.c.mu.Lock()
	delete(s.c.subs, s)
	s.c.mu.Unlock()
}

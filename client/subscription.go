package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nextstate-rl/nextstate/gym"
	"github.com/nextstate-rl/nextstate/wire"
)

// Subscription is a stream of recorded events that survives what would
// break it: when the server ends it (events.ended: a slow consumer, a
// shutdown), when the connection drops, or when its reader falls behind the
// client's buffer, the client subscribes again from the last event it
// queued. Events come out of C in seq order, each once.
type Subscription struct {
	c      *Client
	params wire.SubscribeParams
	ch     chan *gym.Event
	wake   chan struct{} // cap 1: state changed
	quit   chan struct{} // closed by Close
	done   chan struct{} // closed when run has returned
	ready  chan error    // cap 1: the outcome of the first subscribe
	once   sync.Once
	ctx    context.Context // ends with Close or the client's Close; bounds run's calls
	cancel context.CancelFunc

	mu       sync.Mutex
	queue    []*gym.Event // queued for C, in seq order
	cur      serverSub    // the live server-side subscription, if any
	needSub  bool         // subscribe (again) when the queue allows
	stale    []serverSub  // server-side subscriptions to end
	lastSeq  int64        // the highest seq queued
	floor    int64        // where to resume from if nothing was queued yet
	floorSet bool
	closed   bool // run has returned or is returning
	err      error
}

// serverSub is a server-side subscription: its id is only meaningful on the
// connection it was made on.
type serverSub struct {
	cn *conn
	id string
}

// Subscribe streams recorded events that match p's filters: those after
// p.AfterSeq from the store first (AfterSeq -1: live events only, from
// now), then live ones. It returns once the server has accepted the
// subscription; ctx bounds that wait only. Close the subscription when
// done; it also ends when the client closes or gives up.
func (c *Client) Subscribe(ctx context.Context, p wire.SubscribeParams) (*Subscription, error) {
	s := &Subscription{
		c: c, params: p, ch: make(chan *gym.Event), wake: make(chan struct{}, 1),
		quit: make(chan struct{}), done: make(chan struct{}), ready: make(chan error, 1),
		needSub: true, lastSeq: p.AfterSeq,
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

// C returns the channel of events. It is closed when the subscription ends;
// Err then says why.
func (s *Subscription) C() <-chan *gym.Event { return s.ch }

// Err returns why C was closed: nil while it is open and after Close,
// ErrClosed after the client's Close, an error wrapping ErrConnectionLost
// when the client gave up reconnecting, or the server's error when it
// refused to subscribe again.
func (s *Subscription) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Close ends the subscription, on the server too, and waits until C is
// closed. Events not yet received are dropped. Close is idempotent.
func (s *Subscription) Close() error {
	s.once.Do(func() {
		close(s.quit)
		s.cancel()
	})
	<-s.done
	return nil
}

func (s *Subscription) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// push queues an event of server subscription id on cn. It runs on the
// reader goroutine and never blocks.
func (s *Subscription) push(cn *conn, id string, ev *gym.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur.cn != cn || s.cur.id != id || ev.Seq <= s.lastSeq {
		return // a subscription we dropped, or an event we have
	}
	if len(s.queue) >= s.c.opts.eventBuf {
		// The reader is behind: stop this server subscription, and
		// resubscribe from lastSeq once the reader has caught up.
		s.c.log.Info("nextstate client: subscription reader is behind; resubscribing once it catches up",
			"subscription", id, "last_seq", s.lastSeq)
		s.stale = append(s.stale, s.cur)
		s.cur = serverSub{}
		s.needSub = true
		s.poke()
		return
	}
	s.queue = append(s.queue, ev)
	s.lastSeq = ev.Seq
	s.poke()
}

// ended handles events.ended for server subscription id on cn.
func (s *Subscription) ended(cn *conn, n wire.EndedNotification) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur.cn == cn && s.cur.id == n.Subscription {
		s.c.log.Info("nextstate client: subscription ended by the server; resubscribing",
			"subscription", n.Subscription, "reason", n.Reason, "last_seq", n.LastSeq)
		s.cur = serverSub{}
		s.needSub = true
		s.poke()
	}
}

// connLost forgets the server-side subscriptions, which died with their
// connection.
func (s *Subscription) connLost() {
	s.mu.Lock()
	s.cur = serverSub{}
	s.stale = nil
	s.needSub = true
	s.mu.Unlock()
	s.poke()
}

// subscribed runs on the reader goroutine with a subscribe result, before
// any event of the new subscription is read.
func (s *Subscription) subscribed(cn *conn, raw json.RawMessage) {
	var r wire.SubscribeResult
	if err := json.Unmarshal(raw, &r); err != nil {
		return // the caller sees the same error
	}
	s.mu.Lock()
	if s.closed {
		// Closed while the request was out: end the orphan if the queue
		// has room; otherwise it ends with the connection.
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
	if !s.floorSet {
		s.floor, s.floorSet = r.LastSeq, true
	}
	s.mu.Unlock()
	s.c.mu.Lock()
	s.c.subByID[r.Subscription] = s
	s.c.mu.Unlock()
}

// run subscribes, resubscribes, ends stale server subscriptions and feeds
// C, until Close, the client's Close, or an error it cannot get past.
func (s *Subscription) run() {
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
		need := s.needSub && len(s.queue) <= s.c.opts.eventBuf/2
		var head *gym.Event
		if len(s.queue) > 0 {
			head = s.queue[0]
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
				s.c.log.Warn("nextstate client: resubscribing failed; retrying", "err", err, "attempt", failures)
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
		var out chan<- *gym.Event
		if head != nil {
			out = s.ch
		}
		select {
		case out <- head:
			s.mu.Lock()
			s.queue[0] = nil
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

func (s *Subscription) fail(err error) {
	s.mu.Lock()
	if s.err == nil {
		s.err = err
	}
	s.mu.Unlock()
}

// subscribe asks for a server-side subscription from the last seq queued.
func (s *Subscription) subscribe() error {
	s.mu.Lock()
	p := s.params
	if s.lastSeq >= 0 {
		p.AfterSeq = s.lastSeq
	} else if s.floorSet {
		p.AfterSeq = s.floor
	}
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(s.ctx, time.Minute)
	defer cancel()
	var res wire.SubscribeResult
	return s.c.do(ctx, &call{method: wire.MethodEventsSubscribe, onResult: s.subscribed}, p, &res)
}

// unsubscribe ends a server-side subscription, if its connection is still
// the current one. It is sent as a notification: nothing waits for an answer.
func (s *Subscription) unsubscribe(ss serverSub) {
	s.c.mu.Lock()
	if s.c.subByID[ss.id] == s && s.c.conn == ss.cn {
		delete(s.c.subByID, ss.id)
	}
	s.c.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(s.ctx), 5*time.Second)
	defer cancel()
	err := s.c.do(ctx, &call{method: wire.MethodEventsUnsubscribe, pin: ss.cn, notify: true}, wire.UnsubscribeParams{Subscription: ss.id}, nil)
	if err != nil {
		s.c.log.Debug("nextstate client: unsubscribing", "subscription", ss.id, "err", err)
	}
}

// cleanup ends the server-side subscription and forgets s.
func (s *Subscription) cleanup() {
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

// terminal reports whether a subscribe error will recur however often it is
// tried.
func terminal(err error) bool {
	if errors.Is(err, ErrClosed) {
		return true
	}
	var we *wire.Error
	if errors.As(err, &we) {
		switch we.Code {
		case wire.CodeInvalidParams, wire.CodeInvalidRequest, wire.CodeMethodNotFound,
			wire.CodeBadRequest, wire.CodeUnauthorized, wire.CodeFrameTooLarge:
			return true
		}
	}
	return false
}

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

// resubscriber keeps one client-side stream of T (events, samples) going
// across what would break its server-side subscription: events.ended, a
// lost connection, a reader behind the queue's bound. It owns the
// goroutine that subscribes, resubscribes with backoff, ends stale
// server-side subscriptions and feeds C in seq order, each item once. What
// differs between streams is its resumePolicy: where a new subscription
// starts.
type resubscriber[T any] struct {
	c      *Client
	self   stream // the Subscription or SampleSubscription this is part of
	pol    resumePolicy
	what   string // "subscription", "samples stream": for logs
	params wire.SubscribeParams
	bound  int // queued items past which the server subscription is dropped; 0: none (the server's window bounds it)

	ch     chan T
	wake   chan struct{} // cap 1: state changed
	quit   chan struct{} // closed by Close
	done   chan struct{} // closed when run has returned
	ready  chan error    // cap 1: the outcome of the first subscribe
	once   sync.Once
	ctx    context.Context // ends with Close or the client's Close; bounds run's calls
	cancel context.CancelFunc

	mu      sync.Mutex
	queue   []T         // for C, in seq order
	last    int64       // the highest seq queued
	cur     serverSub   // the live server-side subscription, if any
	needSub bool        // subscribe (again) when the queue allows
	stale   []serverSub // server-side subscriptions to end
	closed  bool        // run has returned or is returning
	err     error
}

// resumePolicy is a stream's rule of where it resumes. Its methods run
// with the resubscriber's mu held.
type resumePolicy interface {
	// resumeAfter is the AfterSeq of the next subscribe.
	resumeAfter() int64
	// subscribedAt takes the store's last seq when a server-side
	// subscription starts.
	subscribedAt(lastSeq int64)
}

// serverSub is a server-side subscription: its id is only meaningful on the
// connection it was made on.
type serverSub struct {
	cn *conn
	id string
}

func (r *resubscriber[T]) init(c *Client, self stream, pol resumePolicy, what string, p wire.SubscribeParams, bound int) {
	*r = resubscriber[T]{c: c, self: self, pol: pol, what: what, params: p, bound: bound,
		ch: make(chan T), wake: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{}),
		ready: make(chan error, 1), needSub: true, last: p.AfterSeq}
}

// start runs the stream and waits until the server has accepted its
// first subscription; ctx bounds that wait only.
func (r *resubscriber[T]) start(ctx context.Context) error {
	c := r.c
	c.mu.Lock()
	switch {
	case c.closed:
		c.mu.Unlock()
		return fmt.Errorf("client: %s: %w", wire.MethodEventsSubscribe, ErrClosed)
	case c.dead != nil:
		c.mu.Unlock()
		return fmt.Errorf("client: %s: %w", wire.MethodEventsSubscribe, c.dead)
	}
	r.ctx, r.cancel = context.WithCancel(c.life)
	c.subs[r.self] = struct{}{}
	c.wg.Add(1)
	c.mu.Unlock()
	go r.run()
	select {
	case err := <-r.ready:
		if err != nil {
			r.close()
		}
		return err
	case <-ctx.Done():
		r.close()
		return fmt.Errorf("client: %s: %w", wire.MethodEventsSubscribe, ctx.Err())
	}
}

// failure is why the stream ended, nil while it runs or after close.
func (r *resubscriber[T]) failure() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// close ends the stream, on the server too, and waits until C is closed.
func (r *resubscriber[T]) close() {
	r.once.Do(func() {
		close(r.quit)
		r.cancel()
	})
	<-r.done
}

func (r *resubscriber[T]) poke() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// push queues an item of server subscription id on cn. It runs on the
// reader goroutine and never blocks.
func (r *resubscriber[T]) push(cn *conn, id string, seq int64, item T) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cur.cn != cn || r.cur.id != id || seq <= r.last {
		return // a subscription we dropped, or an item we have (sent again after a resubscription)
	}
	if r.bound > 0 && len(r.queue) >= r.bound {
		// The reader is behind: stop this server subscription, and
		// resubscribe from last once the reader has caught up.
		r.c.log.Info("nextstate client: "+r.what+" reader is behind; resubscribing once it catches up",
			"subscription", id, "last_seq", r.last)
		r.stale = append(r.stale, r.cur)
		r.cur = serverSub{}
		r.needSub = true
		r.poke()
		return
	}
	r.queue = append(r.queue, item)
	r.last = seq
	r.poke()
}

// ended handles events.ended for server subscription n.Subscription on cn.
func (r *resubscriber[T]) ended(cn *conn, n wire.EndedNotification) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cur.cn == cn && r.cur.id == n.Subscription {
		r.c.log.Info("nextstate client: "+r.what+" ended by the server; resubscribing",
			"subscription", n.Subscription, "reason", n.Reason, "resume_after", r.pol.resumeAfter())
		r.cur = serverSub{}
		r.needSub = true
		r.poke()
	}
}

// connLost forgets the server-side subscriptions, which died with their
// connection.
func (r *resubscriber[T]) connLost() {
	r.mu.Lock()
	r.cur = serverSub{}
	r.stale = nil
	r.needSub = true
	r.mu.Unlock()
	r.poke()
}

// subscribed runs on the reader goroutine with a subscribe result, before
// any item of the new subscription is read.
func (r *resubscriber[T]) subscribed(cn *conn, raw json.RawMessage) {
	var res wire.SubscribeResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return // the caller sees the same error
	}
	r.mu.Lock()
	if r.closed {
		// Closed while the request was out: end the orphan if the queue
		// has room; otherwise it ends with the connection.
		r.mu.Unlock()
		if f, err := encodeRequest(0, wire.MethodEventsUnsubscribe, wire.UnsubscribeParams{Subscription: res.Subscription}); err == nil {
			select {
			case cn.out <- &call{method: wire.MethodEventsUnsubscribe, notify: true, frame: f}:
				cn.kick()
			default:
			}
		}
		return
	}
	if r.cur.id != "" {
		r.stale = append(r.stale, r.cur)
	}
	r.cur = serverSub{cn: cn, id: res.Subscription}
	r.needSub = false
	r.pol.subscribedAt(res.LastSeq)
	r.mu.Unlock()
	r.c.mu.Lock()
	r.c.subByID[res.Subscription] = r.self
	r.c.mu.Unlock()
}

// run subscribes, resubscribes, ends stale server subscriptions and feeds
// C, until Close, the client's Close, or an error it cannot get past.
func (r *resubscriber[T]) run() {
	defer r.c.wg.Done()
	defer close(r.done)
	defer close(r.ch)
	defer r.cleanup()
	first, failures := true, 0
	defer func() {
		select {
		case <-r.quit:
		case <-r.c.quit:
			r.fail(ErrClosed)
		default:
		}
		if first {
			err := r.failure()
			if err == nil {
				err = fmt.Errorf("client: %s: %w", wire.MethodEventsSubscribe, ErrClosed)
			}
			r.ready <- err
		}
	}()
	for {
		r.mu.Lock()
		stale := r.stale
		r.stale = nil
		need := r.needSub && (r.bound == 0 || len(r.queue) <= r.bound/2)
		var head T
		have := len(r.queue) > 0
		if have {
			head = r.queue[0]
		}
		r.mu.Unlock()
		for _, ss := range stale {
			r.unsubscribe(ss)
		}
		if need {
			err := r.subscribe()
			switch {
			case err == nil:
				failures = 0
				if first {
					first = false
					r.ready <- nil
				}
			case r.ctx.Err() != nil:
				return
			case terminal(err) || r.c.isDead():
				r.fail(err)
				return
			default:
				failures++
				r.c.log.Warn("nextstate client: resubscribing ("+r.what+") failed; retrying", "err", err, "attempt", failures)
				t := time.NewTimer(r.c.policy.backoff(failures))
				select {
				case <-t.C:
				case <-r.quit:
					t.Stop()
					return
				case <-r.c.quit:
					t.Stop()
					return
				}
			}
			continue
		}
		var out chan<- T
		if have {
			out = r.ch
		}
		select {
		case out <- head:
			r.mu.Lock()
			var zero T
			r.queue[0] = zero
			r.queue = r.queue[1:]
			r.mu.Unlock()
		case <-r.wake:
		case <-r.quit:
			return
		case <-r.c.quit:
			return
		}
	}
}

func (r *resubscriber[T]) fail(err error) {
	r.mu.Lock()
	if r.err == nil {
		r.err = err
	}
	r.mu.Unlock()
}

// subscribe asks for a server-side subscription from where the policy
// resumes.
func (r *resubscriber[T]) subscribe() error {
	r.mu.Lock()
	p := r.params
	p.AfterSeq = r.pol.resumeAfter()
	r.mu.Unlock()
	ctx, cancel := context.WithTimeout(r.ctx, time.Minute)
	defer cancel()
	var res wire.SubscribeResult
	return r.c.do(ctx, &call{method: wire.MethodEventsSubscribe, onResult: r.subscribed}, p, &res)
}

// unsubscribe ends a server-side subscription, if its connection is still
// the current one. It is sent as a notification: nothing waits for an answer.
func (r *resubscriber[T]) unsubscribe(ss serverSub) {
	r.c.mu.Lock()
	if r.c.subByID[ss.id] == r.self && r.c.conn == ss.cn {
		delete(r.c.subByID, ss.id)
	}
	r.c.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.ctx), 5*time.Second)
	defer cancel()
	err := r.c.do(ctx, &call{method: wire.MethodEventsUnsubscribe, pin: ss.cn, notify: true}, wire.UnsubscribeParams{Subscription: ss.id}, nil)
	if err != nil {
		r.c.log.Debug("nextstate client: unsubscribing", "stream", r.what, "subscription", ss.id, "err", err)
	}
}

// cleanup ends the server-side subscription and forgets the stream.
func (r *resubscriber[T]) cleanup() {
	r.mu.Lock()
	cur := r.cur
	r.cur = serverSub{}
	r.queue = nil
	r.closed = true
	r.mu.Unlock()
	if cur.id != "" {
		r.unsubscribe(cur)
	}
	r.c.mu.Lock()
	delete(r.c.subs, r.self)
	r.c.mu.Unlock()
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

package server

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/nextstate-rl/nextstate/gym"
	"github.com/nextstate-rl/nextstate/store"
	"github.com/nextstate-rl/nextstate/wire"
)

// broker fans committed events out to live subscriptions. The store calls
// publish from its writer goroutine, once per commit, in seq order; publish
// never blocks: a subscriber that cannot keep up is ended as a slow consumer
// and resubscribes from the last seq it saw. Events are sent in their public
// form (publicJSON); a live event that is its own public form (all but a
// verified step and a verifier's reward) is sent as the store encoded it,
// not encoded again on the writer goroutine.
type broker struct {
	mu    sync.RWMutex
	subs  map[*subscription]struct{}
	funcs funcSubs     // in-process subscribers (Server.Subscribe, mounted.go)
	last  atomic.Int64 // the highest seq published
}

// subscription is one events.subscribe on one connection.
type subscription struct {
	id string
	c  *conn
	p  wire.SubscribeParams

	mu    sync.Mutex
	live  bool         // replay done: deliver directly
	buf   []*gym.Event // live events that came during the replay
	sent  int64        // the highest seq sent
	ended bool
}

// maxReplayBuffer caps the live events held while a subscription replays
// from the store; past it the subscription ends as a slow consumer.
const maxReplayBuffer = 10000

func newBroker() *broker { return &broker{subs: map[*subscription]struct{}{}} }

func (b *broker) add(s *subscription) {
	b.mu.Lock()
	b.subs[s] = struct{}{}
	b.mu.Unlock()
}

func (b *broker) remove(s *subscription) {
	b.mu.Lock()
	delete(b.subs, s)
	b.mu.Unlock()
}

func (b *broker) count() int {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return len(b.subs)
}

// publish is the store's OnCommit hook: bodies[i] is evs[i] as stored.
func (b *broker) publish(evs []*gym.Event, bodies []string) {
	if len(evs) > 0 {
		b.last.Store(evs[len(evs)-1].Seq)
	}
	b.funcs.publish(evs)
	b.mu.RLock()
	if len(b.subs) == 0 {
		b.mu.RUnlock()
		return
	}
	subs := make([]*subscription, 0, len(b.subs))
	for s := range b.subs {
		subs = append(subs, s)
	}
	b.mu.RUnlock()
	enc := make([][]byte, len(evs)) // each event encoded once, on demand
	for _, s := range subs {
		for i, ev := range evs {
			if !matches(&s.p, ev) {
				continue
			}
			if !s.offer(ev, func() []byte {
				if enc[i] == nil {
					enc[i] = committedJSON(ev, bodies[i])
				}
				return enc[i]
			}) {
				break
			}
		}
	}
}

// publicJSON encodes an event as subscribers get it: gym.Event.Public, so
// that no verifier details reach an agent that subscribes to its own
// session. Every event the broker sends, replayed or live, is encoded here.
func publicJSON(ev *gym.Event) ([]byte, error) {
	pub := ev.Public()
	return json.Marshal(&pub)
}

// committedJSON is publicJSON of a committed event, from body, the JSON the
// store made of it: the same bytes, made without encoding the event again
// when it is its own public form.
func committedJSON(ev *gym.Event, body string) []byte {
	if ev.IsPublic() {
		return store.AppendJSON(nil, body, ev.Seq)
	}
	b, _ := publicJSON(ev)
	return b
}

// matches applies a subscription's filters; empty ones match all.
func matches(p *wire.SubscribeParams, ev *gym.Event) bool {
	return (p.Run == "" || p.Run == ev.Run) && (p.Env == "" || p.Env == ev.Env) &&
		(p.Session == "" || p.Session == ev.Session) && (len(p.Types) == 0 || slices.Contains(p.Types, ev.Type))
}

// offer delivers a live event or buffers it during the replay. It reports
// false once the subscription has ended.
func (s *subscription) offer(ev *gym.Event, encoded func() []byte) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return false
	}
	if !s.live {
		if len(s.buf) >= maxReplayBuffer {
			s.endLocked("slow_consumer")
			return false
		}
		s.buf = append(s.buf, ev)
		return true
	}
	return s.deliverLocked(ev, encoded())
}

func (s *subscription) deliverLocked(ev *gym.Event, enc []byte) bool {
	if ev.Seq <= s.sent {
		return true
	}
	if !s.c.send(notification(s.id, enc), true) {
		s.endLocked("slow_consumer")
		return false
	}
	s.sent = ev.Seq
	return true
}

func notification(sub string, event []byte) []byte {
	b := make([]byte, 0, len(event)+96)
	b = append(b, `{"jsonrpc":"2.0","method":"`+wire.NotifyEvent+`","params":{"subscription":`...)
	b = strconv.AppendQuote(b, sub)
	b = append(b, `,"event":`...)
	b = append(b, event...)
	return append(b, "}}"...)
}

// endLocked stops the subscription and tells the client why, with the last
// seq it was sent, so it can resubscribe from there.
func (s *subscription) endLocked(reason string) {
	if s.ended {
		return
	}
	s.ended = true
	s.buf = nil
	s.c.s.broker.remove(s)
	s.c.mu.Lock()
	delete(s.c.subs, s.id)
	s.c.mu.Unlock()
	msg, _ := json.Marshal(wire.Notification{JSONRPC: "2.0", Method: wire.NotifySubscriptionEnded,
		Params: wire.EndedNotification{Subscription: s.id, Reason: reason, LastSeq: s.sent}})
	// Not droppable: the client must learn that events stopped.
	s.c.send(msg, false)
}

// subscribeReq handles events.subscribe: it registers the subscription,
// answers, replays stored events after AfterSeq, then goes live. Live events
// that arrive during the replay are buffered and sent after it, without
// duplicates or gaps. It answers the request itself (before the replay), so
// it returns an error only when it has not answered.
func (c *conn) subscribeReq(req wire.Request) *wire.Error {
	var p wire.SubscribeParams
	if e := params(req.Method, req.Params, &p); e != nil {
		return e
	}
	switch p.Stream {
	case "", wire.StreamEvents:
	case wire.StreamSamples:
		return c.subscribeSamples(req, p)
	default:
		return &wire.Error{Code: wire.CodeInvalidParams, Message: fmt.Sprintf(`unknown stream %q: "events" (the default) or "samples"`, p.Stream),
			Data: &wire.ErrorData{Accepted: []string{wire.StreamEvents, wire.StreamSamples}}}
	}
	if p.Window != 0 {
		return wire.Errorf(wire.CodeInvalidParams, `"window" applies to the samples stream ("stream": "samples") only`)
	}
	if p.AfterSeq < -1 {
		return wire.Errorf(wire.CodeInvalidParams, `"after_seq" must be -1 (live only), 0 (everything) or a seq`)
	}
	for _, t := range p.Types {
		if !slices.Contains(eventTypes, t) {
			return &wire.Error{Code: wire.CodeInvalidParams, Message: fmt.Sprintf("unknown event type %q", t),
				Data: &wire.ErrorData{Accepted: eventTypeNames()}}
		}
	}
	from := p.AfterSeq
	if from < 0 {
		from = c.s.broker.last.Load()
	}
	s := &subscription{c: c, p: p, sent: from}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return wire.Errorf(wire.CodeInternal, "connection closing")
	}
	c.nextSub++
	s.id = "sub_" + strconv.Itoa(c.nextSub)
	c.subs[s.id] = s
	// Added under c.mu, so that close, which takes c.subs under c.mu and
	// removes them from the broker, cannot miss it.
	c.s.broker.add(s)
	c.mu.Unlock()
	// Answer first, so the client knows the id before events arrive.
	if len(req.ID) > 0 {
		c.send(encodeResponse(req.ID, wire.SubscribeResult{Subscription: s.id, LastSeq: c.s.broker.last.Load()}, nil), false)
	}
	err := c.s.store.Scan(context.Background(), store.Filter{Session: p.Session, Run: p.Run, Env: p.Env, Types: p.Types, AfterSeq: from},
		func(ev *gym.Event) error {
			enc, err := publicJSON(ev)
			if err != nil {
				return err
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			if s.ended || !s.deliverLocked(ev, enc) {
				return errEnded
			}
			return nil
		})
	s.mu.Lock()
	if err != nil && err != errEnded {
		s.endLocked("store_error")
	}
	if !s.ended {
		for _, ev := range s.buf {
			enc, _ := publicJSON(ev)
			if !s.deliverLocked(ev, enc) {
				break
			}
		}
		s.buf = nil
		s.live = true
	}
	s.mu.Unlock()
	return nil
}

var errEnded = fmt.Errorf("subscription ended")

var eventTypes = []gym.EventType{gym.EventSessionCreated, gym.EventReset, gym.EventStep, gym.EventRefused, gym.EventReward, gym.EventSessionClosed}

func eventTypeNames() []string {
	out := make([]string, len(eventTypes))
	for i, t := range eventTypes {
		out[i] = string(t)
	}
	return out
}

func (c *conn) unsubscribe(id string) *wire.Error {
	c.mu.Lock()
	s, ok := c.subs[id]
	ss, isSamples := c.samples[id]
	c.mu.Unlock()
	if isSamples {
		ss.end("unsubscribed", true)
		return nil
	}
	if !ok {
		return wire.Errorf(wire.CodeUnknownSub, "unknown subscription %q on this connection", id)
	}
	s.mu.Lock()
	s.endLocked("unsubscribed")
	s.mu.Unlock()
	return nil
}

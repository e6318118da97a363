package client

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/nextstate-rl/nextstate/wire"
)

// conn is one WebSocket connection. Its one goroutine of its own is the
// reader; a writer runs only while the outbound queue has requests (kick
// starts it, and it exits once the queue is empty), the keepalive pings
// come from a timer, and the supervisor that reconnects starts when the
// connection fails. Many idle connections (an agent per session, 10,000
// in one process) are then one parked goroutine each, which is what the
// garbage collector scans and shrinks every cycle. A Client has at most
// one conn at a time; after a drop the supervisor waits for the reader and
// any writer before it looks at the calls that were on it.
type conn struct {
	c    *Client
	ws   *websocket.Conn
	out  chan *call // the bounded outbound queue
	done chan struct{}
	once sync.Once
	err  error          // why it ended; read after done is closed
	wg   sync.WaitGroup // the reader and the writer

	mu      sync.Mutex
	writing bool        // a writer is draining out
	failed  bool        // fail was called: no writer may start
	ping    *time.Timer // the next keepalive ping; nil without keepalive
}

// fail ends the connection once, with a reason, and starts the supervisor
// (supervise) that settles its calls and reconnects. Closing the socket
// unblocks the reader; a writer sees done.
func (cn *conn) fail(err error) {
	cn.once.Do(func() {
		cn.mu.Lock()
		cn.failed = true
		if cn.ping != nil {
			cn.ping.Stop()
		}
		cn.mu.Unlock()
		cn.err = err
		close(cn.done)
		cn.ws.Close()
		// The reader, counted in c.wg, is running until it sees the
		// closed socket, so this Add never races Close's Wait from zero.
		cn.c.wg.Add(1)
		go cn.c.supervise(cn)
	})
}

// kick makes sure a writer drains the outbound queue: it starts one unless
// one is running. Whoever puts a call on cn.out kicks after the put, so a
// queued call always has a writer coming.
func (cn *conn) kick() {
	cn.mu.Lock()
	if cn.writing || cn.failed {
		cn.mu.Unlock()
		return
	}
	cn.writing = true
	// Not failed: the reader has not returned, so the counts are above zero.
	cn.wg.Add(1)
	cn.c.wg.Add(1)
	cn.mu.Unlock()
	go cn.c.writeLoop(cn)
}

// inbound is any message the server sends: a response (id with result or
// error) or a notification (method and params).
type inbound struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *wire.Error     `json:"error"`
}

// writeLoop sends the queued requests in order and returns once the queue
// is empty (or the connection failed).
func (c *Client) writeLoop(cn *conn) {
	defer c.wg.Done()
	defer cn.wg.Done()
	for {
		select {
		case cl := <-cn.out:
			if cl.abandoned.Load() {
				continue // its caller gave up before it went out
			}
			cl.wrote.Store(cn)
			cn.ws.SetWriteDeadline(time.Now().Add(c.opts.writeLimit))
			if err := cn.ws.WriteMessage(websocket.TextMessage, cl.frame); err != nil {
				cn.fail(fmt.Errorf("writing: %w", err))
				return
			}
			continue
		case <-cn.done:
			return
		default:
		}
		// Empty: stop, unless a call was put since (its kick saw writing).
		cn.mu.Lock()
		if len(cn.out) == 0 || cn.failed {
			cn.writing = false
			cn.mu.Unlock()
			return
		}
		cn.mu.Unlock()
	}
}

// keepalive pings the server every c.opts.keepalive (gorilla lets a
// control frame be written beside a writer); the reader's deadline, which
// any message or pong extends, notices a server that is gone.
func (c *Client) keepalive(cn *conn) {
	if err := cn.ws.WriteControl(websocket.PingMessage, nil, time.Now().Add(c.opts.writeLimit)); err != nil {
		cn.fail(fmt.Errorf("pinging: %w", err))
		return
	}
	cn.mu.Lock()
	if !cn.failed {
		cn.ping.Reset(c.opts.keepalive)
	}
	cn.mu.Unlock()
}

// readLoop reads messages and hands them to dispatch; it never waits on a
// write or on a slow consumer.
func (c *Client) readLoop(cn *conn) {
	defer c.wg.Done()
	defer cn.wg.Done()
	ws := cn.ws
	extend := func() {}
	if ka := c.opts.keepalive; ka > 0 {
		extend = func() { ws.SetReadDeadline(time.Now().Add(3 * ka)) }
	}
	extend()
	ws.SetPongHandler(func(string) error { extend(); return nil })
	ws.SetPingHandler(func(data string) error {
		extend()
		// As gorilla's default handler does: answer, and let a failed
		// pong show up as a failed read or write later.
		err := ws.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(c.opts.writeLimit))
		var ne net.Error
		if err == nil || errors.Is(err, websocket.ErrCloseSent) || errors.As(err, &ne) && ne.Timeout() {
			return nil
		}
		return err
	})
	// One buffer for every message: dispatch copies what it keeps. One
	// grown past 64 KiB (a large observation) is not kept for the next.
	var buf bytes.Buffer
	for {
		if buf.Cap() > 64<<10 {
			buf = bytes.Buffer{}
		}
		buf.Reset()
		_, r, err := ws.NextReader()
		if err == nil {
			_, err = buf.ReadFrom(r)
		}
		data := buf.Bytes()
		if err != nil {
			if errors.Is(err, websocket.ErrReadLimit) {
				c.log.Error("nextstate client: a message from the server is over the read limit; raise WithMaxFrame",
					"limit", c.opts.maxFrame*readFactor)
			}
			cn.fail(fmt.Errorf("reading: %w", err))
			return
		}
		extend()
		if !c.dispatch(cn, data) {
			return
		}
	}
}

// dispatch routes one message. It reports false when the reader must stop.
func (c *Client) dispatch(cn *conn, data []byte) bool {
	var m inbound
	if err := json.Unmarshal(data, &m); err != nil {
		c.log.Warn("nextstate client: unreadable message from the server", "err", err)
		return true
	}
	if m.Method != "" {
		c.notify(cn, m.Method, m.Params)
		return true
	}
	id, err := strconv.ParseUint(string(m.ID), 10, 64)
	if err != nil {
		// An id of null: the server could not read one of our frames.
		c.log.Warn("nextstate client: server error for no request", "id", string(m.ID), "err", m.Error)
		return true
	}
	c.mu.Lock()
	cl := c.pending[id]
	if cl == nil || cl.conn != cn {
		c.mu.Unlock()
		return true // its caller gave up
	}
	if c.dropResponse != "" && c.dropResponse == cl.method {
		// Test hook: lose this answer with the connection.
		c.dropResponse = ""
		c.mu.Unlock()
		cn.fail(errors.New("test hook dropped the response"))
		return false
	}
	delete(c.pending, id)
	c.mu.Unlock()
	if m.Error != nil {
		cl.finish(nil, m.Error.Native())
		return true
	}
	if cl.onResult != nil {
		cl.onResult(cn, m.Result)
	}
	cl.finish(m.Result, nil)
	return true
}

// notify routes a server-pushed notification to its subscription.
func (c *Client) notify(cn *conn, method string, params json.RawMessage) {
	switch method {
	case wire.NotifyEvent:
		var n wire.EventNotification
		if err := json.Unmarshal(params, &n); err != nil || n.Event == nil {
			c.log.Warn("nextstate client: unreadable event notification", "err", err)
			return
		}
		c.mu.Lock()
		s, _ := c.subByID[n.Subscription].(*Subscription)
		c.mu.Unlock()
		if s != nil {
			s.push(cn, n.Subscription, n.Event.Seq, n.Event)
		}
	case wire.NotifySample:
		var n wire.SampleNotification
		if err := json.Unmarshal(params, &n); err != nil || len(n.Sample) == 0 {
			c.log.Warn("nextstate client: unreadable samples.sample notification", "err", err)
			return
		}
		c.mu.Lock()
		s, _ := c.subByID[n.Subscription].(*SampleSubscription)
		c.mu.Unlock()
		if s != nil {
			s.push(cn, n.Subscription, n.Offset, wire.StoredSample{Offset: n.Offset, Sample: n.Sample})
		}
	case wire.NotifySubscriptionEnded:
		var n wire.EndedNotification
		if err := json.Unmarshal(params, &n); err != nil {
			c.log.Warn("nextstate client: unreadable events.ended notification", "err", err)
			return
		}
		c.mu.Lock()
		s := c.subByID[n.Subscription]
		delete(c.subByID, n.Subscription)
		c.mu.Unlock()
		if s != nil {
			s.ended(cn, n)
		}
	default:
		c.log.Debug("nextstate client: unknown notification", "method", method)
	}
}

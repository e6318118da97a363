package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/nextstate-rl/nextstate/gym"
	"github.com/nextstate-rl/nextstate/wire"
)

// Why a connection closed, for logs and metrics.
const (
	closeClient       = "client"        // the peer closed or went away
	closeReadError    = "read_error"    // a broken or timed-out read (no pong)
	closeWriteError   = "write_error"   // a write failed or timed out
	closeSlowConsumer = "slow_consumer" // responses piled up past OutboundBytes
	closeShutdown     = "shutdown"      // the server is shutting down
)

// newUpgrader makes the server's WebSocket upgrader. Small read buffers,
// and write buffers shared through a pool and held only while a message is
// written, keep 10,000 idle connections cheap: memory per connection drives
// the garbage collector's work.
func newUpgrader() *websocket.Upgrader {
	return &websocket.Upgrader{
		ReadBufferSize:  2 << 10,
		WriteBufferSize: 4 << 10,
		WriteBufferPool: &sync.Pool{},
		Subprotocols:    []string{wire.Version},
		// Agents are programs, not pages: any origin may connect, and the
		// bearer token is what guards the server.
		CheckOrigin: func(*http.Request) bool { return true },
	}
}

// conn is one WebSocket connection. Its one goroutine of its own is the
// reader (readLoop); reading never waits on writing. Requests run on the
// server's shared workers (pool), those for the same session one after
// another in arrival order (a lane per session), so a slow step holds up
// only its own session. Responses are queued (send) and written by a flush
// the queue starts on a worker while it has messages (one flush at a time);
// pings come from a timer.
type conn struct {
	s  *Server
	ws *websocket.Conn

	mu       sync.Mutex
	queue    [][]byte // outbound messages, in order
	queued   int      // bytes in queue
	flushing bool     // a flush is running (or the socket failed: none may start)
	closed   bool
	reason   string
	lanes    map[string]*lane
	subs     map[string]*subscription
	samples  map[string]*sampleSub // samples streams (samplestream.go)
	nextSub  int
	items    []frameItem   // the reader's scratch for decodeFrame
	ping     *time.Timer   // the next keepalive ping
	space    chan struct{} // cap 1: a flush has emptied the queue
	gone     chan struct{} // closed when the connection is closed
}

// lane runs one session's requests in order.
type lane struct {
	pending []request
}

func (s *Server) serveWS(w http.ResponseWriter, r *http.Request) {
	if s.shutting.Load() {
		writeHTTPError(w, wire.FromError(gym.ErrDraining))
		return
	}
	ws, err := s.upgrader.Upgrade(w, r, nil)
	if err != nil {
		return // the upgrader has answered with an HTTP error
	}
	c := &conn{s: s, ws: ws, lanes: map[string]*lane{}, subs: map[string]*subscription{}, samples: map[string]*sampleSub{},
		space: make(chan struct{}, 1), gone: make(chan struct{})}
	s.mu.Lock()
	if s.shutting.Load() {
		s.mu.Unlock()
		ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseGoingAway, "shutting down"), time.Now().Add(time.Second))
		ws.Close()
		return
	}
	s.conns[c] = struct{}{}
	s.metrics.conns.Inc()
	c.mu.Lock() // keepalive reads c.ping under c.mu
	c.ping = time.AfterFunc(s.cfg.PingInterval, c.keepalive)
	c.mu.Unlock()
	// Started under s.mu, so that Shutdown, which lists the connections
	// under s.mu before it waits for s.work, never waits while it starts.
	s.goTracked(c.readLoop)
	s.mu.Unlock()
}

func (c *conn) readLoop() {
	cfg := &c.s.cfg
	// The hard cap: past it gorilla closes the connection. Frames between
	// MaxFrameBytes and the hard cap are read, dropped and answered with
	// CodeFrameTooLarge, and the connection carries on.
	c.ws.SetReadLimit(int64(cfg.MaxFrameBytes) * 16)
	c.ws.SetReadDeadline(time.Now().Add(cfg.PongTimeout))
	c.ws.SetPongHandler(func(string) error {
		return c.ws.SetReadDeadline(time.Now().Add(cfg.PongTimeout))
	})
	reason := closeClient
	defer func() { c.close(reason) }()
	buf := new(bytes.Buffer)
	for {
		_, r, err := c.ws.NextReader()
		if err != nil {
			if !websocket.IsCloseError(err, websocket.CloseNormalClosure, websocket.CloseGoingAway) && !errors.Is(err, net.ErrClosed) {
				reason = closeReadError
			}
			return
		}
		c.ws.SetReadDeadline(time.Now().Add(cfg.PongTimeout))
		buf.Reset()
		n, err := io.Copy(buf, io.LimitReader(r, int64(cfg.MaxFrameBytes)+1))
		if err != nil {
			reason = closeReadError
			return
		}
		if n > int64(cfg.MaxFrameBytes) {
			if _, err := io.Copy(io.Discard, r); err != nil {
				reason = closeReadError
				return
			}
			c.s.metrics.rpcError("", wire.CodeFrameTooLarge)
			c.reply(nil, nil, wire.Errorf(wire.CodeFrameTooLarge,
				"message larger than %d bytes: send smaller frames (large files go in as file parts below the limit)", cfg.MaxFrameBytes))
			continue
		}
		c.dispatch(buf.Bytes())
	}
}

// dispatch routes one frame's requests. data is only valid during the call
// (decodeFrame copies what the requests need). It runs on the reader
// goroutine.
// Once the server is shutting down, new requests are answered at once with
// CodeShuttingDown, so the drain waits only for those already in flight.
func (c *conn) dispatch(data []byte) {
	items, batch := decodeFrame(c.items[:0], data)
	if !batch {
		c.items = items // reused for the next frame: the item is copied below
	}
	if c.s.shutting.Load() {
		out := make([]json.RawMessage, 0, len(items))
		for _, it := range items {
			if len(it.req.ID) > 0 || it.err != nil {
				out = append(out, encodeResponse(it.req.ID, nil, wire.FromError(gym.ErrDraining)))
			}
		}
		switch {
		case batch && len(out) > 0:
			b, _ := json.Marshal(out)
			c.send(b, false)
		case len(out) == 1:
			c.send(out[0], false)
		}
		return
	}
	if batch {
		// A batch runs in order on one goroutine and is answered as one
		// array, as JSON-RPC 2.0 asks.
		c.s.requests.add()
		c.run(func() {
			defer c.s.requests.done()
			out := make([]json.RawMessage, 0, len(items))
			for _, it := range items {
				if msg := c.handle(it.req, it.err); msg != nil {
					out = append(out, msg)
				}
			}
			if len(out) > 0 {
				b, _ := json.Marshal(out)
				c.send(b, false)
			}
		})
		return
	}
	it := items[0]
	if it.err != nil {
		c.reply(it.req.ID, nil, it.err)
		return
	}
	key := laneKey(it.req)
	c.s.requests.add()
	if key == "" {
		c.run(func() {
			defer c.s.requests.done()
			if msg := c.handle(it.req, nil); msg != nil {
				c.send(msg, false)
			}
		})
		return
	}
	c.mu.Lock()
	if l, busy := c.lanes[key]; busy {
		l.pending = append(l.pending, it.req)
		c.mu.Unlock()
		return
	}
	l := &lane{}
	c.lanes[key] = l
	c.mu.Unlock()
	c.run(func() { c.runLane(key, l, it.req) })
}

// run hands f to one of the server's workers.
func (c *conn) run(f func()) { c.s.pool.run(f) }

// runLane answers req and then whatever queued behind it on the same lane.
// Each queued request was counted in s.requests when it arrived.
func (c *conn) runLane(key string, l *lane, req request) {
	for {
		if msg := c.handle(req, nil); msg != nil {
			c.send(msg, false)
		}
		c.s.requests.done()
		c.mu.Lock()
		if len(l.pending) == 0 {
			delete(c.lanes, key)
			c.mu.Unlock()
			return
		}
		req = l.pending[0]
		l.pending = l.pending[1:]
		c.mu.Unlock()
	}
}

// laneKey returns the session a request addresses, if any.
func laneKey(r request) string {
	if r.decoded {
		return r.step.Session
	}
	switch r.Method {
	case wire.MethodSessionStep, wire.MethodSessionReset, wire.MethodSessionClose:
	default:
		return ""
	}
	return sessionOf(r.Params)
}

// handle runs one request and returns its encoded response, or nil for a
// notification (a request without id).
func (c *conn) handle(req request, derr *wire.Error) []byte {
	if derr != nil {
		return encodeResponse(req.ID, nil, derr)
	}
	start := time.Now()
	var res any
	var werr *wire.Error
	func() {
		defer func() {
			if p := recover(); p != nil {
				c.s.log.Error("request handler panicked", "method", req.Method, "panic", p)
				werr = wire.Errorf(wire.CodeInternal, "internal error in %s: %v", req.Method, p)
			}
		}()
		if req.Method == wire.MethodEventsSubscribe {
			if werr = c.subscribeReq(req.Request); werr == nil {
				res = answered
			}
			return
		}
		// Requests are not cancelled when their connection drops: a step
		// that started finishes and is recorded, and the client resumes.
		res, werr = c.s.answer(context.Background(), c, &req)
	}()
	c.s.metrics.request(req.Method, "ws", start, werr)
	if len(req.ID) == 0 || res == answered {
		return nil
	}
	return encodeResponse(req.ID, res, werr)
}

// reply sends a response now, from the reader goroutine.
func (c *conn) reply(id json.RawMessage, res any, werr *wire.Error) {
	c.send(encodeResponse(id, res, werr), false)
}

// encodeResponse writes {"jsonrpc":"2.0","id":...,"result"|"error":...}:
// the result (or error) is encoded into a pooled buffer and the response
// made in one allocation of its exact size, as it stays queued until
// written.
func encodeResponse(id json.RawMessage, res any, werr *wire.Error) []byte {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	e := responseEncoders.Get().(*responseEncoder)
	defer func() {
		if e.buf.Cap() <= maxPooledResponse { // a large observation's buffer is not kept
			responseEncoders.Put(e)
		}
	}()
	e.buf.Reset()
	key := `,"result":`
	if werr == nil {
		if err := e.enc.Encode(res); err != nil {
			e.buf.Reset()
			werr = wire.Errorf(wire.CodeInternal, "encoding the result: %v", err)
		}
	}
	if werr != nil {
		key = `,"error":`
		e.enc.Encode(werr) //nolint:errcheck // a wire.Error always encodes
	}
	body := bytes.TrimSuffix(e.buf.Bytes(), []byte("\n")) // Encode's newline
	const head = `{"jsonrpc":"2.0","id":`
	b := make([]byte, 0, len(head)+len(id)+len(key)+len(body)+1)
	b = append(b, head...)
	b = append(b, id...)
	b = append(b, key...)
	b = append(b, body...)
	return append(b, '}')
}

// responseEncoder is encodeResponse's buffer and the encoder writing to
// it; json.Encoder encodes as json.Marshal does, plus a newline.
type responseEncoder struct {
	buf bytes.Buffer
	enc *json.Encoder
}

const maxPooledResponse = 64 << 10

var responseEncoders = sync.Pool{New: func() any {
	e := &responseEncoder{}
	e.enc = json.NewEncoder(&e.buf)
	return e
}}

// send queues msg, and starts a flush unless one is running. A droppable
// message (a subscription event) is refused once the queue passes 3/4 of
// its cap; any message past the cap closes the connection as a slow
// consumer. It reports whether msg was queued.
func (c *conn) send(msg []byte, droppable bool) bool {
	limit := c.s.cfg.OutboundBytes
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return false
	}
	if droppable && c.queued+len(msg) > limit*3/4 {
		c.mu.Unlock()
		return false
	}
	if c.queued+len(msg) > limit {
		c.mu.Unlock()
		c.close(closeSlowConsumer)
		return false
	}
	c.queue = append(c.queue, msg)
	c.queued += len(msg)
	start := !c.flushing
	c.flushing = true
	c.mu.Unlock()
	if start {
		c.run(c.flush)
	}
	return true
}

// flush writes the queued messages, in order, until the queue is empty.
// Once the connection is closed it writes what is queued, then a close
// frame, and closes the socket, which ends the reader. A failed write
// closes the connection and leaves flushing set: nothing more is written.
func (c *conn) flush() {
	cfg := &c.s.cfg
	var batch [][]byte
	for {
		c.mu.Lock()
		batch, c.queue = c.queue, batch[:0]
		c.queued = 0
		closed, reason := c.closed, c.reason
		if len(batch) == 0 && !closed {
			c.flushing = false
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
		for _, msg := range batch {
			c.ws.SetWriteDeadline(time.Now().Add(cfg.WriteTimeout))
			if err := c.ws.WriteMessage(websocket.TextMessage, msg); err != nil {
				c.close(closeWriteError)
				c.ws.Close()
				return
			}
		}
		clear(batch)
		select {
		case c.space <- struct{}{}:
		default:
		}
		if closed {
			code, text := websocket.CloseNormalClosure, reason
			switch reason {
			case closeShutdown:
				code = websocket.CloseGoingAway
			case closeSlowConsumer:
				code = websocket.ClosePolicyViolation
			}
			c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, text), time.Now().Add(time.Second))
			c.ws.Close()
			return
		}
	}
}

// keepalive pings the peer, every PingInterval while the connection is
// open (gorilla lets a control frame be written beside a flush); the
// reader's deadline, which a pong extends, notices a peer that is gone.
func (c *conn) keepalive() {
	cfg := &c.s.cfg
	if err := c.ws.WriteControl(websocket.PingMessage, nil, time.Now().Add(cfg.WriteTimeout)); err != nil {
		c.close(closeWriteError)
		return
	}
	c.mu.Lock()
	if !c.closed {
		c.ping.Reset(cfg.PingInterval)
	}
	c.mu.Unlock()
}

// close marks the connection closed with a reason, once. A flush sends what
// is queued and a close frame, then closes the socket, which ends the
// reader. Sessions stay alive: a client reconnects and resumes them.
func (c *conn) close(reason string) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed, c.reason = true, reason
	c.ping.Stop()
	subs := c.subs
	c.subs = map[string]*subscription{}
	samples := c.samples
	c.samples = map[string]*sampleSub{}
	start := !c.flushing
	c.flushing = true
	c.mu.Unlock()
	close(c.gone)
	if start {
		c.run(c.flush) // writes what is queued, a close frame, and closes the socket
	}
	for _, sub := range subs {
		c.s.broker.remove(sub)
	}
	for _, ss := range samples {
		ss.end("", false)
	}
	c.s.mu.Lock()
	delete(c.s.conns, c)
	c.s.mu.Unlock()
	c.s.metrics.conns.Dec()
	c.s.metrics.connClosed(reason)
}

// queuedBytes reports the outbound backlog, for subscriptions.
func (c *conn) queuedBytes() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.queued
}

// answered marks a request whose handler has sent its response itself.
var answered = new(struct{ answered bool })

package client

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"github.com/nextstate-rl/nextstate/gym"
	"github.com/nextstate-rl/nextstate/wire"
)

// readFactor is how much larger than the request cap a message from the
// server may be.
const readFactor = 16

// Path is where a server serves its WebSocket endpoint; Dial appends it to
// a URL that has no path.
const Path = "/v1/ws"

// Client is a connection to a nextstate server that survives drops. It is
// safe for concurrent use: calls from many goroutines are multiplexed over
// one WebSocket. Close it when done.
type Client struct {
	url    string
	opts   options
	policy ReconnectPolicy
	dialer websocket.Dialer
	log    *slog.Logger

	ids atomic.Uint64 // request ids

	// life ends when Close is called; it bounds the client's own
	// background work (redials, resubscriptions), never a caller's call.
	life context.Context
	stop context.CancelFunc
	quit chan struct{} // closed by Close
	once sync.Once
	wg   sync.WaitGroup // every goroutine the client started

	mu           sync.Mutex
	closed       bool
	dead         error // set when the client gave up; every call fails with it
	conn         *conn // nil while redialing
	gen          int   // connections made so far
	pending      map[uint64]*call
	subs         map[stream]struct{}
	subByID      map[string]stream // server subscription id on conn -> subscription
	dropResponse string            // test hook: lose the next answer to this method
}

// call is one request waiting for its answer.
type call struct {
	id     uint64
	method string
	frame  []byte
	// retry says the request may be sent again after a reconnect, because
	// sending it twice is harmless (a read, a step with a step id).
	retry bool
	// pin, when set, is the only connection the request means anything on
	// (unsubscribing a subscription of that connection).
	pin *conn
	// notify makes it a JSON-RPC notification: sent once, never answered.
	notify bool
	// onResult runs on the reader goroutine before the caller sees the
	// result, so that state it sets is in place before the next message.
	onResult func(cn *conn, result json.RawMessage)

	conn      *conn                // where it was queued; nil while waiting for one. Guarded by Client.mu.
	wrote     atomic.Pointer[conn] // the connection it was last written to
	abandoned atomic.Bool          // its caller stopped waiting
	ch        chan callResult      // cap 1
}

type callResult struct {
	result json.RawMessage
	err    error
}

func (cl *call) finish(res json.RawMessage, err error) { cl.ch <- callResult{res, err} }

// writeBuffers is shared by every connection's writes.
var writeBuffers = &sync.Pool{}

// Dial connects to a nextstate server. rawURL is ws://, wss://, http:// or
// https:// host:port, optionally with a path; a URL with no path gets Path
// (/v1/ws). ctx bounds the dial only; it is not kept.
func Dial(ctx context.Context, rawURL string, opts ...Opt) (*Client, error) {
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	u, err := wsURL(rawURL)
	if err != nil {
		return nil, err
	}
	c := &Client{
		url: u, opts: o, policy: o.reconnect.withDefaults(), log: o.log,
		quit: make(chan struct{}), pending: map[uint64]*call{},
		subs: map[stream]struct{}{}, subByID: map[string]stream{},
	}
	if c.log == nil {
		c.log = slog.Default()
	}
	if o.dialer != nil {
		c.dialer = *o.dialer
	} else {
		c.dialer = *websocket.DefaultDialer
		c.dialer.HandshakeTimeout = 10 * time.Second
		// Connections share write buffers, held only while a message is
		// written: many idle connections then cost little memory.
		c.dialer.WriteBufferPool = writeBuffers
	}
	c.dialer.Subprotocols = []string{wire.Version}
	cn, _, err := c.dial(ctx)
	if err != nil {
		return nil, err
	}
	c.life, c.stop = context.WithCancel(context.Background())
	c.mu.Lock()
	c.start(cn)
	c.mu.Unlock()
	return c, nil
}

// wsURL turns what the user gave into the WebSocket URL to dial.
func wsURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("client: bad server URL %q: %w", raw, err)
	}
	switch u.Scheme {
	case "http":
		u.Scheme = "ws"
	case "https":
		u.Scheme = "wss"
	case "ws", "wss":
	default:
		return "", fmt.Errorf("client: bad server URL %q: want ws://, wss://, http:// or https://host:port", raw)
	}
	if u.Host == "" {
		return "", fmt.Errorf("client: bad server URL %q: no host", raw)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = Path
	}
	return u.String(), nil
}

// dial makes one connection. permanent says that trying again will not
// help (a wrong token, a wrong path, a server that does not speak our
// protocol).
func (c *Client) dial(ctx context.Context) (cn *conn, permanent bool, err error) {
	ws, resp, err := c.dialer.DialContext(ctx, c.url, c.opts.header.Clone())
	if err != nil {
		return nil, handshakeRefused(resp), handshakeError(c.url, resp, err)
	}
	if ws.Subprotocol() != wire.Version {
		ws.Close()
		return nil, true, fmt.Errorf("client: %s does not speak protocol %s (it chose subprotocol %q)", c.url, wire.Version, ws.Subprotocol())
	}
	ws.SetReadLimit(int64(c.opts.maxFrame) * readFactor)
	return &conn{c: c, ws: ws, out: make(chan *call, c.opts.queueLen), done: make(chan struct{})}, false, nil
}

func handshakeRefused(resp *http.Response) bool {
	if resp == nil {
		return false
	}
	s := resp.StatusCode
	return s >= 400 && s < 500 && s != http.StatusRequestTimeout && s != http.StatusTooManyRequests
}

// handshakeError maps a refused handshake to the server's error, which the
// server writes as {"error": {...}} with the code's HTTP status.
func handshakeError(u string, resp *http.Response, err error) error {
	if resp == nil {
		return fmt.Errorf("client: dialing %s: %w", u, err)
	}
	var body struct {
		Error *wire.Error `json:"error"`
	}
	if resp.Body != nil {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		if json.Unmarshal(b, &body) == nil && body.Error != nil {
			return fmt.Errorf("client: dialing %s: %w", u, body.Error.Native())
		}
	}
	return fmt.Errorf("client: dialing %s: %s: %w", u, resp.Status, err)
}

// start makes cn the current connection, starts its reader and arms its
// keepalive. c.mu is held.
func (c *Client) start(cn *conn) {
	c.conn = cn
	c.gen++
	c.wg.Add(1)
	cn.wg.Add(1)
	go c.readLoop(cn)
	if ka := c.opts.keepalive; ka > 0 {
		cn.mu.Lock() // keepalive reads cn.ping under cn.mu
		cn.ping = time.AfterFunc(ka, func() { c.keepalive(cn) })
		cn.mu.Unlock()
	}
}

// supervise runs once a connection has failed (conn.fail starts it): it
// waits for the connection's reader and writer, settles the calls that
// were on it, and redials. The next connection's failure starts the next
// supervisor. It returns at once when the client is closed.
func (c *Client) supervise(cn *conn) {
	defer c.wg.Done()
	cn.wg.Wait()
	select {
	case <-c.quit:
		return
	default:
	}
	if c.opts.noRetry {
		c.log.Warn("nextstate client: connection lost; reconnecting is off", "url", c.url, "err", cn.err)
		c.die(cn, cn.err, fmt.Errorf("client: connection to %s lost (%v) and reconnecting is off: %w", c.url, cn.err, ErrConnectionLost))
		return
	}
	c.log.Warn("nextstate client: connection lost; reconnecting", "url", c.url, "err", cn.err)
	c.connLost(cn)
	if _, err := c.redial(); err != nil && !errors.Is(err, ErrClosed) {
		c.log.Error("nextstate client: giving up", "url", c.url, "err", err)
		c.die(nil, err, err)
	}
}

// connLost settles the calls that were on cn: those safe to send again, and
// those that never went out, wait for the next connection; the others fail
// with an outcome-unknown error. Subscriptions resubscribe once connected.
func (c *Client) connLost(cn *conn) {
	c.mu.Lock()
	c.conn = nil
	for id, cl := range c.pending {
		if cl.conn != cn {
			continue
		}
		cl.conn = nil
		written := cl.wrote.Load() == cn
		if cl.pin == cn || written && !cl.retry {
			delete(c.pending, id)
			cl.finish(nil, lostError(cl.method, written, cn.err))
		}
	}
	clear(c.subByID)
	subs := c.subList()
	c.mu.Unlock()
	for _, s := range subs {
		s.connLost()
	}
}

// redial dials with backoff until it connects, the policy gives up, or the
// client is closed. On success the new connection is current and the calls
// waiting for one are sent on it, in the order they were made.
func (c *Client) redial() (*conn, error) {
	var last error
	for attempt := 1; ; attempt++ {
		t := time.NewTimer(c.policy.backoff(attempt))
		select {
		case <-t.C:
		case <-c.quit:
			t.Stop()
			return nil, ErrClosed
		}
		ctx, cancel := context.WithTimeout(c.life, 30*time.Second)
		cn, permanent, err := c.dial(ctx)
		cancel()
		if err == nil {
			return c.resume(cn)
		}
		last = err
		c.log.Warn("nextstate client: redial failed", "url", c.url, "attempt", attempt, "err", err)
		if c.life.Err() != nil {
			return nil, ErrClosed
		}
		if permanent || c.policy.MaxAttempts > 0 && attempt >= c.policy.MaxAttempts {
			return nil, fmt.Errorf("client: gave up reconnecting to %s after %d attempts: %w (last: %w)", c.url, attempt, ErrConnectionLost, last)
		}
	}
}

// resume makes cn current and re-sends the calls waiting for a connection.
func (c *Client) resume(cn *conn) (*conn, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		cn.ws.Close()
		return nil, ErrClosed
	}
	c.start(cn)
	var resend []*call
	for _, cl := range c.pending {
		if cl.conn == nil {
			cl.conn = cn
			resend = append(resend, cl)
		}
	}
	subs := c.subList()
	c.mu.Unlock()
	c.log.Info("nextstate client: reconnected", "url", c.url, "resending", len(resend))
	slices.SortFunc(resend, func(a, b *call) int { return cmp.Compare(a.id, b.id) })
send:
	for _, cl := range resend {
		select {
		case cn.out <- cl:
			cn.kick()
		case <-cn.done:
			break send // the next round settles the rest
		case <-c.quit:
			break send
		}
	}
	for _, s := range subs {
		s.poke()
	}
	return cn, nil
}

// die fails the calls in flight with cause and every later call with err:
// the client has given up. cn, when not nil, is the connection the calls
// were on, to tell sent from unsent.
func (c *Client) die(cn *conn, cause, err error) {
	c.mu.Lock()
	c.dead = err
	c.conn = nil
	for id, cl := range c.pending {
		delete(c.pending, id)
		written := cn != nil && cl.wrote.Load() == cn
		cl.finish(nil, lostError(cl.method, written, cause))
	}
	clear(c.subByID)
	subs := c.subList()
	c.mu.Unlock()
	for _, s := range subs {
		s.connLost()
	}
}

// stream is a subscription the client keeps going across reconnects: an
// events Subscription or a SampleSubscription.
type stream interface {
	// connLost forgets the server-side subscriptions of a lost connection.
	connLost()
	// poke wakes the stream's goroutine (a connection is back).
	poke()
	// ended handles events.ended for a server-side subscription on cn.
	ended(cn *conn, n wire.EndedNotification)
}

func (c *Client) subList() []stream {
	out := make([]stream, 0, len(c.subs))
	for s := range c.subs {
		out = append(out, s)
	}
	return out
}

// Close closes the connection and waits for every goroutine the client
// started. Calls in flight fail with ErrClosed and subscriptions end with
// it. Sessions on the server live on (until their idle timeout); close
// them first if they are done. Close is idempotent.
func (c *Client) Close() error {
	c.once.Do(func() {
		c.mu.Lock()
		c.closed = true
		cn := c.conn
		c.mu.Unlock()
		c.stop()
		close(c.quit)
		if cn != nil {
			cn.ws.WriteControl(websocket.CloseMessage,
				websocket.FormatCloseMessage(websocket.CloseNormalClosure, "client closed"), time.Now().Add(time.Second))
			cn.fail(ErrClosed)
		}
		c.wg.Wait()
		c.mu.Lock()
		for id, cl := range c.pending {
			delete(c.pending, id)
			cl.finish(nil, ErrClosed)
		}
		c.mu.Unlock()
	})
	return nil
}

// call sends a request and decodes its result into out (when not nil).
func (c *Client) call(ctx context.Context, method string, params, out any, retry bool) error {
	return c.do(ctx, &call{method: method, retry: retry}, params, out)
}

func (c *Client) do(ctx context.Context, cl *call, params, out any) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("client: %s: %w", cl.method, err)
	}
	if !cl.notify {
		cl.id = c.ids.Add(1)
	}
	frame, err := encodeRequest(cl.id, cl.method, params)
	if err != nil {
		return err
	}
	if len(frame) > c.opts.maxFrame {
		return fmt.Errorf("client: %s: request of %d bytes is over the %d-byte frame limit: %w",
			cl.method, len(frame), c.opts.maxFrame, gym.ErrBadRequest)
	}
	cl.frame = frame
	cl.ch = make(chan callResult, 1)

	c.mu.Lock()
	switch {
	case c.closed:
		c.mu.Unlock()
		return fmt.Errorf("client: %s: %w", cl.method, ErrClosed)
	case c.dead != nil:
		c.mu.Unlock()
		return fmt.Errorf("client: %s: %w", cl.method, c.dead)
	case cl.pin != nil && cl.pin != c.conn:
		c.mu.Unlock()
		return fmt.Errorf("client: %s: the connection it was for is gone: %w", cl.method, ErrConnectionLost)
	}
	cn := c.conn
	if cl.notify {
		c.mu.Unlock()
		if cn == nil {
			return fmt.Errorf("client: %s: not connected: %w", cl.method, ErrConnectionLost)
		}
		select {
		case cn.out <- cl:
			cn.kick()
			return nil
		case <-cn.done:
			return fmt.Errorf("client: %s: %w", cl.method, ErrConnectionLost)
		case <-ctx.Done():
			return fmt.Errorf("client: %s: %w", cl.method, ctx.Err())
		case <-c.quit:
			return fmt.Errorf("client: %s: %w", cl.method, ErrClosed)
		}
	}
	c.pending[cl.id] = cl
	cl.conn = cn
	c.mu.Unlock()

	if cn != nil {
		select {
		case cn.out <- cl:
			cn.kick()
		case <-cn.done: // the supervisor re-sends or fails it
		case <-ctx.Done():
			c.abandon(cl)
			return fmt.Errorf("client: %s: %w", cl.method, ctx.Err())
		case <-c.quit:
			c.abandon(cl)
			return fmt.Errorf("client: %s: %w", cl.method, ErrClosed)
		}
	}
	var r callResult
	select {
	case r = <-cl.ch:
	case <-ctx.Done():
		if !c.abandon(cl) {
			r = <-cl.ch // answered just now: take the answer
			break
		}
		return fmt.Errorf("client: %s: %w", cl.method, ctx.Err())
	case <-c.quit:
		c.abandon(cl)
		return fmt.Errorf("client: %s: %w", cl.method, ErrClosed)
	}
	if r.err != nil {
		return r.err
	}
	if out != nil {
		if err := json.Unmarshal(r.result, out); err != nil {
			return fmt.Errorf("client: %s: decoding the result: %w", cl.method, err)
		}
	}
	return nil
}

// encodeRequest writes a JSON-RPC 2.0 request; id 0 makes it a
// notification, which the server runs without answering.
func encodeRequest(id uint64, method string, params any) ([]byte, error) {
	p, err := json.Marshal(params)
	if err != nil {
		return nil, fmt.Errorf("client: %s: encoding params: %w", method, err)
	}
	b := make([]byte, 0, len(p)+len(method)+48)
	b = append(b, `{"jsonrpc":"2.0",`...)
	if id != 0 {
		b = append(b, `"id":`...)
		b = strconv.AppendUint(b, id, 10)
		b = append(b, ',')
	}
	b = append(b, `"method":`...)
	b = strconv.AppendQuote(b, method)
	b = append(b, `,"params":`...)
	b = append(b, p...)
	return append(b, '}'), nil
}

// abandon forgets a call whose caller stopped waiting. It reports false
// when the call had already been settled, so its result is on cl.ch.
func (c *Client) abandon(cl *call) bool {
	cl.abandoned.Store(true)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pending[cl.id] != cl {
		return false
	}
	delete(c.pending, cl.id)
	return true
}

// ServerInfo returns the server's name, version, protocol, kinds and load.
func (c *Client) ServerInfo(ctx context.Context) (wire.ServerInfo, error) {
	var res wire.ServerInfo
	err := c.call(ctx, wire.MethodServerInfo, struct{}{}, &res, true)
	return res, err
}

// Envs lists the env kinds the server has.
func (c *Client) Envs(ctx context.Context) ([]wire.EnvSummary, error) {
	var res wire.EnvListResult
	err := c.call(ctx, wire.MethodEnvList, struct{}{}, &res, true)
	return res.Envs, err
}

// Describe returns an env kind's spec (its action and observation schemas,
// limits and tasks) and the schema of every part type.
func (c *Client) Describe(ctx context.Context, env string) (wire.EnvDescribeResult, error) {
	var res wire.EnvDescribeResult
	err := c.call(ctx, wire.MethodEnvDescribe, wire.EnvDescribeParams{Env: env}, &res, true)
	return res, err
}

// Tasks lists the server's tasks of one kind ("" for all) in one split (""
// for all), without their verifier inputs.
func (c *Client) Tasks(ctx context.Context, env, split string) ([]gym.Task, error) {
	var res wire.TaskListResult
	err := c.call(ctx, wire.MethodTaskList, wire.TaskListParams{Env: env, Split: split}, &res, true)
	return res.Tasks, err
}

// Create starts a session and its first episode. It is never sent twice: if
// the connection drops after the request went out, Create fails with an
// error wrapping ErrConnectionLost, as the session may or may not exist.
func (c *Client) Create(ctx context.Context, req gym.CreateRequest) (*Session, gym.ResetResult, error) {
	var res gym.ResetResult
	if err := c.call(ctx, wire.MethodSessionCreate, req, &res, false); err != nil {
		return nil, res, err
	}
	s := c.Attach(res.Session)
	s.observe(res.Seq)
	return s, res, nil
}

// Attach returns a Session for an existing session id, one this client or
// another created. It sends nothing; use Resume to catch up on its events.
func (c *Client) Attach(id string) *Session {
	return &Session{c: c, id: id, prefix: id + "-" + nonce() + "-"}
}

// AddReward records a reward for a recorded step that arrived after it (a
// judge's vote, a late verifier) and returns the reward event's seq. It is
// never sent twice: a lost answer is an error wrapping ErrConnectionLost.
func (c *Client) AddReward(ctx context.Context, p wire.RewardParams) (int64, error) {
	var res wire.RewardResult
	err := c.call(ctx, wire.MethodRewardAdd, p, &res, false)
	return res.Seq, err
}

// isDead reports whether the client gave up or was closed.
func (c *Client) isDead() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed || c.dead != nil
}

package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/nextstate-rl/nextstate/gym"
	_ "github.com/nextstate-rl/nextstate/gym/testenvs" // guess-v1, echo-v1
	"github.com/nextstate-rl/nextstate/wire"
)

// waitTimeout bounds every wait in these tests: generous, so that a loaded
// machine or the race detector does not fail them, yet a hang fails fast.
const waitTimeout = 20 * time.Second

// testServer is a real Server listening on 127.0.0.1:0 for one test.
type testServer struct {
	*Server
	tb    testing.TB
	dir   string
	base  string // http://127.0.0.1:port
	ws    string // ws://127.0.0.1:port/v1/ws
	token string
	hc    *http.Client
}

// startServer starts a server with a store in a temp dir and a 64 KiB frame
// cap, applies opts to its Config, and waits until /healthz answers. Cleanup
// shuts it down and checks that the goroutines it and the test started have
// returned.
func startServer(tb testing.TB, opts ...func(*Config)) *testServer {
	tb.Helper()
	baseline := runtime.NumGoroutine()
	cfg := Config{
		DataDir:       tb.TempDir(),
		MaxFrameBytes: 64 << 10,
		Logger:        slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	for _, o := range opts {
		o(&cfg)
	}
	srv, err := New(cfg)
	if err != nil {
		tb.Fatalf("New: %v", err)
	}
	ln, err := srv.Listen("127.0.0.1:0")
	if err != nil {
		srv.Shutdown(context.Background())
		tb.Fatalf("Listen: %v", err)
	}
	ts := &testServer{Server: srv, tb: tb, dir: cfg.DataDir, token: cfg.Token,
		base: "http://" + ln.Addr().String(), ws: "ws://" + ln.Addr().String() + "/v1/ws",
		hc: &http.Client{Transport: &http.Transport{}, Timeout: waitTimeout}}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			tb.Errorf("Shutdown: %v", err)
		}
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			tb.Errorf("Serve returned %v, want http.ErrServerClosed", err)
		}
		ts.hc.CloseIdleConnections()
		checkGoroutines(tb, baseline)
	})
	waitFor(tb, "the server to answer /healthz", func() bool {
		resp, err := ts.hc.Get(ts.base + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return ts
}

// waitFor polls cond until it holds, failing the test after waitTimeout.
func waitFor(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out after %s waiting for %s", waitTimeout, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// checkGoroutines waits until no more goroutines run than at baseline, and
// fails with every goroutine's stack if that does not happen in time.
func checkGoroutines(tb testing.TB, baseline int) {
	tb.Helper()
	deadline := time.Now().Add(waitTimeout)
	for runtime.NumGoroutine() > baseline {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			tb.Errorf("%d goroutines still running, %d before the server started:\n%s",
				runtime.NumGoroutine(), baseline, buf)
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// do sends an HTTP request with the server's token, if it has one, and
// returns the status, the headers and the body.
func (ts *testServer) do(method, path string, body any) (int, http.Header, []byte) {
	ts.tb.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		r = bytes.NewReader(b)
	case string:
		r = strings.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			ts.tb.Fatal(err)
		}
		r = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, ts.base+path, r)
	if err != nil {
		ts.tb.Fatal(err)
	}
	if ts.token != "" {
		req.Header.Set("Authorization", "Bearer "+ts.token)
	}
	resp, err := ts.hc.Do(req)
	if err != nil {
		ts.tb.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		ts.tb.Fatalf("%s %s: reading the body: %v", method, path, err)
	}
	return resp.StatusCode, resp.Header, out
}

// rpcMsg is any message the server sends: a response, a notification, or
// (Batch set) the array answering a batch.
type rpcMsg struct {
	Raw    []byte          `json:"-"`
	Batch  []*rpcMsg       `json:"-"`
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *wire.Error     `json:"error"`
}

func (m *rpcMsg) String() string { return string(m.Raw) }

// event returns an events.event notification's params, or nil.
func (m *rpcMsg) event() *wire.EventNotification {
	if m.Method != wire.NotifyEvent {
		return nil
	}
	var n wire.EventNotification
	if err := json.Unmarshal(m.Params, &n); err != nil {
		return nil
	}
	return &n
}

// ended returns an events.ended notification's params, or nil.
func (m *rpcMsg) ended() *wire.EndedNotification {
	if m.Method != wire.NotifySubscriptionEnded {
		return nil
	}
	var n wire.EndedNotification
	if err := json.Unmarshal(m.Params, &n); err != nil {
		return nil
	}
	return &n
}

func parseMsg(b []byte) (*rpcMsg, error) {
	m := &rpcMsg{Raw: b}
	if t := bytes.TrimSpace(b); len(t) > 0 && t[0] == '[' {
		var raws []json.RawMessage
		if err := json.Unmarshal(t, &raws); err != nil {
			return nil, err
		}
		for _, r := range raws {
			e, err := parseMsg(r)
			if err != nil {
				return nil, err
			}
			m.Batch = append(m.Batch, e)
		}
		return m, nil
	}
	if err := json.Unmarshal(b, m); err != nil {
		return nil, err
	}
	return m, nil
}

// wsClient is a raw gorilla WebSocket JSON-RPC client for tests. A reader
// goroutine puts every message into an inbox that the test takes from. Its
// methods that fail the test do so through tb; a subtest takes its own view
// with as(t), and other goroutines use the try methods, which fail nothing.
type wsClient struct {
	tb testing.TB
	*wsConn
}

// wsConn is the connection state that every view of a wsClient shares.
type wsConn struct {
	ws *websocket.Conn
	id atomic.Int64

	wmu    sync.Mutex
	mu     sync.Mutex
	inbox  []*rpcMsg
	notify chan struct{}
	done   chan struct{} // closed when the reader ends
	err    error         // why the reader ended
}

// as returns a view of c that fails tb.
func (c *wsClient) as(tb testing.TB) *wsClient { return &wsClient{tb: tb, wsConn: c.wsConn} }

// dial opens a connection to ts, with its token, and closes it at Cleanup.
func (ts *testServer) dial() *wsClient {
	ts.tb.Helper()
	h := http.Header{}
	if ts.token != "" {
		h.Set("Authorization", "Bearer "+ts.token)
	}
	return dialWS(ts.tb, ts.ws, h)
}

func dialWS(tb testing.TB, url string, h http.Header) *wsClient {
	tb.Helper()
	d := websocket.Dialer{HandshakeTimeout: waitTimeout, Subprotocols: []string{wire.Version}}
	ws, resp, err := d.Dial(url, h)
	if err != nil {
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		tb.Fatalf("dialing %s: %v (HTTP %d)", url, err, status)
	}
	c := &wsClient{tb: tb, wsConn: &wsConn{ws: ws, notify: make(chan struct{}, 1), done: make(chan struct{})}}
	go c.read()
	tb.Cleanup(c.close)
	return c
}

func (c *wsConn) read() {
	defer close(c.done)
	for {
		_, b, err := c.ws.ReadMessage()
		if err == nil {
			var m *rpcMsg
			if m, err = parseMsg(b); err != nil {
				err = fmt.Errorf("the server sent a message that is not JSON-RPC: %v: %s", err, b)
			} else {
				c.mu.Lock()
				c.inbox = append(c.inbox, m)
				c.mu.Unlock()
				select {
				case c.notify <- struct{}{}:
				default:
				}
				continue
			}
		}
		c.mu.Lock()
		c.err = err
		c.mu.Unlock()
		return
	}
}

// close closes the socket without a close frame and waits for the reader.
func (c *wsConn) close() {
	c.ws.Close()
	<-c.done
}

func (c *wsClient) sendRaw(b []byte) {
	c.tb.Helper()
	if err := c.trySendRaw(b); err != nil {
		c.tb.Fatalf("sending %.200s: %v", b, err)
	}
}

func (c *wsConn) trySendRaw(b []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.ws.SetWriteDeadline(time.Now().Add(waitTimeout))
	return c.ws.WriteMessage(websocket.TextMessage, b)
}

// request builds a request frame with a fresh numeric id and returns both.
func (c *wsConn) request(method string, params any) (string, []byte) {
	id := strconv.FormatInt(c.id.Add(1), 10)
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(id), "method": method, "params": params})
	if err != nil {
		panic(fmt.Sprintf("test bug: params %#v do not encode: %v", params, err))
	}
	return id, b
}

// trySend sends a request and returns its id.
func (c *wsConn) trySend(method string, params any) (string, error) {
	id, b := c.request(method, params)
	return id, c.trySendRaw(b)
}

// tryCall sends a request and waits for its response, failing nothing.
func (c *wsConn) tryCall(method string, params any) (*rpcMsg, error) {
	id, err := c.trySend(method, params)
	if err != nil {
		return nil, err
	}
	return c.tryTake(func(m *rpcMsg) bool { return string(m.ID) == id })
}

// send sends a request without waiting and returns its id.
func (c *wsClient) send(method string, params any) string {
	c.tb.Helper()
	id, b := c.request(method, params)
	c.sendRaw(b)
	return id
}

// take removes and returns the first message in the inbox that match
// accepts, waiting for it; it fails the test when none comes in time or
// the connection ends first.
func (c *wsClient) take(what string, match func(*rpcMsg) bool) *rpcMsg {
	c.tb.Helper()
	m, err := c.tryTake(match)
	if err != nil {
		c.tb.Fatalf("waiting for %s: %v", what, err)
	}
	return m
}

func (c *wsConn) tryTake(match func(*rpcMsg) bool) (*rpcMsg, error) {
	deadline := time.NewTimer(waitTimeout)
	defer deadline.Stop()
	for {
		c.mu.Lock()
		for i, m := range c.inbox {
			if match(m) {
				c.inbox = append(c.inbox[:i], c.inbox[i+1:]...)
				c.mu.Unlock()
				return m, nil
			}
		}
		err := c.err
		c.mu.Unlock()
		if err != nil {
			return nil, fmt.Errorf("connection ended: %w", err)
		}
		select {
		case <-c.notify:
		case <-c.done:
		case <-deadline.C:
			return nil, fmt.Errorf("nothing came in %s", waitTimeout)
		}
	}
}

// next takes the first message, whatever it is.
func (c *wsClient) next() *rpcMsg {
	c.tb.Helper()
	return c.take("a message", func(*rpcMsg) bool { return true })
}

// response takes the response with id.
func (c *wsClient) response(id string) *rpcMsg {
	c.tb.Helper()
	return c.take("the response to request "+id, func(m *rpcMsg) bool { return string(m.ID) == id })
}

// call sends a request and waits for its response.
func (c *wsClient) call(method string, params any) *rpcMsg {
	c.tb.Helper()
	return c.response(c.send(method, params))
}

// mustCall calls and decodes the result into out (if not nil), failing on
// an error response.
func (c *wsClient) mustCall(method string, params, out any) {
	c.tb.Helper()
	m := c.call(method, params)
	if m.Error != nil {
		c.tb.Fatalf("%s: error %d: %s", method, m.Error.Code, m.Error.Message)
	}
	if out != nil {
		if err := json.Unmarshal(m.Result, out); err != nil {
			c.tb.Fatalf("%s: decoding %s: %v", method, m.Result, err)
		}
	}
}

// callErr calls and returns the error, failing when there is none.
func (c *wsClient) callErr(method string, params any) *wire.Error {
	c.tb.Helper()
	m := c.call(method, params)
	if m.Error == nil {
		c.tb.Fatalf("%s(%v): got result %s, want an error", method, params, m.Result)
	}
	return m.Error
}

// create makes a session and returns its first observation.
func (c *wsClient) create(p gym.CreateRequest) gym.ResetResult {
	c.tb.Helper()
	var r gym.ResetResult
	c.mustCall(wire.MethodSessionCreate, p, &r)
	if r.Session == "" {
		c.tb.Fatalf("session.create answered no session id")
	}
	return r
}

// step steps a session with a text action.
func (c *wsClient) step(session, stepID, text string) gym.StepResult {
	c.tb.Helper()
	var r gym.StepResult
	c.mustCall(wire.MethodSessionStep, stepArgs(session, stepID, text), &r)
	return r
}

func stepArgs(session, stepID, text string) wire.StepParams {
	return wire.StepParams{Session: session, StepID: stepID, Action: gym.TextAction(text)}
}

// closedWith reports whether the connection has ended with a close frame
// of the given code.
func (c *wsClient) closedWith(code int) bool {
	c.tb.Helper()
	select {
	case <-c.done:
	case <-time.After(waitTimeout):
		c.tb.Fatalf("the connection did not end in %s", waitTimeout)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return websocket.IsCloseError(c.err, code)
}

// wantCode fails unless e has code and its message contains every of want.
func wantCode(tb testing.TB, e *wire.Error, code int, want ...string) {
	tb.Helper()
	if e == nil {
		tb.Fatalf("got no error, want code %d", code)
	}
	if e.Code != code {
		tb.Fatalf("got error %d %q, want code %d", e.Code, e.Message, code)
	}
	for _, w := range want {
		if !strings.Contains(e.Message, w) {
			tb.Errorf("error %d message %q does not say %q", code, e.Message, w)
		}
	}
}

func mustUnmarshal(tb testing.TB, b []byte, v any) {
	tb.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		tb.Fatalf("decoding %.300s: %v", b, err)
	}
}

func ptr[T any](v T) *T { return &v }

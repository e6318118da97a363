package client_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/nextstate-rl/nextstate/wire"
)

// fakeServer is a minimal JSON-RPC-over-WebSocket server for unit tests:
// each test says how to answer by setting handle, which runs on its own
// goroutine per request, so answers may come back in any order.
type fakeServer struct {
	t      *testing.T
	srv    *httptest.Server
	token  string
	handle func(fc *fakeConn, req wire.Request)

	dials  atomic.Int32
	pings  atomic.Int32 // keepalive pings received
	mu     sync.Mutex
	closed bool
	conns  []*fakeConn
	wg     sync.WaitGroup // handlers and the goroutines answering requests
}

// fakeConn is one accepted connection.
type fakeConn struct {
	ws  *websocket.Conn
	n   int // 1 for the first connection
	wmu sync.Mutex
}

func newFake(t *testing.T, handle func(fc *fakeConn, req wire.Request)) *fakeServer {
	t.Helper()
	f := &fakeServer{t: t, handle: handle}
	up := websocket.Upgrader{Subprotocols: []string{wire.Version}}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/ws" {
			http.NotFound(w, r)
			return
		}
		if f.token != "" && r.Header.Get("Authorization") != "Bearer "+f.token {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			json.NewEncoder(w).Encode(struct {
				Error *wire.Error `json:"error"`
			}{wire.Errorf(wire.CodeUnauthorized, "missing or wrong bearer token")})
			return
		}
		f.mu.Lock()
		if f.closed {
			f.mu.Unlock()
			return
		}
		f.wg.Add(1)
		f.mu.Unlock()
		defer f.wg.Done()
		ws, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		fc := &fakeConn{ws: ws, n: int(f.dials.Add(1))}
		ws.SetPingHandler(func(data string) error {
			f.pings.Add(1)
			return ws.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(time.Second))
		})
		f.mu.Lock()
		f.conns = append(f.conns, fc)
		if f.closed {
			ws.Close()
		}
		f.mu.Unlock()
		defer ws.Close()
		for {
			_, data, err := ws.ReadMessage()
			if err != nil {
				return
			}
			var req wire.Request
			if err := json.Unmarshal(data, &req); err != nil {
				t.Errorf("fake: unreadable frame %s: %v", data, err)
				return
			}
			f.wg.Add(1) // the handler's own Add is still held
			go func() {
				defer f.wg.Done()
				f.handle(fc, req)
			}()
		}
	}))
	t.Cleanup(f.stop)
	return f
}

// stop closes the listener and every connection, and waits for the
// handlers. It is idempotent.
func (f *fakeServer) stop() {
	f.mu.Lock()
	f.closed = true
	for _, fc := range f.conns {
		fc.ws.Close()
	}
	f.mu.Unlock()
	f.srv.Close()
	f.wg.Wait()
}

func (f *fakeServer) url() string { return f.srv.URL } // http://127.0.0.1:port

func (fc *fakeConn) send(v any) {
	b, _ := json.Marshal(v)
	fc.wmu.Lock()
	defer fc.wmu.Unlock()
	fc.ws.WriteMessage(websocket.TextMessage, b)
}

func (fc *fakeConn) reply(id json.RawMessage, result any) {
	r, _ := json.Marshal(result)
	fc.send(wire.Response{JSONRPC: "2.0", ID: id, Result: r})
}

func (fc *fakeConn) replyErr(id json.RawMessage, err error) {
	fc.send(wire.Response{JSONRPC: "2.0", ID: id, Error: wire.FromError(err)})
}

func (fc *fakeConn) notify(method string, params any) {
	fc.send(wire.Notification{JSONRPC: "2.0", Method: method, Params: params})
}

// drop breaks the connection without a close frame, as a network failure
// would.
func (fc *fakeConn) drop() { fc.ws.NetConn().Close() }

func decode[T any](t *testing.T, req wire.Request) T {
	var v T
	if err := json.Unmarshal(req.Params, &v); err != nil {
		t.Errorf("fake: %s params %s: %v", req.Method, req.Params, err)
	}
	return v
}

func decodeNoT[T any](req wire.Request) T {
	var v T
	json.Unmarshal(req.Params, &v)
	return v
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

package server

import (
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/nextstate-rl/nextstate/wire"
)

// dialRaw opens a bare WebSocket to ts, with no reader: what the test does
// with it is the test.
func dialRaw(t *testing.T, ts *testServer) *websocket.Conn {
	t.Helper()
	d := websocket.Dialer{Subprotocols: []string{wire.Version}}
	ws, _, err := d.Dial(ts.ws, http.Header{})
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { ws.Close() })
	return ws
}

// TestKeepalive: the server pings an open connection every PingInterval,
// for as long as the peer answers; a peer that answers no ping (it never
// reads) is dropped once PongTimeout has passed. PongTimeout is a hundred
// intervals, so that a loaded machine's stalls do not drop the peer that
// answers.
func TestKeepalive(t *testing.T) {
	ts := startServer(t, func(c *Config) {
		c.PingInterval = 20 * time.Millisecond
		c.PongTimeout = 2 * time.Second
	})
	live := dialRaw(t, ts)
	var pings atomic.Int32
	live.SetPingHandler(func(data string) error {
		pings.Add(1)
		return live.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(time.Second))
	})
	readErr := make(chan error, 1)
	go func() {
		for {
			if _, _, err := live.ReadMessage(); err != nil {
				readErr <- err
				return
			}
		}
	}()
	waitFor(t, "five pings", func() bool { return pings.Load() >= 5 })

	mute := dialRaw(t, ts) // never reads: its pongs are never sent
	waitFor(t, "two connections", func() bool { return ts.connCount() == 2 })
	waitFor(t, "the mute connection to be dropped", func() bool { return ts.connCount() == 1 })
	// The live one, dialed before the mute one, is still served past
	// PongTimeout.
	before := pings.Load()
	waitFor(t, "five more pings", func() bool { return pings.Load() >= before+5 })
	select {
	case err := <-readErr:
		t.Fatalf("the answering connection was closed: %v", err)
	default:
	}
	mute.Close()
}

func (ts *testServer) connCount() int {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return len(ts.conns)
}

package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"runtime"
	"testing"
	"time"

	"github.com/nextstate-rl/nextstate/client"
	_ "github.com/nextstate-rl/nextstate/gym/testenvs" // echo-v1
	"github.com/nextstate-rl/nextstate/server"
)

// *server.Server is what a Hub is mounted in.
var _ Server = (*server.Server)(nil)

// waitTimeout bounds every wait in these tests: generous, so that a loaded
// machine or the race detector does not fail them, yet a hang fails fast.
const waitTimeout = 20 * time.Second

// testServer is a real nextstate server with a Hub mounted, listening on
// 127.0.0.1:0 for one test.
type testServer struct {
	*server.Server
	hub   *Hub
	tb    testing.TB
	base  string // http://127.0.0.1:port
	token string
	hc    *http.Client
}

// startServer starts a server with a store in a temp dir and a 64 KiB frame
// cap and a Hub mounted as `nextstate serve` mounts it, applies opts to its
// Config, and waits until /healthz answers. Cleanup shuts it down and
// checks that the goroutines it and the test started have returned.
func startServer(tb testing.TB, opts ...func(*server.Config)) *testServer {
	tb.Helper()
	baseline := runtime.NumGoroutine()
	cfg := server.Config{
		DataDir:       tb.TempDir(),
		MaxFrameBytes: 64 << 10,
		Logger:        slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	for _, o := range opts {
		o(&cfg)
	}
	srv, err := server.New(cfg)
	if err != nil {
		tb.Fatalf("server.New: %v", err)
	}
	hub := New(srv, Config{MaxBodyBytes: cfg.MaxFrameBytes, SessionTimeout: cfg.Sessions.IdleTTL, Logger: cfg.Logger})
	srv.Mount([]string{Pattern}, hub, hub.Close)
	ln, err := srv.Listen("127.0.0.1:0")
	if err != nil {
		srv.Shutdown(context.Background())
		tb.Fatalf("Listen: %v", err)
	}
	ts := &testServer{Server: srv, hub: hub, tb: tb, token: cfg.Token, base: "http://" + ln.Addr().String(),
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
			tb.Errorf("%d goroutines still running, %d before:\n%s", runtime.NumGoroutine(), baseline, buf[:runtime.Stack(buf, true)])
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
	if body != nil {
		j, err := json.Marshal(body)
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

// dial connects the Go client over WebSocket, with the server's token;
// Cleanup closes it.
func (ts *testServer) dial() *client.Client {
	ts.tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	opts := []client.Opt{client.WithoutReconnect()}
	if ts.token != "" {
		opts = append(opts, client.WithToken(ts.token))
	}
	c, err := client.Dial(ctx, ts.base, opts...)
	if err != nil {
		ts.tb.Fatalf("dialing over WebSocket: %v", err)
	}
	ts.tb.Cleanup(func() { c.Close() })
	return c
}

func mustUnmarshal(tb testing.TB, b []byte, v any) {
	tb.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		tb.Fatalf("decoding %s: %v", b, err)
	}
}

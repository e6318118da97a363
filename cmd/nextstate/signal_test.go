package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nextstate-rl/nextstate/client"
	"github.com/nextstate-rl/nextstate/gym"
	"github.com/nextstate-rl/nextstate/store"
)

// TestMain lets the test binary stand in for the nextstate binary: with
// NEXTSTATE_TEST_MAIN set it runs the CLI on its arguments instead.
func TestMain(m *testing.M) {
	if os.Getenv("NEXTSTATE_TEST_MAIN") == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestServeDrainsOnSIGTERM runs `nextstate serve` as a process, steps a
// session, opens an MCP session on it (serve mounts package mcp), sends
// SIGTERM, and checks that the server exits cleanly with the step recorded
// and the session closed for the shutdown.
func TestServeDrainsOnSIGTERM(t *testing.T) {
	dir := t.TempDir()
	ready := filepath.Join(dir, "addr")
	cmd := exec.Command(os.Args[0], "serve", "--addr", "127.0.0.1:0", "--data", filepath.Join(dir, "data"),
		"--ready-file", ready, "--log-level", "warn")
	cmd.Env = append(os.Environ(), "NEXTSTATE_TEST_MAIN=1")
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { cmd.Process.Kill() })

	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var addr string
	if err := pollUntil(ctx, func() bool {
		b, err := os.ReadFile(ready)
		addr = strings.TrimSpace(string(b))
		return err == nil && addr != ""
	}); err != nil {
		t.Fatalf("the server never wrote its address: %v", err)
	}
	c, err := client.Dial(ctx, "ws://"+addr, client.WithoutReconnect())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, _, err := c.Create(ctx, gym.CreateRequest{TaskID: "echo-smoke", Run: "sigterm"})
	if err != nil {
		t.Fatal(err)
	}
	st, err := s.StepWithID(ctx, "before-term", gym.TextAction("hello"))
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/v1/sessions/"+s.ID()+"/mcp",
		strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Mcp-Session-Id") == "" || !strings.Contains(string(b), `"name":"nextstate"`) {
		t.Fatalf("MCP initialize on the session: HTTP %d %s, want an MCP session of nextstate's", resp.StatusCode, b)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("serve exited with %v after SIGTERM, want 0", err)
		}
	case <-ctx.Done():
		t.Fatal("serve did not exit after SIGTERM")
	}

	// The store is closed and unlocked: it opens for writing again.
	stor, err := store.Open(filepath.Join(dir, "data"), store.Options{})
	if err != nil {
		t.Fatalf("reopening the store: %v", err)
	}
	defer stor.Close()
	ev, ok, err := stor.StepEvent(ctx, s.ID(), "before-term")
	if err != nil || !ok || ev.Seq != st.Seq {
		t.Errorf("acknowledged step: %+v, %v, %v", ev, ok, err)
	}
	evs, err := stor.Events(ctx, store.Filter{Session: s.ID(), Types: []gym.EventType{gym.EventSessionClosed}})
	if err != nil || len(evs) != 1 || evs[0].Reason != gym.CloseShutdown {
		t.Errorf("session.closed events %+v (%v), want one with reason shutdown", evs, err)
	}
}

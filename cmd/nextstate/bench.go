package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
)

func newBench() *cobra.Command {
	c := &cobra.Command{Use: "bench", Short: "Measure nextstate"}
	c.AddCommand(newBenchWS(), newBenchModel(), newBenchTrain(), newBenchSandbox(), newBenchBFCL(), newBenchGUI())
	return c
}

// Percentiles of a latency sample, in milliseconds.
type Percentiles struct {
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p999"`
	Max  float64 `json:"max"`
}

func percentiles(lat [][]time.Duration) Percentiles {
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	if len(all) == 0 {
		return Percentiles{}
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	at := func(q float64) float64 {
		i := int(q * float64(len(all)-1))
		return float64(all[i].Microseconds()) / 1000
	}
	return Percentiles{P50: at(0.50), P90: at(0.90), P99: at(0.99), P999: at(0.999), Max: at(1)}
}

// errorClass shortens an error to its kind, for counting.
func errorClass(err error) string {
	s := err.Error()
	if i := strings.Index(s, "(code "); i >= 0 {
		if j := strings.IndexByte(s[i:], ')'); j > 0 {
			return s[i+1 : i+j]
		}
	}
	if len(s) > 80 {
		s = s[:80]
	}
	return s
}

// childServer is a `nextstate serve` started for a benchmark or the demo.
type childServer struct {
	cmd  *exec.Cmd
	dir  string
	url  string
	done chan error
}

// startChildServer runs this binary's serve command on a free loopback port
// with a temporary store, and waits until it answers.
func startChildServer(ctx context.Context, maxSessions int, profile string) (*childServer, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "nextstate-bench-")
	if err != nil {
		return nil, err
	}
	ready := filepath.Join(dir, "addr")
	cmd := exec.Command(exe, "serve", "--addr", "127.0.0.1:0", "--data", filepath.Join(dir, "data"),
		"--ready-file", ready, "--max-sessions", strconv.Itoa(max(maxSessions*2, 16384)), "--log-level", "warn")
	if profile != "" {
		cmd.Args = append(cmd.Args, "--cpu-profile", profile)
	}
	cmd.Stderr = os.Stderr
	// Its own process group, so a signal to the benchmark's terminal does
	// not race the orderly stop below.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	s := &childServer{cmd: cmd, dir: dir, done: make(chan error, 1)}
	go func() { s.done <- cmd.Wait() }()
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		if b, err := os.ReadFile(ready); err == nil && len(b) > 0 {
			s.url = "ws://" + strings.TrimSpace(string(b))
			return s, nil
		}
		select {
		case err := <-s.done:
			os.RemoveAll(dir)
			return nil, fmt.Errorf("the server exited before it was ready: %v", err)
		case <-ctx.Done():
			s.stop()
			return nil, ctx.Err()
		case <-t.C:
		}
	}
}

// stop sends SIGTERM, waits for the graceful shutdown (killing after 30s),
// and removes the temporary store.
func (s *childServer) stop() {
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		s.cmd.Process.Kill()
		<-s.done
	}
	os.RemoveAll(s.dir)
}

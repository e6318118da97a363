package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/nextstate-rl/nextstate/client"
	"github.com/nextstate-rl/nextstate/gym"
)

func newBench() *cobra.Command {
	c := &cobra.Command{Use: "bench", Short: "Measure nextstate"}
	c.AddCommand(newBenchWS(), newBenchModel(), newBenchSandbox(), newBenchBFCL(), newBenchGUI())
	return c
}

type benchWSFlags struct {
	addr, token, env, task, text string
	serverProfile, profile       string
	think                        time.Duration
	sessions, steps, conns, dial int
	timeout                      time.Duration
	asJSON                       bool
}

// BenchReport is what `bench ws` measures; --json prints it.
type BenchReport struct {
	Env             string         `json:"env"`
	Sessions        int            `json:"sessions"`
	Conns           int            `json:"conns"`
	StepsPerSession int            `json:"steps_per_session"`
	SessionsOK      int            `json:"sessions_ok"`
	SuccessRate     float64        `json:"success_rate"`
	Steps           int64          `json:"steps"`
	StepErrors      int64          `json:"step_errors"`
	CreateSeconds   float64        `json:"create_seconds"`
	StepSeconds     float64        `json:"step_seconds"`
	StepsPerSecond  float64        `json:"steps_per_second"`
	LatencyMS       Percentiles    `json:"step_latency_ms"`
	Errors          map[string]int `json:"errors,omitempty"`
	Server          string         `json:"server"`
}

// Percentiles of a latency sample, in milliseconds.
type Percentiles struct {
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p999"`
	Max  float64 `json:"max"`
}

func newBenchWS() *cobra.Command {
	var f benchWSFlags
	c := &cobra.Command{
		Use:   "ws",
		Short: "Open N concurrent sessions over WebSocket and step them",
		Long: `Open --sessions concurrent sessions against a live server over loopback (one
WebSocket each, or spread over --conns connections), then step every session --steps
times at once, and report the success rate, aggregate steps/s and step latency
percentiles. A session succeeds when it was created and all its steps were answered.

Without --addr a server is started as a child process ("nextstate serve" on
127.0.0.1 with a temporary store), so the benchmark and the server each have their
own file-descriptor limit, as they would on two machines.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runBenchWS(cmd.Context(), cmd.OutOrStdout(), f) },
	}
	fl := c.Flags()
	fl.IntVar(&f.sessions, "sessions", 1000, "concurrent sessions")
	fl.IntVar(&f.steps, "steps", 20, "steps per session")
	fl.IntVar(&f.conns, "conns", 0, "WebSocket connections to spread the sessions over (0: one per session)")
	fl.IntVar(&f.dial, "dial-concurrency", 256, "connections and sessions being opened at once")
	fl.StringVar(&f.env, "env", "echo-v1", "env kind")
	fl.StringVar(&f.task, "task", "", "task id (default: none, the kind's defaults)")
	fl.StringVar(&f.text, "action", "hello", "the text of every action")
	fl.StringVar(&f.addr, "addr", "", "server URL (ws://host:port); empty starts one")
	fl.StringVar(&f.token, "token", os.Getenv("NEXTSTATE_TOKEN"), "bearer token")
	fl.DurationVar(&f.timeout, "timeout", 5*time.Minute, "give up after this long")
	fl.DurationVar(&f.think, "think", 0, "mean pause between a session's steps, as an agent thinking, drawn from [think/2, 3think/2] (0: step back to back)")
	fl.StringVar(&f.profile, "cpu-profile", "", "write the benchmark client's CPU profile to this file")
	fl.StringVar(&f.serverProfile, "server-cpu-profile", "", "with no --addr: write the server's CPU profile to this file")
	fl.BoolVar(&f.asJSON, "json", false, "print JSON")
	return c
}

func runBenchWS(ctx context.Context, out io.Writer, f benchWSFlags) error {
	if f.sessions <= 0 || f.steps <= 0 {
		return errors.New("--sessions and --steps must be positive")
	}
	if f.conns <= 0 || f.conns > f.sessions {
		f.conns = f.sessions
	}
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	addr := f.addr
	if addr == "" {
		srv, err := startChildServer(ctx, f.sessions, f.serverProfile)
		if err != nil {
			return err
		}
		defer srv.stop()
		addr = srv.url
	}
	rep := BenchReport{Env: f.env, Sessions: f.sessions, Conns: f.conns, StepsPerSession: f.steps, Server: addr, Errors: map[string]int{}}
	var errMu sync.Mutex
	noteErr := func(err error) {
		errMu.Lock()
		defer errMu.Unlock()
		rep.Errors[errorClass(err)]++
	}

	// Phase 1: connections, then sessions, at most f.dial being opened at once.
	opts := []client.Opt{client.WithoutReconnect()}
	if f.token != "" {
		opts = append(opts, client.WithToken(f.token))
	}
	conns := make([]*client.Client, f.conns)
	sessions := make([]*client.Session, f.sessions)
	start := time.Now()
	sem := make(chan struct{}, f.dial)
	var wg sync.WaitGroup
	parallel := func(n int, fn func(i int)) {
		for i := range n {
			sem <- struct{}{}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				fn(i)
			}()
		}
		wg.Wait()
	}
	parallel(f.conns, func(i int) {
		c, err := client.Dial(ctx, addr, opts...)
		if err != nil {
			noteErr(err)
			return
		}
		conns[i] = c
	})
	parallel(f.sessions, func(i int) {
		c := conns[i%f.conns]
		if c == nil {
			return // its connection failed, counted above
		}
		s, _, err := c.Create(ctx, gym.CreateRequest{Env: f.env, TaskID: f.task, Seed: int64(i), Run: "bench"})
		if err != nil {
			noteErr(err)
			return
		}
		sessions[i] = s
	})
	rep.CreateSeconds = time.Since(start).Seconds()

	// Phase 2: every session steps at once.
	if f.profile != "" {
		pf, err := os.Create(f.profile)
		if err != nil {
			return err
		}
		pprof.StartCPUProfile(pf)
		defer func() { pprof.StopCPUProfile(); pf.Close() }()
	}
	lat := make([][]time.Duration, f.sessions)
	var steps, stepErrs atomic.Int64
	ok := make([]bool, f.sessions)
	action := gym.TextAction(f.text)
	start = time.Now()
	for i, s := range sessions {
		if s == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			l := make([]time.Duration, 0, f.steps)
			// Agents are not in lockstep: with --think the first step comes
			// after a random part of one think time, and each pause is
			// drawn uniformly from [think/2, 3*think/2].
			rng := rand.New(rand.NewPCG(uint64(i), 7))
			for n := range f.steps {
				if f.think > 0 {
					d := time.Duration(rng.Int64N(int64(f.think)))
					if n > 0 {
						d += f.think / 2
					}
					t := time.NewTimer(d)
					select {
					case <-t.C:
					case <-ctx.Done():
						t.Stop()
					}
				}
				t0 := time.Now()
				res, err := s.Step(ctx, action)
				if err != nil {
					stepErrs.Add(1)
					noteErr(err)
					lat[i] = l
					return
				}
				l = append(l, time.Since(t0))
				steps.Add(1)
				if res.Terminated || res.Truncated {
					break
				}
			}
			lat[i] = l
			ok[i] = true
		}()
	}
	wg.Wait()
	rep.StepSeconds = time.Since(start).Seconds()

	for i, s := range sessions {
		if s != nil && ok[i] {
			rep.SessionsOK++
		}
	}
	// Close sessions and connections, f.dial at a time.
	parallel(f.sessions, func(i int) {
		if s := sessions[i]; s != nil {
			cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			s.Close(cctx)
		}
	})
	for _, c := range conns {
		if c != nil {
			c.Close()
		}
	}

	rep.Steps, rep.StepErrors = steps.Load(), stepErrs.Load()
	rep.SuccessRate = float64(rep.SessionsOK) / float64(f.sessions)
	if rep.StepSeconds > 0 {
		rep.StepsPerSecond = float64(rep.Steps) / rep.StepSeconds
	}
	rep.LatencyMS = percentiles(lat)
	if len(rep.Errors) == 0 {
		rep.Errors = nil
	}
	if f.asJSON {
		return printJSON(out, rep)
	}
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "server\t%s\n", rep.Server)
	fmt.Fprintf(w, "env\t%s\n", rep.Env)
	fmt.Fprintf(w, "sessions\t%d over %d connections, %d steps each\n", rep.Sessions, rep.Conns, rep.StepsPerSession)
	fmt.Fprintf(w, "success\t%d/%d sessions (%.2f%%), %d step errors\n", rep.SessionsOK, rep.Sessions, 100*rep.SuccessRate, rep.StepErrors)
	fmt.Fprintf(w, "create\t%.2fs\n", rep.CreateSeconds)
	fmt.Fprintf(w, "steps\t%d in %.2fs = %.0f steps/s\n", rep.Steps, rep.StepSeconds, rep.StepsPerSecond)
	fmt.Fprintf(w, "step latency\tp50 %.2fms  p90 %.2fms  p99 %.2fms  p99.9 %.2fms  max %.2fms\n",
		rep.LatencyMS.P50, rep.LatencyMS.P90, rep.LatencyMS.P99, rep.LatencyMS.P999, rep.LatencyMS.Max)
	for k, v := range rep.Errors {
		fmt.Fprintf(w, "error\t%d × %s\n", v, k)
	}
	return w.Flush()
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

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/nextstate-rl/nextstate/client"
	"github.com/nextstate-rl/nextstate/gym"
)

type benchWSFlags struct {
	addr, token, env, task, text string
	serverProfile, profile       string
	memProfile                   string
	think                        time.Duration
	sessions, steps, conns, dial int
	gcPercent                    int
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
	fl.StringVar(&f.memProfile, "mem-profile", "", "write the benchmark client's heap profile, taken after the steps with every session still open, to this file")
	fl.StringVar(&f.serverProfile, "server-cpu-profile", "", "with no --addr: write the server's CPU profile to this file")
	fl.BoolVar(&f.asJSON, "json", false, "print JSON")
	fl.IntVar(&f.gcPercent, "gc-percent", defaultGCPercent, gcPercentUsage+"; a child server gets serve's default")
	return c
}

// runBenchWS runs the phases of `bench ws`: a server (a child one without
// --addr), connections and sessions, the steps, the closing, the report.
func runBenchWS(ctx context.Context, out io.Writer, f benchWSFlags) error {
	if f.sessions <= 0 || f.steps <= 0 {
		return errors.New("--sessions and --steps must be positive")
	}
	if f.conns <= 0 || f.conns > f.sessions {
		f.conns = f.sessions
	}
	if err := setGCPercent(f.gcPercent); err != nil {
		return err
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
	b := &wsBench{f: f, addr: addr, errors: map[string]int{}}

	start := time.Now()
	conns, sessions := b.open(ctx)
	createSeconds := time.Since(start).Seconds()

	if f.profile != "" {
		stop, err := startCPUProfile(f.profile)
		if err != nil {
			return err
		}
		defer stop()
	}
	start = time.Now()
	lat, ok := b.step(ctx, sessions)
	stepSeconds := time.Since(start).Seconds()
	if f.memProfile != "" {
		if err := writeHeapProfile(f.memProfile); err != nil {
			b.close(sessions, conns)
			return err
		}
	}

	b.close(sessions, conns)

	rep := b.report(lat, ok)
	rep.CreateSeconds, rep.StepSeconds = createSeconds, stepSeconds
	if stepSeconds > 0 {
		rep.StepsPerSecond = float64(rep.Steps) / stepSeconds
	}
	if f.asJSON {
		return printJSON(out, rep)
	}
	return printBenchReport(out, rep)
}

// wsBench is one run of `bench ws`: its flags, its server, and what went
// wrong, counted by kind.
type wsBench struct {
	f    benchWSFlags
	addr string

	steps, stepErrs atomic.Int64

	mu     sync.Mutex
	errors map[string]int // by errorClass
}

func (b *wsBench) noteErr(err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.errors[errorClass(err)]++
}

// open dials the connections, then creates the sessions on them (session i
// on connection i mod conns), at most --dial-concurrency at once. A
// connection or session that failed is nil, its error counted.
func (b *wsBench) open(ctx context.Context) ([]*client.Client, []*client.Session) {
	opts := []client.Opt{client.WithoutReconnect()}
	if b.f.token != "" {
		opts = append(opts, client.WithToken(b.f.token))
	}
	conns := make([]*client.Client, b.f.conns)
	sessions := make([]*client.Session, b.f.sessions)
	parallel(b.f.conns, b.f.dial, func(i int) {
		c, err := client.Dial(ctx, b.addr, opts...)
		if err != nil {
			b.noteErr(err)
			return
		}
		conns[i] = c
	})
	parallel(b.f.sessions, b.f.dial, func(i int) {
		c := conns[i%b.f.conns]
		if c == nil {
			return // its connection failed, counted above
		}
		s, _, err := c.Create(ctx, gym.CreateRequest{Env: b.f.env, TaskID: b.f.task, Seed: int64(i), Run: "bench"})
		if err != nil {
			b.noteErr(err)
			return
		}
		sessions[i] = s
	})
	return conns, sessions
}

// step steps every session at once and returns each session's step
// latencies and whether all its steps were answered. Each session is an
// agent (wsAgent.run): stepping back to back it is a goroutine; with --think
// it is a timer between steps, and a goroutine only while it steps, as an
// agent process would hold no thread of this one while it thinks. 10,000
// agents then cost the benchmark's own garbage collector 10,000 timers,
// not 10,000 parked goroutines to scan every cycle, and what is measured
// is the server and the client library.
func (b *wsBench) step(ctx context.Context, sessions []*client.Session) ([][]time.Duration, []bool) {
	lat := make([][]time.Duration, len(sessions))
	ok := make([]bool, len(sessions))
	agents := make([]*wsAgent, len(sessions))
	action := gym.TextAction(b.f.text)
	var wg sync.WaitGroup
	for i, s := range sessions {
		if s == nil {
			continue
		}
		a := &wsAgent{b: b, ctx: ctx, s: s, action: action, wg: &wg, ok: true,
			lat: make([]time.Duration, 0, b.f.steps), rng: rand.New(rand.NewPCG(uint64(i), 7))}
		agents[i] = a
		wg.Add(1)
		if b.f.think > 0 {
			// Agents are not in lockstep: the first step comes after a
			// random part of one think time.
			time.AfterFunc(time.Duration(a.rng.Int64N(int64(b.f.think))), a.run)
		} else {
			go a.run()
		}
	}
	wg.Wait()
	for i, a := range agents {
		if a != nil {
			lat[i], ok[i] = a.lat, a.ok
		}
	}
	return lat, ok
}

// wsAgent steps one session --steps times (fewer if its episode ends),
// pausing between steps with --think: each pause is drawn uniformly from
// [think/2, 3*think/2].
type wsAgent struct {
	b      *wsBench
	ctx    context.Context
	s      *client.Session
	action gym.Action
	rng    *rand.Rand
	wg     *sync.WaitGroup // Done when the agent is

	n   int             // steps taken
	lat []time.Duration // the latencies of the steps answered
	ok  bool            // every step was answered
}

// run takes the next step, and then the ones after it until the agent
// must think: then it sets a timer to run again and returns.
func (a *wsAgent) run() {
	for {
		t0 := time.Now()
		res, err := a.s.Step(a.ctx, a.action)
		if err != nil {
			a.b.stepErrs.Add(1)
			a.b.noteErr(err)
			a.ok = false
			a.wg.Done()
			return
		}
		a.lat = append(a.lat, time.Since(t0))
		a.b.steps.Add(1)
		a.n++
		if a.n == a.b.f.steps || res.Terminated || res.Truncated {
			a.wg.Done()
			return
		}
		if think := a.b.f.think; think > 0 {
			time.AfterFunc(think/2+time.Duration(a.rng.Int64N(int64(think))), a.run)
			return
		}
	}
}

// close closes the sessions, at most --dial-concurrency at once, then the
// connections.
func (b *wsBench) close(sessions []*client.Session, conns []*client.Client) {
	parallel(len(sessions), b.f.dial, func(i int) {
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
}

// report gathers the counts and latencies; the caller adds the timings.
func (b *wsBench) report(lat [][]time.Duration, ok []bool) BenchReport {
	rep := BenchReport{Env: b.f.env, Sessions: b.f.sessions, Conns: b.f.conns, StepsPerSession: b.f.steps, Server: b.addr}
	for _, o := range ok {
		if o {
			rep.SessionsOK++
		}
	}
	rep.Steps, rep.StepErrors = b.steps.Load(), b.stepErrs.Load()
	rep.SuccessRate = float64(rep.SessionsOK) / float64(b.f.sessions)
	rep.LatencyMS = percentiles(lat)
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.errors) > 0 {
		rep.Errors = b.errors
	}
	return rep
}

func printBenchReport(out io.Writer, rep BenchReport) error {
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

// parallel calls fn(0) ... fn(n-1), at most limit at once, and returns when
// all have.
func parallel(n, limit int, fn func(i int)) {
	sem := make(chan struct{}, max(limit, 1))
	var wg sync.WaitGroup
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			fn(i)
		})
	}
	wg.Wait()
}

// writeHeapProfile writes this process's live heap, as of a fresh garbage
// collection, to path.
func writeHeapProfile(path string) error {
	pf, err := os.Create(path)
	if err != nil {
		return err
	}
	runtime.GC()
	if err := pprof.WriteHeapProfile(pf); err != nil {
		pf.Close()
		return err
	}
	return pf.Close()
}

// startCPUProfile writes this process's CPU profile to path until stop.
func startCPUProfile(path string) (stop func(), err error) {
	pf, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(pf); err != nil {
		pf.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); pf.Close() }, nil
}

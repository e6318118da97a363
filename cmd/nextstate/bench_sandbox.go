package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/nextstate-rl/nextstate/sandbox"
	"github.com/nextstate-rl/nextstate/sandbox/bwrap"
	_ "github.com/nextstate-rl/nextstate/sandbox/docker"
	"github.com/nextstate-rl/nextstate/sandbox/pool"
)

type benchSandboxFlags struct {
	backend, image string
	dockerHosts    []string
	n, concurrent  int
	commands       int
	timeout        time.Duration
	asJSON         bool
}

// SandboxBenchReport is what `bench sandbox` measures; --json prints it.
// Latencies are in milliseconds.
type SandboxBenchReport struct {
	Backend        string       `json:"backend"`
	Limits         string       `json:"limits,omitempty"` // how limits are enforced, where the backend says
	N              int          `json:"n"`
	ColdStart      Percentiles  `json:"cold_start_ms"`       // Create + first output of an Exec
	WarmAcquire    Percentiles  `json:"warm_acquire_ms"`     // pool.Acquire with a warm sandbox waiting
	ShellRoundTrip Percentiles  `json:"shell_round_trip_ms"` // Shell.Run("echo hi")
	Exec           Percentiles  `json:"exec_ms"`             // a fresh Exec("echo hi")
	Reset          Percentiles  `json:"reset_ms"`            // Restore, or Close + Create
	ResetMode      string       `json:"reset_mode"`          // "restore" or "recreate"
	Remove         Percentiles  `json:"remove_ms"`           // Close
	Concurrent     ConcurrentSB `json:"concurrent"`
}

// ConcurrentSB is the concurrent-sessions part of the report.
type ConcurrentSB struct {
	Sessions     int            `json:"sessions"`
	CommandsEach int            `json:"commands_each"`
	OK           int            `json:"sessions_ok"`
	Failed       int            `json:"sessions_failed"`
	Command      Percentiles    `json:"command_ms"`
	Seconds      float64        `json:"seconds"`
	Errors       map[string]int `json:"errors,omitempty"`
}

func newBenchSandbox() *cobra.Command {
	var f benchSandboxFlags
	c := &cobra.Command{
		Use:   "sandbox",
		Short: "Measure a sandbox backend: start, warm acquire, shell, exec, reset, removal, concurrency",
		Long: `Measure a sandbox backend with --n samples of each: cold start to first output
(Create, then an Exec's output), warm-pool acquire, a command's round trip through
the persistent shell, a fresh Exec, reset (Restore of a snapshot, or Close and
Create where the backend cannot snapshot) and removal; then --concurrent sessions
at once, each a sandbox with a shell running --commands commands and one command
typed into its terminal, and report p50/p99 and the sessions that failed.

Every sandbox it makes carries a fresh owner label and is removed at the end.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), f.timeout)
			defer cancel()
			return runBenchSandbox(ctx, cmd.OutOrStdout(), f)
		},
	}
	fl := c.Flags()
	fl.StringVar(&f.backend, "backend", "bwrap", "sandbox backend: "+strings.Join(sandbox.Backends(), ", "))
	fl.StringVar(&f.image, "image", "", "image (docker) or rootfs directory (bwrap); empty: the backend's default")
	fl.StringArrayVar(&f.dockerHosts, "docker-host", nil, "docker engine (repeatable)")
	fl.IntVar(&f.n, "n", 50, "samples per measurement")
	fl.IntVar(&f.concurrent, "concurrent", 64, "concurrent terminal sessions")
	fl.IntVar(&f.commands, "commands", 20, "shell commands per concurrent session")
	fl.DurationVar(&f.timeout, "timeout", 10*time.Minute, "bound on the whole benchmark")
	fl.BoolVar(&f.asJSON, "json", false, "print JSON")
	return c
}

func runBenchSandbox(ctx context.Context, out io.Writer, f benchSandboxFlags) (err error) {
	if f.n < 1 {
		return errors.New("--n must be at least 1")
	}
	owner := sandbox.NewOwnerID()
	b, err := sandbox.Open(ctx, f.backend, sandbox.Options{Owner: owner, Hosts: f.dockerHosts})
	if err != nil {
		return err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		err = errors.Join(err, b.Close(cctx))
		if _, rerr := b.Reap(cctx, owner); rerr != nil {
			err = errors.Join(err, rerr)
		}
	}()
	rep := SandboxBenchReport{Backend: f.backend, N: f.n}
	if bw, ok := b.(*bwrap.Backend); ok {
		mode, why := bw.LimitsMode()
		rep.Limits = mode
		if why != nil && mode == bwrap.ModeRlimit {
			rep.Limits += " (" + why.Error() + ")"
		}
	}
	spec := sandbox.Spec{Image: f.image, Labels: map[string]string{"bench": "sandbox"}}
	hi := sandbox.ExecRequest{Script: "echo hi", Timeout: time.Minute}

	// Cold start to first output; the sandboxes are removed at the end.
	cold := make([]time.Duration, 0, f.n)
	sbs := make([]sandbox.Sandbox, 0, f.n)
	defer func() {
		for _, sb := range sbs {
			sb.Close(context.Background())
		}
	}()
	for range f.n {
		t0 := time.Now()
		sb, err := b.Create(ctx, spec)
		if err != nil {
			return fmt.Errorf("create: %w", err)
		}
		sbs = append(sbs, sb)
		r, err := sb.Exec(ctx, hi)
		if err != nil || string(r.Stdout) != "hi\n" {
			return fmt.Errorf("first exec: %v %q %q", err, r.Stdout, r.Stderr)
		}
		cold = append(cold, time.Since(t0))
	}
	rep.ColdStart = percentiles([][]time.Duration{cold})

	// A fresh Exec.
	sb0 := sbs[0]
	var execs []time.Duration
	for range f.n {
		t0 := time.Now()
		r, err := sb0.Exec(ctx, hi)
		if err != nil || string(r.Stdout) != "hi\n" {
			return fmt.Errorf("exec: %v %q", err, r.Stdout)
		}
		execs = append(execs, time.Since(t0))
	}
	rep.Exec = percentiles([][]time.Duration{execs})

	// The persistent shell.
	sh, err := sandbox.NewShell(ctx, sb0)
	if err != nil {
		return fmt.Errorf("shell: %w", err)
	}
	var rtts []time.Duration
	for range f.n {
		t0 := time.Now()
		r, err := sh.Run(ctx, "echo hi", time.Minute)
		if err != nil || string(r.Stdout) != "hi\n" {
			sh.Close()
			return fmt.Errorf("shell run: %v %q", err, r.Stdout)
		}
		rtts = append(rtts, time.Since(t0))
	}
	sh.Close()
	rep.ShellRoundTrip = percentiles([][]time.Duration{rtts})

	// Reset.
	if rep.Reset, rep.ResetMode, err = benchReset(ctx, b, spec, f.n); err != nil {
		return err
	}

	// Warm acquire: each sample waits (untimed) for a warm sandbox.
	p := pool.New(b, pool.Options{Size: 4, MaxCreating: 2, Specs: []sandbox.Spec{spec}})
	var acq []time.Duration
	for range f.n {
		for p.Stats().Idle == 0 {
			select {
			case <-ctx.Done():
				p.Close(context.Background())
				return ctx.Err()
			case <-time.After(time.Millisecond):
			}
		}
		t0 := time.Now()
		sb, err := p.Acquire(ctx, spec)
		if err != nil {
			p.Close(context.Background())
			return fmt.Errorf("acquire: %w", err)
		}
		acq = append(acq, time.Since(t0))
		sb.Close(ctx)
	}
	if err := p.Close(ctx); err != nil {
		return fmt.Errorf("pool close: %w", err)
	}
	rep.WarmAcquire = percentiles([][]time.Duration{acq})

	// Removal.
	var rm []time.Duration
	for _, sb := range sbs {
		t0 := time.Now()
		if err := sb.Close(ctx); err != nil {
			return fmt.Errorf("close: %w", err)
		}
		rm = append(rm, time.Since(t0))
	}
	sbs = nil
	rep.Remove = percentiles([][]time.Duration{rm})

	rep.Concurrent = benchConcurrent(ctx, b, spec, f.concurrent, f.commands)

	if f.asJSON {
		return printJSON(out, rep)
	}
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "backend\t%s\tlimits: %s\n", rep.Backend, rep.Limits)
	fmt.Fprintf(w, "measure (ms, n=%d)\tp50\tp99\n", rep.N)
	for _, row := range []struct {
		name string
		p    Percentiles
	}{
		{"cold start to first output", rep.ColdStart},
		{"warm-pool acquire", rep.WarmAcquire},
		{"shell round trip (echo hi)", rep.ShellRoundTrip},
		{"fresh exec (echo hi)", rep.Exec},
		{"reset (" + rep.ResetMode + ")", rep.Reset},
		{"removal", rep.Remove},
	} {
		fmt.Fprintf(w, "%s\t%.2f\t%.2f\n", row.name, row.p.P50, row.p.P99)
	}
	c := rep.Concurrent
	fmt.Fprintf(w, "concurrent sessions\t%d ok, %d failed of %d (%d commands each + a terminal command, %.1fs)\n", c.OK, c.Failed, c.Sessions, c.CommandsEach, c.Seconds)
	fmt.Fprintf(w, "  command under load\t%.2f\t%.2f\n", c.Command.P50, c.Command.P99)
	for k, v := range c.Errors {
		fmt.Fprintf(w, "  error\t%d × %s\n", v, k)
	}
	return w.Flush()
}

// benchReset measures Restore of a snapshot of a small workspace (200
// files), or Close + Create where the backend cannot snapshot.
func benchReset(ctx context.Context, b sandbox.Backend, spec sandbox.Spec, n int) (Percentiles, string, error) {
	sb, err := b.Create(ctx, spec)
	if err != nil {
		return Percentiles{}, "", err
	}
	defer func() { sb.Close(context.Background()) }()
	sn, ok := sb.(sandbox.Snapshotter)
	var snap sandbox.Snapshot
	if ok {
		r, err := sb.Exec(ctx, sandbox.ExecRequest{Script: `mkdir -p src && for i in $(seq 200); do head -c 4096 /dev/urandom > src/f$i; done`, Timeout: time.Minute})
		if err != nil || r.ExitCode != 0 {
			return Percentiles{}, "", fmt.Errorf("reset setup: %v %q", err, r.Stderr)
		}
		if snap, err = sn.Snapshot(ctx); errors.Is(err, sandbox.ErrNoSnapshot) {
			ok = false
		} else if err != nil {
			return Percentiles{}, "", fmt.Errorf("snapshot: %w", err)
		} else {
			defer snap.Release(context.Background())
		}
	}
	var lat []time.Duration
	for range n {
		if !ok {
			t0 := time.Now()
			if err := sb.Close(ctx); err != nil {
				return Percentiles{}, "", err
			}
			if sb, err = b.Create(ctx, spec); err != nil {
				return Percentiles{}, "", err
			}
			lat = append(lat, time.Since(t0))
			continue
		}
		// Dirty the sandbox (untimed), then restore it.
		if _, err := sb.Exec(ctx, sandbox.ExecRequest{Script: "rm -rf src/f1* && echo x > new && (sleep 1000 >/dev/null 2>&1 &)"}); err != nil {
			return Percentiles{}, "", err
		}
		t0 := time.Now()
		if err := sn.Restore(ctx, snap); err != nil {
			return Percentiles{}, "", fmt.Errorf("restore: %w", err)
		}
		lat = append(lat, time.Since(t0))
	}
	mode := "restore"
	if !ok {
		mode = "recreate"
	}
	return percentiles([][]time.Duration{lat}), mode, nil
}

// benchConcurrent runs sessions at once, each a sandbox with a shell that
// runs commands and one command typed into its terminal.
func benchConcurrent(ctx context.Context, b sandbox.Backend, spec sandbox.Spec, sessions, commands int) ConcurrentSB {
	res := ConcurrentSB{Sessions: sessions, CommandsEach: commands, Errors: map[string]int{}}
	var mu sync.Mutex
	lat := make([][]time.Duration, sessions)
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		res.Failed++
		msg := err.Error()
		if len(msg) > 120 {
			msg = msg[:120]
		}
		res.Errors[msg]++
	}
	start := time.Now()
	var wg sync.WaitGroup
	for i := range sessions {
		wg.Add(1)
		go func() { // waited for below
			defer wg.Done()
			if err := benchSession(ctx, b, spec, i, commands, &lat[i]); err != nil {
				fail(fmt.Errorf("session: %w", err))
				return
			}
			mu.Lock()
			res.OK++
			mu.Unlock()
		}()
	}
	wg.Wait()
	res.Seconds = time.Since(start).Seconds()
	res.Command = percentiles(lat)
	if len(res.Errors) == 0 {
		res.Errors = nil
	}
	return res
}

func benchSession(ctx context.Context, b sandbox.Backend, spec sandbox.Spec, i, commands int, lat *[]time.Duration) error {
	sb, err := b.Create(ctx, spec)
	if err != nil {
		return err
	}
	defer sb.Close(context.Background())
	sh, err := sandbox.NewShell(ctx, sb)
	if err != nil {
		return err
	}
	defer sh.Close()
	if _, err := sh.Run(ctx, "mkdir -p work && cd work", time.Minute); err != nil {
		return err
	}
	for j := range commands {
		cmd := fmt.Sprintf("echo %d-%d > f && cat f && ls | wc -l", i, j)
		t0 := time.Now()
		r, err := sh.Run(ctx, cmd, time.Minute)
		if err != nil {
			return err
		}
		*lat = append(*lat, time.Since(t0))
		if want := fmt.Sprintf("%d-%d\n1\n", i, j); string(r.Stdout) != want || r.ExitCode != 0 {
			return fmt.Errorf("command %d: got %q (exit %d), want %q", j, r.Stdout, r.ExitCode, want)
		}
	}
	// The screen shows the typed line too: look for what only the output has.
	word := fmt.Sprintf("typed-%d", i)
	if err := sh.SendKeys(ctx, "echo typed-$((0+"+fmt.Sprint(i)+"))-ok", "Enter"); err != nil {
		return err
	}
	deadline := time.Now().Add(time.Minute)
	for {
		scr, err := sh.Screen(ctx)
		if err != nil {
			return err
		}
		if strings.Contains(scr, word+"-ok") {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("terminal: %q never showed", word+"-ok")
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/nextstate-rl/nextstate/client"
	"github.com/nextstate-rl/nextstate/envs/swe"
	"github.com/nextstate-rl/nextstate/envs/terminal"
	"github.com/nextstate-rl/nextstate/gym"
	"github.com/nextstate-rl/nextstate/sandbox"
	"github.com/nextstate-rl/nextstate/server"
	"github.com/nextstate-rl/nextstate/store"
	"github.com/nextstate-rl/nextstate/wire"
)

// A scriptedPolicy plays one env kind without a model, so the demo shows the
// whole loop on any machine. Each env kind that wants to appear in the demo
// adds one to scripted.
type scriptedPolicy interface {
	// start sees the first observation of an episode.
	start(res gym.ResetResult)
	// act returns the next action; last is nil before the first step.
	act(last *gym.StepResult) gym.Action
}

var scripted = map[string]func() scriptedPolicy{
	"echo-v1":     func() scriptedPolicy { return &chatter{} },
	"terminal-v1": func() scriptedPolicy { return &oracle{} },
}

// A scripted policy may also say whether its kind can run here; a kind
// that cannot is reported as skipped, with the reason.
type availability interface {
	available(ctx context.Context) error
}

// A scripted policy may also need the episode reset with options.
type withOptions interface {
	options() gym.Options
}

// policyFor returns the scripted policy of a task: the kind's entry in
// scripted, else the task's own oracle (gym.OracleFor) for kinds that
// implement gym.OracleKind. Listed tasks come without their verifier data,
// where oracles keep their solutions, so the oracle is made from the
// demo's own copy of the task (local) or the kind's.
func policyFor(t gym.Task, local map[string]*gym.Task) (scriptedPolicy, bool) {
	if mk, ok := scripted[t.Env]; ok {
		return mk(), true
	}
	full := local[t.ID]
	if full == nil {
		spec, err := gym.Lookup(t.Env)
		if err != nil {
			return nil, false
		}
		for i := range spec.Tasks {
			if spec.Tasks[i].ID == t.ID {
				full = &spec.Tasks[i]
			}
		}
	}
	if full == nil {
		return nil, false
	}
	o, err := gym.OracleFor(full)
	if err != nil {
		return nil, false
	}
	return &replay{o: o}, true
}

// replay plays a task with its kind's oracle.
type replay struct {
	o   gym.Oracle
	res gym.ResetResult
}

func (r *replay) start(res gym.ResetResult) { r.res = res }

func (r *replay) options() gym.Options {
	if o, ok := r.o.(gym.OracleOptions); ok {
		return o.ResetOptions()
	}
	return nil
}

func (r *replay) act(last *gym.StepResult) gym.Action {
	obs, info := r.res.Observation, r.res.Info
	if last != nil {
		obs, info = last.Observation, last.Info
	}
	a, done, err := r.o.Next(obs, info)
	if err != nil || done || len(a.Parts) == 0 {
		// The oracle has nothing more to say: end the episode as an agent
		// with nothing to add would, with an empty message.
		return gym.TextAction("")
	}
	return a
}

// demoEpisodes caps the episodes per task of kinds whose episodes are slow
// (a browser page, a desktop with an app to start).
var demoEpisodes = map[string]int{"web-v1": 1, "desktop-v1": 1, "code-interpreter-v1": 2, "swe-v1": 1}

// oracle plays a terminal-v1 task by running its oracle solution through
// the env's tools (terminal.OracleActions), then submits.
type oracle struct {
	actions []gym.Action
	n       int
}

func (o *oracle) start(res gym.ResetResult) {
	o.actions, o.n = nil, 0
	spec, _ := gym.Lookup(terminal.KindName)
	for i := range spec.Tasks {
		if spec.Tasks[i].ID == res.Task {
			o.actions, _ = terminal.OracleActions(&spec.Tasks[i])
		}
	}
}

func (o *oracle) act(*gym.StepResult) gym.Action {
	if o.n >= len(o.actions) {
		return gym.Action{Parts: []gym.Part{{Type: gym.PartToolCall, ToolCall: &gym.ToolCall{
			ID: "submit", Type: "function", Function: gym.FunctionCall{Name: terminal.ToolSubmit, Arguments: "{}"}}}}}
	}
	o.n++
	return o.actions[o.n-1]
}

// available opens the default sandbox backend the demo server uses.
func (o *oracle) available(ctx context.Context) error {
	b, err := sandbox.Open(ctx, "bwrap", sandbox.Options{})
	if err != nil {
		return err
	}
	return b.Close(ctx)
}

// chatter says three things to echo-v1, then "/done".
type chatter struct{ n int }

func (c *chatter) start(gym.ResetResult) { c.n = 0 }

func (c *chatter) act(*gym.StepResult) gym.Action {
	c.n++
	if c.n > 3 {
		return gym.TextAction("/done")
	}
	return gym.TextAction(fmt.Sprintf("message %d", c.n))
}

type demoFlags struct {
	dataDir  string
	episodes int
	asJSON   bool
}

// DemoRow is one task's line of the demo report.
type DemoRow struct {
	Task       string  `json:"task"`
	Env        string  `json:"env"`
	Episodes   int     `json:"episodes"`
	Terminated int     `json:"terminated"`
	Truncated  int     `json:"truncated"`
	MeanReturn float64 `json:"mean_return"`
	MeanSteps  float64 `json:"mean_steps"`
}

// DemoReport is what `nextstate demo --json` prints.
type DemoReport struct {
	Server       string         `json:"server"`
	DataDir      string         `json:"data_dir"`
	Rows         []DemoRow      `json:"tasks"`
	Skipped      []string       `json:"skipped_kinds,omitempty"`
	Steps        int            `json:"steps"`
	EventsByType map[string]int `json:"events_streamed"`
	Exported     int            `json:"episodes_exported"`
	Seconds      float64        `json:"seconds"`
}

func newDemo() *cobra.Command {
	var f demoFlags
	c := &cobra.Command{
		Use:   "demo",
		Short: "Run a scripted agent over every built-in task and print a report",
		Long: `Start a server on embedded defaults (loopback, a SQLite store), connect to it
over WebSocket as an agent would, play every built-in task of every env kind that has
a scripted policy, follow the live event stream, export the trajectories, and report.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runDemo(cmd.Context(), cmd.OutOrStdout(), f) },
	}
	c.Flags().StringVar(&f.dataDir, "data", "", "store directory (default: a temporary one, removed after)")
	c.Flags().IntVar(&f.episodes, "episodes", 3, "episodes per task, seeds 1..N")
	c.Flags().BoolVar(&f.asJSON, "json", false, "print JSON")
	return c
}

func runDemo(ctx context.Context, out io.Writer, f demoFlags) error {
	begin := time.Now()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	dir := f.dataDir
	if dir == "" {
		d, err := os.MkdirTemp("", "nextstate-demo-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	// SWE instances are built from real module releases before the
	// server starts, so they are served as a suite.
	var suites []*gym.Suite
	local := map[string]*gym.Task{}
	sweSkip := ""
	if sweSuite, err := demoSWESuite(ctx, os.Stderr); err != nil {
		sweSkip = swe.KindName + " (" + clip(err.Error(), 160) + ")"
	} else {
		suites = append(suites, sweSuite)
		for i := range sweSuite.Tasks {
			local[sweSuite.Tasks[i].ID] = &sweSuite.Tasks[i]
		}
	}
	srv, err := server.New(server.Config{DataDir: dir, Suites: suites})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		srv.Shutdown(ctx)
		return err
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	stopped := false
	stop := func() error {
		if stopped {
			return nil
		}
		stopped = true
		sctx, c := context.WithTimeout(context.Background(), 30*time.Second)
		defer c()
		err := srv.Shutdown(sctx)
		<-served
		return err
	}
	defer stop()
	url := "ws://" + ln.Addr().String()
	rep := DemoReport{Server: url, DataDir: dir, EventsByType: map[string]int{}}

	c, err := client.Dial(ctx, url)
	if err != nil {
		return err
	}
	defer c.Close()

	// Follow the live event stream for the demo's run, as a trainer would.
	sub, err := c.Subscribe(ctx, wire.SubscribeParams{Run: "demo", AfterSeq: -1})
	if err != nil {
		return err
	}
	var streamed sync.WaitGroup
	var seen atomic.Int64
	streamed.Add(1)
	go func() {
		defer streamed.Done()
		for ev := range sub.C() {
			rep.EventsByType[string(ev.Type)]++
			seen.Store(ev.Seq)
		}
	}()

	tasks, err := c.Tasks(ctx, "", "")
	if err != nil {
		return err
	}
	skipped := map[string]bool{}
	if sweSkip != "" {
		skipped[sweSkip] = true
	}
	unavailable := map[string]error{}
	started := map[string]bool{} // kinds that ran an episode
	for _, t := range tasks {
		first, ok := policyFor(t, local)
		if !ok {
			skipped[t.Env] = true
			continue
		}
		if a, ok := first.(availability); ok {
			err, seen := unavailable[t.Env]
			if !seen {
				err = a.available(ctx)
				unavailable[t.Env] = err
			}
			if err != nil {
				skipped[t.Env+" ("+err.Error()+")"] = true
				continue
			}
		}
		if err := unavailable[t.Env]; err != nil {
			continue
		}
		row := DemoRow{Task: t.ID, Env: t.Env}
		var ret, steps float64
		episodes := f.episodes
		if n, ok := demoEpisodes[t.Env]; ok {
			episodes = min(episodes, n)
		}
		for seed := 1; seed <= episodes; seed++ {
			p, _ := policyFor(t, local)
			r, n, term, err := playEpisode(ctx, c, t, int64(seed), p)
			var we *wire.Error
			if errors.As(err, &we) && we.Code == wire.CodeInfra && !started[t.Env] {
				// The kind cannot run here (no browser, no X server):
				// say so and go on with the other kinds.
				unavailable[t.Env] = err
				skipped[t.Env+" ("+clip(err.Error(), 160)+")"] = true
				break
			}
			started[t.Env] = true
			if err != nil {
				return fmt.Errorf("task %s seed %d: %w", t.ID, seed, err)
			}
			row.Episodes++
			ret += r
			steps += float64(n)
			if term {
				row.Terminated++
			} else {
				row.Truncated++
			}
		}
		if row.Episodes == 0 {
			continue
		}
		row.MeanReturn, row.MeanSteps = ret/float64(row.Episodes), steps/float64(row.Episodes)
		rep.Steps += int(steps)
		rep.Rows = append(rep.Rows, row)
	}
	for k := range skipped {
		rep.Skipped = append(rep.Skipped, k)
	}
	sort.Strings(rep.Skipped)

	// Wait until the stream has caught up with the store, then stop it.
	info, err := c.ServerInfo(ctx)
	if err != nil {
		return err
	}
	if err := pollUntil(ctx, func() bool { return seen.Load() >= info.LastSeq }); err != nil {
		return fmt.Errorf("the event stream did not catch up: %w", err)
	}
	sub.Close()
	streamed.Wait()

	// Stop the server (flushing the store), then export the trajectories
	// as a trainer would read them.
	c.Close()
	if err := stop(); err != nil {
		return fmt.Errorf("server shutdown: %w", err)
	}
	st, err := store.OpenReadOnly(dir)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	err = st.Export(ctx, &buf, store.Filter{Run: "demo"}, "jsonl")
	st.Close()
	if err != nil {
		return err
	}
	rep.Exported = bytes.Count(buf.Bytes(), []byte("\n"))
	sample, _, _ := bytes.Cut(buf.Bytes(), []byte("\n"))
	rep.Seconds = time.Since(begin).Seconds()
	if f.asJSON {
		return printJSON(out, rep)
	}
	fmt.Fprintf(out, "nextstate demo: a scripted agent on %s (store %s)\n\n", url, dir)
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "TASK\tENV\tEPISODES\tTERMINATED\tTRUNCATED\tMEAN RETURN\tMEAN STEPS")
	for _, r := range rep.Rows {
		fmt.Fprintf(w, "%s\t%s\t%d\t%d\t%d\t%.2f\t%.1f\n", r.Task, r.Env, r.Episodes, r.Terminated, r.Truncated, r.MeanReturn, r.MeanSteps)
	}
	w.Flush()
	var types []string
	for k, v := range rep.EventsByType {
		types = append(types, fmt.Sprintf("%s %d", k, v))
	}
	sort.Strings(types)
	fmt.Fprintf(out, "\n%d steps; events streamed live: %s\n", rep.Steps, strings.Join(types, ", "))
	fmt.Fprintf(out, "%d episodes exported as JSON Lines (nextstate export --format jsonl); the first:\n  %s\n", rep.Exported, clip(string(sample), 240))
	if len(rep.Skipped) > 0 {
		fmt.Fprintf(out, "no scripted policy for: %s\n", strings.Join(rep.Skipped, ", "))
	}
	fmt.Fprintf(out, "done in %.2fs\n", rep.Seconds)
	return nil
}

// playEpisode runs one episode of t with policy p and closes the session.
func playEpisode(ctx context.Context, c *client.Client, t gym.Task, seed int64, p scriptedPolicy) (ret float64, steps int, terminated bool, err error) {
	var opts gym.Options
	if o, ok := p.(withOptions); ok {
		opts = o.options()
	}
	s, res, err := c.Create(ctx, gym.CreateRequest{TaskID: t.ID, Env: t.Env, Seed: seed, Run: "demo", Options: opts})
	if err != nil {
		return 0, 0, false, err
	}
	defer s.Close(context.WithoutCancel(ctx))
	p.start(res)
	var last *gym.StepResult
	for {
		r, err := s.Step(ctx, p.act(last))
		if err != nil {
			return ret, steps, false, err
		}
		steps++
		ret += r.Reward
		if r.Terminated || r.Truncated {
			return ret, steps, r.Terminated, nil
		}
		last = &r
	}
}

func pollUntil(ctx context.Context, cond func() bool) error {
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			return errors.New("timed out")
		case <-t.C:
		}
	}
	return nil
}

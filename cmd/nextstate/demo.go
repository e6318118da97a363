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

// runDemo plays the demo: a server on a loopback port with a client over
// WebSocket, a scripted agent over every task, the live event stream, the
// exported trajectories, and the report printed to out.
func runDemo(ctx context.Context, out io.Writer, f demoFlags) error {
	begin := time.Now()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	dir, removeDir, err := demoDataDir(f.dataDir)
	if err != nil {
		return err
	}
	defer removeDir()
	suites, local, sweSkip := demoSuites(ctx)
	url, stop, err := startDemoServer(ctx, dir, suites)
	if err != nil {
		return err
	}
	defer stop()
	rep := DemoReport{Server: url, DataDir: dir, EventsByType: map[string]int{}}

	c, err := client.Dial(ctx, url)
	if err != nil {
		return err
	}
	defer c.Close()
	stream, err := followDemoEvents(ctx, c, rep.EventsByType)
	if err != nil {
		return err
	}
	if err := playDemoTasks(ctx, c, f.episodes, local, sweSkip, &rep); err != nil {
		return err
	}
	if err := stream.catchUp(ctx, c); err != nil {
		return err
	}

	// Stop the server (flushing the store), then export the trajectories
	// as a trainer would read them.
	c.Close()
	if err := stop(); err != nil {
		return fmt.Errorf("server shutdown: %w", err)
	}
	n, sample, err := exportDemo(ctx, dir)
	if err != nil {
		return err
	}
	rep.Exported = n
	rep.Seconds = time.Since(begin).Seconds()
	if f.asJSON {
		return printJSON(out, rep)
	}
	printDemoReport(out, rep, sample)
	return nil
}

// demoDataDir returns the demo's store directory: dir when set, else a new
// temporary one. remove deletes the temporary one and does nothing for dir.
func demoDataDir(dir string) (_ string, remove func(), _ error) {
	if dir != "" {
		return dir, func() {}, nil
	}
	d, err := os.MkdirTemp("", "nextstate-demo-")
	if err != nil {
		return "", nil, err
	}
	return d, func() { os.RemoveAll(d) }, nil
}

// demoSuites builds the demo's SWE instances from real module releases
// before the server starts, so that they are served as a suite. local holds
// the suite's tasks by id, for their oracles (policyFor); when the build
// fails, skip names swe-v1 with the reason and there is no suite.
func demoSuites(ctx context.Context) (suites []*gym.Suite, local map[string]*gym.Task, skip string) {
	local = map[string]*gym.Task{}
	sweSuite, err := demoSWESuite(ctx, os.Stderr)
	if err != nil {
		return nil, local, swe.KindName + " (" + clip(err.Error(), 160) + ")"
	}
	for i := range sweSuite.Tasks {
		local[sweSuite.Tasks[i].ID] = &sweSuite.Tasks[i]
	}
	return []*gym.Suite{sweSuite}, local, ""
}

// startDemoServer starts a server on dir and suites, serving on a loopback
// port, and returns its WebSocket URL. stop shuts it down, within 30
// seconds, and waits until it has stopped serving; it returns the shutdown
// error the first time and nil after.
func startDemoServer(ctx context.Context, dir string, suites []*gym.Suite) (url string, stop func() error, err error) {
	srv, err := server.New(server.Config{DataDir: dir, Suites: suites})
	if err != nil {
		return "", nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		srv.Shutdown(ctx)
		return "", nil, err
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	stopped := false
	stop = func() error {
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
	return "ws://" + ln.Addr().String(), stop, nil
}

// demoStream follows the live event stream of the demo's run, as a trainer
// would, counting the events by type. Its goroutine ends when the
// subscription does: at catchUp, or when the client closes.
type demoStream struct {
	sub      *client.Subscription
	streamed sync.WaitGroup
	seen     atomic.Int64 // the seq of the last event received
}

// followDemoEvents subscribes to the demo's run and counts each event into
// byType until the stream stops.
func followDemoEvents(ctx context.Context, c *client.Client, byType map[string]int) (*demoStream, error) {
	sub, err := c.Subscribe(ctx, wire.SubscribeParams{Run: "demo", AfterSeq: -1})
	if err != nil {
		return nil, err
	}
	s := &demoStream{sub: sub}
	s.streamed.Add(1)
	go func() {
		defer s.streamed.Done()
		for ev := range sub.C() {
			byType[string(ev.Type)]++
			s.seen.Store(ev.Seq)
		}
	}()
	return s, nil
}

// catchUp waits until the stream has caught up with the store, then stops
// it and waits for its goroutine, so the counts are final.
func (s *demoStream) catchUp(ctx context.Context, c *client.Client) error {
	info, err := c.ServerInfo(ctx)
	if err != nil {
		return err
	}
	if err := pollUntil(ctx, func() bool { return s.seen.Load() >= info.LastSeq }); err != nil {
		return fmt.Errorf("the event stream did not catch up: %w", err)
	}
	s.sub.Close()
	s.streamed.Wait()
	return nil
}

// playDemoTasks plays every task the server lists that has a scripted
// policy, up to episodes episodes each (seeds 1..N, fewer for the kinds in
// demoEpisodes), and adds a row per task played, the steps and the sorted
// skipped kinds to rep. sweSkip, when set, is a skipped kind already known.
func playDemoTasks(ctx context.Context, c *client.Client, episodes int, local map[string]*gym.Task, sweSkip string, rep *DemoReport) error {
	tasks, err := c.Tasks(ctx, "", "")
	if err != nil {
		return err
	}
	d := &demoPlayer{c: c, local: local, episodes: episodes,
		skipped: map[string]bool{}, unavailable: map[string]error{}, started: map[string]bool{}}
	if sweSkip != "" {
		d.skipped[sweSkip] = true
	}
	for _, t := range tasks {
		if !d.runnable(ctx, t) {
			continue
		}
		row, steps, err := d.playTask(ctx, t)
		if err != nil {
			return err
		}
		if row.Episodes == 0 {
			continue
		}
		rep.Steps += steps
		rep.Rows = append(rep.Rows, row)
	}
	for k := range d.skipped {
		rep.Skipped = append(rep.Skipped, k)
	}
	sort.Strings(rep.Skipped)
	return nil
}

// demoPlayer plays the demo's tasks one by one and remembers, across them,
// which kinds cannot run here and why.
type demoPlayer struct {
	c           *client.Client
	local       map[string]*gym.Task // the demo's own tasks, for policyFor
	episodes    int
	skipped     map[string]bool  // skipped kinds, each with its reason when known
	unavailable map[string]error // kinds checked for availability: nil when they run here
	started     map[string]bool  // kinds that ran an episode
}

// runnable says whether t can be played: its kind has a scripted policy,
// says it can run here (availability, asked once a kind) and has not
// failed to start an episode. A kind that cannot is added to skipped.
func (d *demoPlayer) runnable(ctx context.Context, t gym.Task) bool {
	first, ok := policyFor(t, d.local)
	if !ok {
		d.skipped[t.Env] = true
		return false
	}
	if a, ok := first.(availability); ok {
		err, seen := d.unavailable[t.Env]
		if !seen {
			err = a.available(ctx)
			d.unavailable[t.Env] = err
		}
		if err != nil {
			d.skipped[t.Env+" ("+err.Error()+")"] = true
			return false
		}
	}
	return d.unavailable[t.Env] == nil
}

// playTask plays t's episodes, each with a fresh policy, and returns its
// row and the steps played. An infrastructure error before the kind's
// first episode ran marks the kind unavailable and skipped, and ends the
// task with the episodes played (none); any other error ends the demo.
func (d *demoPlayer) playTask(ctx context.Context, t gym.Task) (row DemoRow, steps int, err error) {
	row = DemoRow{Task: t.ID, Env: t.Env}
	var ret, sum float64
	episodes := d.episodes
	if n, ok := demoEpisodes[t.Env]; ok {
		episodes = min(episodes, n)
	}
	for seed := 1; seed <= episodes; seed++ {
		p, _ := policyFor(t, d.local)
		r, n, term, err := playEpisode(ctx, d.c, t, int64(seed), p)
		var we *wire.Error
		if errors.As(err, &we) && we.Code == wire.CodeInfra && !d.started[t.Env] {
			// The kind cannot run here (no browser, no X server):
			// say so and go on with the other kinds.
			d.unavailable[t.Env] = err
			d.skipped[t.Env+" ("+clip(err.Error(), 160)+")"] = true
			break
		}
		d.started[t.Env] = true
		if err != nil {
			return row, 0, fmt.Errorf("task %s seed %d: %w", t.ID, seed, err)
		}
		row.Episodes++
		ret += r
		sum += float64(n)
		if term {
			row.Terminated++
		} else {
			row.Truncated++
		}
	}
	if row.Episodes > 0 {
		row.MeanReturn, row.MeanSteps = ret/float64(row.Episodes), sum/float64(row.Episodes)
	}
	return row, int(sum), nil
}

// exportDemo exports the demo's run from the store in dir, which the
// server has released, as JSON Lines, and returns how many episodes it
// wrote and the first line.
func exportDemo(ctx context.Context, dir string) (episodes int, first []byte, err error) {
	st, err := store.OpenReadOnly(dir)
	if err != nil {
		return 0, nil, err
	}
	var buf bytes.Buffer
	err = st.Export(ctx, &buf, store.Filter{Run: "demo"}, "jsonl")
	st.Close()
	if err != nil {
		return 0, nil, err
	}
	first, _, _ = bytes.Cut(buf.Bytes(), []byte("\n"))
	return bytes.Count(buf.Bytes(), []byte("\n")), first, nil
}

// printDemoReport prints rep as text to out, with sample, the first
// exported episode, clipped.
func printDemoReport(out io.Writer, rep DemoReport, sample []byte) {
	fmt.Fprintf(out, "nextstate demo: a scripted agent on %s (store %s)\n\n", rep.Server, rep.DataDir)
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

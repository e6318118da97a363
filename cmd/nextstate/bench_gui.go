package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/nextstate-rl/nextstate/envs/gui/web"
	"github.com/nextstate-rl/nextstate/gym"
)

// desktopKind is the desktop GUI kind, used by name only: it is measured
// when compiled in.
const desktopKind = "desktop-v1"

type benchGUIFlags struct {
	kind                  string
	steps, sessions, warm int
	webTask, desktopTask  string
	settings              []string
	timeout               time.Duration
	asJSON                bool
}

// GUIBenchReport is what `bench gui` measures; --json prints it.
// Latencies are in milliseconds.
type GUIBenchReport struct {
	Kinds []GUIKindBench `json:"kinds"`
}

// GUIKindBench is one kind's part of the report.
type GUIKindBench struct {
	Kind    string `json:"kind"`
	Skipped string `json:"skipped,omitempty"`
	Task    string `json:"task,omitempty"`
	Action  string `json:"action,omitempty"` // the action each step sends
	Steps   int    `json:"steps,omitempty"`
	// ColdCreate is the first session's create, which starts the kind's
	// browser or X server.
	ColdCreate float64 `json:"cold_create_ms"`
	// Create is a later session's create: its env, the first reset.
	Create Percentiles `json:"create_ms"`
	// Reset is a reset of a live session.
	Reset Percentiles `json:"reset_ms"`
	// Step is a step: the action and the observation (a screenshot).
	Step Percentiles `json:"step_ms"`
	// StepElements is a step of a session that also lists the elements
	// (web only).
	StepElements *Percentiles `json:"step_elements_ms,omitempty"`
	// Concurrent is --sessions browser sessions stepping at once (web
	// only).
	Concurrent *ConcurrentGUI `json:"concurrent,omitempty"`
}

// ConcurrentGUI is the concurrent-sessions part of a kind's report.
type ConcurrentGUI struct {
	Sessions  int            `json:"sessions"`
	StepsEach int            `json:"steps_each"`
	OK        int            `json:"sessions_ok"`
	Failed    int            `json:"sessions_failed"`
	Create    Percentiles    `json:"create_ms"`
	Step      Percentiles    `json:"step_ms"`
	Seconds   float64        `json:"seconds"`
	Errors    map[string]int `json:"errors,omitempty"`
}

func newBenchGUI() *cobra.Command {
	var f benchGUIFlags
	c := &cobra.Command{
		Use:   "gui",
		Short: "Measure the GUI kinds: step latency (action + screenshot) and concurrent browser sessions",
		Long: `Measure the GUI env kinds in process (a gym.Manager, no network): for the browser
(web-v1) and the desktop (desktop-v1, when compiled in), session create, reset and
step latency p50/p99 over --steps steps of one session, where a step is the action
and the observation that follows it (the page's state and a screenshot); then, for
the browser, --sessions sessions at once, each stepping --steps times, with the
sessions that failed counted.

A browser step is a click on the instruction bar (it ends nothing); a desktop step
moves the pointer. An episode that ends anyway is reset (untimed). The first
--warm steps of the latency session are not counted.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), f.timeout)
			defer cancel()
			return runBenchGUI(ctx, cmd.OutOrStdout(), f)
		},
	}
	fl := c.Flags()
	fl.StringVar(&f.kind, "kind", "all", "which GUI kinds: web, desktop or all")
	fl.IntVar(&f.steps, "steps", 50, "steps per session")
	fl.IntVar(&f.sessions, "sessions", 16, "concurrent browser sessions (0: none)")
	fl.IntVar(&f.warm, "warm", 3, "steps of the latency session not counted")
	fl.StringVar(&f.webTask, "web-task", "web-click-button", "the browser's task")
	fl.StringVar(&f.desktopTask, "desktop-task", "", "the desktop's task (default: its first built-in task)")
	fl.StringArrayVar(&f.settings, "set", nil, "a setting for env kinds, name=value (repeatable), such as web.sessions_per_browser=4")
	fl.DurationVar(&f.timeout, "timeout", 10*time.Minute, "bound on the whole benchmark")
	fl.BoolVar(&f.asJSON, "json", false, "print JSON")
	return c
}

func runBenchGUI(ctx context.Context, out io.Writer, f benchGUIFlags) error {
	if f.steps < 1 || f.sessions < 0 || f.warm < 0 {
		return errors.New("--steps must be positive, --sessions and --warm not negative")
	}
	var kinds []string
	switch f.kind {
	case "web":
		kinds = []string{web.KindName}
	case "desktop":
		kinds = []string{desktopKind}
	case "all":
		kinds = []string{web.KindName, desktopKind}
	default:
		return fmt.Errorf("--kind %q: want web, desktop or all", f.kind)
	}
	settings := gym.Settings{}
	for _, kv := range f.settings {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return fmt.Errorf("--set %q: want name=value", kv)
		}
		settings[k] = v
	}
	m := gym.NewManager(gym.Config{Settings: settings, Logger: slog.New(slog.DiscardHandler),
		Limits: gym.Limits{MaxSteps: 1 << 20}})
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		m.Shutdown(sctx)
	}()
	var rep GUIBenchReport
	for _, k := range kinds {
		kb, err := benchGUIKind(ctx, m, k, f)
		if err != nil {
			return fmt.Errorf("%s: %w", k, err)
		}
		rep.Kinds = append(rep.Kinds, kb)
	}
	if f.asJSON {
		return printJSON(out, rep)
	}
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	for _, k := range rep.Kinds {
		if k.Skipped != "" {
			fmt.Fprintf(w, "%s\tskipped: %s\n", k.Kind, k.Skipped)
			continue
		}
		fmt.Fprintf(w, "%s\ttask %s, action %s, %d steps\n", k.Kind, k.Task, k.Action, k.Steps)
		fmt.Fprintf(w, "  measure (ms)\tp50\tp99\n")
		fmt.Fprintf(w, "  first session create\t%.1f\n", k.ColdCreate)
		fmt.Fprintf(w, "  session create\t%.1f\t%.1f\n", k.Create.P50, k.Create.P99)
		fmt.Fprintf(w, "  reset\t%.1f\t%.1f\n", k.Reset.P50, k.Reset.P99)
		fmt.Fprintf(w, "  step (action + screenshot)\t%.1f\t%.1f\n", k.Step.P50, k.Step.P99)
		if k.StepElements != nil {
			fmt.Fprintf(w, "  step with the element list\t%.1f\t%.1f\n", k.StepElements.P50, k.StepElements.P99)
		}
		if c := k.Concurrent; c != nil {
			fmt.Fprintf(w, "  concurrent sessions\t%d ok, %d failed of %d (%d steps each, %.1fs)\n", c.OK, c.Failed, c.Sessions, c.StepsEach, c.Seconds)
			fmt.Fprintf(w, "    create under load\t%.1f\t%.1f\n", c.Create.P50, c.Create.P99)
			fmt.Fprintf(w, "    step under load\t%.1f\t%.1f\n", c.Step.P50, c.Step.P99)
			for e, n := range c.Errors {
				fmt.Fprintf(w, "    error\t%d × %s\n", n, e)
			}
		}
	}
	return w.Flush()
}

// benchGUIKind measures one kind.
func benchGUIKind(ctx context.Context, m *gym.Manager, kind string, f benchGUIFlags) (GUIKindBench, error) {
	kb := GUIKindBench{Kind: kind}
	spec, err := gym.Lookup(kind)
	if err != nil {
		kb.Skipped = "not compiled into this binary"
		return kb, nil
	}
	taskID := f.webTask
	if kind != web.KindName {
		taskID = f.desktopTask
	}
	var task *gym.Task
	for i := range spec.Tasks {
		if taskID == "" || spec.Tasks[i].ID == taskID {
			task = &spec.Tasks[i]
			break
		}
	}
	if task == nil {
		if taskID == "" {
			return kb, errors.New("the kind has no built-in task: name one")
		}
		return kb, fmt.Errorf("no built-in task %q", taskID)
	}
	kb.Task, kb.Steps = task.ID, f.steps
	t := *task // with no step limit in the way
	t.Limits.MaxSteps = 1 << 20
	task = &t
	var opts gym.Options
	if kind == web.KindName {
		// The page's clock must not end the episode mid-measure.
		opts = gym.Options{"episode_ms": web.MaxEpisodeMS}
	}
	action := func(i int) gym.Action { // web: a click on the instruction bar
		x, y := 20+i%120, 20
		return gym.Action{Parts: []gym.Part{{Type: gym.PartGUIAction, GUIAction: &gym.GUIAction{Action: "click", X: &x, Y: &y}}}}
	}
	kb.Action = "click on the instruction bar"
	if kind != web.KindName {
		kb.Action = "move the pointer"
		action = func(i int) gym.Action {
			x, y := 10+i%2*40, 10+i%2*40
			return gym.Action{Parts: []gym.Part{{Type: gym.PartGUIAction, GUIAction: &gym.GUIAction{Action: "move", X: &x, Y: &y}}}}
		}
	}

	// Session start: the first (which starts the kind's browser or X
	// server), then warm ones.
	var creates, resets []time.Duration
	for i := range 6 {
		t0 := time.Now()
		s, _, err := m.Create(ctx, gym.CreateRequest{Task: task, Seed: int64(i), Options: opts, Run: "bench-gui"})
		if err != nil {
			return kb, err
		}
		d := time.Since(t0)
		if err := s.Close(ctx); err != nil {
			return kb, err
		}
		if i == 0 {
			kb.ColdCreate = float64(d.Microseconds()) / 1000
		} else {
			creates = append(creates, d)
		}
	}
	kb.Create = percentiles([][]time.Duration{creates})

	// Latency: one session, with and (web) without the element list.
	run := func(opts gym.Options) ([]time.Duration, error) {
		s, _, err := m.Create(ctx, gym.CreateRequest{Task: task, Seed: 1, Options: opts, Run: "bench-gui"})
		if err != nil {
			return nil, err
		}
		defer s.Close(context.Background())
		for i := range 5 {
			t0 := time.Now()
			if _, err := s.Reset(ctx, nil, int64(i), opts); err != nil {
				return nil, err
			}
			resets = append(resets, time.Since(t0))
		}
		return stepSession(ctx, s, opts, f.steps+f.warm, action, f.warm)
	}
	lat, err := run(opts)
	if err != nil {
		return kb, err
	}
	kb.Step = percentiles([][]time.Duration{lat})
	if kind == web.KindName {
		withEls := gym.Options{"elements": true}
		for k, v := range opts {
			withEls[k] = v
		}
		lat, err := run(withEls)
		if err != nil {
			return kb, err
		}
		p := percentiles([][]time.Duration{lat})
		kb.StepElements = &p
	}
	kb.Reset = percentiles([][]time.Duration{resets})

	if kind == web.KindName && f.sessions > 0 {
		kb.Concurrent = benchGUIConcurrent(ctx, m, task, opts, f.sessions, f.steps, action)
	}
	return kb, nil
}

// stepSession steps s n times and returns the latencies after the first
// skip; an episode that ends is reset, untimed.
func stepSession(ctx context.Context, s *gym.Session, opts gym.Options, n int, action func(int) gym.Action, skip int) ([]time.Duration, error) {
	var lat []time.Duration
	for i := range n {
		t0 := time.Now()
		r, err := s.Step(ctx, "", action(i))
		d := time.Since(t0)
		if err != nil {
			return lat, err
		}
		if r.Failure != nil {
			return lat, fmt.Errorf("step %d: %s fault (%s): %s", i+1, r.Failure.Fault, r.Failure.Reason, r.Failure.Message)
		}
		if msg, ok := r.Info["error"]; ok {
			return lat, fmt.Errorf("step %d: the env took the action for a mistake: %v", i+1, msg)
		}
		if i >= skip {
			lat = append(lat, d)
		}
		if r.Terminated || r.Truncated {
			if _, err := s.Reset(ctx, nil, int64(i), opts); err != nil {
				return lat, err
			}
		}
	}
	return lat, nil
}

// benchGUIConcurrent runs sessions at once, each stepping steps times.
func benchGUIConcurrent(ctx context.Context, m *gym.Manager, task *gym.Task, opts gym.Options, sessions, steps int, action func(int) gym.Action) *ConcurrentGUI {
	res := &ConcurrentGUI{Sessions: sessions, StepsEach: steps, Errors: map[string]int{}}
	var mu sync.Mutex
	lat := make([][]time.Duration, sessions)
	creates := make([][]time.Duration, sessions)
	start := time.Now()
	var wg sync.WaitGroup
	for i := range sessions {
		wg.Go(func() {
			err := func() error {
				t0 := time.Now()
				s, _, err := m.Create(ctx, gym.CreateRequest{Task: task, Seed: int64(i), Options: opts, Run: "bench-gui"})
				if err != nil {
					return err
				}
				defer s.Close(context.Background())
				creates[i] = []time.Duration{time.Since(t0)}
				lat[i], err = stepSession(ctx, s, opts, steps, action, 0)
				return err
			}()
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				res.Failed++
				res.Errors[errorClass(err)]++
				return
			}
			res.OK++
		})
	}
	wg.Wait()
	res.Seconds = time.Since(start).Seconds()
	res.Step = percentiles(lat)
	res.Create = percentiles(creates)
	if len(res.Errors) == 0 {
		res.Errors = nil
	}
	return res
}

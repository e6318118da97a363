package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/nextstate-rl/nextstate/agent"
	"github.com/nextstate-rl/nextstate/agent/report"
	"github.com/nextstate-rl/nextstate/agent/rundir"
	"github.com/nextstate-rl/nextstate/client"
	"github.com/nextstate-rl/nextstate/gym"
	"github.com/nextstate-rl/nextstate/rl"
	"github.com/nextstate-rl/nextstate/server"
)

type runFlags struct {
	suites                   []string
	split, tasks             string
	baseURL, model, keyEnv   string
	k, concurrency           int
	out                      string
	oracle                   bool
	maxTurns, budget, maxTok int
	temperature              float64
	serverURL, token         string
	seed                     int64
	settings                 []string
	passThreshold            float64
	runName, systemPrompt    string
	tokenInfo, logLevel      string
	asJSON                   bool
}

func newRun() *cobra.Command {
	var f runFlags
	c := &cobra.Command{
		Use:   "run",
		Short: "Benchmark a model (or the tasks' oracles) on a suite; resumable",
		Long: `Play every task of a suite k times with a model behind an OpenAI-compatible endpoint
(vLLM, SGLang, OpenAI, ...) and write a run directory: results.jsonl (one row per trial),
trajectories/, blobs/, run.json, report.md and report.html with pass@1 and unbiased pass@k.

--suite is a task file or directory (as serve --tasks reads), or an env kind's name
(web-v1, bfcl-v1, ...) for its built-in tasks; it may be given more than once. Sessions
run on a server started in this process (its store in OUT/store) unless --server names
a running one. --oracle plays the tasks' reference solutions instead of a model, to check
a suite before anyone spends tokens.

Rerunning the same command resumes: trials already passed, failed or ended by an agent
error are kept, infrastructure errors and unfinished trials are run again. SIGINT or
SIGTERM stops the run after the results being written are written.`,
		Example: `  nextstate run --suite bfcl-v1 --oracle --out runs/bfcl-oracle
  nextstate run --suite tasks/ --split test --base-url http://localhost:8000/v1 \
      --model Qwen/Qwen3-8B -k 8 --concurrency 32 --out runs/qwen3-8b`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runRun(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), cmd.Flags().Changed("temperature"), f)
		},
	}
	fl := c.Flags()
	fl.StringArrayVar(&f.suites, "suite", nil, "a task file or directory, or an env kind's name for its built-in tasks (repeatable)")
	fl.StringVar(&f.split, "split", "", "run only this split of the tasks (train, test, ...)")
	fl.StringVar(&f.tasks, "tasks", "", "run only tasks whose id matches one of these comma-separated globs")
	fl.StringVar(&f.baseURL, "base-url", "", "OpenAI-compatible endpoint, such as http://localhost:8000/v1")
	fl.StringVar(&f.model, "model", "", "model name to request")
	fl.StringVar(&f.keyEnv, "api-key-env", "OPENAI_API_KEY", "environment variable holding the endpoint's API key")
	fl.IntVarP(&f.k, "k", "k", 1, "samples per task (a group of k trials; pass@k)")
	fl.IntVar(&f.concurrency, "concurrency", 8, "episodes in flight")
	fl.StringVar(&f.out, "out", "", "run directory (created; an existing one is resumed)")
	fl.BoolVar(&f.oracle, "oracle", false, "play the tasks' oracle solutions instead of a model")
	fl.IntVar(&f.maxTurns, "max-turns", 50, "model calls per episode before it is cut off")
	fl.IntVar(&f.budget, "context-budget", 0, "prompt budget in tokens; over it the middle turns are cut (0: none)")
	fl.IntVar(&f.maxTok, "max-tokens", 0, "cap on each response's tokens (0: the server's default)")
	fl.Float64Var(&f.temperature, "temperature", 1, "sampling temperature (when not given, 1 with -k > 1, else the server's default)")
	fl.StringVar(&f.serverURL, "server", "", "use a running nextstate server (ws:// or http://host:port) instead of one in this process")
	fl.StringVar(&f.token, "token", "", "bearer token for --server (or $NEXTSTATE_TOKEN)")
	fl.Int64Var(&f.seed, "seed", 0, "seeds each trial's reset seed, with the task id and sample index")
	fl.StringArrayVar(&f.settings, "set", nil, "a setting for env kinds, name=value (repeatable; as serve --set)")
	fl.Float64Var(&f.passThreshold, "pass-threshold", 1, "reward a trial must reach to pass")
	fl.StringVar(&f.runName, "run", "", "run label of the sessions on the server (default: the --out directory's name)")
	fl.StringVar(&f.systemPrompt, "system-prompt", "", "system prompt (default: the agent's; @FILE reads a file)")
	fl.StringVar(&f.tokenInfo, "token-info", "auto", "ask the endpoint for token ids and log-probs: auto, on or off")
	fl.StringVar(&f.logLevel, "log-level", "warn", "debug, info, warn or error")
	fl.BoolVar(&f.asJSON, "json", false, "print the summary as JSON")
	return c
}

// RunSummary is what `nextstate run --json` prints.
type RunSummary struct {
	agent.Summary
	Dir        string   `json:"dir"`
	Results    string   `json:"results"`
	ReportMD   string   `json:"report_md,omitempty"`
	ReportHTML string   `json:"report_html,omitempty"`
	Seconds    float64  `json:"seconds"`
	Ran        int      `json:"ran"`
	Resumed    int      `json:"resumed"`
	Skipped    []string `json:"skipped_tasks,omitempty"`
}

func runRun(ctx context.Context, stdout, stderr io.Writer, tempSet bool, f runFlags) error {
	begin := time.Now()
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(f.logLevel)); err != nil {
		return fmt.Errorf("--log-level %q: want debug, info, warn or error", f.logLevel)
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: lvl}))
	switch {
	case len(f.suites) == 0:
		return errors.New("--suite is required: a task file or directory, or an env kind's name such as bfcl-v1")
	case f.out == "":
		return errors.New("--out is required: the run directory")
	case f.k < 1 || f.concurrency < 1:
		return errors.New("-k and --concurrency must be at least 1")
	case !f.oracle && (f.baseURL == "" || f.model == ""):
		return errors.New("--base-url and --model are required (or --oracle to play the tasks' reference solutions)")
	case f.oracle && (f.baseURL != "" || f.model != ""):
		return errors.New("--oracle plays without a model: leave out --base-url and --model")
	}
	tasks, fileSuites, err := loadRunTasks(f.suites, f.split, f.tasks)
	if err != nil {
		return err
	}
	var skipped []string
	if f.oracle {
		tasks, skipped = withOracles(tasks)
		if len(tasks) == 0 {
			return fmt.Errorf("no task of %s has an oracle solution", strings.Join(f.suites, ", "))
		}
		if len(skipped) > 0 {
			fmt.Fprintf(stderr, "nextstate run: %d tasks have no oracle and are left out: %s\n", len(skipped), clip(strings.Join(skipped, ", "), 300))
		}
	}
	var ag *agent.Agent
	if !f.oracle {
		cfg := agent.Config{BaseURL: f.baseURL, APIKey: os.Getenv(f.keyEnv), Model: f.model, MaxTokens: f.maxTok,
			ContextBudget: f.budget, MaxTurns: f.maxTurns, TokenInfo: f.tokenInfo, Logger: log}
		if tempSet || f.k > 1 {
			t := f.temperature
			cfg.Temperature = &t
		}
		if cfg.SystemPrompt, err = readArg(f.systemPrompt); err != nil {
			return fmt.Errorf("--system-prompt: %w", err)
		}
		if ag, err = agent.New(cfg); err != nil {
			return err
		}
	}
	settings, err := parseSettings(f.settings)
	if err != nil {
		return err
	}
	hideFromSandboxes(settings, append([]string{f.out}, f.suites...)...)
	if err := os.MkdirAll(f.out, 0o755); err != nil {
		return err
	}

	// Ctrl-C and SIGTERM end the run; what is being written is finished.
	// Once one came, the signals are let go: a second one ends the process.
	ctx, stopSignals := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stopSignals()
	context.AfterFunc(ctx, stopSignals)

	c, stopServer, err := runServer(ctx, f, fileSuites, settings, log)
	if err != nil {
		return err
	}
	defer stopServer()
	defer c.Close()
	if err := checkKinds(ctx, c, tasks); err != nil {
		return err
	}
	known, err := knownTasks(ctx, c)
	if err != nil {
		return err
	}
	name := f.runName
	if name == "" {
		abs, _ := filepath.Abs(f.out)
		name = filepath.Base(abs)
	}
	info := rundir.RunInfo{Run: name, Suite: f.suites, Split: f.split, Tasks: f.tasks, BaseURL: f.baseURL, Server: f.serverURL}
	if ag != nil {
		info.Temperature, info.MaxTurns, info.ContextBudget = ag.Temperature(), f.maxTurns, f.budget
	}
	prog := newProgressPrinter(stderr)
	r := &agent.Runner{Client: c, Agent: ag, Oracle: f.oracle, Tasks: tasks, Known: known, K: f.k,
		Concurrency: f.concurrency, Seed: f.seed, PassThreshold: f.passThreshold, Dir: f.out, Info: info,
		Progress: prog.update, Logger: log}
	sum, runErr := r.Run(ctx)
	prog.finish()
	c.Close()
	stopServer()

	out := RunSummary{Summary: sum, Dir: f.out, Results: filepath.Join(f.out, "results.jsonl"),
		Seconds: time.Since(begin).Seconds(), Ran: prog.last.Ran, Resumed: prog.last.Resumed, Skipped: skipped}
	if runErr != nil && !errors.Is(runErr, context.Canceled) {
		return runErr
	}
	// The report covers what there is, also after an interruption.
	if err := report.Write(f.out); err != nil {
		fmt.Fprintf(stderr, "nextstate run: writing the report: %v\n", err)
	} else {
		out.ReportMD, out.ReportHTML = filepath.Join(f.out, report.MarkdownFile), filepath.Join(f.out, report.HTMLFile)
	}
	if runErr != nil {
		return fmt.Errorf("%w; run the same command again to resume", runErr)
	}
	if f.asJSON {
		return printJSON(stdout, out)
	}
	who := "model " + f.model
	if f.oracle {
		who = "the tasks' oracles"
	}
	fmt.Fprintf(stdout, "nextstate run: %d trials of %d tasks (k=%d) with %s\n", sum.Trials, sum.Tasks, sum.K, who)
	fmt.Fprintf(stdout, "passed %d, failed %d, agent errors %d, infra errors %d\n", sum.Passed, sum.Failed, sum.AgentErrors, sum.InfraErrors)
	fmt.Fprintf(stdout, "pass@1 %.3f   pass@%d %.3f   mean reward %.3f\n", sum.Pass1, sum.K, sum.PassK, sum.MeanReward)
	if sum.InfraErrors > 0 {
		fmt.Fprintln(stdout, "infrastructure errors are not scored: run the same command again to retry them")
	}
	fmt.Fprintf(stdout, "results: %s\n", out.Results)
	if out.ReportMD != "" {
		fmt.Fprintf(stdout, "report:  %s, %s\n", out.ReportMD, out.ReportHTML)
	}
	fmt.Fprintf(stdout, "%d trials run (%d resumed) in %s\n", out.Ran, out.Resumed, time.Since(begin).Round(time.Millisecond))
	return nil
}

// loadRunTasks reads each --suite (a kind name or a path), keeps the
// split and the ids matching the globs, and returns the tasks and the
// suites read from files (for an in-process server's catalog).
func loadRunTasks(specs []string, split, globs string) ([]gym.Task, []*gym.Suite, error) {
	var pats []string
	for _, g := range strings.Split(globs, ",") {
		if g = strings.TrimSpace(g); g != "" {
			if _, err := path.Match(g, ""); err != nil {
				return nil, nil, fmt.Errorf("--tasks %q: %w", g, err)
			}
			pats = append(pats, g)
		}
	}
	var tasks []gym.Task
	var suites []*gym.Suite
	seen := map[string]string{}
	for _, s := range specs {
		var suite *gym.Suite
		if spec, err := gym.Lookup(s); err == nil {
			suite = &gym.Suite{Name: s, Tasks: slices.Clone(spec.Tasks)}
			for i := range suite.Tasks {
				if suite.Tasks[i].Env == "" {
					suite.Tasks[i].Env = s
				}
			}
		} else if _, statErr := os.Stat(s); statErr == nil {
			if suite, err = gym.LoadSuite(s); err != nil {
				return nil, nil, fmt.Errorf("--suite %s: %w", s, err)
			}
			suites = append(suites, suite)
		} else {
			return nil, nil, fmt.Errorf("--suite %q is neither a task file or directory (%v) nor an env kind (registered: %s)",
				s, statErr, strings.Join(gym.Kinds(), ", "))
		}
		n := 0
		for _, t := range suite.Split(split) {
			if len(pats) > 0 && !slices.ContainsFunc(pats, func(p string) bool { ok, _ := path.Match(p, t.ID); return ok }) {
				continue
			}
			if prev, dup := seen[t.ID]; dup {
				return nil, nil, fmt.Errorf("task id %q is in both %s and %s", t.ID, prev, s)
			}
			seen[t.ID] = s
			tasks = append(tasks, t)
			n++
		}
		if n == 0 {
			return nil, nil, fmt.Errorf("--suite %s has no task in split %q matching --tasks %q (splits: %s)", s, split, globs, strings.Join(suite.Splits(), ", "))
		}
	}
	return tasks, suites, nil
}

// withOracles keeps the tasks whose kind gives an oracle, and names the others.
func withOracles(tasks []gym.Task) (keep []gym.Task, skipped []string) {
	for i := range tasks {
		if _, err := gym.OracleFor(&tasks[i]); err != nil {
			skipped = append(skipped, tasks[i].ID)
			continue
		}
		keep = append(keep, tasks[i])
	}
	return keep, skipped
}

// runServer connects to --server, or starts a server in this process with
// its store in OUT/store and the file suites in its catalog.
func runServer(ctx context.Context, f runFlags, suites []*gym.Suite, settings gym.Settings, log *slog.Logger) (*client.Client, func(), error) {
	return startGym(ctx, gymOptions{serverURL: f.serverURL, token: f.token, dataDir: filepath.Join(f.out, "store"),
		suites: suites, settings: settings, concurrency: f.concurrency}, log)
}

// gymOptions say which gym server startGym connects to or starts.
type gymOptions struct {
	serverURL, token, dataDir string
	suites                    []*gym.Suite
	settings                  gym.Settings
	signals                   rl.FollowerConfig
	concurrency               int
}

// startGym connects to o.serverURL, or starts a server in this process
// with its store in o.dataDir, the file suites in its catalog and the
// signals (judge, reward mix) given; stop shuts it down.
func startGym(ctx context.Context, o gymOptions, log *slog.Logger) (*client.Client, func(), error) {
	if o.serverURL != "" {
		token, err := readToken(o.token, "")
		if err != nil {
			return nil, nil, err
		}
		var opts []client.Opt
		if token != "" {
			opts = append(opts, client.WithToken(token))
		}
		opts = append(opts, client.WithLogger(log))
		dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		c, err := client.Dial(dctx, o.serverURL, opts...)
		if err != nil {
			return nil, nil, err
		}
		return c, func() {}, nil
	}
	if _, ok := o.settings["sandbox"]; !ok {
		o.settings["sandbox"] = "bwrap"
	}
	srv, err := server.New(server.Config{DataDir: o.dataDir, Suites: o.suites, Logger: log, Signals: o.signals,
		Sessions: gym.Config{Settings: o.settings, MaxSessions: max(16384, 2*o.concurrency)}})
	if err != nil {
		return nil, nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		srv.Shutdown(context.Background())
		return nil, nil, err
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		sctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if err := srv.Shutdown(sctx); err != nil {
			log.Warn("nextstate run: server shutdown", "err", err)
		}
		<-served
	}
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	c, err := client.Dial(dctx, "ws://"+ln.Addr().String(), client.WithLogger(log))
	if err != nil {
		stop()
		return nil, nil, err
	}
	return c, stop, nil
}

// parseSettings reads --set's name=value pairs.
func parseSettings(kvs []string) (gym.Settings, error) {
	settings := gym.Settings{}
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--set %q: want name=value", kv)
		}
		settings[k] = v
	}
	return settings, nil
}

// knownTasks is the set of task ids the gym server's catalog lists (those
// sessions are created by id, the others with the task inline).
func knownTasks(ctx context.Context, c *client.Client) (map[string]bool, error) {
	listed, err := c.Tasks(ctx, "", "")
	if err != nil {
		return nil, err
	}
	known := map[string]bool{}
	for _, t := range listed {
		known[t.ID] = true
	}
	return known, nil
}

// checkKinds fails early when the server lacks a kind the tasks need.
func checkKinds(ctx context.Context, c *client.Client, tasks []gym.Task) error {
	envs, err := c.Envs(ctx)
	if err != nil {
		return err
	}
	have := map[string]bool{}
	var names []string
	for _, e := range envs {
		have[e.Name] = true
		names = append(names, e.Name)
	}
	for _, t := range tasks {
		if !have[t.Env] {
			return fmt.Errorf("task %s needs env kind %s, which the server does not have (it has: %s)", t.ID, t.Env, strings.Join(names, ", "))
		}
	}
	return nil
}

// readArg reads "@FILE" as the file's content; anything else is itself.
func readArg(s string) (string, error) {
	if p, ok := strings.CutPrefix(s, "@"); ok {
		b, err := os.ReadFile(p)
		return string(b), err
	}
	return s, nil
}

// progressPrinter shows a run's progress on stderr: a bar redrawn in place
// on a terminal, a line every few seconds otherwise.
type progressPrinter struct {
	w     io.Writer
	tty   bool
	every time.Duration
	shown time.Time
	drawn bool
	last  agent.Progress
}

func newProgressPrinter(w io.Writer) *progressPrinter {
	p := &progressPrinter{w: w, every: 10 * time.Second}
	if f, ok := w.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			p.tty, p.every = true, 100*time.Millisecond
		}
	}
	return p
}

func (p *progressPrinter) update(pr agent.Progress) {
	p.last = pr
	if pr.Done < pr.Total && time.Since(p.shown) < p.every {
		return
	}
	p.shown = time.Now()
	line := progressLine(pr)
	if p.tty {
		fmt.Fprintf(p.w, "\r%s\x1b[K", line)
		p.drawn = true
		return
	}
	fmt.Fprintln(p.w, line)
}

func (p *progressPrinter) finish() {
	if p.drawn {
		fmt.Fprintln(p.w)
	}
}

func progressLine(pr agent.Progress) string {
	const width = 30
	filled := 0
	if pr.Total > 0 {
		filled = pr.Done * width / pr.Total
	}
	rate := 0.0
	if pr.Scored > 0 {
		rate = 100 * float64(pr.Passed) / float64(pr.Scored)
	}
	s := fmt.Sprintf("[%s%s] %d/%d  pass %.1f%%", strings.Repeat("#", filled), strings.Repeat(".", width-filled), pr.Done, pr.Total, rate)
	if pr.Infra > 0 {
		s += fmt.Sprintf("  infra errors %d", pr.Infra)
	}
	if eta := pr.ETA(); pr.Done < pr.Total && eta > 0 {
		s += "  ETA " + eta.Round(time.Second).String()
	}
	return s
}

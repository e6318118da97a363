package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/nextstate-rl/nextstate/gym"
	"github.com/nextstate-rl/nextstate/mcp"
	"github.com/nextstate-rl/nextstate/rl"
	"github.com/nextstate-rl/nextstate/server"
)

type serveFlags struct {
	addr, dataDir, token, tokenFile string
	readyFile, cpuProfile           string
	suites, settings, dockerHosts   []string
	sandbox, baseImage, miniwobDir  string
	maxSessions, gcPercent          int
	idleTTL, drain                  time.Duration
	maxSteps                        int
	stepTimeout, episodeTimeout     time.Duration
	logLevel                        string
	judge                           judgeFlags
	proxy                           proxyFlags
}

// judgeFlags are serve's signal flags: the judge and the reward mix.
type judgeFlags struct {
	url, model, apiKeyEnv, templates, mix string
	votes, concurrency, queue, retries    int
	timeout                               time.Duration
	kinds, runs                           []string
	votesByKind                           map[string]int
	rules                                 bool
}

func newServe() *cobra.Command {
	var f serveFlags
	c := &cobra.Command{
		Use:   "serve",
		Short: "Serve envs to agents over WebSocket and HTTP",
		Long: `Serve envs over WebSocket (JSON-RPC 2.0 at /v1/ws) and HTTP (/v1/...), with /healthz and
Prometheus /metrics, on embedded defaults: the store is SQLite in --data.

With --judge-url, an LLM judge scores every step off the step path (reward events
keyed by the step id, source judge:prm); complete trajectories become training
samples, streamed by events.subscribe {"stream": "samples"} and GET /v1/samples,
and exported by "nextstate export --format samples".

Without a token the server listens only on loopback addresses. SIGTERM or SIGINT
shuts it down gracefully: no new sessions, in-flight steps finish, the store is
flushed and every env is closed, within --drain.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runServe(cmd.Context(), f) },
	}
	fl := c.Flags()
	fl.StringVar(&f.addr, "addr", "127.0.0.1:7070", "listen address")
	fl.StringVar(&f.dataDir, "data", defaultDataDir(), "store directory (events.db, blobs/)")
	fl.StringVar(&f.token, "token", "", "bearer token clients must send (or $NEXTSTATE_TOKEN)")
	fl.StringVar(&f.tokenFile, "token-file", "", "file holding the bearer token")
	fl.StringSliceVar(&f.suites, "tasks", nil, "task suite files or directories to serve (repeatable)")
	fl.StringVar(&f.sandbox, "sandbox", "bwrap", "sandbox backend for terminal and SWE envs: bwrap or docker")
	fl.StringArrayVar(&f.dockerHosts, "docker-host", nil, "docker engine to place sandboxes on (repeatable: unix://, tcp://, ssh://); default $DOCKER_HOST or the local socket")
	fl.StringVar(&f.baseImage, "base-image", "", "image that replaces a task's FROM image when that is not present (default nextstate/base)")
	fl.StringVar(&f.miniwobDir, "miniwob-dir", "", "serve the real MiniWoB++ suite: its html/ folder (miniwob/*.html beside core/); its pages become web-v1 tasks")
	fl.StringArrayVar(&f.settings, "set", nil, "a setting for env kinds, name=value (repeatable; see docs/architecture.md)")
	fl.IntVar(&f.maxSessions, "max-sessions", 16384, "live session cap; past it session.create answers over-capacity with a retry hint")
	fl.DurationVar(&f.idleTTL, "idle-ttl", 10*time.Minute, "close sessions with no request for this long")
	fl.IntVar(&f.maxSteps, "max-steps", 1000, "default step limit of an episode")
	fl.DurationVar(&f.stepTimeout, "step-timeout", time.Minute, "default deadline of one step")
	fl.DurationVar(&f.episodeTimeout, "episode-timeout", time.Hour, "default deadline of one episode")
	fl.DurationVar(&f.drain, "drain", 30*time.Second, "how long shutdown waits for in-flight work")
	fl.StringVar(&f.logLevel, "log-level", "info", "debug, info, warn or error")
	fl.StringVar(&f.readyFile, "ready-file", "", "write the bound address (host:port) to this file once listening")
	f.proxy.register(fl)
	fl.StringVar(&f.cpuProfile, "cpu-profile", "", "write a CPU profile of the whole run to this file (for go tool pprof)")
	fl.IntVar(&f.gcPercent, "gc-percent", defaultGCPercent, gcPercentUsage)
	f.judge.register(fl, "mix")
	return c
}

// register adds the judge's flags to fl; mixFlag names the reward mix's
// (serve's --mix; train's --reward-mix, its --mix weighing the suites).
func (j *judgeFlags) register(fl *pflag.FlagSet, mixFlag string) {
	fl.BoolVar(&j.rules, "judge-rules", false, "judge steps with the env kinds' own step rules (a process reward model in Go, such as guess-v1's) instead of an LLM")
	fl.StringVar(&j.url, "judge-url", "", "judge steps with the LLM at this OpenAI-compatible base URL (http://host:8000/v1); none by default")
	fl.StringVar(&j.model, "judge-model", "", "the judge model's name at --judge-url")
	fl.StringVar(&j.apiKeyEnv, "judge-api-key-env", "", "name of the environment variable holding the judge's API key (none by default)")
	fl.IntVar(&j.votes, "judge-votes", 0, "votes per judged step, m (default 3)")
	fl.StringToIntVar(&j.votesByKind, "judge-votes-by-kind", nil, "votes per prompt kind, overriding --judge-votes: terminal=5,gui=3 (kinds: terminal, gui, swe, toolcall, chat, default)")
	fl.IntVar(&j.concurrency, "judge-concurrency", 0, "steps judged at once (default 4)")
	fl.IntVar(&j.queue, "judge-queue", 0, "steps that may wait for the judge; past it a step is recorded as not judged (default 256)")
	fl.DurationVar(&j.timeout, "judge-timeout", 0, "bound of each judge call (default 2m)")
	fl.IntVar(&j.retries, "judge-retries", 0, "retries of a failed judge call (default 2; -1 for none)")
	fl.StringVar(&j.templates, "judge-templates", "", "directory of judge prompt templates replacing the built-in ones (terminal.tmpl, gui.tmpl, chat.tmpl for the proxy, ...)")
	fl.StringSliceVar(&j.kinds, "judge-kinds", nil, "judge only these env kinds (default all)")
	fl.StringSliceVar(&j.runs, "judge-runs", nil, "judge only these runs (default all)")
	fl.StringVar(&j.mix, mixFlag, "", `reward mix where a suite sets none: "c=1,gamma=1,outcome=identity" (outcome: identity or 2acc-1)`)
}

// signalsConfig builds the server's signals config from the flags.
func signalsConfig(j judgeFlags) (rl.FollowerConfig, error) {
	var cfg rl.FollowerConfig
	if j.mix != "" {
		m, err := rl.ParseMix(j.mix)
		if err != nil {
			return cfg, fmt.Errorf("--mix: %w", err)
		}
		cfg.Mix = &m
	}
	if j.rules {
		if j.url != "" {
			return cfg, errors.New("--judge-rules and --judge-url: choose one judge")
		}
		cfg.Scorer, cfg.Judge.Model = rl.RuleJudge{}, rl.RuleJudgeModel
		cfg.Concurrency, cfg.Queue, cfg.Kinds, cfg.Runs = j.concurrency, j.queue, j.kinds, j.runs
		return cfg, nil
	}
	if j.url == "" {
		if j.model != "" || j.apiKeyEnv != "" || j.templates != "" {
			return cfg, errors.New("--judge-model, --judge-api-key-env and --judge-templates need --judge-url, the judge's endpoint")
		}
		return cfg, nil
	}
	var err error
	if cfg.Judge, err = judgeConfig(j); err != nil {
		return cfg, err
	}
	cfg.Concurrency, cfg.Queue, cfg.Kinds, cfg.Runs = j.concurrency, j.queue, j.kinds, j.runs
	return cfg, nil
}

// judgeConfig is the judge the flags name (j.url is set), for the
// server's signals and for the proxy.
func judgeConfig(j judgeFlags) (rl.JudgeConfig, error) {
	jc := rl.JudgeConfig{Endpoint: j.url, Model: j.model, Votes: j.votes, VotesByKind: j.votesByKind,
		Timeout: gym.Duration(j.timeout), Retries: j.retries, Templates: j.templates}
	if j.apiKeyEnv != "" {
		key, ok := os.LookupEnv(j.apiKeyEnv)
		if !ok || key == "" {
			return jc, fmt.Errorf("--judge-api-key-env %s: that environment variable is not set", j.apiKeyEnv)
		}
		jc.APIKey = key
	}
	return jc, nil
}

func runServe(ctx context.Context, f serveFlags) error {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(f.logLevel)); err != nil {
		return fmt.Errorf("--log-level %q: want debug, info, warn or error", f.logLevel)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lvl}))
	if err := setGCPercent(f.gcPercent); err != nil {
		return err
	}
	if f.cpuProfile != "" {
		pf, err := os.Create(f.cpuProfile)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(pf); err != nil {
			return err
		}
		defer func() { pprof.StopCPUProfile(); pf.Close() }()
	}
	token, err := readToken(f.token, f.tokenFile)
	if err != nil {
		return err
	}
	var suites []*gym.Suite
	paths := f.suites
	if f.miniwobDir != "" {
		paths = append(paths, f.miniwobDir)
	}
	for _, p := range paths {
		s, err := gym.LoadSuite(p)
		if err != nil {
			return fmt.Errorf("loading tasks: %w", err)
		}
		suites = append(suites, s)
	}
	settings, err := kindSettings(f)
	if err != nil {
		return err
	}
	sig, err := signalsConfig(f.judge)
	if err != nil {
		return err
	}
	srv, err := server.New(server.Config{
		DataDir: f.dataDir, Token: token, Suites: suites, Logger: log, Signals: sig,
		Sessions: gym.Config{
			MaxSessions: f.maxSessions, IdleTTL: f.idleTTL, Settings: settings,
			Limits: gym.Limits{MaxSteps: f.maxSteps, StepTimeout: gym.Duration(f.stepTimeout), EpisodeTimeout: gym.Duration(f.episodeTimeout)},
		},
	})
	if err != nil {
		return err
	}
	// Every session whose kind lists tools is also an MCP server.
	hub := mcp.New(srv, mcp.Config{SessionTimeout: f.idleTTL, Version: server.Version, Logger: log})
	srv.Mount([]string{mcp.Pattern}, hub, hub.Close)
	if f.proxy.upstream != "" {
		if err := mountProxy(srv, f.dataDir, f.proxy, f.judge); err != nil {
			srv.Shutdown(context.Background())
			return fmt.Errorf("--proxy-upstream: %w", err)
		}
	}
	ln, err := srv.Listen(f.addr)
	if err != nil {
		srv.Shutdown(context.Background())
		return err
	}
	log.Info("serving", "addr", ln.Addr().String(), "data", f.dataDir, "envs", gym.Kinds(), "auth", token != "",
		"judge", f.judge.url != "")
	if err := writeReadyFile(f.readyFile, ln.Addr().String()); err != nil {
		ln.Close()
		srv.Shutdown(context.Background())
		return err
	}
	return serveUntilSignal(ctx, log, srv, ln, f.drain)
}

// servable is what serveUntilSignal runs: nextstate's server, the model
// server, or an http.Server.
type servable interface {
	Serve(ln net.Listener) error
	Shutdown(ctx context.Context) error
}

// serveUntilSignal serves on ln until SIGINT or SIGTERM (or ctx ends), then
// shuts srv down gracefully, waiting at most drain.
func serveUntilSignal(ctx context.Context, log *slog.Logger, srv servable, ln net.Listener, drain time.Duration) error {
	sig, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		if !errors.Is(err, http.ErrServerClosed) {
			srv.Shutdown(context.Background())
			return err
		}
	case <-sig.Done():
		log.Info("shutting down", "drain", drain)
	}
	sctx, cancel := context.WithTimeout(context.Background(), drain)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	log.Info("stopped")
	return nil
}

// kindSettings gathers the settings env kinds read (gym.Configurer).
func kindSettings(f serveFlags) (gym.Settings, error) {
	s := gym.Settings{"sandbox": f.sandbox}
	if len(f.dockerHosts) > 0 {
		s["docker.hosts"] = strings.Join(f.dockerHosts, ",")
	}
	if f.baseImage != "" {
		s["base_image"] = f.baseImage
	}
	if f.miniwobDir != "" {
		s["web.miniwob_dir"] = f.miniwobDir
	}
	for _, kv := range f.settings {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--set %q: want name=value", kv)
		}
		s[k] = v
	}
	hideFromSandboxes(s, append([]string{f.dataDir, f.miniwobDir, f.tokenFile}, f.suites...)...)
	return s, nil
}

// hideFromSandboxes adds paths (the served task folders, the store, the
// token file) to the "sandbox.hide" setting, which keeps them out of every
// sandbox's view of the host (package envs/internal/sbopen; bwrap masks
// them). A path given with --set sandbox.hide stays.
func hideFromSandboxes(s gym.Settings, paths ...string) {
	list := filepath.SplitList(s["sandbox.hide"])
	for _, p := range paths {
		if p == "" {
			continue
		}
		if abs, err := filepath.Abs(p); err == nil {
			list = append(list, abs)
		}
	}
	s["sandbox.hide"] = strings.Join(list, string(filepath.ListSeparator))
}

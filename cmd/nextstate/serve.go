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
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/nextstate-rl/nextstate/gym"
	"github.com/nextstate-rl/nextstate/server"
)

type serveFlags struct {
	addr, dataDir, token, tokenFile string
	readyFile, cpuProfile           string
	suites, settings, dockerHosts   []string
	sandbox, baseImage, miniwobDir  string
	maxSessions                     int
	idleTTL, drain                  time.Duration
	maxSteps                        int
	stepTimeout, episodeTimeout     time.Duration
	logLevel                        string
}

func newServe() *cobra.Command {
	var f serveFlags
	c := &cobra.Command{
		Use:   "serve",
		Short: "Serve envs to agents over WebSocket and HTTP",
		Long: `Serve envs over WebSocket (JSON-RPC 2.0 at /v1/ws) and HTTP (/v1/...), with /healthz and
Prometheus /metrics, on embedded defaults: the store is SQLite in --data.

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
	fl.StringVar(&f.cpuProfile, "cpu-profile", "", "write a CPU profile of the whole run to this file (for go tool pprof)")
	return c
}

func runServe(ctx context.Context, f serveFlags) error {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(f.logLevel)); err != nil {
		return fmt.Errorf("--log-level %q: want debug, info, warn or error", f.logLevel)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lvl}))
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
	srv, err := server.New(server.Config{
		DataDir: f.dataDir, Token: token, Suites: suites, Logger: log,
		Sessions: gym.Config{
			MaxSessions: f.maxSessions, IdleTTL: f.idleTTL, Settings: settings,
			Limits: gym.Limits{MaxSteps: f.maxSteps, StepTimeout: gym.Duration(f.stepTimeout), EpisodeTimeout: gym.Duration(f.episodeTimeout)},
		},
	})
	if err != nil {
		return err
	}
	ln, err := srv.Listen(f.addr)
	if err != nil {
		srv.Shutdown(context.Background())
		return err
	}
	log.Info("serving", "addr", ln.Addr().String(), "data", f.dataDir, "envs", gym.Kinds(), "auth", token != "")
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
	return s, nil
}

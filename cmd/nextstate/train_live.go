package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nextstate-rl/nextstate/live"
	"github.com/nextstate-rl/nextstate/proxy"
	"github.com/nextstate-rl/nextstate/rl"
	"github.com/nextstate-rl/nextstate/store"
	"github.com/nextstate-rl/nextstate/train"
	"github.com/nextstate-rl/nextstate/trainer"
	"github.com/nextstate-rl/nextstate/trainer/cpu"
	"github.com/nextstate-rl/nextstate/trainer/service"
)

// liveFlags are train's settings for --proxy.
type liveFlags struct {
	listen, allowUsers, allowFile, readyFile string
	batch                                    int
	flushAfter                               time.Duration
	sessionRate, userRate                    float64
	perUser                                  bool
}

// liveStatus is the JSON of --proxy's /v1/live: whether every turn
// answered so far has been judged and trained on, and each trainer's
// status (by user with --per-user-lora; "" for the shared policy).
type liveStatus struct {
	Idle     bool                   `json:"idle"`
	Judging  int64                  `json:"judging"`
	Proxy    proxy.Stats            `json:"proxy"`
	Trainers map[string]live.Status `json:"trainers"`
}

// livePolicy is what --proxy trains: one trainer per policy, and the
// OpenAI endpoint the proxy forwards to.
type livePolicy struct {
	upstream string
	apis     map[string]service.API // by user; "" is the shared policy
	close    func()
}

// runTrainProxy is `nextstate train --proxy ADDR`: the proxy on ADDR in
// front of the policy this process trains, its judged samples trained on
// as they come.
func runTrainProxy(ctx context.Context, stdout, stderr io.Writer, f trainFlags) error {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(f.logLevel)); err != nil {
		return fmt.Errorf("--log-level %q: want debug, info, warn or error", f.logLevel)
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: lvl}))
	lf := f.live
	allow, err := readAllow(lf.allowUsers, lf.allowFile)
	if err != nil {
		return err
	}
	switch {
	case len(f.suites) > 0:
		return errors.New("--proxy trains on the proxy's conversations: leave --suite out")
	case f.out == "":
		return errors.New("--out is required: the run directory")
	case f.model == "" && f.trainerURL == "":
		return errors.New("--model is required: a Hugging Face Qwen3 folder (or --trainer, a serve-trainer's URL)")
	case lf.perUser && (f.model == "" || f.rank <= 0):
		return errors.New("--per-user-lora needs --model and --lora RANK: each user's adapter is trained over the shared frozen base")
	case lf.perUser && len(allow) == 0:
		return errors.New("--per-user-lora needs --allow-users (or --allow-users-file): the users who get an adapter of their own")
	case lf.batch < 1:
		return fmt.Errorf("--proxy-batch %d: want 1 or more samples per update", lf.batch)
	case f.judge == "" || f.judge == "none":
		return errors.New("--proxy needs a judge: --judge rule (the users' words: thanks, corrections, re-queries), url (--judge-url) or self")
	}
	if err := proxy.CheckListen(lf.listen, false); err != nil {
		return err
	}
	loss, err := lossPreset(f.loss)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(f.out, 0o755); err != nil {
		return err
	}
	pol, err := startLivePolicy(ctx, f, allow, log)
	if err != nil {
		return err
	}
	defer pol.close()

	var judge rl.Scorer
	switch f.judge {
	case "rule":
		judge = proxy.FeedbackJudge{}
	case "self", "url":
		jf := f.judgeF
		if f.judge == "self" {
			jf.url, jf.model = strings.TrimSuffix(pol.upstream, "/v1")+"/reference/v1", modelName(f.name, f.model)
		}
		if judge, err = newJudge(jf); err != nil {
			return err
		}
	default:
		return fmt.Errorf("--judge %q: want rule, self or url", f.judge)
	}
	dataDir := filepath.Join(f.out, "proxy")
	st, err := store.Open(dataDir, store.Options{})
	if err != nil {
		return err
	}
	defer st.Close()
	q, err := proxy.OpenQuarantine(dataDir)
	if err != nil {
		return err
	}
	p, err := proxy.New(proxy.Config{Upstream: pol.upstream, Store: st, Quarantine: q, Judge: judge, AllowUsers: allow,
		SessionRate: lf.sessionRate, UserRate: lf.userRate, Log: log})
	if err != nil {
		return err
	}

	trainers := map[string]*live.Trainer{}
	for user, api := range pol.apis {
		dir := f.out
		if user != "" {
			dir = filepath.Join(f.out, "users", user)
		}
		t, err := live.New(live.Config{Trainer: api, Store: st, User: user, Loss: loss, Estimator: f.estimator,
			CapNegative: f.capNegative, Adam: service.AdamParams{LR: f.lr, WeightDecay: f.weightDecay, MaxGradNorm: f.maxGradNorm},
			Batch: lf.batch, FlushAfter: lf.flushAfter, Dir: dir, Log: log})
		if err != nil {
			return err
		}
		trainers[user] = t
	}
	status := func() liveStatus {
		s := liveStatus{Judging: p.Judging(), Proxy: p.Stats(), Trainers: map[string]live.Status{}}
		s.Idle = s.Judging == 0
		for u, t := range trainers {
			ts := t.Status()
			s.Trainers[u] = ts
			s.Idle = s.Idle && ts.Idle()
		}
		return s
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/live", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(status())
	})
	mux.Handle("/", p)
	ln, err := p.Listen(lf.listen)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 30 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	tctx, cancelTrainers := context.WithCancel(ctx)
	var wg sync.WaitGroup
	errs := make(chan error, len(trainers))
	for u, t := range trainers {
		wg.Go(func() {
			if err := t.Run(tctx); err != nil {
				errs <- fmt.Errorf("trainer %q: %w", u, err)
				stop()
			}
		})
	}
	readyErr := writeReadyFile(lf.readyFile, ln.Addr().String())
	if readyErr != nil {
		stop()
	}
	if info, ierr := pol.any().Info(ctx); ierr == nil {
		fmt.Fprintf(stdout, "nextstate train: %s (%d parameters, %d trained per policy, %d policies) learning from its users at http://%s/v1 (status: /v1/live)\n",
			modelName(f.name, f.model), info.Config.NumParams(), info.Trainable, len(trainers), ln.Addr())
	}
	select {
	case err = <-served:
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = errors.Join(err, readyErr, ignoreClosed(srv.Shutdown(sctx)))
	if cerr := p.Close(sctx); cerr != nil {
		err = errors.Join(err, fmt.Errorf("proxy: judging the queued turns: %w", cerr))
	}
	cancelTrainers()
	wg.Wait()
	close(errs)
	for e := range errs {
		err = errors.Join(err, e)
	}
	for u := range trainers {
		dir := f.out
		if u != "" {
			dir = filepath.Join(f.out, "users", u)
		}
		if rerr := live.WriteReport(dir); rerr != nil {
			err = errors.Join(err, rerr)
		}
	}
	s := status()
	for u, ts := range s.Trainers {
		name := "the policy"
		if u != "" {
			name = "user " + u
		}
		fmt.Fprintf(stdout, "nextstate train: %s: %d updates on %d samples, version %d\n", name, ts.Updates, ts.Trained, ts.Version)
	}
	updates := filepath.Join(f.out, live.UpdatesFile)
	if lf.perUser {
		updates = filepath.Join(f.out, "users", "*", live.UpdatesFile)
	}
	fmt.Fprintf(stdout, "nextstate train: %d requests, %d turns kept for training, %d samples, %d quarantined, %d dropped; updates: %s\n",
		s.Proxy.Requests, s.Proxy.Trained, s.Proxy.Samples, s.Proxy.Quarantined, s.Proxy.Dropped, updates)
	return err
}

func ignoreClosed(err error) error {
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

func (lp *livePolicy) any() service.API {
	for _, a := range lp.apis {
		return a
	}
	return nil
}

// startLivePolicy starts the policies --proxy trains: the shared one
// (startPolicy's), or with --per-user-lora one adapter per allowed user
// over the frozen base, served by user (live.Router) on loopback.
func startLivePolicy(ctx context.Context, f trainFlags, allow []string, log *slog.Logger) (*livePolicy, error) {
	if !f.live.perUser {
		p, err := startPolicy(ctx, f, log)
		if err != nil {
			return nil, err
		}
		return &livePolicy{upstream: p.url, apis: map[string]service.API{"": p.api}, close: p.close}, nil
	}
	m, tok, err := loadTrainable(f.model, cpu.New(), f.rank, f.alpha, f.targets, uint64(f.seed))
	if err != nil {
		return nil, err
	}
	// What was opened, closed in reverse; all of it if starting fails.
	closers := []func(){m.Close}
	closeAll := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	started := false
	defer func() {
		if !started {
			closeAll()
		}
	}()
	name := modelName(f.name, f.model)
	newService := func(mm *trainer.Model, user string) (*service.Service, error) {
		dir := filepath.Join(f.out, "states")
		if user != "" {
			dir = filepath.Join(f.out, "users", user, "states")
		}
		svc, err := service.New(mm, service.Options{Training: trainer.TrainOptions{Seed: uint64(f.seed)},
			Engine: trainer.EngineOptions{MaxBatch: f.maxBatch}, Tokenizer: tok, StateDir: dir, KeepStates: 2})
		if err == nil {
			closers = append(closers, svc.Close)
		}
		return svc, err
	}
	// The base serves everyone without an adapter; no feedback trains it.
	base, err := newService(m, "")
	if err != nil {
		return nil, err
	}
	def, err := train.Handler(base, tok, name, log)
	if err != nil {
		return nil, err
	}
	rt := &live.Router{Users: map[string]http.Handler{}, Default: def}
	apis := map[string]service.API{}
	for _, u := range allow {
		um, err := m.Snapshot(true, true) // the user's adapters, reading the base in place
		if err != nil {
			return nil, err
		}
		closers = append(closers, um.Close)
		svc, err := newService(um, u)
		if err != nil {
			return nil, err
		}
		if rt.Users[u], err = train.Handler(svc, tok, name, log); err != nil {
			return nil, err
		}
		apis[u] = svc
	}
	ps, err := train.ServeHandler(rt)
	if err != nil {
		return nil, err
	}
	closers = append(closers, func() {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		ps.Close(sctx)
	})
	started = true
	return &livePolicy{upstream: ps.URL, apis: apis, close: closeAll}, nil
}

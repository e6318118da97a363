package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/nextstate-rl/nextstate/trainer"
	"github.com/nextstate-rl/nextstate/trainer/cpu"
	"github.com/nextstate-rl/nextstate/trainer/serve"
	"github.com/nextstate-rl/nextstate/trainer/tokenizer"
)

type serveModelFlags struct {
	model, addr, name, readyFile string
	maxBatch, maxQueue, maxCtx   int
	drain                        time.Duration
}

func newServeModel() *cobra.Command {
	var f serveModelFlags
	c := &cobra.Command{
		Use:   "serve-model --model DIR",
		Short: "Serve a local Qwen3 model over an OpenAI-compatible HTTP API",
		Long: `Load a Hugging Face Qwen3 folder (config.json, tokenizer.json, model.safetensors
or its shards; see the trainer package doc for the exact layout) on the CPU trainer
and serve it: POST /v1/chat/completions (tools, tool_calls, logprobs, streaming),
POST /v1/completions, GET /v1/models. Concurrent requests are decoded together.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runServeModel(cmd.Context(), f) },
	}
	fl := c.Flags()
	fl.StringVar(&f.model, "model", "", "model folder (required)")
	fl.StringVar(&f.addr, "addr", "127.0.0.1:8000", "listen address")
	fl.StringVar(&f.name, "name", "", "model id in the API (default: the folder's name)")
	fl.IntVar(&f.maxBatch, "max-batch", 16, "sequences decoded together")
	fl.IntVar(&f.maxQueue, "max-queue", 256, "requests waiting for a slot; more are answered 503")
	fl.IntVar(&f.maxCtx, "max-context", 0, "prompt plus output tokens at most (0: max_position_embeddings)")
	fl.DurationVar(&f.drain, "drain", 30*time.Second, "how long shutdown waits for requests in flight")
	fl.StringVar(&f.readyFile, "ready-file", "", "write the bound address (host:port) to this file once listening")
	c.MarkFlagRequired("model")
	return c
}

func runServeModel(ctx context.Context, f serveModelFlags) error {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	start := time.Now()
	be := cpu.New()
	m, err := trainer.Load(f.model, be)
	if err != nil {
		return err
	}
	tok, err := tokenizer.Load(f.model)
	if err != nil {
		return err
	}
	if tok.VocabSize() > m.Config.VocabSize {
		return fmt.Errorf("%s: the tokenizer has %d tokens, the model's vocab_size is %d", f.model, tok.VocabSize(), m.Config.VocabSize)
	}
	name := f.name
	if name == "" {
		abs, _ := filepath.Abs(f.model)
		name = filepath.Base(abs)
	}
	e := trainer.NewEngine(m, trainer.EngineOptions{MaxBatch: f.maxBatch, MaxQueue: f.maxQueue, MaxContext: f.maxCtx})
	defer e.Close()
	api := serve.New(e, tok, name)
	api.Logger = log
	srv := &http.Server{Handler: api, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	ln, err := net.Listen("tcp", f.addr)
	if err != nil {
		return err
	}
	log.Info("serving model", "addr", "http://"+ln.Addr().String()+"/v1", "model", name, "params", m.Config.NumParams(),
		"backend", be.Name(), "load", time.Since(start).Round(time.Millisecond))
	if err := writeReadyFile(f.readyFile, ln.Addr().String()); err != nil {
		ln.Close()
		return err
	}
	return serveUntilSignal(ctx, log, srv, ln, f.drain)
}

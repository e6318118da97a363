package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/nextstate-rl/nextstate/train"
	"github.com/nextstate-rl/nextstate/trainer"
	"github.com/nextstate-rl/nextstate/trainer/cpu"
	"github.com/nextstate-rl/nextstate/trainer/service"
	"github.com/nextstate-rl/nextstate/trainer/tokenizer"
)

type serveTrainerFlags struct {
	model, addr, name, readyFile, stateDir, teacher, targets string
	rank                                                     int
	alpha                                                    float64
	keepStates, keepVersions, maxBatch                       int
	seed                                                     uint64
	recompute                                                bool
	drain                                                    time.Duration
}

func newServeTrainer() *cobra.Command {
	var f serveTrainerFlags
	c := &cobra.Command{
		Use:   "serve-trainer --model DIR",
		Short: "Serve the training API (forward_backward, optim_step, versions, sample) and the policy's OpenAI API",
		Long: `Load a Hugging Face Qwen3 folder on the CPU trainer, make it trainable (every
parameter, or LoRA adapters with --lora RANK), and serve over HTTP on one address:

  the training API (docs/training.md): POST /v1/forward_backward, /v1/forward,
  /v1/optim_step, /v1/save_weights_for_sampler, /v1/sample, /v1/save_state,
  /v1/load_state, GET /v1/info; each call idempotent by its Idempotency-Key header;

  the OpenAI API on the newest published weight version: POST /v1/chat/completions,
  /v1/completions, GET /v1/models; each answer's X-Weight-Version header says which
  version produced it, and a request in flight keeps its version while newer ones are
  published.

Version 0 is the weights as loaded, kept as the frozen reference (the KL term's and the
OPD teacher's), also served over the OpenAI API at /reference/v1 (a judge of the
policy's own family). nextstate train --trainer URL drives this server.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runServeTrainer(cmd.Context(), f) },
	}
	fl := c.Flags()
	fl.StringVar(&f.model, "model", "", "model folder (required)")
	fl.StringVar(&f.addr, "addr", "127.0.0.1:8300", "listen address")
	fl.StringVar(&f.name, "name", "", "model id in the OpenAI API (default: the folder's name)")
	fl.IntVar(&f.rank, "lora", 0, "train LoRA adapters of this rank (0: full fine-tuning)")
	fl.Float64Var(&f.alpha, "alpha", 0, "LoRA alpha (default: twice the rank)")
	fl.StringVar(&f.targets, "targets", strings.Join(trainer.LoRATargets, ","), "LoRA target projections")
	fl.StringVar(&f.stateDir, "state-dir", "", "where save_state writes training states (required for save_state)")
	fl.IntVar(&f.keepStates, "keep-states", 3, "training states kept (0: all)")
	fl.IntVar(&f.keepVersions, "keep-versions", 2, "published weight versions kept served, besides version 0 (the reference, always served)")
	fl.StringVar(&f.teacher, "teacher", "reference", "OPD teacher: reference (the frozen initial weights) or policy")
	fl.IntVar(&f.maxBatch, "max-batch", 16, "sequences decoded together per version")
	fl.Uint64Var(&f.seed, "seed", 1, "training seed (LoRA initialisation, the training RNG)")
	fl.BoolVar(&f.recompute, "recompute", false, "recompute each layer's activations in the backward (less memory)")
	fl.DurationVar(&f.drain, "drain", 30*time.Second, "how long shutdown waits for requests in flight")
	fl.StringVar(&f.readyFile, "ready-file", "", "write the bound address (host:port) to this file once listening")
	c.MarkFlagRequired("model")
	return c
}

func runServeTrainer(ctx context.Context, f serveTrainerFlags) error {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if f.rank < 0 {
		return fmt.Errorf("--lora %d: want a rank, or 0 for full fine-tuning", f.rank)
	}
	be := cpu.New()
	m, tok, err := loadTrainable(f.model, be, f.rank, f.alpha, f.targets, f.seed)
	if err != nil {
		return err
	}
	defer m.Close()
	svc, err := service.New(m, service.Options{Training: trainer.TrainOptions{Seed: f.seed, Recompute: f.recompute},
		Engine: trainer.EngineOptions{MaxBatch: f.maxBatch}, Tokenizer: tok, StateDir: f.stateDir, KeepStates: f.keepStates,
		KeepVersions: f.keepVersions, Teacher: f.teacher})
	if err != nil {
		return err
	}
	defer svc.Close()
	name := modelName(f.name, f.model)
	mux, err := train.Handler(svc, tok, name, log)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	ln, err := net.Listen("tcp", f.addr)
	if err != nil {
		return err
	}
	info, _ := svc.Info(ctx)
	log.Info("serving trainer", "addr", "http://"+ln.Addr().String()+"/v1", "model", name, "params", m.Config.NumParams(),
		"trainable", info.Trainable, "backend", be.Name())
	if err := writeReadyFile(f.readyFile, ln.Addr().String()); err != nil {
		ln.Close()
		return err
	}
	return serveUntilSignal(ctx, log, srv, ln, f.drain)
}

// loadTrainable loads a model folder and its tokenizer on be, with LoRA
// adapters of rank on the targets (comma-separated) when rank > 0 (alpha
// 0: twice the rank).
func loadTrainable(dir string, be trainer.Backend, rank int, alpha float64, targets string, seed uint64) (*trainer.Model, *tokenizer.Tokenizer, error) {
	m, err := trainer.Load(dir, be)
	if err != nil {
		return nil, nil, err
	}
	tok, err := tokenizer.Load(dir)
	if err != nil {
		m.Close()
		return nil, nil, err
	}
	if tok.VocabSize() > m.Config.VocabSize {
		m.Close()
		return nil, nil, fmt.Errorf("%s: the tokenizer has %d tokens, the model's vocab_size is %d", dir, tok.VocabSize(), m.Config.VocabSize)
	}
	if rank > 0 {
		if alpha == 0 {
			alpha = 2 * float64(rank)
		}
		if err := m.AddLoRA(trainer.LoRAConfig{Rank: rank, Alpha: alpha, Targets: strings.Split(targets, ",")}, seed); err != nil {
			m.Close()
			return nil, nil, err
		}
	}
	return m, tok, nil
}

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/nextstate-rl/nextstate/train"
	"github.com/nextstate-rl/nextstate/trainer"
	"github.com/nextstate-rl/nextstate/trainer/cpu"
	"github.com/nextstate-rl/nextstate/trainer/service"
)

// trainPolicy is what a train run trains and plays: the training API (the
// trainer in this process, or a remote serve-trainer's client) and the
// OpenAI endpoints that serve its newest version and its frozen reference.
type trainPolicy struct {
	api               service.API
	url, referenceURL string // OpenAI base URLs, ending in /v1
	name              string // the model id they answer to
	close             func()
}

// startPolicy loads --model into a trainer in this process and serves it
// on loopback, or, with --trainer, reaches a serve-trainer, which holds
// its model and serves it itself.
func startPolicy(ctx context.Context, f trainFlags, log *slog.Logger) (*trainPolicy, error) {
	if f.trainerURL != "" {
		return remotePolicy(ctx, f.trainerURL, f.name)
	}
	m, tok, err := loadTrainable(f.model, cpu.New(), f.rank, f.alpha, f.targets, uint64(f.seed))
	if err != nil {
		return nil, err
	}
	svc, err := service.New(m, service.Options{Training: trainer.TrainOptions{Seed: uint64(f.seed)},
		Engine: trainer.EngineOptions{MaxBatch: f.maxBatch}, Tokenizer: tok, StateDir: filepath.Join(f.out, "states"), KeepStates: 2})
	if err != nil {
		m.Close()
		return nil, err
	}
	name := modelName(f.name, f.model)
	ps, err := train.ServePolicy(svc, tok, name, log)
	if err != nil {
		svc.Close()
		m.Close()
		return nil, err
	}
	return &trainPolicy{api: svc, url: ps.URL, referenceURL: ps.ReferenceURL, name: name, close: func() {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		ps.Close(sctx)
		svc.Close()
		m.Close()
	}}, nil
}

// modelName is the model id a served model answers to: name, or its
// folder's name.
func modelName(name, dir string) string {
	if name == "" {
		abs, _ := filepath.Abs(dir)
		name = filepath.Base(abs)
	}
	return name
}

// remotePolicy is a serve-trainer's: its training API, its OpenAI API at
// /v1 and its reference at /reference/v1; the model id is name, or the
// first its /v1/models lists.
func remotePolicy(ctx context.Context, base, name string) (*trainPolicy, error) {
	base = strings.TrimSuffix(strings.TrimRight(base, "/"), "/v1")
	if u, err := url.Parse(base); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("--trainer %q: want a serve-trainer's URL, such as http://127.0.0.1:8300", base)
	}
	c := service.NewClient(base)
	if _, err := c.Info(ctx); err != nil {
		return nil, fmt.Errorf("--trainer %s: the training API does not answer: %w", base, err)
	}
	if name == "" {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/models", nil)
		if err != nil {
			return nil, err
		}
		resp, err := c.HTTP.Do(req)
		if err != nil {
			return nil, fmt.Errorf("--trainer %s: /v1/models: %w", base, err)
		}
		defer resp.Body.Close()
		var models struct {
			Data []struct {
				ID string `json:"id"`
			} `json:"data"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&models); err != nil || len(models.Data) == 0 {
			return nil, fmt.Errorf("--trainer %s: /v1/models lists no model (%v): give --name", base, err)
		}
		name = models.Data[0].ID
	}
	return &trainPolicy{api: c, url: base + "/v1", referenceURL: base + "/reference/v1", name: name, close: func() {}}, nil
}

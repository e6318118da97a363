package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nextstate-rl/nextstate/internal/testmodel"

	"github.com/nextstate-rl/nextstate/rl"
	"github.com/nextstate-rl/nextstate/trainer/safetensors"
	"github.com/nextstate-rl/nextstate/trainer/service"
)

func TestBenchModel(t *testing.T) {
	out, err := run(t, "bench", "model", "--json", "--torch=false", "--hidden", "64", "--layers", "1", "--intermediate", "96",
		"--vocab", "300", "--head-dim", "16", "--prefill", "16", "--prompt", "4", "--decode", "3", "--repeat", "1")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var rep BenchModelReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if rep.PrefillTPS <= 0 || rep.DecodeTPS["1"] <= 0 || rep.DecodeTPS["8"] <= 0 || rep.Params == 0 {
		t.Fatalf("%+v", rep)
	}
}

func TestBenchTrain(t *testing.T) {
	out, err := run(t, "bench", "train", "--json", "--runs", "tiny:full,tiny:lora,tiny:rl-lora", "--batch", "2", "--seq", "8", "--steps", "1", "--rank", "4")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var rep BenchTrainReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if len(rep.Runs) != 3 || rep.SgemmGFLOPS <= 0 {
		t.Fatalf("%+v", rep)
	}
	full, lora := rep.Runs[0], rep.Runs[1]
	if full.Trainable != full.Params || lora.Trainable <= 0 || lora.Trainable >= full.Params || full.Tokens != 16 {
		t.Fatalf("trainable counts: full %d of %d, lora %d", full.Trainable, full.Params, lora.Trainable)
	}
	for _, r := range rep.Runs {
		if r.Go.TokensPerS <= 0 || r.FLOPsPerStep <= 0 || r.Go.PeakFraction <= 0 {
			t.Fatalf("%s: %+v", r.Name, r)
		}
		// PyTorch runs beside when Debian's python3-torch is installed (make
		// test installs it); its absence is reported, not hidden.
		if r.Torch == nil && rep.TorchSkipped == "" {
			t.Fatalf("%s: no PyTorch numbers and no reason: %+v", r.Name, rep)
		}
		if r.Torch != nil && r.Torch.TokensPerS <= 0 {
			t.Fatalf("%s: PyTorch %+v", r.Name, r.Torch)
		}
	}
	if _, err := run(t, "bench", "train", "--runs", "20m:half"); err == nil || !strings.Contains(err.Error(), "modes: full, lora") {
		t.Fatalf("bad --runs: %v", err)
	}
}

// writeTinyModel writes a random Qwen3 folder with a byte-level tokenizer.json.
func writeTinyModel(t *testing.T) string { return testmodel.Write(t, 0.5, safetensors.BF16) }

func TestServeModel(t *testing.T) {
	dir := writeTinyModel(t)
	ready := filepath.Join(t.TempDir(), "ready")
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() {
		errc <- runServeModel(ctx, serveModelFlags{model: dir, addr: "127.0.0.1:0", name: "tiny", readyFile: ready, maxBatch: 4, maxQueue: 8, drain: 5 * time.Second})
	}()
	addr := waitReady(t, ready, errc)
	body := `{"model":"tiny","messages":[{"role":"user","content":"hi"}],"max_tokens":5,"seed":7,"logprobs":true}`
	resp, err := http.Post("http://"+addr+"/v1/chat/completions", "application/json", bytes.NewReader([]byte(body)))
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Choices []struct {
			FinishReason string `json:"finish_reason"`
			Logprobs     struct{ Content []any }
		}
		Usage struct {
			CompletionTokens int `json:"completion_tokens"`
		}
	}
	json.NewDecoder(resp.Body).Decode(&r)
	resp.Body.Close()
	if resp.StatusCode != 200 || len(r.Choices) != 1 || r.Usage.CompletionTokens == 0 || len(r.Choices[0].Logprobs.Content) != r.Usage.CompletionTokens {
		t.Fatalf("status %d: %+v", resp.StatusCode, r)
	}
	cancel()
	if err := <-errc; err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if _, err := run(t, "serve-model"); err == nil {
		t.Fatal("serve-model without --model ran")
	}
}

// serve-trainer serves the training API and the newest version's OpenAI
// API on one address: a chat answer from version 0 trains as a text-only
// sample, and the next answer comes from the version published after the
// step.
func TestServeTrainer(t *testing.T) {
	dir := writeTinyModel(t)
	ready := filepath.Join(t.TempDir(), "ready")
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() {
		errc <- runServeTrainer(ctx, serveTrainerFlags{model: dir, addr: "127.0.0.1:0", name: "tiny", readyFile: ready, rank: 4,
			targets: "q_proj,v_proj", stateDir: t.TempDir(), keepVersions: 2, teacher: "reference", maxBatch: 4, seed: 1, drain: 5 * time.Second})
	}()
	addr := waitReady(t, ready, errc)
	chat := func() (string, string) {
		t.Helper()
		body := `{"model":"tiny","messages":[{"role":"user","content":"hi"}],"max_tokens":5,"seed":7}`
		resp, err := http.Post("http://"+addr+"/v1/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var r struct {
			Choices []struct{ Message struct{ Content string } }
		}
		if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || len(r.Choices) != 1 {
			t.Fatalf("chat: %v %+v", err, r)
		}
		return resp.Header.Get("X-Weight-Version"), r.Choices[0].Message.Content
	}
	v, reply := chat()
	if v != "0" {
		t.Fatalf("the first answer's weight version is %q, want 0", v)
	}
	c := service.NewClient("http://" + addr)
	samples := []rl.Sample{}
	for i, reward := range []float64{1, 0} {
		samples = append(samples, rl.Sample{GroupIndex: 0, Index: i, Prompt: []rl.Message{{Role: "user", Content: "hi"}},
			Response: reply + strings.Repeat("!", i), Reward: reward, Status: rl.StatusCompleted})
	}
	fb, err := c.ForwardBackward(ctx, service.ForwardBackwardRequest{Samples: samples, Loss: service.LossConfig{Terms: []service.TermConfig{{Kind: "policy_gradient", Weight: 1}}}})
	if err != nil || fb.Tokens == 0 || fb.Conversion.Tokenized != 2 {
		t.Fatalf("forward_backward: %+v, %v", fb, err)
	}
	if _, err := c.OptimStep(ctx, service.AdamParams{LR: 1e-2}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.SaveWeightsForSampler(ctx); err != nil {
		t.Fatal(err)
	}
	if v, _ := chat(); v != "1" {
		t.Fatalf("after a step and a publish the answer's version is %q, want 1", v)
	}
	if st, err := c.SaveState(ctx); err != nil || st.Step != 1 {
		t.Fatalf("save_state: %+v, %v", st, err)
	}
	cancel()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

// waitReady waits for a server's ready file and returns the address in it.
func waitReady(t *testing.T, ready string, errc <-chan error) string {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if b, err := os.ReadFile(ready); err == nil && len(b) > 0 {
			return strings.TrimSpace(string(b))
		}
		select {
		case err := <-errc:
			t.Fatalf("the server exited: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("the server is not ready")
		}
	}
}

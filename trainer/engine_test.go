package trainer

import (
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"sync"
	"testing"

	"github.com/nextstate-rl/nextstate/trainer/cpu"
	"github.com/nextstate-rl/nextstate/trainer/safetensors"
	"github.com/nextstate-rl/nextstate/trainer/torchref"
)

func ids(s []Sampled) []int32 {
	out := make([]int32, len(s))
	for i, t := range s {
		out[i] = t.ID
	}
	return out
}

// greedyNoCache recomputes the whole sequence for every new token.
func greedyNoCache(t *testing.T, m *Model, prompt []int32, n int) []int32 {
	seq := append([]int32(nil), prompt...)
	var out []int32
	V := m.Config.VocabSize
	for range n {
		lg := fullLogits(t, m, seq)
		next := int32(Sample(lg[len(lg)-V:], SampleParams{}, nil).ID)
		out = append(out, next)
		seq = append(seq, next)
	}
	return out
}

func TestGreedyCacheEqualsNoCache(t *testing.T) {
	m := randomModel(t, tinyConfig(false), cpu.New(), 11)
	e := NewEngine(m, EngineOptions{PrefillChunk: 3}) // several prefill chunks too
	defer e.Close()
	r := rand.New(rand.NewPCG(1, 1))
	for range 3 {
		prompt := randTokens(r, 1+r.IntN(10), m.Config.VocabSize)
		res, err := e.Generate(context.Background(), Request{Prompt: prompt, MaxTokens: 20})
		if err != nil {
			t.Fatal(err)
		}
		if res.Finish != FinishLength || len(res.Tokens) != 20 {
			t.Fatalf("finish %s after %d tokens", res.Finish, len(res.Tokens))
		}
		if got, want := ids(res.Tokens), greedyNoCache(t, m, prompt, 20); !reflect.DeepEqual(got, want) {
			t.Fatalf("with cache %v\nwithout    %v", got, want)
		}
	}
}

func TestGreedyMatchesTorch(t *testing.T) {
	if _, err := torchref.Python(); err != nil {
		t.Skip(err)
	}
	m := randomModel(t, tinyConfig(true), cpu.New(), 12)
	dir := t.TempDir()
	if err := m.Save(dir, safetensors.F32, 0); err != nil {
		t.Fatal(err)
	}
	prompts := [][]int32{{1, 2, 3}, {250, 17, 99, 4, 4, 4, 8}}
	out, err := torchref.Run(context.Background(), "generate", dir, map[string]any{"seqs": prompts, "steps": 24})
	if err != nil {
		t.Fatal(err)
	}
	var want struct{ Tokens [][]int32 }
	if err := json.Unmarshal(out, &want); err != nil {
		t.Fatal(err)
	}
	e := NewEngine(m, EngineOptions{})
	defer e.Close()
	for i, p := range prompts {
		res, err := e.Generate(context.Background(), Request{Prompt: p, MaxTokens: 24})
		if err != nil {
			t.Fatal(err)
		}
		if got := ids(res.Tokens); !reflect.DeepEqual(got, want.Tokens[i]) {
			t.Fatalf("prompt %d: Go %v\nPyTorch %v", i, got, want.Tokens[i])
		}
	}
}

// Concurrent requests are batched together and give what each gives alone.
func TestBatchedEqualsAlone(t *testing.T) {
	m := randomModel(t, tinyConfig(false), cpu.New(), 13)
	e := NewEngine(m, EngineOptions{MaxBatch: 8})
	defer e.Close()
	r := rand.New(rand.NewPCG(2, 2))
	const n = 8
	reqs := make([]Request, n)
	alone := make([][]int32, n)
	for i := range reqs {
		seed := uint64(i)
		reqs[i] = Request{Prompt: randTokens(r, 1+r.IntN(12), m.Config.VocabSize), MaxTokens: 5 + i, Seed: &seed}
		if i%2 == 1 {
			reqs[i].Sample = SampleParams{Temperature: 0.8, TopK: 50, TopP: 0.95}
		}
		res, err := e.Generate(context.Background(), reqs[i])
		if err != nil {
			t.Fatal(err)
		}
		alone[i] = ids(res.Tokens)
	}
	var wg sync.WaitGroup
	got := make([][]int32, n)
	for i := range reqs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := e.Generate(context.Background(), reqs[i])
			if err != nil {
				t.Error(err)
				return
			}
			got[i] = ids(res.Tokens)
		}()
	}
	wg.Wait()
	for i := range reqs {
		if !reflect.DeepEqual(got[i], alone[i]) {
			t.Errorf("request %d: batched %v, alone %v", i, got[i], alone[i])
		}
	}
}

func TestSamplingSeeded(t *testing.T) {
	m := randomModel(t, tinyConfig(false), cpu.New(), 14)
	e := NewEngine(m, EngineOptions{})
	defer e.Close()
	prompt := []int32{5, 6, 7}
	run := func(seed uint64, sp SampleParams) []int32 {
		res, err := e.Generate(context.Background(), Request{Prompt: prompt, MaxTokens: 30, Seed: &seed, Sample: sp})
		if err != nil {
			t.Fatal(err)
		}
		return ids(res.Tokens)
	}
	hot := SampleParams{Temperature: 1.5}
	a, b, c := run(1, hot), run(1, hot), run(2, hot)
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("same seed, different tokens:\n%v\n%v", a, b)
	}
	if reflect.DeepEqual(a, c) {
		t.Fatalf("seeds 1 and 2 gave the same 30 tokens")
	}
	greedy := run(0, SampleParams{})
	if got := run(3, SampleParams{Temperature: 1, TopK: 1}); !reflect.DeepEqual(got, greedy) {
		t.Fatalf("top-k 1 is not greedy")
	}
	if got := run(4, SampleParams{Temperature: 1, TopP: 1e-9}); !reflect.DeepEqual(got, greedy) {
		t.Fatalf("top-p ~0 is not greedy")
	}
}

func TestSampleDistribution(t *testing.T) {
	logits := []float32{0, 1, 2, 3, -1}
	rng := rand.New(rand.NewPCG(5, 5))
	counts := make([]int, len(logits))
	const n = 40000
	for range n {
		counts[Sample(logits, SampleParams{Temperature: 1, TopK: 3, TopP: 0.9}, rng).ID]++
	}
	// top-k 3 keeps {3,2,1}: probs ∝ e^3, e^2, e^1 = .665,.245,.090; top-p .9 then
	// keeps {3,2} (.665+.245 = .91 ≥ .9), renormalised to .731, .269.
	if counts[0] != 0 || counts[4] != 0 || counts[1] != 0 {
		t.Fatalf("tokens outside the nucleus drawn: %v", counts)
	}
	if f := float64(counts[3]) / n; math.Abs(f-0.731) > 0.01 {
		t.Fatalf("P(3) = %.3f, want 0.731", f)
	}
	s := Sample(logits, SampleParams{TopLogprobs: 3}, nil)
	var z float64
	for _, v := range logits {
		z += math.Exp(float64(v))
	}
	if s.ID != 3 || math.Abs(float64(s.Logprob)-(3-math.Log(z))) > 1e-6 {
		t.Fatalf("greedy %+v", s)
	}
	if len(s.Top) != 3 || s.Top[0].ID != 3 || s.Top[1].ID != 2 || s.Top[2].ID != 1 || s.Top[0].Logprob != s.Logprob {
		t.Fatalf("top logprobs %+v", s.Top)
	}
}

func TestStopAndCancel(t *testing.T) {
	m := randomModel(t, tinyConfig(false), cpu.New(), 15)
	e := NewEngine(m, EngineOptions{})
	res, err := e.Generate(context.Background(), Request{Prompt: []int32{1}, MaxTokens: 10})
	if err != nil {
		t.Fatal(err)
	}
	stop := res.Tokens[3].ID
	res2, _ := e.Generate(context.Background(), Request{Prompt: []int32{1}, MaxTokens: 10, Stop: []int32{stop}})
	if res2.Finish != FinishStop || res2.Tokens[len(res2.Tokens)-1].ID != stop || len(res2.Tokens) > 4 {
		t.Fatalf("stop: %s %v", res2.Finish, ids(res2.Tokens))
	}
	ctx, cancel := context.WithCancel(context.Background())
	toks, result, err := e.Stream(ctx, Request{Prompt: []int32{1}})
	if err != nil {
		t.Fatal(err)
	}
	<-toks
	cancel()
	for range toks {
	}
	if r := <-result; r.Finish != FinishCancelled {
		t.Fatalf("cancel: %s", r.Finish)
	}
	if _, err := e.Generate(context.Background(), Request{Prompt: make([]int32, 600)}); err == nil {
		t.Fatal("prompt longer than the context accepted")
	}
	e.Close()
	e.Close()
	if _, _, err := e.Stream(context.Background(), Request{Prompt: []int32{1}}); err != ErrClosed {
		t.Fatalf("after close: %v", err)
	}
}

package trainer

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/nextstate-rl/nextstate/trainer/cpu"
)

// benchConfig is `bench model`'s default: about 48M parameters.
func benchConfig() Config {
	return Config{ModelType: "qwen3", VocabSize: 32000, HiddenSize: 512, IntermediateSize: 1536, NumHiddenLayers: 10,
		NumAttentionHeads: 8, NumKeyValueHeads: 4, HeadDim: 64, MaxPositionEmbeddings: 4096, RMSNormEps: 1e-6,
		RopeTheta: 1e6, TieWordEmbeddings: true, HiddenAct: "silu"}
}

func BenchmarkPrefill256(b *testing.B) {
	m, _ := New(benchConfig(), cpu.New())
	m.InitRandom(1, 0.02)
	toks := randTokens(rand.New(rand.NewPCG(1, 1)), 256, m.Config.VocabSize)
	for b.Loop() {
		m.Forward([]Segment{{Tokens: toks, Cache: m.NewCache()}}, false)
	}
	b.ReportMetric(256*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
}

func BenchmarkDecode(b *testing.B) {
	m, _ := New(benchConfig(), cpu.New())
	m.InitRandom(1, 0.02)
	r := rand.New(rand.NewPCG(1, 1))
	for _, B := range []int{1, 8} {
		b.Run(fmt.Sprint("batch", B), func(b *testing.B) {
			segs := make([]Segment, B)
			for i := range segs {
				segs[i] = Segment{Tokens: randTokens(r, 32, m.Config.VocabSize), Cache: m.NewCache()}
			}
			m.Forward(segs, false)
			for b.Loop() {
				for i := range segs {
					segs[i].Tokens = []int32{int32(r.IntN(m.Config.VocabSize))}
					if segs[i].Cache.Len > 512 {
						segs[i].Cache.Truncate(32)
					}
				}
				m.Forward(segs, false)
			}
			b.ReportMetric(float64(B*b.N)/b.Elapsed().Seconds(), "tokens/s")
		})
	}
}

// BenchmarkTrainStep is one training step (forward, backward, AdamW) of
// benchConfig on 2×256 tokens, full and LoRA (rank 16, every projection).
func BenchmarkTrainStep(b *testing.B) {
	for _, mode := range []string{"full", "lora"} {
		b.Run(mode, func(b *testing.B) {
			m, _ := New(benchConfig(), cpu.New())
			m.InitRandom(1, 0.02)
			if mode == "lora" {
				if err := m.AddLoRA(LoRAConfig{Rank: 16, Alpha: 32}, 1); err != nil {
					b.Fatal(err)
				}
			}
			tr, err := NewTraining(m, TrainOptions{})
			if err != nil {
				b.Fatal(err)
			}
			defer tr.Close()
			r := rand.New(rand.NewPCG(1, 1))
			batch := NextTokenBatch([][]int32{randTokens(r, 256, m.Config.VocabSize), randTokens(r, 256, m.Config.VocabSize)}, nil)
			for b.Loop() {
				if _, err := tr.ForwardBackward(batch, CrossEntropy{}); err != nil {
					b.Fatal(err)
				}
				if _, err := tr.Step(AdamWOptions{LR: 1e-5}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(512*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
		})
	}
}

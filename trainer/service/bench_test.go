package service

import (
	"testing"

	"github.com/nextstate-rl/nextstate/trainer"
	"github.com/nextstate-rl/nextstate/trainer/cpu"
)

// BenchmarkPublish is save_weights_for_sampler's latency: the snapshot,
// its checksum and its engine, on a 20M-parameter model (the size of the
// demo's), full and LoRA (the adapters only: the base is shared and
// hashed once).
func BenchmarkPublish(b *testing.B) {
	c := trainer.Config{ModelType: "qwen3", VocabSize: 32000, HiddenSize: 384, IntermediateSize: 1024, NumHiddenLayers: 6,
		NumAttentionHeads: 6, NumKeyValueHeads: 3, HeadDim: 64, MaxPositionEmbeddings: 4096, RMSNormEps: 1e-6,
		RopeTheta: 1e6, TieWordEmbeddings: true, HiddenAct: "silu"}
	for _, mode := range []string{"full", "lora"} {
		b.Run(mode, func(b *testing.B) {
			m, err := trainer.New(c, cpu.New())
			if err != nil {
				b.Fatal(err)
			}
			defer m.Close()
			m.InitRandom(1, 0.02)
			if mode == "lora" {
				if err := m.AddLoRA(trainer.LoRAConfig{Rank: 16, Alpha: 32}, 1); err != nil {
					b.Fatal(err)
				}
			}
			s, err := New(m, Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			b.ResetTimer()
			for b.Loop() {
				if _, err := s.SaveWeightsForSampler(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

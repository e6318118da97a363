package service

import (
	"testing"

	"github.com/nextstate-rl/nextstate/trainer"
	"github.com/nextstate-rl/nextstate/trainer/cpu"
)

// BenchmarkPublish measures save_weights_for_sampler: the snapshot of the
// weights (under LoRA the adapters only, the frozen base shared), its
// checksum and its engine, for the learning demo's tiny model, a 22M
// model, and Qwen3-0.6B's shape (random weights). It measures the steady
// state of a training run: two versions are published before the clock
// starts, so that each timed one is copied into the arena of a version
// gone (versions.makeRoom); the first two of a run allocate theirs.
func BenchmarkPublish(b *testing.B) {
	shapes := []struct {
		name string
		c    trainer.Config
	}{
		{"demo", shape(800, 128, 384, 4, 4, 2, 32)},
		{"22m", shape(32000, 384, 1024, 6, 6, 3, 64)},
		{"0.6b", shape(151936, 1024, 3072, 28, 16, 8, 128)},
	}
	for _, sh := range shapes {
		for _, mode := range []string{"full", "lora"} {
			b.Run(sh.name+"/"+mode, func(b *testing.B) {
				m, err := trainer.New(sh.c, cpu.New())
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
				for range 2 {
					if _, err := s.SaveWeightsForSampler(ctx); err != nil {
						b.Fatal(err)
					}
				}
				b.ResetTimer()
				for b.Loop() {
					if _, err := s.SaveWeightsForSampler(ctx); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// shape is a Qwen3 config of the given sizes, tied embeddings.
func shape(vocab, hidden, inter, layers, heads, kv, hd int) trainer.Config {
	return trainer.Config{ModelType: "qwen3", VocabSize: vocab, HiddenSize: hidden, IntermediateSize: inter,
		NumHiddenLayers: layers, NumAttentionHeads: heads, NumKeyValueHeads: kv, HeadDim: hd, MaxPositionEmbeddings: 4096,
		RMSNormEps: 1e-6, RopeTheta: 1e6, TieWordEmbeddings: true, HiddenAct: "silu"}
}

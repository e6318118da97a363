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

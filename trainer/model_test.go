package trainer

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/nextstate-rl/nextstate/trainer/cpu"
	"github.com/nextstate-rl/nextstate/trainer/safetensors"
	"github.com/nextstate-rl/nextstate/trainer/torchref"
)

func tinyConfig(tied bool) Config {
	eos := any(float64(3))
	return Config{
		Architectures: []string{"Qwen3ForCausalLM"}, ModelType: "qwen3",
		VocabSize: 300, HiddenSize: 64, IntermediateSize: 96, NumHiddenLayers: 2,
		NumAttentionHeads: 4, NumKeyValueHeads: 2, HeadDim: 32, MaxPositionEmbeddings: 512,
		RMSNormEps: 1e-6, RopeTheta: 10000, TieWordEmbeddings: tied, HiddenAct: "silu", EOSTokenID: eos,
	}
}

// randomModel has weights large enough that the logits are far from uniform,
// and norm weights away from one, so that every part of the forward shows.
func randomModel(t testing.TB, c Config, be Backend, seed uint64) *Model {
	t.Helper()
	m, err := New(c, be)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(seed, 7))
	host := make([]float32, m.Params.Len())
	for i, tn := range m.layout.tensors {
		v := host[tn.off : tn.off+tn.size()]
		std := 1 / math.Sqrt(float64(tn.shape[len(tn.shape)-1]))
		for j := range v {
			if len(tn.shape) == 1 {
				v[j] = float32(1 + 0.2*r.NormFloat64())
			} else {
				v[j] = float32(r.NormFloat64() * std)
			}
			if i == 0 {
				v[j] *= 8 // embeddings O(1), as trained ones are after the first norm
			}
		}
	}
	if err := m.WriteParams(host); err != nil {
		t.Fatal(err)
	}
	return m
}

func randTokens(r *rand.Rand, n, V int) []int32 {
	s := make([]int32, n)
	for i := range s {
		s[i] = int32(r.IntN(V))
	}
	return s
}

func fullLogits(t testing.TB, m *Model, toks []int32) []float32 {
	t.Helper()
	lg, err := m.Forward([]Segment{{Tokens: toks, Cache: m.NewCache()}}, true)
	if err != nil {
		t.Fatal(err)
	}
	return lg
}

func maxAbsDiff(a, b []float32) float64 {
	if len(a) != len(b) {
		return math.Inf(1)
	}
	var d float64
	for i := range a {
		x := math.Abs(float64(a[i]) - float64(b[i]))
		if x != x {
			return math.Inf(1)
		}
		d = max(d, x)
	}
	return d
}

func TestConfigRoundTrip(t *testing.T) {
	dir := t.TempDir()
	c := tinyConfig(false)
	c.Extra = map[string]json.RawMessage{"sliding_window": json.RawMessage("null"), "use_cache": json.RawMessage("true")}
	if err := WriteConfig(dir, c); err != nil {
		t.Fatal(err)
	}
	got, err := ReadConfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got.HiddenSize != c.HiddenSize || got.HeadDim != 32 || string(got.Extra["use_cache"]) != "true" || got.EOSTokenIDs()[0] != 3 {
		t.Fatalf("round trip: %+v", got)
	}
	for _, bad := range []string{
		`{"model_type":"llama"}`,
		`{"model_type":"qwen3","vocab_size":10,"hidden_size":8,"intermediate_size":8,"num_hidden_layers":1,"num_attention_heads":3,"num_key_value_heads":2}`,
		`{"model_type":"qwen3","vocab_size":10,"hidden_size":8,"intermediate_size":8,"num_hidden_layers":1,"num_attention_heads":2,"rope_scaling":{"type":"yarn"}}`,
	} {
		if _, err := ParseConfig([]byte(bad)); err == nil {
			t.Errorf("accepted %s", bad)
		}
	}
}

func TestSaveLoad(t *testing.T) {
	for _, dt := range []safetensors.DType{safetensors.F32, safetensors.BF16, safetensors.F16} {
		m := randomModel(t, tinyConfig(false), cpu.New(), 1)
		dir := t.TempDir()
		if err := m.Save(dir, dt, 50_000); err != nil { // sharded
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(dir, safetensors.Index)); err != nil {
			t.Fatal("no index written for a sharded save")
		}
		m2, err := Load(dir, cpu.New())
		if err != nil {
			t.Fatal(err)
		}
		tol := map[safetensors.DType]float64{safetensors.F32: 0, safetensors.BF16: 1.0 / 128, safetensors.F16: 1.0 / 1024}[dt]
		p, p2 := m.ReadParams(), m2.ReadParams()
		for i := range p {
			if d := math.Abs(float64(p[i] - p2[i])); d > tol*math.Abs(float64(p[i]))+1e-7 {
				t.Fatalf("%s: param %d: %g vs %g", dt, i, p[i], p2[i])
			}
		}
	}
	// A missing tensor is an error naming it.
	m := randomModel(t, tinyConfig(true), cpu.New(), 1)
	dir := t.TempDir()
	m.Save(dir, safetensors.F32, 0)
	c := tinyConfig(false) // untied: needs lm_head.weight, which is absent
	WriteConfig(dir, c)
	if _, err := Load(dir, cpu.New()); err == nil {
		t.Fatal("loaded an untied config without lm_head.weight")
	}
}

// The fast backend and the naive one give the same logits.
func TestForwardFastMatchesNaive(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 2))
	fast := randomModel(t, tinyConfig(false), cpu.New(), 3)
	naive := randomModel(t, tinyConfig(false), cpu.Naive{}, 3)
	toks := randTokens(r, 11, 300)
	if d := maxAbsDiff(fullLogits(t, fast, toks), fullLogits(t, naive, toks)); d > 1e-4 {
		t.Fatalf("fast vs naive: max |Δ| = %g", d)
	}
}

// Prefill in chunks through the cache, and several sequences in one call,
// give the logits of one full pass.
func TestForwardCacheAndBatch(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	m := randomModel(t, tinyConfig(true), cpu.New(), 5)
	V := m.Config.VocabSize
	a, b := randTokens(r, 9, V), randTokens(r, 4, V)
	fa, fb := fullLogits(t, m, a), fullLogits(t, m, b)
	// chunks: 5 then 1,1,1,1 tokens
	ca := m.NewCache()
	var chunked []float32
	for _, span := range [][2]int{{0, 5}, {5, 6}, {6, 7}, {7, 8}, {8, 9}} {
		lg, err := m.Forward([]Segment{{Tokens: a[span[0]:span[1]], Cache: ca}}, true)
		if err != nil {
			t.Fatal(err)
		}
		chunked = append(chunked, lg...)
	}
	if d := maxAbsDiff(chunked, fa); d > 1e-4 {
		t.Fatalf("chunked vs full: %g", d)
	}
	// batch: both sequences in one call, last-token logits only.
	lg, err := m.Forward([]Segment{{Tokens: a, Cache: m.NewCache()}, {Tokens: b, Cache: m.NewCache()}}, false)
	if err != nil {
		t.Fatal(err)
	}
	if d := maxAbsDiff(lg[:V], fa[8*V:]); d > 1e-4 {
		t.Fatalf("batched seq a: %g", d)
	}
	if d := maxAbsDiff(lg[V:], fb[3*V:]); d > 1e-4 {
		t.Fatalf("batched seq b: %g", d)
	}
	if _, err := m.Forward([]Segment{{Tokens: []int32{int32(V)}, Cache: m.NewCache()}}, false); err == nil {
		t.Fatal("token outside the vocabulary accepted")
	}
}

// Logits of random Qwen3 folders match the plain-PyTorch reference within 1e-4.
func TestLogitsMatchTorch(t *testing.T) {
	if _, err := torchref.Python(); err != nil {
		t.Skip(err)
	}
	r := rand.New(rand.NewPCG(6, 6))
	for _, tc := range []struct {
		name  string
		tied  bool
		dtype safetensors.DType
		shard int64
	}{{"untied-f32", false, safetensors.F32, 0}, {"tied-f32-sharded", true, safetensors.F32, 60_000}, {"untied-bf16", false, safetensors.BF16, 0}, {"tied-f16", true, safetensors.F16, 0}} {
		t.Run(tc.name, func(t *testing.T) {
			c := tinyConfig(tc.tied)
			c.RopeTheta = 1e6
			src := randomModel(t, c, cpu.New(), 8)
			dir := t.TempDir()
			if err := src.Save(dir, tc.dtype, tc.shard); err != nil {
				t.Fatal(err)
			}
			m, err := Load(dir, cpu.New())
			if err != nil {
				t.Fatal(err)
			}
			seqs := [][]int32{randTokens(r, 1, c.VocabSize), randTokens(r, 17, c.VocabSize), randTokens(r, 40, c.VocabSize)}
			out := filepath.Join(t.TempDir(), "logits.f32")
			if _, err := torchref.Run(context.Background(), "logits", dir, map[string]any{"seqs": seqs}, out); err != nil {
				t.Fatal(err)
			}
			raw, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			ref := make([]float32, len(raw)/4)
			for i := range ref {
				ref[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
			}
			var got []float32
			var scale float64
			for _, s := range seqs {
				got = append(got, fullLogits(t, m, s)...)
			}
			for _, v := range ref {
				scale = max(scale, math.Abs(float64(v)))
			}
			d := maxAbsDiff(got, ref)
			t.Logf("max |logit| %.3f, max |Δ| vs PyTorch %.2e", scale, d)
			if d > 1e-4 {
				t.Fatalf("max |Δ| = %g > 1e-4", d)
			}
		})
	}
}

package trainer

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"sync"

	"github.com/nextstate-rl/nextstate/trainer/safetensors"
)

// Backend runs the model's kernels on f32 buffers. The CPU backend
// (trainer/cpu) implements it; shapes follow the legend of that package.
// A CUDA backend will implement the same operations on device buffers.
type Backend interface {
	Name() string
	// MatMul computes out[M,N] = x[M,K] · w[N,K]ᵀ.
	MatMul(out, x, w []float32, M, N, K int)
	// RMSNorm computes out[r,:] = x[r,:] / sqrt(mean(x[r,:]²) + eps) * w; out may be x.
	RMSNorm(out, x, w []float32, rows, dim int, eps float32)
	// RoPE rotates x[rows, heads, D] in place, row r at position pos[r].
	RoPE(x []float32, pos []int32, rows, heads, D int, cos, sin []float32)
	// Attention is causal GQA of q[T, H*D] at positions start.. over k, v[L, KV*D].
	Attention(out, q, k, v []float32, T, start, H, KV, D int)
	// SwiGLU computes out[r,i] = silu(gu[r,i]) * gu[r,F+i].
	SwiGLU(out, gu []float32, rows, F int)
	// Add computes dst += src.
	Add(dst, src []float32)
}

// tensor is one named parameter in the flat slice.
type tensor struct {
	name  string
	shape []int
	off   int
}

func (t tensor) size() int {
	n := 1
	for _, d := range t.shape {
		n *= d
	}
	return n
}

// layout places every parameter in one flat slice (llm.c's
// malloc_and_point_parameters). Per layer, q/k/v and gate/up are adjacent so
// that each group is one matrix product.
type layout struct {
	tensors []tensor
	total   int
}

func newLayout(c Config) layout {
	var l layout
	add := func(name string, shape ...int) {
		t := tensor{name: name, shape: shape, off: l.total}
		l.tensors = append(l.tensors, t)
		l.total += t.size()
	}
	C, D, F := c.HiddenSize, c.HeadDim, c.IntermediateSize
	add("model.embed_tokens.weight", c.VocabSize, C)
	for i := range c.NumHiddenLayers {
		p := fmt.Sprintf("model.layers.%d.", i)
		add(p+"input_layernorm.weight", C)
		add(p+"self_attn.q_proj.weight", c.NumAttentionHeads*D, C)
		add(p+"self_attn.k_proj.weight", c.NumKeyValueHeads*D, C)
		add(p+"self_attn.v_proj.weight", c.NumKeyValueHeads*D, C)
		add(p+"self_attn.q_norm.weight", D)
		add(p+"self_attn.k_norm.weight", D)
		add(p+"self_attn.o_proj.weight", C, c.NumAttentionHeads*D)
		add(p+"post_attention_layernorm.weight", C)
		add(p+"mlp.gate_proj.weight", F, C)
		add(p+"mlp.up_proj.weight", F, C)
		add(p+"mlp.down_proj.weight", C, F)
	}
	add("model.norm.weight", C)
	if !c.TieWordEmbeddings {
		add("lm_head.weight", c.VocabSize, C)
	}
	return l
}

// Layer is one decoder layer's views into Model.Params.
type Layer struct {
	InputNorm []float32 // [C]
	QKV       []float32 // [(H+2KV)*D, C]: q_proj, k_proj, v_proj stacked
	QNorm     []float32 // [D]
	KNorm     []float32 // [D]
	O         []float32 // [C, H*D]
	PostNorm  []float32 // [C]
	GateUp    []float32 // [2F, C]: gate_proj, up_proj stacked
	Down      []float32 // [C, F]
}

// Weights are named views into Model.Params.
type Weights struct {
	Embed  []float32 // [V, C]
	Layers []Layer
	Norm   []float32 // [C]
	Head   []float32 // [V, C]; Embed itself when tie_word_embeddings
}

// Model is a Qwen3 decoder with its parameters in one flat f32 slice.
// Forward calls are serialised by the model; its backend parallelises each.
type Model struct {
	Config  Config
	Params  []float32
	W       Weights
	Backend Backend

	layout layout
	mu     sync.Mutex // Forward: the scratch buffers and rope tables
	s      scratch
	cos    []float32 // [positions, D/2]
	sin    []float32
}

// New makes a model of configuration c with zero parameters.
func New(c Config, be Backend) (*Model, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if be == nil {
		return nil, errors.New("trainer: nil backend")
	}
	m := &Model{Config: c, Backend: be, layout: newLayout(c)}
	m.Params = make([]float32, m.layout.total)
	m.point()
	return m, nil
}

func (m *Model) view(i int) []float32 {
	t := m.layout.tensors[i]
	return m.Params[t.off : t.off+t.size() : t.off+t.size()]
}

// point sets the named views (the order is newLayout's).
func (m *Model) point() {
	c := m.Config
	span := func(i, n int) []float32 { // n consecutive tensors from i
		a, b := m.layout.tensors[i], m.layout.tensors[i+n-1]
		return m.Params[a.off : b.off+b.size() : b.off+b.size()]
	}
	m.W.Embed = m.view(0)
	m.W.Layers = make([]Layer, c.NumHiddenLayers)
	i := 1
	for l := range m.W.Layers {
		m.W.Layers[l] = Layer{
			InputNorm: m.view(i), QKV: span(i+1, 3), QNorm: m.view(i + 4), KNorm: m.view(i + 5),
			O: m.view(i + 6), PostNorm: m.view(i + 7), GateUp: span(i+8, 2), Down: m.view(i + 10),
		}
		i += 11
	}
	m.W.Norm = m.view(i)
	m.W.Head = m.W.Embed
	if !c.TieWordEmbeddings {
		m.W.Head = m.view(i + 1)
	}
}

// InitRandom fills the parameters as HF's Qwen3 initialiser does: normal
// weights with standard deviation std (initializer_range, 0.02), norms at one.
func (m *Model) InitRandom(seed uint64, std float64) {
	r := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	for i, t := range m.layout.tensors {
		v := m.view(i)
		if len(t.shape) == 1 {
			for j := range v {
				v[j] = 1
			}
			continue
		}
		for j := range v {
			v[j] = float32(r.NormFloat64() * std)
		}
	}
}

// Load reads a Hugging Face model folder: config.json and model.safetensors
// (or its shards and index). Every tensor of the configuration must be there
// with its exact shape; lm_head.weight is ignored when the embeddings are tied.
func Load(dir string, be Backend) (*Model, error) {
	c, err := ReadConfig(dir)
	if err != nil {
		return nil, err
	}
	m, err := New(c, be)
	if err != nil {
		return nil, err
	}
	d, err := safetensors.OpenDir(dir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	for i, t := range m.layout.tensors {
		info, ok := d.Info(t.name)
		if !ok {
			return nil, fmt.Errorf("trainer: %s: %w: %q", dir, safetensors.ErrNotFound, t.name)
		}
		if !sameShape(info.Shape, t.shape) {
			return nil, fmt.Errorf("trainer: %s: tensor %q has shape %v, config.json needs %v", dir, t.name, info.Shape, t.shape)
		}
		if err := d.ReadFloat32(t.name, m.view(i)); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func sameShape(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Save writes config.json and the weights as dtype into dir (created if
// needed), sharded above maxShard bytes (0: one file).
func (m *Model) Save(dir string, dtype safetensors.DType, maxShard int64) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	c := m.Config
	c.TorchDType = map[safetensors.DType]string{safetensors.F32: "float32", safetensors.F16: "float16", safetensors.BF16: "bfloat16"}[dtype]
	if err := WriteConfig(dir, c); err != nil {
		return err
	}
	ts := make([]safetensors.Tensor, len(m.layout.tensors))
	for i, t := range m.layout.tensors {
		ts[i] = safetensors.Tensor{Name: t.name, DType: dtype, Shape: t.shape, Data: m.view(i)}
	}
	return safetensors.WriteDir(dir, ts, maxShard)
}

// ropeTables grows the cos/sin tables to cover positions [0, n), computed as
// HF does in f32: inv_freq = 1/θ^(2i/D), angle = f32(p)·inv_freq.
func (m *Model) ropeTables(n int) {
	half := m.Config.HeadDim / 2
	have := len(m.cos) / half
	if have >= n {
		return
	}
	n = max(n, 2*have, 256)
	inv := make([]float32, half)
	for i := range inv {
		e := float32(2*i) / float32(m.Config.HeadDim)
		inv[i] = 1 / float32(math.Pow(m.Config.RopeTheta, float64(e)))
	}
	cos, sin := make([]float32, n*half), make([]float32, n*half)
	for p := range n {
		for i, f := range inv {
			a := float64(float32(p) * f)
			cos[p*half+i], sin[p*half+i] = float32(math.Cos(a)), float32(math.Sin(a))
		}
	}
	m.cos, m.sin = cos, sin
}

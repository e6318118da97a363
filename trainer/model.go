package trainer

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"sync"

	"github.com/nextstate-rl/nextstate/trainer/backend"
	"github.com/nextstate-rl/nextstate/trainer/safetensors"
)

// Backend runs the model's kernels on buffers it owns; see trainer/backend.
type Backend = backend.Backend

// tensor is one named parameter in the arena.
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

// layout places every parameter in one arena (llm.c's
// malloc_and_point_parameters). Per layer, q/k/v and gate/up are adjacent so
// that each group is one matrix product.
type layout struct {
	tensors []tensor
	total   int
}

func (l *layout) add(name string, shape ...int) {
	t := tensor{name: name, shape: shape, off: l.total}
	l.tensors = append(l.tensors, t)
	l.total += t.size()
}

func newLayout(c Config) layout {
	var l layout
	C, D, F := c.HiddenSize, c.HeadDim, c.IntermediateSize
	l.add("model.embed_tokens.weight", c.VocabSize, C)
	for i := range c.NumHiddenLayers {
		p := fmt.Sprintf("model.layers.%d.", i)
		l.add(p+"input_layernorm.weight", C)
		l.add(p+"self_attn.q_proj.weight", c.NumAttentionHeads*D, C)
		l.add(p+"self_attn.k_proj.weight", c.NumKeyValueHeads*D, C)
		l.add(p+"self_attn.v_proj.weight", c.NumKeyValueHeads*D, C)
		l.add(p+"self_attn.q_norm.weight", D)
		l.add(p+"self_attn.k_norm.weight", D)
		l.add(p+"self_attn.o_proj.weight", C, c.NumAttentionHeads*D)
		l.add(p+"post_attention_layernorm.weight", C)
		l.add(p+"mlp.gate_proj.weight", F, C)
		l.add(p+"mlp.up_proj.weight", F, C)
		l.add(p+"mlp.down_proj.weight", C, F)
	}
	l.add("model.norm.weight", C)
	if !c.TieWordEmbeddings {
		l.add("lm_head.weight", c.VocabSize, C)
	}
	return l
}

// find returns the index of the tensor called name, or -1.
func (l *layout) find(name string) int {
	for i, t := range l.tensors {
		if t.name == name {
			return i
		}
	}
	return -1
}

// Layer is one decoder layer's views into an arena of the model's layout
// (its parameters, or their gradients).
type Layer struct {
	InputNorm backend.Buf // [C]
	QKV       backend.Buf // [(H+2KV)·D, C]: q_proj, k_proj, v_proj stacked
	QNorm     backend.Buf // [D]
	KNorm     backend.Buf // [D]
	O         backend.Buf // [C, H·D]
	PostNorm  backend.Buf // [C]
	GateUp    backend.Buf // [2F, C]: gate_proj, up_proj stacked
	Down      backend.Buf // [C, F]
}

// Weights are named views into an arena of the model's layout.
type Weights struct {
	Embed  backend.Buf // [V, C]
	Layers []Layer
	Norm   backend.Buf // [C]
	Head   backend.Buf // [V, C]; Embed itself when tie_word_embeddings
}

// point returns the named views of arena a (the order is newLayout's).
func (l *layout) point(c Config, a backend.Buf) Weights {
	view := func(i int) backend.Buf { t := l.tensors[i]; return a.Slice(t.off, t.size()) }
	span := func(i, n int) backend.Buf { // n consecutive tensors from i
		first, last := l.tensors[i], l.tensors[i+n-1]
		return a.Slice(first.off, last.off+last.size()-first.off)
	}
	w := Weights{Embed: view(0), Layers: make([]Layer, c.NumHiddenLayers)}
	i := 1
	for k := range w.Layers {
		w.Layers[k] = Layer{
			InputNorm: view(i), QKV: span(i+1, 3), QNorm: view(i + 4), KNorm: view(i + 5),
			O: view(i + 6), PostNorm: view(i + 7), GateUp: span(i+8, 2), Down: view(i + 10),
		}
		i += 11
	}
	w.Norm = view(i)
	w.Head = w.Embed
	if !c.TieWordEmbeddings {
		w.Head = view(i + 1)
	}
	return w
}

// Model is a Qwen3 decoder whose parameters live in one arena its backend
// allocated (Params), with named views (W). Its methods are serialised by
// the model; the backend parallelises each operation.
type Model struct {
	Config  Config
	Backend Backend
	Params  backend.Buf
	W       Weights

	layout layout
	mu     sync.Mutex // every method that runs kernels
	inf    inferBufs  // Forward's activations, grown to the largest call
	rope   ropeTables
	lora   *lora // adapters, applied by every forward when present
	// sharedBase is set on a Snapshot that reads another model's base
	// parameters: they are read-only here and not freed by Close.
	sharedBase bool
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
	m.Params = be.Alloc(m.layout.total)
	m.W = m.layout.point(c, m.Params)
	return m, nil
}

func (m *Model) view(i int) backend.Buf {
	t := m.layout.tensors[i]
	return m.Params.Slice(t.off, t.size())
}

// TensorInfo names one parameter tensor and its shape.
type TensorInfo struct {
	Name  string
	Shape []int
}

// Tensors lists the parameters in the arena's order, with HF's names.
func (m *Model) Tensors() []TensorInfo {
	out := make([]TensorInfo, len(m.layout.tensors))
	for i, t := range m.layout.tensors {
		out[i] = TensorInfo{t.name, t.shape}
	}
	return out
}

// tensorView is the view of the parameter called name: a base tensor (HF
// name) or a LoRA adapter (PEFT name).
func (m *Model) tensorView(name string) (backend.Buf, error) {
	if i := m.layout.find(name); i >= 0 {
		return m.view(i), nil
	}
	if m.lora != nil {
		if i := m.lora.lay.find(name); i >= 0 {
			return m.lora.view(i), nil
		}
	}
	return backend.Buf{}, fmt.Errorf("trainer: no parameter %q", name)
}

// ReadTensor copies the parameter called name (an HF name, or an adapter's
// PEFT name) to the host.
func (m *Model) ReadTensor(name string) ([]float32, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, err := m.tensorView(name)
	if err != nil {
		return nil, err
	}
	v := make([]float32, b.Len())
	m.Backend.Read(v, b)
	return v, nil
}

// WriteTensor sets the parameter called name from host values.
func (m *Model) WriteTensor(name string, v []float32) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, err := m.tensorView(name)
	if err != nil {
		return err
	}
	if m.sharedBase && m.layout.find(name) >= 0 {
		return ErrSharedBase
	}
	if len(v) != b.Len() {
		return fmt.Errorf("trainer: parameter %q has %d values, got %d", name, b.Len(), len(v))
	}
	m.Backend.Write(b, v)
	return nil
}

// AdapterTensors lists the LoRA adapters' tensors (PEFT names), none
// without adapters.
func (m *Model) AdapterTensors() []TensorInfo {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lora == nil {
		return nil
	}
	out := make([]TensorInfo, len(m.lora.lay.tensors))
	for i, t := range m.lora.lay.tensors {
		out[i] = TensorInfo{t.name, t.shape}
	}
	return out
}

// ReadParams copies the whole arena to the host, in the order of Tensors.
func (m *Model) ReadParams() []float32 {
	m.mu.Lock()
	defer m.mu.Unlock()
	v := make([]float32, m.Params.Len())
	m.Backend.Read(v, m.Params)
	return v
}

// WriteParams sets the whole arena from host values in the order of Tensors.
func (m *Model) WriteParams(v []float32) error {
	if len(v) != m.Params.Len() {
		return fmt.Errorf("trainer: the model has %d parameters, got %d", m.Params.Len(), len(v))
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.sharedBase {
		return ErrSharedBase
	}
	m.Backend.Write(m.Params, v)
	return nil
}

// InitRandom fills the parameters as HF's Qwen3 initialiser does: normal
// weights with standard deviation std (initializer_range, 0.02), norms at one.
func (m *Model) InitRandom(seed uint64, std float64) {
	r := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	host := make([]float32, m.Params.Len())
	for _, t := range m.layout.tensors {
		v := host[t.off : t.off+t.size()]
		for j := range v {
			if len(t.shape) == 1 {
				v[j] = 1
			} else {
				v[j] = float32(r.NormFloat64() * std)
			}
		}
	}
	m.WriteParams(host)
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
	if err := m.loadTensors(dir, ""); err != nil {
		m.Close()
		return nil, err
	}
	return m, nil
}

// loadTensors reads every parameter from the safetensors of dir, each
// looked up under prefix+name, one tensor at a time through the host.
func (m *Model) loadTensors(dir, prefix string) error {
	d, err := safetensors.OpenDir(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return readInto(m.Backend, d, dir, &m.layout, prefix, arenaViews(&m.layout, m.Params))
}

// tensorSource is a safetensors file or folder.
type tensorSource interface {
	Info(name string) (safetensors.Info, bool)
	ReadFloat32(name string, dst []float32) error
}

// readInto reads each tensor i of lay that dst(i) gives a view for (the
// zero Buf skips it), looked up under prefix+name in src (called where in
// errors), one at a time through the host.
func readInto(be Backend, src tensorSource, where string, lay *layout, prefix string, dst func(i int) backend.Buf) error {
	var host []float32
	for i, t := range lay.tensors {
		v := dst(i)
		if v.Nil() {
			continue
		}
		info, ok := src.Info(prefix + t.name)
		if !ok {
			return fmt.Errorf("trainer: %s: %w: %q", where, safetensors.ErrNotFound, prefix+t.name)
		}
		if !sameShape(info.Shape, t.shape) {
			return fmt.Errorf("trainer: %s: tensor %q has shape %v, want %v", where, prefix+t.name, info.Shape, t.shape)
		}
		if cap(host) < t.size() {
			host = make([]float32, t.size())
		}
		if err := src.ReadFloat32(prefix+t.name, host[:t.size()]); err != nil {
			return err
		}
		be.Write(v, host[:t.size()])
	}
	return nil
}

// arenaViews gives readInto the views of lay's tensors in arena.
func arenaViews(lay *layout, arena backend.Buf) func(int) backend.Buf {
	return func(i int) backend.Buf { t := lay.tensors[i]; return arena.Slice(t.off, t.size()) }
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
// needed), sharded above maxShard bytes (0: one file): the Hugging Face
// layout Load, transformers, vLLM and SGLang read.
func (m *Model) Save(dir string, dtype safetensors.DType, maxShard int64) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.saveLocked(dir, dtype, maxShard)
}

// saveLocked is Save's work, m.mu held.
func (m *Model) saveLocked(dir string, dtype safetensors.DType, maxShard int64) error {
	c := m.Config
	c.TorchDType = map[safetensors.DType]string{safetensors.F32: "float32", safetensors.F16: "float16", safetensors.BF16: "bfloat16"}[dtype]
	if err := WriteConfig(dir, c); err != nil {
		return err
	}
	return safetensors.WriteDir(dir, m.hostTensors(m.Params, dtype, ""), maxShard)
}

// hostTensors describes arena a (of the model's layout) for the
// safetensors writer, each tensor read from the backend when written.
func (m *Model) hostTensors(a backend.Buf, dtype safetensors.DType, prefix string) []safetensors.Tensor {
	ts := make([]safetensors.Tensor, len(m.layout.tensors))
	for i, t := range m.layout.tensors {
		v := a.Slice(t.off, t.size())
		ts[i] = safetensors.Tensor{Name: prefix + t.name, DType: dtype, Shape: t.shape, Fill: func(dst []float32) { m.Backend.Read(dst, v) }}
	}
	return ts
}

// Close releases the model's buffers; the model must not be used after.
func (m *Model) Close() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closeLocked()
}

func (m *Model) closeLocked() {
	m.inf.free(m.Backend)
	m.rope.free(m.Backend)
	if m.lora != nil {
		m.Backend.Free(m.lora.arena)
		m.lora = nil
	}
	if !m.Params.Nil() && !m.sharedBase {
		m.Backend.Free(m.Params)
	}
	m.Params = backend.Buf{}
}

// ropeTables holds the rotary tables on the backend, grown as positions need.
type ropeTables struct {
	n    int // positions covered
	tabs backend.Rope
}

func (r *ropeTables) free(be Backend) {
	if r.n > 0 {
		be.Free(r.tabs.Cos)
		be.Free(r.tabs.Sin)
		*r = ropeTables{}
	}
}

// ropeFor grows the tables to cover positions [0, n), computed as HF does
// in f32: inv_freq = 1/θ^(2i/D), angle = f32(p)·inv_freq; a host crossing
// only when they grow.
func (m *Model) ropeFor(n int) backend.Rope {
	if m.rope.n >= n {
		return m.rope.tabs
	}
	n = max(n, 2*m.rope.n, 256)
	half := m.Config.HeadDim / 2
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
	m.rope.free(m.Backend)
	be := m.Backend
	m.rope = ropeTables{n: n, tabs: backend.Rope{Cos: be.Alloc(len(cos)), Sin: be.Alloc(len(sin))}}
	be.Write(m.rope.tabs.Cos, cos)
	be.Write(m.rope.tabs.Sin, sin)
	return m.rope.tabs
}

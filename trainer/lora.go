package trainer

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/nextstate-rl/nextstate/trainer/backend"
)

// LoRAConfig describes low-rank adapters (PEFT's LoraConfig): each target
// projection y = x·Wᵀ becomes y = x·Wᵀ + (Alpha/Rank)·(x·Aᵀ)·Bᵀ with
// A [Rank, in] and B [out, Rank] trained and W frozen. The merged weight is
// never formed while training; MergeLoRA forms it for export.
type LoRAConfig struct {
	Rank  int
	Alpha float64
	// Targets are projection names: any of q_proj, k_proj, v_proj, o_proj,
	// gate_proj, up_proj, down_proj; nil means all seven.
	Targets []string
}

// LoRATargets are the projections an adapter may target, in layer order.
var LoRATargets = []string{"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}

// The adapter groups of a layer: the projections that share an input and
// an output activation (q/k/v read h1 and write qkv; gate/up read h2 and
// write gu).
const (
	groupQKV = iota
	groupO
	groupGU
	groupDown
	numGroups
)

// loraTarget is one adapted projection: columns [c0, c1) of its group's
// output, and the layout indices of its A and B.
type loraTarget struct {
	c0, c1, a, b int
}

// loraGroup is a layer's adapters that share an input of width in: their
// A's are adjacent in the arena ([n·Rank, in] together, A), so one product
// x·Aᵀ serves them all.
type loraGroup struct {
	targets []loraTarget
	in      int
	A       backend.Buf
}

// lora is a model's adapters: one arena of PEFT-named tensors.
type lora struct {
	cfg    LoRAConfig
	scale  float32
	lay    layout
	arena  backend.Buf
	layers [][numGroups]loraGroup
}

func (c LoRAConfig) check() (LoRAConfig, error) {
	if c.Rank <= 0 || c.Alpha <= 0 || math.IsNaN(c.Alpha) {
		return c, fmt.Errorf("trainer: LoRA rank %d and alpha %g must be positive", c.Rank, c.Alpha)
	}
	if c.Targets == nil {
		c.Targets = LoRATargets
	}
	if len(c.Targets) == 0 {
		return c, errors.New("trainer: LoRA with no target projection")
	}
	for i, t := range c.Targets {
		if !slices.Contains(LoRATargets, t) {
			return c, fmt.Errorf("trainer: LoRA target %q is not one of %v", t, LoRATargets)
		}
		if slices.Contains(c.Targets[:i], t) {
			return c, fmt.Errorf("trainer: LoRA target %q given twice", t)
		}
	}
	return c, nil
}

func peftName(l int, proj, ab string) string {
	mod := "self_attn"
	if proj == "gate_proj" || proj == "up_proj" || proj == "down_proj" {
		mod = "mlp"
	}
	return fmt.Sprintf("base_model.model.model.layers.%d.%s.%s.lora_%s.weight", l, mod, proj, ab)
}

// newLoRA lays out the adapters of cfg for the model (zeros).
func (m *Model) newLoRA(cfg LoRAConfig) (*lora, error) {
	cfg, err := cfg.check()
	if err != nil {
		return nil, err
	}
	d, r := m.dims(), cfg.Rank
	HD, KVD := d.H*d.D, d.KV*d.D
	type proj struct {
		name           string
		group, c0, out int
	}
	projs := []proj{{"q_proj", groupQKV, 0, HD}, {"k_proj", groupQKV, HD, KVD}, {"v_proj", groupQKV, HD + KVD, KVD},
		{"o_proj", groupO, 0, d.C}, {"gate_proj", groupGU, 0, d.F}, {"up_proj", groupGU, d.F, d.F}, {"down_proj", groupDown, 0, d.C}}
	in := [numGroups]int{d.C, HD, d.C, d.F}
	lo := &lora{cfg: cfg, scale: float32(cfg.Alpha / float64(r)), layers: make([][numGroups]loraGroup, m.Config.NumHiddenLayers)}
	for l := range lo.layers {
		for g := range numGroups {
			grp := &lo.layers[l][g]
			grp.in = in[g]
			var mine []proj
			for _, p := range projs {
				if p.group == g && slices.Contains(cfg.Targets, p.name) {
					mine = append(mine, p)
				}
			}
			for _, p := range mine { // the A's first, adjacent
				grp.targets = append(grp.targets, loraTarget{c0: p.c0, c1: p.c0 + p.out, a: len(lo.lay.tensors)})
				lo.lay.add(peftName(l, p.name, "A"), r, in[g])
			}
			for i, p := range mine {
				grp.targets[i].b = len(lo.lay.tensors)
				lo.lay.add(peftName(l, p.name, "B"), p.out, r)
			}
		}
	}
	lo.arena = m.Backend.Alloc(lo.lay.total)
	for l := range lo.layers {
		for g := range numGroups {
			grp := &lo.layers[l][g]
			if n := len(grp.targets); n > 0 {
				first := lo.lay.tensors[grp.targets[0].a]
				grp.A = lo.arena.Slice(first.off, n*r*grp.in)
			}
		}
	}
	return lo, nil
}

func (lo *lora) view(i int) backend.Buf {
	t := lo.lay.tensors[i]
	return lo.arena.Slice(t.off, t.size())
}

// width is the group's adapter width n·Rank: the columns of its x·Aᵀ.
func (lo *lora) width(g int) int { return len(lo.layers[0][g].targets) * lo.cfg.Rank }

// AddLoRA gives the model adapters initialised as PEFT does: A
// Kaiming-uniform (bound 1/√in), B zeros, so the model's function is
// unchanged until training moves B. Forward (and so an Engine) applies them.
func (m *Model) AddLoRA(cfg LoRAConfig, seed uint64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lora != nil {
		return errors.New("trainer: the model already has LoRA adapters")
	}
	lo, err := m.newLoRA(cfg)
	if err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(seed, 0x6c6f7261))
	host := make([]float32, lo.lay.total)
	for l := range lo.layers {
		for _, grp := range lo.layers[l] {
			for _, t := range grp.targets {
				a := lo.lay.tensors[t.a]
				bound := 1 / math.Sqrt(float64(grp.in))
				for j := range a.size() {
					host[a.off+j] = float32((2*rng.Float64() - 1) * bound)
				}
			}
		}
	}
	m.Backend.Write(lo.arena, host)
	m.lora = lo
	return nil
}

// LoRA returns the adapters' configuration, or nil when the model has none.
func (m *Model) LoRA() *LoRAConfig {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lora == nil {
		return nil
	}
	c := m.lora.cfg
	c.Targets = slices.Clone(c.Targets)
	return &c
}

// RemoveLoRA drops the adapters (unmerged).
func (m *Model) RemoveLoRA() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lora != nil {
		m.Backend.Free(m.lora.arena)
		m.lora = nil
	}
}

// MergeLoRA adds each adapter into its base weight, W += (Alpha/Rank)·B·A,
// and drops the adapters: the model then computes what it computed with
// them, in the plain Hugging Face layout that Save writes.
func (m *Model) MergeLoRA() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	lo := m.lora
	if lo == nil {
		return errors.New("trainer: no LoRA adapters to merge")
	}
	if m.sharedBase {
		return ErrSharedBase
	}
	r := lo.cfg.Rank
	for l := range lo.layers {
		base := [numGroups]backend.Buf{m.W.Layers[l].QKV, m.W.Layers[l].O, m.W.Layers[l].GateUp, m.W.Layers[l].Down}
		for g, grp := range lo.layers[l] {
			for _, t := range grp.targets {
				w := base[g].Mat(base[g].Len()/grp.in, grp.in)
				rows := backend.Mat{B: w.B.Slice(t.c0*grp.in, (t.c1-t.c0)*grp.in), R: t.c1 - t.c0, C: grp.in, Ld: grp.in}
				m.Backend.Gemm(rows, lo.view(t.b).Mat(t.c1-t.c0, r), false, lo.view(t.a).Mat(r, grp.in), false, lo.scale, 1)
			}
		}
	}
	m.Backend.Free(lo.arena)
	m.lora = nil
	return nil
}

// loraForward adds group g's adapters of layer l to its output y [N, ·]:
// u = x·Aᵀ for the group's stacked A's, then y[:, target] += s·u_t·B_tᵀ.
func (m *Model) loraForward(l, g int, u, x, y backend.Buf, N int) {
	lo := m.lora
	if lo == nil {
		return
	}
	grp := &lo.layers[l][g]
	if len(grp.targets) == 0 {
		return
	}
	be, r, w := m.Backend, lo.cfg.Rank, len(grp.targets)*lo.cfg.Rank
	be.Gemm(u.Mat(N, w), x.Mat(N, grp.in), false, grp.A.Mat(w, grp.in), true, 1, 0)
	out := y.Mat(N, y.Len()/N)
	for i, t := range grp.targets {
		be.Gemm(out.Cols(t.c0, t.c1), u.Mat(N, w).Cols(i*r, (i+1)*r), false, lo.view(t.b).Mat(t.c1-t.c0, r), true, lo.scale, 1)
	}
}

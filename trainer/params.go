package trainer

import "github.com/nextstate-rl/nextstate/trainer/backend"

// paramGroup is a set of parameter tensors in one arena (the model's, or
// its LoRA adapters') with their training state: gradient and AdamW moment
// arenas holding only the trainable tensors, allocated at the first
// backward and the first step (llm.c's lazy grads_memory and m_memory).
type paramGroup struct {
	lay       *layout
	params    backend.Buf
	trainable []bool
	grads     backend.Buf
	mom, vel  backend.Buf
	gw        []backend.Buf // per tensor: gradient view, zero Buf when frozen
	mw, vw    []backend.Buf
}

func newGroup(lay *layout, params backend.Buf, trainable func(name string) bool) *paramGroup {
	g := &paramGroup{lay: lay, params: params, trainable: make([]bool, len(lay.tensors))}
	for i, t := range lay.tensors {
		g.trainable[i] = trainable(t.name)
	}
	return g
}

func (g *paramGroup) view(i int) backend.Buf {
	t := g.lay.tensors[i]
	return g.params.Slice(t.off, t.size())
}

func (g *paramGroup) anyTrainable() bool {
	for _, b := range g.trainable {
		if b {
			return true
		}
	}
	return false
}

// compact allocates an arena of the trainable tensors, in the layout's
// order, and returns it with a view per tensor (zero when frozen).
func (g *paramGroup) compact(be Backend) (backend.Buf, []backend.Buf) {
	n := 0
	for i, t := range g.lay.tensors {
		if g.trainable[i] {
			n += t.size()
		}
	}
	views := make([]backend.Buf, len(g.lay.tensors))
	if n == 0 {
		return backend.Buf{}, views
	}
	a := be.Alloc(n)
	off := 0
	for i, t := range g.lay.tensors {
		if g.trainable[i] {
			views[i] = a.Slice(off, t.size())
			off += t.size()
		}
	}
	return a, views
}

func (g *paramGroup) allocGrads(be Backend) {
	if g.gw == nil {
		g.grads, g.gw = g.compact(be)
	}
}

// grad is tensor i's gradient view (zero when frozen or not allocated).
func (g *paramGroup) grad(i int) backend.Buf {
	if g.gw == nil {
		return backend.Buf{}
	}
	return g.gw[i]
}

func (g *paramGroup) sumSquares(be backend.Trainer) float64 {
	var s float64
	for i, b := range g.gw {
		if g.trainable[i] {
			s += be.SumSquares(b)
		}
	}
	return s
}

// step takes one AdamW step on every trainable tensor (decay only on
// tensors of two or more dimensions) and zeroes the gradients.
func (g *paramGroup) step(be backend.Trainer, s backend.AdamW) {
	if g.gw == nil {
		return
	}
	if g.mw == nil {
		g.mom, g.mw = g.compact(be)
		g.vel, g.vw = g.compact(be)
	}
	wd := s.WeightDecay
	for i, t := range g.lay.tensors {
		if !g.trainable[i] {
			continue
		}
		s.WeightDecay = wd
		if len(t.shape) < 2 {
			s.WeightDecay = 0
		}
		be.AdamW(g.view(i), g.gw[i], g.mw[i], g.vw[i], s)
	}
	g.zeroGrads(be)
}

func (g *paramGroup) zeroGrads(be Backend) {
	if !g.grads.Nil() {
		be.Zero(g.grads)
	}
}

func (g *paramGroup) free(be Backend) {
	for _, b := range []*backend.Buf{&g.grads, &g.mom, &g.vel} {
		if !b.Nil() {
			be.Free(*b)
			*b = backend.Buf{}
		}
	}
	g.gw, g.mw, g.vw = nil, nil, nil
}

package trainer

import (
	"errors"
	"fmt"

	"github.com/nextstate-rl/nextstate/trainer/backend"
)

// TrainOptions configure a Training; zero values mean the stated defaults.
type TrainOptions struct {
	// Trainable says which parameters (by Hugging Face name) are trained;
	// nil trains every one (full fine-tuning). The others are frozen: no
	// gradient, no optimizer state.
	Trainable func(name string) bool
	// Recompute keeps only each layer's input through the forward and
	// recomputes the layer's activations in the backward: memory for one
	// layer's activations instead of all of them, for one more forward.
	Recompute bool
	// LogitsChunk is how many scored rows' logits [rows, V] exist at once
	// (default: as many as fit in 32 MiB, at least 16).
	LogitsChunk int
}

// Training is a model being trained: its gradients and optimizer state,
// allocated on the model's backend at the first backward and the first
// step, and the pass's workspace. Its methods are serialised with the
// model's (an Engine serving the model waits while a step runs).
type Training struct {
	m   *Model
	be  backend.Trainer
	opt TrainOptions

	trainable []bool        // per tensor of the layout
	grads     backend.Buf   // arena of the trainable tensors' gradients
	gw        []backend.Buf // per tensor: its gradient view (zero Buf when frozen)
	mom, vel  backend.Buf   // AdamW moments, same layout as grads
	mw, vw    []backend.Buf
	step      int
	pending   int // ForwardBackward calls whose gradients no Step has used
	ws        arena
}

// ErrNotTrainer is returned when the model's backend cannot train.
var ErrNotTrainer = errors.New("trainer: the backend has no backward operations (backend.Trainer)")

// NewTraining prepares m for training on its backend.
func NewTraining(m *Model, opt TrainOptions) (*Training, error) {
	be, ok := m.Backend.(backend.Trainer)
	if !ok {
		return nil, ErrNotTrainer
	}
	t := &Training{m: m, be: be, opt: opt, trainable: make([]bool, len(m.layout.tensors))}
	any := false
	for i, tn := range m.layout.tensors {
		t.trainable[i] = opt.Trainable == nil || opt.Trainable(tn.name)
		any = any || t.trainable[i]
	}
	if !any {
		return nil, errors.New("trainer: no parameter is trainable")
	}
	return t, nil
}

// Model is the model being trained.
func (t *Training) Model() *Model { return t.m }

// Steps is the number of optimizer steps taken.
func (t *Training) Steps() int { return t.step }

// allocGrads makes the gradient arena at the first backward (llm.c's lazy
// grads_memory): one view per trainable tensor, zeros.
func (t *Training) allocGrads() {
	if !t.grads.Nil() {
		return
	}
	t.grads, t.gw = t.compactArena()
}

// compactArena allocates an arena holding the trainable tensors, in the
// layout's order, and returns it with a view per tensor (zero when frozen).
func (t *Training) compactArena() (backend.Buf, []backend.Buf) {
	n := 0
	for i, tn := range t.m.layout.tensors {
		if t.trainable[i] {
			n += tn.size()
		}
	}
	a := t.be.Alloc(n)
	views := make([]backend.Buf, len(t.m.layout.tensors))
	off := 0
	for i, tn := range t.m.layout.tensors {
		if t.trainable[i] {
			views[i] = a.Slice(off, tn.size())
			off += tn.size()
		}
	}
	return a, views
}

// Grad copies the accumulated gradient of the parameter called name to the
// host (nil when it is frozen or no backward has run).
func (t *Training) Grad(name string) ([]float32, error) {
	i := t.m.layout.find(name)
	if i < 0 {
		return nil, fmt.Errorf("trainer: no parameter %q", name)
	}
	t.m.mu.Lock()
	defer t.m.mu.Unlock()
	if t.gw == nil || t.gw[i].Nil() {
		return nil, nil
	}
	v := make([]float32, t.gw[i].Len())
	t.be.Read(v, t.gw[i])
	return v, nil
}

// Loss is an objective over the scored rows' log-probabilities (and their
// entropies when it asks for them). ForwardBackward calls Grad once per
// chunk of scored rows, in order; the gradient flows from what it fills in.
type Loss interface {
	// Entropy says whether Grad needs the rows' entropies.
	Entropy() bool
	// Grad fills c.DLogProbs (and c.DEntropy) and returns the chunk's part
	// of the loss.
	Grad(c *Chunk) float64
}

// Chunk is one chunk of scored rows handed to a Loss: rows [Lo, Lo+Rows)
// of the batch's Total scored rows, K targets each.
type Chunk struct {
	Lo, Rows, Total, K int
	LogProbs           []float32 // [Rows·K]: log p(target | row)
	Entropy            []float32 // [Rows] when the loss asked for it, else nil
	DLogProbs          []float32 // [Rows·K]: ∂L/∂LogProbs, zeroed, to fill
	DEntropy           []float32 // [Rows]: ∂L/∂Entropy, zeroed, to fill (nil unless Entropy)
}

// Output is what a ForwardBackward or a Score measured, on the host.
type Output struct {
	Loss        float64
	LogProbs    []float32 // [S·K]: each scored row's targets
	Entropy     []float32 // [S] when asked for
	TopIDs      []int32   // [S·TopK] (Score with TopK)
	TopLogProbs []float32
}

// ForwardBackward runs the batch forward, the loss over its scored rows
// (chunk by chunk, no [N, V] logits kept) and the backward, adding the
// gradients into the trainable parameters' (they accumulate over calls until
// Step). The host crossings are the token, row and target ids in, and each
// chunk's log-probabilities out and their loss gradients in.
func (t *Training) ForwardBackward(b *Batch, loss Loss) (Output, error) {
	if loss == nil {
		return Output{}, errors.New("trainer: ForwardBackward needs a loss")
	}
	return t.pass(b, loss, 0, loss.Entropy())
}

// Score runs the batch forward only and returns each scored row's target
// log-probabilities, the entropies when entropy is set, and the topK
// likeliest ids with their log-probabilities when topK > 0: a frozen
// reference's or a teacher's view of the batch.
func (t *Training) Score(b *Batch, entropy bool, topK int) (Output, error) {
	if topK < 0 || topK > t.m.Config.VocabSize {
		return Output{}, fmt.Errorf("trainer: top-K %d outside [0, %d]", topK, t.m.Config.VocabSize)
	}
	return t.pass(b, nil, topK, entropy)
}

func (t *Training) chunkRows(S int) int {
	n := t.opt.LogitsChunk
	if n <= 0 {
		n = max(16, (32<<20)/(4*t.m.Config.VocabSize))
	}
	return max(1, min(n, S))
}

func (t *Training) pass(b *Batch, loss Loss, topK int, entropy bool) (Output, error) {
	d := t.m.dims()
	pk, err := b.pack(d.V)
	if err != nil {
		return Output{}, err
	}
	t.m.mu.Lock()
	defer t.m.mu.Unlock()
	grad := loss != nil
	N, S, K := len(pk.tokens), len(pk.rows), pk.K
	chunk := t.chunkRows(max(S, 1))
	kept := grad && !t.opt.Recompute
	p := t.carvePass(N, S, K, chunk, kept, grad)
	be := t.be
	be.WriteIDs(p.ids, pk.tokens)
	be.WriteIDs(p.rowIDs, pk.rows)
	be.WriteIDs(p.targets, pk.targets)
	rope := t.m.ropeFor(pk.maxLen)
	kvd := d.KV * d.D

	be.Embed(p.xIn[0], t.m.W.Embed, p.ids, d.C)
	for l := range t.m.W.Layers {
		a, k, v := p.layer(l)
		out := p.x
		if l+1 < len(p.xIn) {
			out = p.xIn[l+1]
		}
		m := t.m
		m.layerForward(&m.W.Layers[l], a, out, segsOver(pk.starts, N, k, v, kvd), N, rope)
	}
	res := Output{LogProbs: make([]float32, S*K)}
	if entropy {
		res.Entropy = make([]float32, S)
	}
	if topK > 0 {
		res.TopIDs, res.TopLogProbs = make([]int32, S*topK), make([]float32, S*topK)
	}
	if grad {
		t.allocGrads()
	}
	if S > 0 {
		be.Embed(p.hs, p.x, p.rowIDs, d.C)
		be.RMSNorm(p.hn, p.rstdF, p.hs, t.m.W.Norm, S, d.C, d.eps)
		if grad {
			be.Zero(p.dhn)
		}
		t.head(p, pk, S, K, chunk, loss, topK, &res)
	}
	if grad {
		t.backward(p, pk, N, S, rope)
		t.pending++
	}
	return res, nil
}

// head computes the scored rows' log-probabilities chunk by chunk and,
// with a loss, the gradient of the final hidden states (p.dhn) and of the
// output head.
func (t *Training) head(p *passBufs, pk *packed, S, K, chunk int, loss Loss, topK int, res *Output) {
	be, d := t.be, t.m.dims()
	var top, topLP backend.Buf
	if topK > 0 {
		top, topLP = be.AllocIDs(chunk*topK), be.Alloc(chunk*topK)
		defer be.Free(top)
		defer be.Free(topLP)
	}
	var headGrad backend.Buf
	if loss != nil {
		headGrad = t.gw[t.headIndex()]
	}
	var dlp, dent []float32
	for lo := 0; lo < S; lo += chunk {
		n := min(chunk, S-lo)
		lg, lse := p.logits.Slice(0, n*d.V), p.lse.Slice(0, n)
		lp, ent := p.lp.Slice(0, n*K), backend.Buf{}
		if res.Entropy != nil {
			ent = p.ent.Slice(0, n)
		}
		hn := p.hn.Rows(lo, lo+n, d.C)
		tg := p.targets.Slice(lo*K, n*K)
		linear(be, lg, hn, t.m.W.Head, n, d.V, d.C, 0)
		be.LogSoftmax(lp, ent, lse, lg, tg, n, d.V, K)
		hlp := res.LogProbs[lo*K : (lo+n)*K]
		be.Read(hlp, lp)
		var hent []float32
		if !ent.Nil() {
			hent = res.Entropy[lo : lo+n]
			be.Read(hent, ent)
		}
		if topK > 0 {
			ti, tl := top.Slice(0, n*topK), topLP.Slice(0, n*topK)
			be.TopK(ti, tl, lg, lse, n, d.V, topK)
			be.ReadIDs(res.TopIDs[lo*topK:(lo+n)*topK], ti)
			be.Read(res.TopLogProbs[lo*topK:(lo+n)*topK], tl)
		}
		if loss == nil {
			continue
		}
		dlp = grow32(dlp, n*K)
		var dentB backend.Buf
		if hent != nil {
			dent = grow32(dent, n)
			clear(dent)
		} else {
			dent = dent[:0]
		}
		clear(dlp)
		res.Loss += loss.Grad(&Chunk{Lo: lo, Rows: n, Total: S, K: K, LogProbs: hlp, Entropy: hent, DLogProbs: dlp, DEntropy: nilIfEmpty(dent)})
		be.Write(p.dlp.Slice(0, n*K), dlp)
		if hent != nil {
			dentB = p.dent.Slice(0, n)
			be.Write(dentB, dent)
		}
		be.LogSoftmaxBackward(lg, lg, lse, ent, tg, p.dlp.Slice(0, n*K), dentB, n, d.V, K)
		be.Gemm(p.dhn.Rows(lo, lo+n, d.C).Mat(n, d.C), lg.Mat(n, d.V), false, t.m.W.Head.Mat(d.V, d.C), false, 1, 0)
		if !headGrad.Nil() {
			be.Gemm(headGrad.Mat(d.V, d.C), lg.Mat(n, d.V), true, hn.Mat(n, d.C), false, 1, 1)
		}
	}
}

func grow32(s []float32, n int) []float32 {
	if cap(s) < n {
		return make([]float32, n)
	}
	return s[:n]
}

func nilIfEmpty(s []float32) []float32 {
	if len(s) == 0 {
		return nil
	}
	return s
}

// headIndex is the layout index of the output head's tensor (the
// embeddings when tied).
func (t *Training) headIndex() int {
	if t.m.Config.TieWordEmbeddings {
		return 0
	}
	return len(t.m.layout.tensors) - 1
}

// layerTensor is the layout index of tensor j (0 input norm, 1 q, 2 k, 3 v,
// 4 q norm, 5 k norm, 6 o, 7 post norm, 8 gate, 9 up, 10 down) of layer l.
func layerTensor(l, j int) int { return 1 + 11*l + j }

// lowestTrained is the lowest layer the backward must reach: below it
// nothing is trained (len(layers) when only the head and final norm are).
func (t *Training) lowestTrained() int {
	if t.trainable[0] {
		return 0
	}
	for l := range t.m.Config.NumHiddenLayers {
		for j := range 11 {
			if t.trainable[layerTensor(l, j)] {
				return l
			}
		}
	}
	return t.m.Config.NumHiddenLayers
}

// backward runs from the final norm down to the embeddings.
func (t *Training) backward(p *passBufs, pk *packed, N, S int, rope backend.Rope) {
	be, d := t.be, t.m.dims()
	be.Zero(p.dx)
	if S > 0 {
		be.Zero(p.dhs)
		be.RMSNormBackward(p.dhs, t.gw[t.normIndex()], p.dhn, p.hs, t.m.W.Norm, p.rstdF, S, d.C)
		be.EmbedBackward(p.dx, p.dhs, p.rowIDs, d.C)
	}
	low := t.lowestTrained()
	kvd := d.KV * d.D
	for l := len(t.m.W.Layers) - 1; l >= low; l-- {
		a, k, v := p.layer(l)
		segs := segsOver(pk.starts, N, k, v, kvd)
		if t.opt.Recompute {
			out := p.x // the layer's output is not needed again: write it to the spare buffer
			t.m.layerForward(&t.m.W.Layers[l], a, out, segs, N, rope)
		}
		t.layerBackward(l, a, segs, p, N, rope)
	}
	if g := t.gw[0]; !g.Nil() {
		be.EmbedBackward(g, p.dx, p.ids, d.C)
	}
}

// normIndex is the layout index of the final norm's weight.
func (t *Training) normIndex() int { return 1 + 11*t.m.Config.NumHiddenLayers }

// layerBackward takes p.dx = ∂L/∂(layer l's output) to ∂L/∂(its input),
// adding the layer's weight gradients.
func (t *Training) layerBackward(l int, a *layerActs, segs []backend.Seg, p *passBufs, N int, rope backend.Rope) {
	be, dm := t.be, t.m.dims()
	C, F, HD, W := dm.C, dm.F, dm.H*dm.D, dm.W
	L := &t.m.W.Layers[l]
	g := func(j int) backend.Buf { return t.gw[layerTensor(l, j)] }
	dx := p.dx.Mat(N, C)
	// MLP: out = xMid + act·downᵀ, act = swiglu(h2·[gate; up]ᵀ), h2 = norm(xMid)
	be.Gemm(p.dact.Mat(N, F), dx, false, L.Down.Mat(C, F), false, 1, 0)
	if gd := g(10); !gd.Nil() {
		be.Gemm(gd.Mat(C, F), dx, true, a.act.Mat(N, F), false, 1, 1)
	}
	be.Zero(p.dgu)
	be.SwiGLUBackward(p.dgu, p.dact, a.gu, N, F)
	dgu := p.dgu.Mat(N, 2*F)
	be.Gemm(p.dh.Mat(N, C), dgu, false, L.GateUp.Mat(2*F, C), false, 1, 0)
	for j, cols := range [][2]int{{0, F}, {F, 2 * F}} {
		if gw := g(8 + j); !gw.Nil() {
			be.Gemm(gw.Mat(F, C), dgu.Cols(cols[0], cols[1]), true, a.h2.Mat(N, C), false, 1, 1)
		}
	}
	be.RMSNormBackward(p.dx, g(7), p.dh, a.xMid, L.PostNorm, a.rstd2, N, C)
	// attention: xMid = xIn + att·oᵀ, att = attention(qknorm-rope(h1·[q; k; v]ᵀ)), h1 = norm(xIn)
	be.Gemm(p.datt.Mat(N, HD), dx, false, L.O.Mat(C, HD), false, 1, 0)
	if gO := g(6); !gO.Nil() {
		be.Gemm(gO.Mat(C, HD), dx, true, a.att.Mat(N, HD), false, 1, 1)
	}
	be.Zero(p.dq)
	be.Zero(p.dk)
	be.Zero(p.dv)
	be.AttentionBackward(p.dq, p.dk, p.dv, p.datt, a.q, a.att, a.lse, segs, dm.heads)
	be.Zero(p.dqkv)
	be.QKNormRoPEBackward(p.dqkv, g(4), g(5), p.dq, p.dk, p.dv, a.qkv, L.QNorm, L.KNorm, segs, rope, dm.heads, dm.eps)
	dqkv := p.dqkv.Mat(N, W)
	be.Gemm(p.dh.Mat(N, C), dqkv, false, L.QKV.Mat(W, C), false, 1, 0)
	kv := dm.KV * dm.D
	for j, cols := range [][2]int{{0, HD}, {HD, HD + kv}, {HD + kv, W}} {
		if gw := g(1 + j); !gw.Nil() {
			be.Gemm(gw.Mat(cols[1]-cols[0], C), dqkv.Cols(cols[0], cols[1]), true, a.h1.Mat(N, C), false, 1, 1)
		}
	}
	be.RMSNormBackward(p.dx, g(0), p.dh, a.xIn, L.InputNorm, a.rstd1, N, C)
}

// CrossEntropy is the mean negative log-likelihood of the targets (K = 1):
// L = −Σ w_i·lp_i / Norm, with Weights w over the batch's scored rows (nil:
// all one) and Norm (0: the number of scored rows). Set Norm to the total
// over the micro-batches of an accumulated step so that the step sees one
// mean.
type CrossEntropy struct {
	Weights []float32
	Norm    float64
}

func (CrossEntropy) Entropy() bool { return false }

func (ce CrossEntropy) Grad(c *Chunk) float64 {
	norm := ce.Norm
	if norm == 0 {
		norm = float64(c.Total)
	}
	var l float64
	for i, v := range c.LogProbs {
		w := float32(1)
		if ce.Weights != nil {
			w = ce.Weights[c.Lo+i/c.K]
		}
		c.DLogProbs[i] = -w / float32(norm)
		l -= float64(w) * float64(v)
	}
	return l / norm
}

package trainer

import (
	"github.com/nextstate-rl/nextstate/trainer/backend"
)

// layerActs names the buffers of one decoder layer's forward (shapes in
// trainer/backend's legend). Inference passes one set for every layer, with
// xIn = xMid (the residual stream updated in place) and no rstd or lse;
// training keeps one set per layer for the backward. Keys and values are
// the segments' K, V.
type layerActs struct {
	xIn, xMid    backend.Buf            // [N, C]: the residual stream entering the layer, and after attention
	h1, h2       backend.Buf            // [N, C]: the normalised inputs of attention and of the MLP
	rstd1, rstd2 backend.Buf            // [N]
	qkv          backend.Buf            // [N, (H+2KV)·D] before the q/k norms
	q            backend.Buf            // [N, H·D] normalised and rotated
	att          backend.Buf            // [N, H·D] attention's output
	lse          backend.Buf            // [N, H]
	gu           backend.Buf            // [N, 2F]
	act          backend.Buf            // [N, F]
	u            [numGroups]backend.Buf // LoRA: [N, n·Rank] per adapter group, x·Aᵀ
}

// dims are the model's shapes in the legend's letters.
type dims struct {
	C, H, KV, D, F, V, W int // W = (H+2KV)·D, the fused q/k/v width
	eps                  float32
	heads                backend.Heads
}

func (m *Model) dims() dims {
	c := m.Config
	d := dims{C: c.HiddenSize, H: c.NumAttentionHeads, KV: c.NumKeyValueHeads, D: c.HeadDim, F: c.IntermediateSize,
		V: c.VocabSize, eps: float32(c.RMSNormEps)}
	d.W = (d.H + 2*d.KV) * d.D
	d.heads = backend.Heads{H: d.H, KV: d.KV, D: d.D}
	return d
}

// linear computes out[N, n] = β·out + x[N, k]·wᵀ for w [n, k].
func linear(be Backend, out, x, w backend.Buf, N, n, k int, beta float32) {
	be.Gemm(out.Mat(N, n), x.Mat(N, k), false, w.Mat(n, k), true, 1, beta)
}

// layerForward runs decoder layer L over the N rows of a: attention over
// segs (whose K, V receive this layer's keys and values), then the MLP,
// leaving the layer's output in xOut (which may be a.xMid).
// LoRA adapters, when the model has them, add to each projection's output.
func (m *Model) layerForward(l int, a *layerActs, xOut backend.Buf, segs []backend.Seg, N int, rope backend.Rope) {
	be, d, L := m.Backend, m.dims(), &m.W.Layers[l]
	be.RMSNorm(a.h1, a.rstd1, a.xIn, L.InputNorm, N, d.C, d.eps)
	linear(be, a.qkv, a.h1, L.QKV, N, d.W, d.C, 0)
	m.loraForward(l, groupQKV, a.u[groupQKV], a.h1, a.qkv, N)
	be.QKNormRoPE(a.q, segs, a.qkv, L.QNorm, L.KNorm, rope, d.heads, d.eps)
	be.Attention(a.att, a.lse, a.q, segs, d.heads)
	if a.xMid != a.xIn {
		be.Copy(a.xMid, a.xIn)
	}
	linear(be, a.xMid, a.att, L.O, N, d.C, d.H*d.D, 1) // residual add
	m.loraForward(l, groupO, a.u[groupO], a.att, a.xMid, N)
	be.RMSNorm(a.h2, a.rstd2, a.xMid, L.PostNorm, N, d.C, d.eps)
	linear(be, a.gu, a.h2, L.GateUp, N, 2*d.F, d.C, 0)
	m.loraForward(l, groupGU, a.u[groupGU], a.h2, a.gu, N)
	be.SwiGLU(a.act, a.gu, N, d.F)
	if xOut != a.xMid {
		be.Copy(xOut, a.xMid)
	}
	linear(be, xOut, a.act, L.Down, N, d.C, d.F, 1) // residual add
	m.loraForward(l, groupDown, a.u[groupDown], a.act, xOut, N)
}

// loraWidth is the widest adapter group's n·Rank (0 without adapters).
func (m *Model) loraWidth() int {
	if m.lora == nil {
		return 0
	}
	w := 0
	for g := range numGroups {
		w = max(w, m.lora.width(g))
	}
	return w
}

package cpu

import "github.com/nextstate-rl/nextstate/trainer/backend"

// Naive is a backend that runs only the naive kernels, on the CPU
// backend's buffers: slow, plain, and the model-level reference for the
// fast backend. It checks shapes as CPU does.
type Naive struct{ memory }

func (Naive) Name() string { return "cpu-naive" }

func segsOf(segs []backend.Seg) []segN[float32] {
	out := make([]segN[float32], len(segs))
	for i, s := range segs {
		out[i] = segN[float32]{Row: s.Row, T: s.T, Start: s.Start, K: opt(s.K), V: opt(s.V)}
	}
	return out
}

func (Naive) Embed(out, table, ids backend.Buf, C int) {
	id := i32(ids)
	backend.Need(out, len(id)*C, "embed out")
	checkIDs(id, table.Len()/C, "embed")
	embedNaive(f32(out), f32(table), id, C)
}

func (Naive) EmbedBackward(dTable, dOut, ids backend.Buf, C int) {
	id := i32(ids)
	backend.Need(dOut, len(id)*C, "embed dOut")
	checkIDs(id, dTable.Len()/C, "embed backward")
	embedBackwardNaive(f32(dTable), f32(dOut), id, C)
}

func (Naive) Gemm(c, a backend.Mat, ta bool, b backend.Mat, tb bool, alpha, beta float32) {
	M, N, K := backend.CheckGemm(c, a, ta, b, tb)
	if M == 0 || N == 0 {
		return
	}
	gemmNaive(f32(c.B), c.Ld, f32(a.B), a.Ld, ta, f32(b.B), b.Ld, tb, M, N, K, float64(alpha), float64(beta))
}

func (Naive) RMSNorm(out, rstd, x, w backend.Buf, rows, dim int, eps float32) {
	backend.Need(x, rows*dim, "rmsnorm x")
	backend.Need(out, rows*dim, "rmsnorm out")
	backend.Need(w, dim, "rmsnorm w")
	backend.Optional(rstd, rows, "rmsnorm rstd")
	rmsNormNaive(f32(out), opt(rstd), f32(x), f32(w), rows, dim, float64(eps))
}

func (Naive) RMSNormBackward(dx, dw, dOut, x, w, rstd backend.Buf, rows, dim int) {
	backend.Need(x, rows*dim, "rmsnorm backward x")
	backend.Need(dOut, rows*dim, "rmsnorm backward dOut")
	backend.Need(rstd, rows, "rmsnorm backward rstd")
	backend.Optional(dx, rows*dim, "rmsnorm backward dx")
	backend.Optional(dw, dim, "rmsnorm backward dw")
	rmsNormBackwardNaive(opt(dx), opt(dw), f32(dOut), f32(x), f32(w), f32(rstd), rows, dim)
}

func (Naive) QKNormRoPE(q backend.Buf, segs []backend.Seg, qkv, qNorm, kNorm backend.Buf, rope backend.Rope, h backend.Heads, eps float32) {
	s, N := checkQK(qkv, qNorm, kNorm, rope, h, "qknorm")
	backend.Need(q, N*h.H*h.D, "qknorm q")
	segRows(segs, N, s.P, "qknorm")
	qkNormRopeNaive(f32(q), segsOf(segs), f32(qkv), f32(qNorm), f32(kNorm), s.cos, s.sin, h.H, h.KV, h.D, float64(eps))
}

func (Naive) QKNormRoPEBackward(dqkv, dqNorm, dkNorm, dq, dk, dv, qkv, qNorm, kNorm backend.Buf, segs []backend.Seg, rope backend.Rope, h backend.Heads, eps float32) {
	s, N := checkQK(qkv, qNorm, kNorm, rope, h, "qknorm backward")
	backend.Need(dqkv, N*s.W, "qknorm backward dqkv")
	segRows(segs, N, s.P, "qknorm backward")
	qkNormRopeBackwardNaive(f32(dqkv), opt(dqNorm), opt(dkNorm), f32(dq), f32(dk), f32(dv), segsOf(segs), f32(qkv), f32(qNorm), f32(kNorm), s.cos, s.sin, h.H, h.KV, h.D, float64(eps))
}

func (Naive) Attention(out, lse, q backend.Buf, segs []backend.Seg, h backend.Heads) {
	N := checkAttention(q, segs, h, "attention")
	backend.Need(out, N*h.H*h.D, "attention out")
	backend.Optional(lse, N*h.H, "attention lse")
	attentionNaive(f32(out), opt(lse), f32(q), segsOf(segs), h.H, h.KV, h.D)
}

func (Naive) AttentionBackward(dq, dk, dv, dOut, q, out, lse backend.Buf, segs []backend.Seg, h backend.Heads) {
	N := checkAttention(q, segs, h, "attention backward")
	backend.Need(dq, N*h.H*h.D, "attention backward dq")
	backend.Need(dk, N*h.KV*h.D, "attention backward dk")
	backend.Need(dv, N*h.KV*h.D, "attention backward dv")
	for _, s := range segs {
		if s.Start != 0 {
			panic("cpu: attention backward: a segment does not start at position 0")
		}
	}
	attentionBackwardNaive(f32(dq), f32(dk), f32(dv), f32(dOut), f32(q), segsOf(segs), h.H, h.KV, h.D)
}

func (Naive) SwiGLU(out, gu backend.Buf, rows, F int) {
	backend.Need(gu, rows*2*F, "swiglu gu")
	backend.Need(out, rows*F, "swiglu out")
	swigluNaive(f32(out), f32(gu), rows, F)
}

func (Naive) SwiGLUBackward(dgu, dOut, gu backend.Buf, rows, F int) {
	backend.Need(gu, rows*2*F, "swiglu backward gu")
	backend.Need(dgu, rows*2*F, "swiglu backward dgu")
	backend.Need(dOut, rows*F, "swiglu backward dOut")
	swigluBackwardNaive(f32(dgu), f32(dOut), f32(gu), rows, F)
}

func (Naive) LogSoftmax(lp, ent, lse, logits, ids backend.Buf, rows, V, K int) {
	backend.Need(logits, rows*V, "logsoftmax logits")
	backend.Need(lse, rows, "logsoftmax lse")
	backend.Need(lp, rows*K, "logsoftmax lp")
	backend.NeedIDs(ids, rows*K, "logsoftmax ids")
	backend.Optional(ent, rows, "logsoftmax ent")
	checkIDs(i32(ids), V, "logsoftmax")
	logSoftmaxNaive(f32(lp), opt(ent), f32(lse), f32(logits), i32(ids), rows, V, K)
}

func (Naive) LogSoftmaxBackward(dlogits, logits, lse, ent, ids, dlp, dent backend.Buf, rows, V, K int) {
	backend.Need(logits, rows*V, "logsoftmax backward logits")
	backend.Need(dlogits, rows*V, "logsoftmax backward dlogits")
	backend.Need(dlp, rows*K, "logsoftmax backward dlp")
	backend.NeedIDs(ids, rows*K, "logsoftmax backward ids")
	backend.Optional(dent, rows, "logsoftmax backward dent")
	checkIDs(i32(ids), V, "logsoftmax backward")
	lg := f32(logits)
	if dlogits.Mem() == logits.Mem() && dlogits.Off() == logits.Off() {
		lg = append([]float32(nil), lg...)
	}
	logSoftmaxBackwardNaive(f32(dlogits), lg, i32(ids), f32(dlp), opt(dent), rows, V, K)
}

func (Naive) TopK(ids, lp, logits, lse backend.Buf, rows, V, K int) {
	backend.Need(logits, rows*V, "topk logits")
	backend.Need(lp, rows*K, "topk lp")
	backend.NeedIDs(ids, rows*K, "topk ids")
	topKNaive(i32(ids), f32(lp), f32(logits), rows, V, K)
}

func (Naive) SumSquares(x backend.Buf) float64 { return sumSquaresNaive(f32(x)) }

func (Naive) AdamW(p, g, m, v backend.Buf, s backend.AdamW) {
	n := p.Len()
	for _, b := range []backend.Buf{g, m, v} {
		backend.Need(b, n, "adamw operand")
	}
	adamwNaive(f32(p), f32(g), f32(m), f32(v), s.LR, s.Beta1, s.Beta2, s.Eps, s.WeightDecay, s.GradScale, s.Step)
}

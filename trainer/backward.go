package trainer

import "github.com/nextstate-rl/nextstate/trainer/backend"

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
		headGrad = t.base.grad(t.headIndex())
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
	if t.base.trainable[0] || t.adapters != nil {
		return 0
	}
	for l := range t.m.Config.NumHiddenLayers {
		for j := range 11 {
			if t.base.trainable[layerTensor(l, j)] {
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
		be.RMSNormBackward(p.dhs, t.base.grad(t.normIndex()), p.dhn, p.hs, t.m.W.Norm, p.rstdF, S, d.C)
		be.EmbedBackward(p.dx, p.dhs, p.rowIDs, d.C)
	}
	low := t.lowestTrained()
	kvd := d.KV * d.D
	for l := len(t.m.W.Layers) - 1; l >= low; l-- {
		a, k, v := p.layer(l)
		segs := segsOver(pk.starts, N, k, v, kvd)
		if t.opt.Recompute {
			out := p.x // the layer's output is not needed again: write it to the spare buffer
			t.m.layerForward(l, a, out, segs, N, rope)
		}
		t.layerBackward(l, a, segs, p, N, rope)
	}
	if g := t.base.grad(0); !g.Nil() {
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
	g := func(j int) backend.Buf { return t.base.grad(layerTensor(l, j)) }
	dx := p.dx.Mat(N, C)
	// MLP: out = xMid + act·downᵀ, act = swiglu(h2·[gate; up]ᵀ), h2 = norm(xMid)
	be.Gemm(p.dact.Mat(N, F), dx, false, L.Down.Mat(C, F), false, 1, 0)
	t.loraBackward(l, groupDown, dx, a.act, p.dact, a.u[groupDown], p.du, N)
	if gd := g(10); !gd.Nil() {
		be.Gemm(gd.Mat(C, F), dx, true, a.act.Mat(N, F), false, 1, 1)
	}
	be.Zero(p.dgu)
	be.SwiGLUBackward(p.dgu, p.dact, a.gu, N, F)
	dgu := p.dgu.Mat(N, 2*F)
	be.Gemm(p.dh.Mat(N, C), dgu, false, L.GateUp.Mat(2*F, C), false, 1, 0)
	t.loraBackward(l, groupGU, dgu, a.h2, p.dh, a.u[groupGU], p.du, N)
	for j, cols := range [][2]int{{0, F}, {F, 2 * F}} {
		if gw := g(8 + j); !gw.Nil() {
			be.Gemm(gw.Mat(F, C), dgu.Cols(cols[0], cols[1]), true, a.h2.Mat(N, C), false, 1, 1)
		}
	}
	be.RMSNormBackward(p.dx, g(7), p.dh, a.xMid, L.PostNorm, a.rstd2, N, C)
	// attention: xMid = xIn + att·oᵀ, att = attention(qknorm-rope(h1·[q; k; v]ᵀ)), h1 = norm(xIn)
	be.Gemm(p.datt.Mat(N, HD), dx, false, L.O.Mat(C, HD), false, 1, 0)
	t.loraBackward(l, groupO, dx, a.att, p.datt, a.u[groupO], p.du, N)
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
	t.loraBackward(l, groupQKV, dqkv, a.h1, p.dh, a.u[groupQKV], p.du, N)
	kv := dm.KV * dm.D
	for j, cols := range [][2]int{{0, HD}, {HD, HD + kv}, {HD + kv, W}} {
		if gw := g(1 + j); !gw.Nil() {
			be.Gemm(gw.Mat(cols[1]-cols[0], C), dqkv.Cols(cols[0], cols[1]), true, a.h1.Mat(N, C), false, 1, 1)
		}
	}
	be.RMSNormBackward(p.dx, g(0), p.dh, a.xIn, L.InputNorm, a.rstd1, N, C)
}

// loraBackward adds the gradients of layer l's adapter group g, whose
// output gradient is dy [N, ·] and input x [N, in]: dB_t += s·dy_tᵀ·u_t,
// du_t = s·dy_t·B_t, dA_t += du_tᵀ·x, and dx += du·A.
func (t *Training) loraBackward(l, g int, dy backend.Mat, x, dx, u, du backend.Buf, N int) {
	lo := t.m.lora
	if lo == nil || len(lo.layers[l][g].targets) == 0 {
		return
	}
	be, grp, r := t.be, &lo.layers[l][g], lo.cfg.Rank
	w := len(grp.targets) * r
	duM, uM, xM := du.Slice(0, N*w).Mat(N, w), u.Mat(N, w), x.Mat(N, grp.in)
	for i, tg := range grp.targets {
		dyT, out := dy.Cols(tg.c0, tg.c1), tg.c1-tg.c0
		if gB := t.adapters.grad(tg.b); !gB.Nil() {
			be.Gemm(gB.Mat(out, r), dyT, true, uM.Cols(i*r, (i+1)*r), false, lo.scale, 1)
		}
		be.Gemm(duM.Cols(i*r, (i+1)*r), dyT, false, lo.view(tg.b).Mat(out, r), false, lo.scale, 0)
		if gA := t.adapters.grad(tg.a); !gA.Nil() {
			be.Gemm(gA.Mat(r, grp.in), duM.Cols(i*r, (i+1)*r), true, xM, false, 1, 1)
		}
	}
	be.Gemm(dx.Mat(N, grp.in), duM, false, grp.A.Mat(w, grp.in), false, 1, 1)
}

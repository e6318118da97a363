package trainer

import "github.com/nextstate-rl/nextstate/trainer/backend"

// arena hands out views of one backend allocation, regrown when a pass
// needs more (llm.c allocates its activations once; batches here vary, so
// the arena keeps the largest size seen).
type arena struct {
	f32, ids backend.Buf
}

// carve runs fn twice: once to size the views it takes, then, the arena
// grown to fit, to hand them out. take gives float32 views, takeIDs int32.
func (a *arena) carve(be Backend, fn func(take, takeIDs func(n int) backend.Buf)) {
	nf, ni := 0, 0
	fn(func(n int) backend.Buf { nf += n; return backend.Buf{} }, func(n int) backend.Buf { ni += n; return backend.Buf{} })
	regrow := func(b *backend.Buf, n int, ids bool) {
		if !b.Nil() && b.Len() >= n {
			return
		}
		if !b.Nil() {
			be.Free(*b)
		}
		n += n / 4
		if ids {
			*b = be.AllocIDs(max(n, 1))
		} else {
			*b = be.Alloc(max(n, 1))
		}
	}
	regrow(&a.f32, nf, false)
	regrow(&a.ids, ni, true)
	of, oi := 0, 0
	fn(func(n int) backend.Buf { b := a.f32.Slice(of, n); of += n; return b },
		func(n int) backend.Buf { b := a.ids.Slice(oi, n); oi += n; return b })
}

func (a *arena) free(be Backend) {
	for _, b := range []*backend.Buf{&a.f32, &a.ids} {
		if !b.Nil() {
			be.Free(*b)
			*b = backend.Buf{}
		}
	}
}

// passBufs are one pass's views (N rows, S scored rows, chunks of n rows of
// logits), carved from the training's arena.
type passBufs struct {
	ids, rowIDs, targets backend.Buf // int32: [N], [S], [S·K]
	acts                 []layerActs // per layer, or one shared set when recomputing
	xIn                  []backend.Buf
	k, v                 []backend.Buf // [N, KV·D] per layer (or one shared)
	x                    backend.Buf   // [N, C] the last layer's output
	hs, hn, rstdF        backend.Buf   // [S, C] scored rows before and after the final norm, [S]
	// the head's chunk
	logits, lse, lp, ent, dlp, dent backend.Buf
	// gradients of activations, shared by the layers
	dx, dh, dqkv, dq, dk, dv, datt, dgu, dact backend.Buf
	dhn, dhs                                  backend.Buf
	du                                        backend.Buf // LoRA: [N, widest group's n·Rank]
}

// carvePass lays out the buffers of a pass over N rows and S scored rows:
// kept holds every layer's activations (else one set, recomputed per layer
// in the backward, and only each layer's input is kept); grad adds the
// gradient buffers (without it, the residual stream is updated in place).
func (t *Training) carvePass(N, S, K, chunk int, kept, grad bool) *passBufs {
	d, L := t.m.dims(), t.m.Config.NumHiddenLayers
	p := &passBufs{}
	sets := 1
	if kept {
		sets = L
	}
	t.ws.carve(t.m.Backend, func(take, takeIDs func(int) backend.Buf) {
		p.ids, p.rowIDs, p.targets = takeIDs(N), takeIDs(S), takeIDs(S*K)
		p.acts, p.k, p.v = make([]layerActs, sets), make([]backend.Buf, sets), make([]backend.Buf, sets)
		p.xIn = make([]backend.Buf, L)
		if !grad { // forward only: the residual stream updated in place, as in inference
			p.x = take(N * d.C)
			for l := range L {
				p.xIn[l] = p.x
			}
		} else {
			for l := range L {
				p.xIn[l] = take(N * d.C)
			}
			p.x = take(N * d.C)
		}
		for i := range sets {
			a := &p.acts[i]
			a.xMid, a.h1, a.h2 = p.x, take(N*d.C), take(N*d.C)
			if grad {
				a.xMid = take(N * d.C)
			}
			a.rstd1, a.rstd2 = take(N), take(N)
			a.qkv, a.q, a.att, a.lse = take(N*d.W), take(N*d.H*d.D), take(N*d.H*d.D), take(N*d.H)
			a.gu, a.act = take(N*2*d.F), take(N*d.F)
			p.k[i], p.v[i] = take(N*d.KV*d.D), take(N*d.KV*d.D)
			for g := range numGroups {
				if lo := t.m.lora; lo != nil && lo.width(g) > 0 {
					a.u[g] = take(N * lo.width(g))
				}
			}
		}
		p.hs, p.hn, p.rstdF = take(S*d.C), take(S*d.C), take(S)
		p.logits, p.lse, p.lp, p.ent = take(chunk*d.V), take(chunk), take(chunk*K), take(chunk)
		p.dlp, p.dent = take(chunk*K), take(chunk)
		if grad {
			p.dx, p.dh, p.dqkv = take(N*d.C), take(N*d.C), take(N*d.W)
			p.dq, p.dk, p.dv, p.datt = take(N*d.H*d.D), take(N*d.KV*d.D), take(N*d.KV*d.D), take(N*d.H*d.D)
			p.dgu, p.dact = take(N*2*d.F), take(N*d.F)
			p.dhn, p.dhs = take(S*d.C), take(S*d.C)
			if w := t.m.loraWidth(); w > 0 {
				p.du = take(N * w)
			}
		}
	})
	return p
}

// layer returns layer l's activations (xIn filled in) and its k, v.
func (p *passBufs) layer(l int) (*layerActs, backend.Buf, backend.Buf) {
	i := 0
	if len(p.acts) > 1 {
		i = l
	}
	a := &p.acts[i]
	a.xIn = p.xIn[l]
	return a, p.k[i], p.v[i]
}

// segs are the batch's sequences over k, v [N, KV·D].
func segsOver(starts []int, N int, k, v backend.Buf, kvd int) []backend.Seg {
	segs := make([]backend.Seg, len(starts))
	for i, s := range starts {
		e := N
		if i+1 < len(starts) {
			e = starts[i+1]
		}
		segs[i] = backend.Seg{Row: s, T: e - s, K: k.Rows(s, e, kvd), V: v.Rows(s, e, kvd)}
	}
	return segs
}

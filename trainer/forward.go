package trainer

import (
	"fmt"

	"github.com/nextstate-rl/nextstate/trainer/backend"
)

// Cache holds one sequence's keys and values on the backend, per layer
// [positions, KV·D], after q/k normalisation and rotary embedding. Len
// positions are filled. A Cache belongs to one sequence and must not be
// shared between segments of one Forward call; Free releases it.
type Cache struct {
	K, V []backend.Buf
	Len  int
	cap  int
	row  int // KV·D
	be   Backend
}

// NewCache returns an empty cache for the model's shape.
func (m *Model) NewCache() *Cache {
	c := m.Config
	return &Cache{K: make([]backend.Buf, c.NumHiddenLayers), V: make([]backend.Buf, c.NumHiddenLayers),
		row: c.NumKeyValueHeads * c.HeadDim, be: m.Backend}
}

// reserve makes room for n positions, keeping what is filled.
func (c *Cache) reserve(n int) {
	if n <= c.cap {
		return
	}
	nc := max(n, 2*c.cap, 64)
	for l := range c.K {
		k, v := c.be.Alloc(nc*c.row), c.be.Alloc(nc*c.row)
		if c.Len > 0 {
			c.be.Copy(k.Slice(0, c.Len*c.row), c.K[l].Slice(0, c.Len*c.row))
			c.be.Copy(v.Slice(0, c.Len*c.row), c.V[l].Slice(0, c.Len*c.row))
		}
		if c.cap > 0 {
			c.be.Free(c.K[l])
			c.be.Free(c.V[l])
		}
		c.K[l], c.V[l] = k, v
	}
	c.cap = nc
}

// Truncate forgets positions n and after, so that a sequence can be rewound
// to a shared prefix.
func (c *Cache) Truncate(n int) {
	if n < c.Len {
		c.Len = max(n, 0)
	}
}

// Free releases the cache's buffers; it is empty (and usable) after.
func (c *Cache) Free() {
	if c.cap > 0 {
		for l := range c.K {
			c.be.Free(c.K[l])
			c.be.Free(c.V[l])
			c.K[l], c.V[l] = backend.Buf{}, backend.Buf{}
		}
	}
	c.cap, c.Len = 0, 0
}

// Segment is one sequence's new tokens in a Forward call; they take the
// positions Cache.Len, Cache.Len+1, ...
type Segment struct {
	Tokens []int32
	Cache  *Cache
}

// inferBufs are Forward's activations on the backend, grown to the largest
// call (rows: tokens of a call; sel: rows whose logits are returned).
type inferBufs struct {
	rows, sel                       int
	x, h, qkv, q, att, gu, act, ids backend.Buf
	u                               backend.Buf // LoRA's x·Aᵀ
	selX, logits, selIDs            backend.Buf
}

func (b *inferBufs) free(be Backend) {
	for _, p := range []*backend.Buf{&b.x, &b.h, &b.qkv, &b.q, &b.att, &b.gu, &b.act, &b.ids, &b.u, &b.selX, &b.logits, &b.selIDs} {
		if !p.Nil() {
			be.Free(*p)
		}
	}
	*b = inferBufs{}
}

// grow makes room for N rows, R selected rows and LoRA's x·Aᵀ of width uw.
func (b *inferBufs) grow(be Backend, d dims, N, R, uw int) {
	if N > b.rows {
		n := max(N, 2*b.rows, 16)
		for _, p := range []*backend.Buf{&b.x, &b.h, &b.qkv, &b.q, &b.att, &b.gu, &b.act, &b.ids} {
			if !p.Nil() {
				be.Free(*p)
			}
		}
		b.x, b.h, b.qkv = be.Alloc(n*d.C), be.Alloc(n*d.C), be.Alloc(n*d.W)
		b.q, b.att = be.Alloc(n*d.H*d.D), be.Alloc(n*d.H*d.D)
		b.gu, b.act, b.ids = be.Alloc(n*2*d.F), be.Alloc(n*d.F), be.AllocIDs(n)
		b.rows = n
	}
	if uw > 0 && b.u.Len() < b.rows*uw {
		if !b.u.Nil() {
			be.Free(b.u)
		}
		b.u = be.Alloc(b.rows * uw)
	}
	if R > b.sel {
		n := max(R, 2*b.sel, 16)
		for _, p := range []*backend.Buf{&b.selX, &b.logits, &b.selIDs} {
			if !p.Nil() {
				be.Free(*p)
			}
		}
		b.selX, b.logits, b.selIDs = be.Alloc(n*d.C), be.Alloc(n*d.V), be.AllocIDs(n)
		b.sel = n
	}
}

// Forward runs the decoder over every segment's tokens at once, appending
// their keys and values to the segments' caches, and returns logits
// [rows, V] on the host: one row per token when all is set, else one per
// segment (its last token's). The matrix products see every token of every
// segment as one batch; attention runs per segment over its own cache. The
// host crossings are the token ids in and the logits out.
func (m *Model) Forward(segs []Segment, all bool) ([]float32, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	d := m.dims()
	N, maxPos := 0, 0
	for i, sg := range segs {
		if len(sg.Tokens) == 0 || sg.Cache == nil {
			return nil, fmt.Errorf("trainer: segment %d: no tokens or no cache", i)
		}
		for _, t := range sg.Tokens {
			if t < 0 || int(t) >= d.V {
				return nil, fmt.Errorf("trainer: segment %d: token %d outside the vocabulary [0,%d)", i, t, d.V)
			}
		}
		for j := range segs[:i] {
			if segs[j].Cache == sg.Cache {
				return nil, fmt.Errorf("trainer: segments %d and %d share a cache", j, i)
			}
		}
		N += len(sg.Tokens)
		maxPos = max(maxPos, sg.Cache.Len+len(sg.Tokens))
	}
	if N == 0 {
		return nil, nil
	}
	R := len(segs)
	if all {
		R = N
	}
	be, b := m.Backend, &m.inf
	uw := m.loraWidth()
	b.grow(be, d, N, R, uw)
	rope := m.ropeFor(maxPos)
	toks := make([]int32, 0, N)
	bsegs := make([]backend.Seg, len(segs))
	last := make([]int32, len(segs))
	for i, sg := range segs {
		sg.Cache.reserve(sg.Cache.Len + len(sg.Tokens))
		bsegs[i] = backend.Seg{Row: len(toks), T: len(sg.Tokens), Start: sg.Cache.Len}
		toks = append(toks, sg.Tokens...)
		last[i] = int32(len(toks) - 1)
	}
	ids := b.ids.Slice(0, N)
	be.WriteIDs(ids, toks)
	x := b.x.Slice(0, N*d.C)
	be.Embed(x, m.W.Embed, ids, d.C)
	h := b.h.Slice(0, N*d.C)
	a := layerActs{xIn: x, xMid: x, h1: h, h2: h, qkv: b.qkv.Slice(0, N*d.W), q: b.q.Slice(0, N*d.H*d.D),
		att: b.att.Slice(0, N*d.H*d.D), gu: b.gu.Slice(0, N*2*d.F), act: b.act.Slice(0, N*d.F)}
	for g := range numGroups {
		if uw > 0 && m.lora.width(g) > 0 {
			a.u[g] = b.u.Slice(0, N*m.lora.width(g))
		}
	}
	for l := range m.W.Layers {
		for i, sg := range segs {
			bsegs[i].K, bsegs[i].V = sg.Cache.K[l], sg.Cache.V[l]
		}
		m.layerForward(l, &a, x, bsegs, N, rope)
	}
	for _, sg := range segs {
		sg.Cache.Len += len(sg.Tokens)
	}
	sel := x
	if !all {
		sel = b.selX.Slice(0, R*d.C)
		sids := b.selIDs.Slice(0, R)
		be.WriteIDs(sids, last)
		be.Embed(sel, x, sids, d.C)
	}
	be.RMSNorm(sel, backend.Buf{}, sel, m.W.Norm, R, d.C, d.eps)
	lg := b.logits.Slice(0, R*d.V)
	linear(be, lg, sel, m.W.Head, R, d.V, d.C, 0)
	out := make([]float32, R*d.V)
	be.Read(out, lg)
	return out, nil
}

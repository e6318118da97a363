package trainer

import (
	"fmt"
)

// Cache holds one sequence's keys and values, per layer [positions, KV*D],
// after q/k normalisation and rotary embedding. Len positions are filled.
// A Cache belongs to one sequence and must not be shared between segments
// of one Forward call.
type Cache struct {
	K, V [][]float32
	Len  int
	cap  int
	row  int // KV*D
}

// NewCache returns an empty cache for the model's shape.
func (m *Model) NewCache() *Cache {
	c := m.Config
	return &Cache{K: make([][]float32, c.NumHiddenLayers), V: make([][]float32, c.NumHiddenLayers), row: c.NumKeyValueHeads * c.HeadDim}
}

// reserve makes room for n positions, keeping what is filled.
func (c *Cache) reserve(n int) {
	if n <= c.cap {
		return
	}
	nc := max(n, 2*c.cap, 64)
	for l := range c.K {
		k, v := make([]float32, nc*c.row), make([]float32, nc*c.row)
		copy(k, c.K[l][:c.Len*c.row])
		copy(v, c.V[l][:c.Len*c.row])
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

// Segment is one sequence's new tokens in a Forward call; they take the
// positions Cache.Len, Cache.Len+1, ...
type Segment struct {
	Tokens []int32
	Cache  *Cache
}

// scratch holds Forward's activations, grown to the largest batch seen.
type scratch struct {
	x, h, qkv, q, k, v, att, o, gu, act, sel []float32
	pos                                      []int32
}

func grow(s *[]float32, n int) []float32 {
	if cap(*s) < n {
		*s = make([]float32, n)
	}
	return (*s)[:n]
}

// Forward runs the decoder over every segment's tokens at once, appending
// their keys and values to the segments' caches, and returns logits
// [rows, V]: one row per token when all is set, else one per segment (its
// last token's). The matrix products see every token of every segment as one
// batch; attention runs per segment over its own cache.
func (m *Model) Forward(segs []Segment, all bool) ([]float32, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.Config
	C, H, KV, D, F, V := c.HiddenSize, c.NumAttentionHeads, c.NumKeyValueHeads, c.HeadDim, c.IntermediateSize, c.VocabSize
	eps := float32(c.RMSNormEps)
	N, maxPos := 0, 0
	for i, sg := range segs {
		if len(sg.Tokens) == 0 || sg.Cache == nil {
			return nil, fmt.Errorf("trainer: segment %d: no tokens or no cache", i)
		}
		for _, t := range sg.Tokens {
			if t < 0 || int(t) >= V {
				return nil, fmt.Errorf("trainer: segment %d: token %d outside the vocabulary [0,%d)", i, t, V)
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
	be, s, w := m.Backend, &m.s, &m.W
	m.ropeTables(maxPos)
	qkvN := (H + 2*KV) * D
	x, h := grow(&s.x, N*C), grow(&s.h, N*C)
	qkv := grow(&s.qkv, N*qkvN)
	q, k, v := grow(&s.q, N*H*D), grow(&s.k, N*KV*D), grow(&s.v, N*KV*D)
	att, o := grow(&s.att, N*H*D), grow(&s.o, N*C)
	gu, act := grow(&s.gu, N*2*F), grow(&s.act, N*F)
	if cap(s.pos) < N {
		s.pos = make([]int32, N)
	}
	pos := s.pos[:N]
	r := 0
	for _, sg := range segs {
		sg.Cache.reserve(sg.Cache.Len + len(sg.Tokens))
		for j, t := range sg.Tokens {
			copy(x[r*C:(r+1)*C], w.Embed[int(t)*C:])
			pos[r] = int32(sg.Cache.Len + j)
			r++
		}
	}
	for l, L := range w.Layers {
		be.RMSNorm(h, x, L.InputNorm, N, C, eps)
		be.MatMul(qkv, h, L.QKV, N, qkvN, C)
		for r := range N {
			row := qkv[r*qkvN:]
			copy(q[r*H*D:(r+1)*H*D], row[:H*D])
			copy(k[r*KV*D:(r+1)*KV*D], row[H*D:(H+KV)*D])
			copy(v[r*KV*D:(r+1)*KV*D], row[(H+KV)*D:qkvN])
		}
		be.RMSNorm(q, q, L.QNorm, N*H, D, eps)
		be.RMSNorm(k, k, L.KNorm, N*KV, D, eps)
		be.RoPE(q, pos, N, H, D, m.cos, m.sin)
		be.RoPE(k, pos, N, KV, D, m.cos, m.sin)
		r := 0
		for _, sg := range segs {
			T, start, row := len(sg.Tokens), sg.Cache.Len, KV*D
			copy(sg.Cache.K[l][start*row:(start+T)*row], k[r*row:(r+T)*row])
			copy(sg.Cache.V[l][start*row:(start+T)*row], v[r*row:(r+T)*row])
			be.Attention(att[r*H*D:(r+T)*H*D], q[r*H*D:(r+T)*H*D], sg.Cache.K[l], sg.Cache.V[l], T, start, H, KV, D)
			r += T
		}
		be.MatMul(o, att, L.O, N, C, H*D)
		be.Add(x, o)
		be.RMSNorm(h, x, L.PostNorm, N, C, eps)
		be.MatMul(gu, h, L.GateUp, N, 2*F, C)
		be.SwiGLU(act, gu, N, F)
		be.MatMul(o, act, L.Down, N, C, F)
		be.Add(x, o)
	}
	for _, sg := range segs {
		sg.Cache.Len += len(sg.Tokens)
	}
	sel, R := x, N
	if !all {
		R = len(segs)
		sel = grow(&s.sel, R*C)
		r := 0
		for i, sg := range segs {
			r += len(sg.Tokens)
			copy(sel[i*C:(i+1)*C], x[(r-1)*C:r*C])
		}
	}
	be.RMSNorm(sel, sel, w.Norm, R, C, eps)
	logits := make([]float32, R*V)
	be.MatMul(logits, sel, w.Head, R, V, C)
	return logits, nil
}

package cpu

import (
	"fmt"
	"math"

	"github.com/nextstate-rl/nextstate/trainer/backend"
)

// checkAttention returns N, the batch's rows, after checking q and every
// segment's keys and values.
func checkAttention(q backend.Buf, segs []backend.Seg, h backend.Heads, what string) (N int) {
	if h.H <= 0 || h.KV <= 0 || h.H%h.KV != 0 || h.D <= 0 {
		panic(fmt.Sprintf("cpu: %s: heads %+v", what, h))
	}
	if q.Len()%(h.H*h.D) != 0 {
		panic(fmt.Sprintf("cpu: %s: q of %d is not rows of %d", what, q.Len(), h.H*h.D))
	}
	N = q.Len() / (h.H * h.D)
	segRows(segs, N, -1, what)
	kvd := h.KV * h.D
	for i, s := range segs {
		if s.K.Len() < (s.Start+s.T)*kvd || s.V.Len() < (s.Start+s.T)*kvd {
			panic(fmt.Sprintf("cpu: %s: segment %d's K, V (%d, %d) do not reach position %d of %d", what, i, s.K.Len(), s.V.Len(), s.Start+s.T, kvd))
		}
	}
	return N
}

// eachItem calls fn(s, t, j) for the flat items [lo, hi) of segs, per items
// per row: row t of segment s, item j of that row.
func eachItem(segs []backend.Seg, lo, hi, per int, fn func(s *backend.Seg, t, j int)) {
	if lo >= hi {
		return
	}
	r0, r1 := lo/per, (hi-1)/per+1
	row := r0
	eachRow(segs, r0, r1, func(s *backend.Seg, t int) {
		f := row * per
		row++
		for j := range per {
			if f+j >= lo && f+j < hi {
				fn(s, t, j)
			}
		}
	})
}

// Attention is causal grouped-query attention; see backend.Backend. Each
// (row, head) is one item: scores, a max-shifted softmax, the weighted sum
// of values.
func (c *CPU) Attention(out, lse, q backend.Buf, segs []backend.Seg, h backend.Heads) {
	N := checkAttention(q, segs, h, "attention")
	H, KV, D := h.H, h.KV, h.D
	backend.Need(out, N*H*D, "attention out")
	backend.Optional(lse, N*H, "attention lse")
	total := segRows(segs, N, -1, "attention")
	qs, os, ls := f32(q), f32(out), opt(lse)
	group := H / KV
	scale := float32(1 / math.Sqrt(float64(D)))
	c.parallel(total*H, 1, func(lo, hi int) {
		sp := c.getScratch(0)
		eachItem(segs, lo, hi, H, func(sg *backend.Seg, t, hh int) {
			r, kh, n := sg.Row+t, hh/group, sg.Start+t+1
			if cap(*sp) < n {
				*sp = make([]float32, n+n/2)
			}
			sc := (*sp)[:n]
			k, v := f32(sg.K), f32(sg.V)
			qv := qs[(r*H+hh)*D:][:D]
			mx := float32(math.Inf(-1))
			for j := range sc {
				s := dot(qv, k[(j*KV+kh)*D:][:D]) * scale
				sc[j] = s
				mx = max(mx, s)
			}
			var sum float32
			for j, s := range sc {
				e := expf(s - mx)
				sc[j] = e
				sum += e
			}
			o := os[(r*H+hh)*D:][:D]
			clear(o)
			inv := 1 / sum
			for j, p := range sc {
				axpy(o, p*inv, v[(j*KV+kh)*D:][:D])
			}
			if ls != nil {
				ls[r*H+hh] = mx + float32(math.Log(float64(sum)))
			}
		})
		c.putScratch(sp)
	})
}

// AttentionBackward; see backend.Trainer. Each (segment, key/value head) is
// one item that owns its rows of dk and dv and its query heads' rows of dq,
// so no two workers write one place and the order of every sum is fixed.
func (c *CPU) AttentionBackward(dq, dk, dv, dOut, q, out, lse backend.Buf, segs []backend.Seg, h backend.Heads) {
	N := checkAttention(q, segs, h, "attention backward")
	H, KV, D := h.H, h.KV, h.D
	kvd := KV * D
	for _, b := range []struct {
		b    backend.Buf
		n    int
		what string
	}{{dq, N * H * D, "dq"}, {dOut, N * H * D, "dOut"}, {out, N * H * D, "out"}, {dk, N * kvd, "dk"}, {dv, N * kvd, "dv"}, {lse, N * H, "lse"}} {
		backend.Need(b.b, b.n, "attention backward "+b.what)
	}
	for i, s := range segs {
		if s.Start != 0 {
			panic(fmt.Sprintf("cpu: attention backward: segment %d starts at position %d; backward needs whole sequences", i, s.Start))
		}
	}
	qs, os, ls, dqs, dks, dvs, dos := f32(q), f32(out), f32(lse), f32(dq), f32(dk), f32(dv), f32(dOut)
	group := H / KV
	scale := float32(1 / math.Sqrt(float64(D)))
	c.parallel(len(segs)*KV, 1, func(lo, hi int) {
		sp := c.getScratch(0)
		for it := lo; it < hi; it++ {
			sg, kh := &segs[it/KV], it%KV
			k, v := f32(sg.K), f32(sg.V)
			if cap(*sp) < sg.T {
				*sp = make([]float32, sg.T)
			}
			for hh := kh * group; hh < (kh+1)*group; hh++ {
				for t := range sg.T {
					r, n := sg.Row+t, t+1
					sc := (*sp)[:n]
					qv, dov := qs[(r*H+hh)*D:][:D], dos[(r*H+hh)*D:][:D]
					m := ls[r*H+hh]
					for j := range sc {
						sc[j] = expf(dot(qv, k[(j*KV+kh)*D:][:D])*scale - m)
					}
					delta := dot(dov, os[(r*H+hh)*D:][:D])
					dqv := dqs[(r*H+hh)*D:][:D]
					for j, p := range sc {
						kj := (j*KV + kh) * D
						ds := p * (dot(dov, v[kj:][:D]) - delta) * scale
						axpy(dvs[(sg.Row+j)*kvd+kh*D:][:D], p, dov)
						axpy(dqv, ds, k[kj:][:D])
						axpy(dks[(sg.Row+j)*kvd+kh*D:][:D], ds, qv)
					}
				}
			}
		}
		c.putScratch(sp)
	})
}

package cpu

import (
	"fmt"
	"math"

	"github.com/nextstate-rl/nextstate/trainer/backend"
)

// segRows counts the rows of segs and checks that each fits n rows of the
// batch and its positions fit P rotary positions (P < 0: no tables).
func segRows(segs []backend.Seg, n, P int, what string) int {
	total := 0
	for i, s := range segs {
		if s.T < 0 || s.Row < 0 || s.Row+s.T > n || s.Start < 0 {
			panic(fmt.Sprintf("cpu: %s: segment %d (rows [%d, %d)) outside the batch of %d rows", what, i, s.Row, s.Row+s.T, n))
		}
		if P >= 0 && s.Start+s.T > P {
			panic(fmt.Sprintf("cpu: %s: segment %d reaches position %d, the rotary tables cover %d", what, i, s.Start+s.T, P))
		}
		total += s.T
	}
	return total
}

// eachRow calls fn for the flat rows [lo, hi) of segs taken in order: row t
// of segment s.
func eachRow(segs []backend.Seg, lo, hi int, fn func(s *backend.Seg, t int)) {
	i, base := 0, 0
	for i < len(segs) && base+segs[i].T <= lo {
		base += segs[i].T
		i++
	}
	for f := lo; f < hi; f++ {
		for f-base >= segs[i].T {
			base += segs[i].T
			i++
		}
		fn(&segs[i], f-base)
	}
}

// ropeRow rotates one head x [D] to the position whose tables are cs, sn [D/2].
func ropeRow(x, cs, sn []float32) {
	half := len(cs)
	a, b := x[:half], x[half:][:half]
	sn = sn[:half]
	for i := range a {
		ai, bi := a[i], b[i]
		a[i] = ai*cs[i] - bi*sn[i]
		b[i] = bi*cs[i] + ai*sn[i]
	}
}

// unropeRow is ropeRow's backward: the rotation by the opposite angle.
func unropeRow(x, cs, sn []float32) {
	half := len(cs)
	a, b := x[:half], x[half:][:half]
	sn = sn[:half]
	for i := range a {
		ai, bi := a[i], b[i]
		a[i] = ai*cs[i] + bi*sn[i]
		b[i] = bi*cs[i] - ai*sn[i]
	}
}

type qkShape struct {
	H, KV, D, W, half, P int
	cos, sin             []float32
}

func checkQK(qkv, qNorm, kNorm backend.Buf, rope backend.Rope, h backend.Heads, what string) (qkShape, int) {
	s := qkShape{H: h.H, KV: h.KV, D: h.D, W: (h.H + 2*h.KV) * h.D, half: h.D / 2}
	if h.H <= 0 || h.KV <= 0 || h.H%h.KV != 0 || h.D <= 0 || h.D%2 != 0 {
		panic(fmt.Sprintf("cpu: %s: heads %+v", what, h))
	}
	if qkv.Len()%s.W != 0 {
		panic(fmt.Sprintf("cpu: %s: qkv of %d is not rows of %d", what, qkv.Len(), s.W))
	}
	backend.Need(qNorm, h.D, what+" qNorm")
	backend.Need(kNorm, h.D, what+" kNorm")
	s.cos, s.sin = f32(rope.Cos), f32(rope.Sin)
	if len(s.cos) != len(s.sin) || len(s.cos)%s.half != 0 {
		panic(fmt.Sprintf("cpu: %s: rotary tables of %d and %d, not rows of %d", what, len(s.cos), len(s.sin), s.half))
	}
	s.P = len(s.cos) / s.half
	return s, qkv.Len() / s.W
}

// QKNormRoPE normalises and rotates q and k and places k, v; see backend.Backend.
func (c *CPU) QKNormRoPE(q backend.Buf, segs []backend.Seg, qkv, qNorm, kNorm backend.Buf, rope backend.Rope, h backend.Heads, eps float32) {
	s, N := checkQK(qkv, qNorm, kNorm, rope, h, "qknorm")
	backend.Need(q, N*s.H*s.D, "qknorm q")
	total := segRows(segs, N, s.P, "qknorm")
	src, qs, qn, kn := f32(qkv), f32(q), f32(qNorm), f32(kNorm)
	kvd := s.KV * s.D
	for i, sg := range segs {
		if sg.K.Len() < (sg.Start+sg.T)*kvd || sg.V.Len() < (sg.Start+sg.T)*kvd {
			panic(fmt.Sprintf("cpu: qknorm: segment %d's K, V (%d, %d) do not reach position %d of %d", i, sg.K.Len(), sg.V.Len(), sg.Start+sg.T, kvd))
		}
	}
	c.parallel(total, max(1, 2048/s.W), func(lo, hi int) {
		eachRow(segs, lo, hi, func(sg *backend.Seg, t int) {
			r, p := sg.Row+t, sg.Start+t
			row := src[r*s.W:][:s.W]
			cs, sn := s.cos[p*s.half:][:s.half], s.sin[p*s.half:][:s.half]
			for hh := range s.H {
				o := qs[(r*s.H+hh)*s.D:][:s.D]
				rmsRow(o, row[hh*s.D:][:s.D], qn, eps)
				ropeRow(o, cs, sn)
			}
			ks, vs := f32(sg.K)[p*kvd:][:kvd], f32(sg.V)[p*kvd:][:kvd]
			for hh := range s.KV {
				o := ks[hh*s.D:][:s.D]
				rmsRow(o, row[(s.H+hh)*s.D:][:s.D], kn, eps)
				ropeRow(o, cs, sn)
			}
			copy(vs, row[(s.H+s.KV)*s.D:])
		})
	})
}

// QKNormRoPEBackward; see backend.Trainer. The rstd of each head is
// recomputed from qkv; the norm weights' gradients are summed per chunk and
// the chunks added in order.
func (c *CPU) QKNormRoPEBackward(dqkv, dqNorm, dkNorm, dq, dk, dv, qkv, qNorm, kNorm backend.Buf, segs []backend.Seg, rope backend.Rope, h backend.Heads, eps float32) {
	s, N := checkQK(qkv, qNorm, kNorm, rope, h, "qknorm backward")
	kvd := s.KV * s.D
	backend.Need(dqkv, N*s.W, "qknorm backward dqkv")
	backend.Need(dq, N*s.H*s.D, "qknorm backward dq")
	backend.Need(dk, N*kvd, "qknorm backward dk")
	backend.Need(dv, N*kvd, "qknorm backward dv")
	backend.Optional(dqNorm, s.D, "qknorm backward dqNorm")
	backend.Optional(dkNorm, s.D, "qknorm backward dkNorm")
	total := segRows(segs, N, s.P, "qknorm backward")
	src, dsrc, qn, kn := f32(qkv), f32(dqkv), f32(qNorm), f32(kNorm)
	dqs, dks, dvs, dqn, dkn := f32(dq), f32(dk), f32(dv), opt(dqNorm), opt(dkNorm)
	// per chunk: D for dqNorm, D for dkNorm, D of scratch for one head
	pp := c.getScratch(c.maxChunks() * 3 * s.D)
	part := *pp
	clear(part)
	n := c.parallelChunks(total, max(1, 2048/s.W), func(k, lo, hi int) {
		pq, pk, g := part[3*k*s.D:][:s.D], part[(3*k+1)*s.D:][:s.D], part[(3*k+2)*s.D:][:s.D]
		if dqn == nil {
			pq = nil
		}
		if dkn == nil {
			pk = nil
		}
		eachRow(segs, lo, hi, func(sg *backend.Seg, t int) {
			r, p := sg.Row+t, sg.Start+t
			row, drow := src[r*s.W:][:s.W], dsrc[r*s.W:][:s.W]
			cs, sn := s.cos[p*s.half:][:s.half], s.sin[p*s.half:][:s.half]
			for hh := range s.H + s.KV {
				var gin, w, pw []float32
				if hh < s.H {
					gin, w, pw = dqs[(r*s.H+hh)*s.D:][:s.D], qn, pq
				} else {
					gin, w, pw = dks[r*kvd+(hh-s.H)*s.D:][:s.D], kn, pk
				}
				copy(g, gin)
				unropeRow(g, cs, sn)
				x := row[hh*s.D:][:s.D]
				rmsRowBackward(drow[hh*s.D:][:s.D], pw, g, x, w, rstdOf(x, eps))
			}
			axpy(drow[(s.H+s.KV)*s.D:], 1, dvs[r*kvd:][:kvd])
		})
	})
	for k := range n {
		if dqn != nil {
			axpy(dqn, 1, part[3*k*s.D:][:s.D])
		}
		if dkn != nil {
			axpy(dkn, 1, part[(3*k+1)*s.D:][:s.D])
		}
	}
	c.putScratch(pp)
}

// rstdOf is 1/√(mean(x²) + eps) as rmsRow computes it.
func rstdOf(x []float32, eps float32) float32 {
	var ss float64
	for _, v := range x {
		ss += float64(v) * float64(v)
	}
	return float32(1 / math.Sqrt(ss/float64(len(x))+float64(eps)))
}

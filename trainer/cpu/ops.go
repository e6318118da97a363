package cpu

import (
	"fmt"
	"math"

	"github.com/nextstate-rl/nextstate/trainer/backend"
)

// Embed gathers rows of table; see backend.Backend.
func (c *CPU) Embed(out, table, ids backend.Buf, C int) {
	id, tb := i32(ids), f32(table)
	backend.Need(out, len(id)*C, "embed out")
	o := f32(out)
	rows := len(tb) / C
	c.parallel(len(id), max(1, 16384/C), func(lo, hi int) {
		for n := lo; n < hi; n++ {
			r := int(id[n])
			if r < 0 || r >= rows {
				panic(fmt.Sprintf("cpu: embed: id %d outside the table's %d rows", r, rows))
			}
			copy(o[n*C:(n+1)*C], tb[r*C:(r+1)*C])
		}
	})
}

// EmbedBackward scatter-adds rows into dTable. Each worker owns a band of
// columns and adds every row in order, so the result does not depend on
// the split.
func (c *CPU) EmbedBackward(dTable, dOut, ids backend.Buf, C int) {
	id, dt := i32(ids), f32(dTable)
	backend.Need(dOut, len(id)*C, "embed dOut")
	do := f32(dOut)
	rows := len(dt) / C
	for _, r := range id {
		if r < 0 || int(r) >= rows {
			panic(fmt.Sprintf("cpu: embed backward: id %d outside the table's %d rows", r, rows))
		}
	}
	c.parallel(C, max(16, C/c.maxChunks()), func(lo, hi int) {
		for n, r := range id {
			axpy(dt[int(r)*C+lo:int(r)*C+hi], 1, do[n*C+lo:n*C+hi])
		}
	})
}

// RMSNorm normalises rows; see backend.Backend.
func (c *CPU) RMSNorm(out, rstd, x, w backend.Buf, rows, dim int, eps float32) {
	backend.Need(x, rows*dim, "rmsnorm x")
	backend.Need(out, rows*dim, "rmsnorm out")
	backend.Need(w, dim, "rmsnorm w")
	backend.Optional(rstd, rows, "rmsnorm rstd")
	xs, os, ws, rs := f32(x), f32(out), f32(w), opt(rstd)
	c.parallel(rows, max(1, 8192/dim), func(lo, hi int) {
		for r := lo; r < hi; r++ {
			s := rmsRow(os[r*dim:][:dim], xs[r*dim:][:dim], ws, eps)
			if rs != nil {
				rs[r] = s
			}
		}
	})
}

// rmsRow writes out = x·rstd·w for one row and returns rstd.
func rmsRow(out, x, w []float32, eps float32) float32 {
	scale := rstdOf(x, eps)
	w = w[:len(x)]
	out = out[:len(x)]
	for i, v := range x {
		out[i] = v * scale * w[i]
	}
	return scale
}

// RMSNormBackward; see backend.Trainer. The weight gradient is summed per
// chunk of rows and the chunks added in order.
func (c *CPU) RMSNormBackward(dx, dw, dOut, x, w, rstd backend.Buf, rows, dim int) {
	backend.Need(x, rows*dim, "rmsnorm backward x")
	backend.Need(dOut, rows*dim, "rmsnorm backward dOut")
	backend.Need(w, dim, "rmsnorm backward w")
	backend.Need(rstd, rows, "rmsnorm backward rstd")
	backend.Optional(dx, rows*dim, "rmsnorm backward dx")
	backend.Optional(dw, dim, "rmsnorm backward dw")
	xs, dos, ws, rs, dxs, dws := f32(x), f32(dOut), f32(w), f32(rstd), opt(dx), opt(dw)
	var part []float32
	var pp *[]float32
	if dws != nil {
		pp = c.getScratch(c.maxChunks() * dim)
		part = *pp
		clear(part)
	}
	n := c.parallelChunks(rows, max(1, 8192/dim), func(k, lo, hi int) {
		var pw []float32
		if part != nil {
			pw = part[k*dim : (k+1)*dim]
		}
		for r := lo; r < hi; r++ {
			var rdx []float32
			if dxs != nil {
				rdx = dxs[r*dim:][:dim]
			}
			rmsRowBackward(rdx, pw, dos[r*dim:][:dim], xs[r*dim:][:dim], ws, rs[r])
		}
	})
	if part != nil {
		for k := range n {
			axpy(dws, 1, part[k*dim:(k+1)*dim])
		}
		c.putScratch(pp)
	}
}

// rmsRowBackward adds one row's gradients: dx += rstd·(dy⊙w) −
// rstd³/dim·x·Σ(dy⊙w⊙x) and dw += dy⊙x·rstd (either nil to skip).
func rmsRowBackward(dx, dw, dy, x, w []float32, rstd float32) {
	w = w[:len(x)]
	dy = dy[:len(x)]
	if dx != nil {
		var s float64
		for i, v := range x {
			s += float64(dy[i]) * float64(w[i]) * float64(v)
		}
		k := float32(s) * rstd * rstd * rstd / float32(len(x))
		dx = dx[:len(x)]
		for i, v := range x {
			dx[i] += rstd*dy[i]*w[i] - k*v
		}
	}
	if dw != nil {
		dw = dw[:len(x)]
		for i, v := range x {
			dw[i] += dy[i] * v * rstd
		}
	}
}

// SwiGLU computes silu(gate)·up; see backend.Backend.
func (c *CPU) SwiGLU(out, gu backend.Buf, rows, F int) {
	backend.Need(gu, rows*2*F, "swiglu gu")
	backend.Need(out, rows*F, "swiglu out")
	g2, o := f32(gu), f32(out)
	c.parallel(rows, max(1, 8192/F), func(lo, hi int) {
		for r := lo; r < hi; r++ {
			g, u, or := g2[r*2*F:][:F], g2[r*2*F+F:][:F], o[r*F:][:F]
			for i, gv := range g {
				or[i] = gv / (1 + expf(-gv)) * u[i]
			}
		}
	})
}

// SwiGLUBackward adds dgate = dout·up·silu'(gate) and dup = dout·silu(gate).
func (c *CPU) SwiGLUBackward(dgu, dOut, gu backend.Buf, rows, F int) {
	backend.Need(gu, rows*2*F, "swiglu backward gu")
	backend.Need(dgu, rows*2*F, "swiglu backward dgu")
	backend.Need(dOut, rows*F, "swiglu backward dOut")
	g2, d2, do := f32(gu), f32(dgu), f32(dOut)
	c.parallel(rows, max(1, 8192/F), func(lo, hi int) {
		for r := lo; r < hi; r++ {
			g, u := g2[r*2*F:][:F], g2[r*2*F+F:][:F]
			dg, du, dy := d2[r*2*F:][:F], d2[r*2*F+F:][:F], do[r*F:][:F]
			for i, gv := range g {
				sg := 1 / (1 + expf(-gv))
				silu := gv * sg
				dg[i] += dy[i] * u[i] * sg * (1 + gv*(1-sg))
				du[i] += dy[i] * silu
			}
		}
	})
}

// SumSquares returns Σ x², summed per chunk in float64 and the chunks in order.
func (c *CPU) SumSquares(x backend.Buf) float64 {
	xs := f32(x)
	part := make([]float64, c.maxChunks())
	n := c.parallelChunks(len(xs), 1<<15, func(k, lo, hi int) {
		var s float64
		for _, v := range xs[lo:hi] {
			s += float64(v) * float64(v)
		}
		part[k] = s
	})
	var s float64
	for _, v := range part[:n] {
		s += v
	}
	return s
}

// AdamW takes one step in float32, in torch.optim.AdamW's order of operations.
func (c *CPU) AdamW(p, g, m, v backend.Buf, s backend.AdamW) {
	n := p.Len()
	for _, b := range []backend.Buf{g, m, v} {
		backend.Need(b, n, "adamw operand")
	}
	ps, gs, ms, vs := f32(p), f32(g), f32(m), f32(v)
	decay := float32(1 - s.LR*s.WeightDecay)
	b1, b2 := float32(s.Beta1), float32(s.Beta2)
	stepSize := float32(s.LR / (1 - math.Pow(s.Beta1, float64(s.Step))))
	bc2 := float32(math.Sqrt(1 - math.Pow(s.Beta2, float64(s.Step))))
	eps, gsc := float32(s.Eps), float32(s.GradScale)
	c.parallel(n, 1<<14, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			gi := gs[i] * gsc
			ps[i] *= decay
			ms[i] = ms[i]*b1 + gi*(1-b1)
			vs[i] = vs[i]*b2 + gi*gi*(1-b2)
			denom := float32(math.Sqrt(float64(vs[i])))/bc2 + eps
			ps[i] -= stepSize * (ms[i] / denom)
		}
	})
}

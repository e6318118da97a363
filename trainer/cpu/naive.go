package cpu

import "math"

// The naive kernels: each the plainest loops for its formula, computing in
// float64, generic over the element type so that a backward can be checked
// against finite differences of its forward in float64. They are the
// reference the fast kernels are tested against (llm.c's
// matmul_forward_naive) and, through Naive, the model's. Each forward sits
// next to its backward; backwards add into their gradients (a nil gradient
// is skipped). Shapes follow trainer/backend's legend.

type float interface{ ~float32 | ~float64 }

// embedNaive computes out[n,:] = table[ids[n],:].
func embedNaive[F float](out, table []F, ids []int32, C int) {
	for n, id := range ids {
		copy(out[n*C:(n+1)*C], table[int(id)*C:(int(id)+1)*C])
	}
}

// embedBackwardNaive computes dTable[ids[n],:] += dOut[n,:].
func embedBackwardNaive[F float](dTable, dOut []F, ids []int32, C int) {
	for n, id := range ids {
		for i := range C {
			dTable[int(id)*C+i] += dOut[n*C+i]
		}
	}
}

// gemmNaive computes c = α·op(a)·op(b) + β·c with op(a)[M,K], op(b)[K,N].
func gemmNaive[F float](c []F, ldc int, a []F, lda int, ta bool, b []F, ldb int, tb bool, M, N, K int, alpha, beta float64) {
	at := func(m, k int) float64 {
		if ta {
			return float64(a[k*lda+m])
		}
		return float64(a[m*lda+k])
	}
	bt := func(k, n int) float64 {
		if tb {
			return float64(b[n*ldb+k])
		}
		return float64(b[k*ldb+n])
	}
	for m := range M {
		for n := range N {
			var s float64
			for k := range K {
				s += at(m, k) * bt(k, n)
			}
			o := alpha * s
			if beta != 0 {
				o += beta * float64(c[m*ldc+n])
			}
			c[m*ldc+n] = F(o)
		}
	}
}

// MatMulNaive computes out[M,N] = x[M,K] · w[N,K]ᵀ, w in PyTorch's
// [out_features, in_features] layout, accumulating in float64.
func MatMulNaive(out, x, w []float32, M, N, K int) {
	gemmNaive(out, N, x, K, false, w, K, true, M, N, K, 1, 0)
}

// rmsNormNaive computes out[r,:] = x[r,:] / √(mean(x[r,:]²) + eps) · w and,
// when rstd is not nil, rstd[r] = 1/√(mean(x[r,:]²) + eps).
func rmsNormNaive[F float](out, rstd, x, w []F, rows, dim int, eps float64) {
	for r := range rows {
		var ss float64
		for i := range dim {
			v := float64(x[r*dim+i])
			ss += v * v
		}
		s := 1 / math.Sqrt(ss/float64(dim)+eps)
		if rstd != nil {
			rstd[r] = F(s)
		}
		for i := range dim {
			out[r*dim+i] = F(float64(x[r*dim+i]) * s * float64(w[i]))
		}
	}
}

// rmsNormBackwardNaive adds the gradients of rmsNormNaive from the rstd it
// kept: with y = x·s·w, s = (mean(x²)+eps)^(−1/2),
// ∂y_i/∂x_j = s·w_i·δ_ij − s³·w_i·x_i·x_j/dim.
func rmsNormBackwardNaive[F float](dx, dw, dy, x, w, rstd []F, rows, dim int) {
	for r := range rows {
		xr, dr := x[r*dim:][:dim], dy[r*dim:][:dim]
		s := float64(rstd[r])
		var dot float64
		for i := range dim {
			dot += float64(dr[i]) * float64(w[i]) * float64(xr[i])
		}
		for j := range dim {
			if dx != nil {
				g := s*float64(dr[j])*float64(w[j]) - s*s*s*float64(xr[j])*dot/float64(dim)
				dx[r*dim+j] += F(g)
			}
			if dw != nil {
				dw[j] += F(float64(dr[j]) * float64(xr[j]) * s)
			}
		}
	}
}

// RMSNormNaive is rmsNormNaive on float32 without rstd.
func RMSNormNaive(out, x, w []float32, rows, dim int, eps float32) {
	rmsNormNaive(out, nil, x, w, rows, dim, float64(eps))
}

// swigluNaive computes out[r,i] = silu(gu[r,i])·gu[r,F+i] for gu[rows, 2F]
// (gate and up side by side, as the fused projection writes them).
func swigluNaive[F float](out, gu []F, rows, Fn int) {
	for r := range rows {
		for i := range Fn {
			g, u := float64(gu[r*2*Fn+i]), float64(gu[r*2*Fn+Fn+i])
			out[r*Fn+i] = F(g / (1 + math.Exp(-g)) * u)
		}
	}
}

// swigluBackwardNaive adds dgate = dout·up·σ(g)(1 + g(1−σ(g))), dup = dout·silu(g).
func swigluBackwardNaive[F float](dgu, dout, gu []F, rows, Fn int) {
	for r := range rows {
		for i := range Fn {
			g, u, d := float64(gu[r*2*Fn+i]), float64(gu[r*2*Fn+Fn+i]), float64(dout[r*Fn+i])
			sg := 1 / (1 + math.Exp(-g))
			dgu[r*2*Fn+i] += F(d * u * sg * (1 + g*(1-sg)))
			dgu[r*2*Fn+Fn+i] += F(d * g * sg)
		}
	}
}

// SwiGLUNaive is swigluNaive on float32.
func SwiGLUNaive(out, gu []float32, rows, F int) { swigluNaive(out, gu, rows, F) }

// adamwNaive takes one AdamW step per element in float64 (torch.optim.AdamW).
func adamwNaive[F float](p, g, m, v []F, lr, b1, b2, eps, wd, gscale float64, step int) {
	bc1, bc2 := 1-math.Pow(b1, float64(step)), 1-math.Pow(b2, float64(step))
	for i := range p {
		gi := float64(g[i]) * gscale
		pi := float64(p[i]) * (1 - lr*wd)
		mi := b1*float64(m[i]) + (1-b1)*gi
		vi := b2*float64(v[i]) + (1-b2)*gi*gi
		pi -= lr / bc1 * mi / (math.Sqrt(vi)/math.Sqrt(bc2) + eps)
		p[i], m[i], v[i] = F(pi), F(mi), F(vi)
	}
}

// sumSquaresNaive is Σ x².
func sumSquaresNaive[F float](x []F) float64 {
	var s float64
	for _, v := range x {
		s += float64(v) * float64(v)
	}
	return s
}

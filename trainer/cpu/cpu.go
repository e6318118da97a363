// Package cpu holds the CPU kernels of the integrated trainer: f32 matrix
// products, RMSNorm, rotary embeddings, causal grouped-query attention over a
// KV cache and SwiGLU, each split over goroutines. Matrix products go to
// OpenBLAS's sgemm, loaded at run time through purego (no cgo) when Debian's
// libopenblas0-pthread (or any libopenblas.so.0) is installed, and to a
// register-blocked pure-Go kernel otherwise; NEXTSTATE_NO_BLAS=1 forces the
// latter. Each fast kernel has a naive twin (MatMulNaive, ...) that states its
// formula plainly and is its reference in tests.
//
// Shape legend: M, N, K a product's rows, columns and inner size; rows the
// tokens of a batch; H query heads, KV key/value heads, D the head size;
// T a segment's new tokens, start the position of its first one; F the MLP's
// intermediate size. Matrices are row-major; weights are [out, in] as in
// PyTorch, so products are x·wᵀ.
//
// A CPU value is safe for concurrent use; its kernels do not allocate in
// steady state except per-call goroutines.
package cpu

import (
	"math"
	"runtime"
	"sync"
)

// CPU runs the kernels with up to Workers goroutines.
type CPU struct {
	Workers int
	blas    *openBLAS
	scratch sync.Pool // []float32 attention score rows
}

// New returns a CPU backend using GOMAXPROCS goroutines and OpenBLAS when found.
func New() *CPU {
	return &CPU{Workers: runtime.GOMAXPROCS(0), blas: loadBLAS()}
}

// NewPureGo returns a CPU backend that never calls OpenBLAS.
func NewPureGo() *CPU { return &CPU{Workers: runtime.GOMAXPROCS(0)} }

// Name says which matrix-product kernel runs: "cpu+openblas (path)" or "cpu+go".
func (c *CPU) Name() string {
	if c.blas != nil {
		return "cpu+openblas (" + c.blas.path + ")"
	}
	return "cpu+go"
}

// parallel calls fn over [0,n) in at most Workers contiguous chunks, each at
// least grain long, and returns when all are done.
func (c *CPU) parallel(n, grain int, fn func(lo, hi int)) {
	w := min(c.Workers, (n+grain-1)/grain)
	if w <= 1 {
		fn(0, n)
		return
	}
	var wg sync.WaitGroup
	chunk := (n + w - 1) / w
	for lo := chunk; lo < n; lo += chunk {
		wg.Add(1)
		go func(lo int) {
			defer wg.Done()
			fn(lo, min(lo+chunk, n))
		}(lo)
	}
	fn(0, min(chunk, n))
	wg.Wait()
}

// MatMul computes out[M,N] = x[M,K] · w[N,K]ᵀ.
func (c *CPU) MatMul(out, x, w []float32, M, N, K int) {
	if M == 0 || N == 0 {
		return
	}
	if K == 0 {
		clear(out[:M*N])
		return
	}
	_, _, _ = out[M*N-1], x[M*K-1], w[N*K-1]
	if c.blas != nil {
		c.blas.matmul(out, x, w, M, N, K)
		return
	}
	// Tiles of 4 output columns; a row block of up to 4 rows at a time.
	tiles := (N + 3) / 4
	c.parallel(tiles, max(1, 16384/(K*max(M, 1))), func(lo, hi int) {
		for m0 := 0; m0 < M; m0 += 4 {
			m1 := min(m0+4, M)
			for t := lo; t < hi; t++ {
				n0 := t * 4
				if n0+4 <= N && m1-m0 == 4 {
					kernel4x4(out, x, w, m0, n0, N, K)
					continue
				}
				for m := m0; m < m1; m++ {
					for n := n0; n < min(n0+4, N); n++ {
						out[m*N+n] = dot(x[m*K:][:K], w[n*K:][:K])
					}
				}
			}
		}
	})
}

// kernel4x4 computes the 4×4 block of out at (m0, n0) with 16 accumulators.
func kernel4x4(out, x, w []float32, m0, n0, N, K int) {
	x0, x1, x2, x3 := x[m0*K:][:K], x[(m0+1)*K:][:K], x[(m0+2)*K:][:K], x[(m0+3)*K:][:K]
	w0, w1, w2, w3 := w[n0*K:][:K], w[(n0+1)*K:][:K], w[(n0+2)*K:][:K], w[(n0+3)*K:][:K]
	var s00, s01, s02, s03, s10, s11, s12, s13, s20, s21, s22, s23, s30, s31, s32, s33 float32
	for k := range x0 {
		a0, a1, a2, a3 := x0[k], x1[k], x2[k], x3[k]
		b0, b1, b2, b3 := w0[k], w1[k], w2[k], w3[k]
		s00 += a0 * b0
		s01 += a0 * b1
		s02 += a0 * b2
		s03 += a0 * b3
		s10 += a1 * b0
		s11 += a1 * b1
		s12 += a1 * b2
		s13 += a1 * b3
		s20 += a2 * b0
		s21 += a2 * b1
		s22 += a2 * b2
		s23 += a2 * b3
		s30 += a3 * b0
		s31 += a3 * b1
		s32 += a3 * b2
		s33 += a3 * b3
	}
	o := out[m0*N+n0:]
	o[0], o[1], o[2], o[3] = s00, s01, s02, s03
	o = out[(m0+1)*N+n0:]
	o[0], o[1], o[2], o[3] = s10, s11, s12, s13
	o = out[(m0+2)*N+n0:]
	o[0], o[1], o[2], o[3] = s20, s21, s22, s23
	o = out[(m0+3)*N+n0:]
	o[0], o[1], o[2], o[3] = s30, s31, s32, s33
}

// dot is a·b with four accumulators.
func dot(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// axpy computes y += alpha·x.
func axpy(y []float32, alpha float32, x []float32) {
	x = x[:len(y)]
	for i := range y {
		y[i] += alpha * x[i]
	}
}

// RMSNorm computes out[r,:] = x[r,:] / sqrt(mean(x[r,:]²) + eps) * w; out may be x.
func (c *CPU) RMSNorm(out, x, w []float32, rows, dim int, eps float32) {
	w = w[:dim]
	c.parallel(rows, max(1, 8192/dim), func(lo, hi int) {
		for r := lo; r < hi; r++ {
			xr, or := x[r*dim:][:dim], out[r*dim:][:dim]
			var ss float64
			for _, v := range xr {
				ss += float64(v) * float64(v)
			}
			scale := float32(1 / math.Sqrt(ss/float64(dim)+float64(eps)))
			for i, v := range xr {
				or[i] = v * scale * w[i]
			}
		}
	})
}

// RoPE rotates x[rows, heads, D] in place; see RoPENaive.
func (c *CPU) RoPE(x []float32, pos []int32, rows, heads, D int, cos, sin []float32) {
	half := D / 2
	c.parallel(rows, max(1, 4096/(heads*D)), func(lo, hi int) {
		for r := lo; r < hi; r++ {
			p := int(pos[r])
			cs, sn := cos[p*half:][:half], sin[p*half:][:half]
			for h := range heads {
				v := x[(r*heads+h)*D:][:D]
				a, b := v[:half], v[half:][:half]
				for i := range a {
					ai, bi := a[i], b[i]
					a[i] = ai*cs[i] - bi*sn[i]
					b[i] = bi*cs[i] + ai*sn[i]
				}
			}
		}
	})
}

// Attention is causal grouped-query attention over a KV cache; see AttentionNaive.
func (c *CPU) Attention(out, q, k, v []float32, T, start, H, KV, D int) {
	group := H / KV
	scale := float32(1 / math.Sqrt(float64(D)))
	c.parallel(T*H, 1, func(lo, hi int) {
		sp, _ := c.scratch.Get().(*[]float32)
		if sp == nil {
			sp = new([]float32)
		}
		for i := lo; i < hi; i++ {
			t, h := i/H, i%H
			kh := h / group
			n := start + t + 1
			if cap(*sp) < n {
				*sp = make([]float32, n+n/2)
			}
			sc := (*sp)[:n]
			qv := q[(t*H+h)*D:][:D]
			mx := float32(math.Inf(-1))
			for j := range sc {
				s := dot(qv, k[(j*KV+kh)*D:][:D]) * scale
				sc[j] = s
				mx = max(mx, s)
			}
			var sum float32
			for j, s := range sc {
				e := float32(math.Exp(float64(s - mx)))
				sc[j] = e
				sum += e
			}
			o := out[(t*H+h)*D:][:D]
			clear(o)
			inv := 1 / sum
			for j, p := range sc {
				axpy(o, p*inv, v[(j*KV+kh)*D:][:D])
			}
		}
		c.scratch.Put(sp)
	})
}

// SwiGLU computes out[r,i] = silu(gu[r,i]) * gu[r,F+i]; see SwiGLUNaive.
func (c *CPU) SwiGLU(out, gu []float32, rows, F int) {
	c.parallel(rows, max(1, 8192/F), func(lo, hi int) {
		for r := lo; r < hi; r++ {
			g, u, o := gu[r*2*F:][:F], gu[r*2*F+F:][:F], out[r*F:][:F]
			for i, gv := range g {
				o[i] = gv / (1 + float32(math.Exp(float64(-gv)))) * u[i]
			}
		}
	})
}

// Add computes dst += src.
func (c *CPU) Add(dst, src []float32) {
	src = src[:len(dst)]
	for i := range dst {
		dst[i] += src[i]
	}
}

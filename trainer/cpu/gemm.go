package cpu

import "github.com/nextstate-rl/nextstate/trainer/backend"

// Gemm computes c = α·op(a)·op(b) + β·c; see backend.Backend.
func (c *CPU) Gemm(cm, a backend.Mat, ta bool, b backend.Mat, tb bool, alpha, beta float32) {
	M, N, K := backend.CheckGemm(cm, a, ta, b, tb)
	if M == 0 || N == 0 {
		return
	}
	C := f32(cm.B)
	if K == 0 {
		scaleMat(C, M, N, cm.Ld, beta)
		return
	}
	A, B := f32(a.B), f32(b.B)
	if c.blas != nil {
		c.blasGemm(C, cm.Ld, A, a.Ld, ta, B, b.Ld, tb, M, N, K, alpha, beta)
		return
	}
	c.gemmGo(C, cm.Ld, A, a.Ld, ta, B, b.Ld, tb, M, N, K, alpha, beta)
}

// gemmGrain is the smallest slice of a product's rows or columns given to
// one worker, and the unit slices are rounded to.
const gemmGrain = 16

// blasGemm splits a product over the Workers by rows of c (or by columns
// when c has fewer rows than columns), one single-threaded sgemm each; the
// split depends only on the sizes and Workers. Products under about a
// quarter of a million multiply-adds run whole.
func (c *CPU) blasGemm(C []float32, ldc int, A []float32, lda int, ta bool, B []float32, ldb int, tb bool, M, N, K int, alpha, beta float32) {
	w := c.Workers
	if c.blas.threads != 1 || w <= 1 || M*N*K < 1<<18 {
		c.blas.gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc)
		return
	}
	byRows := M >= N
	n := N
	if byRows {
		n = M
	}
	chunk := (n + w - 1) / w
	chunk = max(gemmGrain, (chunk+gemmGrain-1)/gemmGrain*gemmGrain)
	c.parallel((n+chunk-1)/chunk, 1, func(lo, hi int) {
		for p := lo; p < hi; p++ {
			i0, i1 := p*chunk, min((p+1)*chunk, n)
			if byRows {
				off := i0 * lda // op(a)'s rows i0..: rows of a, or its columns when transposed
				if ta {
					off = i0
				}
				a := A[off:]
				c.blas.gemm(ta, tb, i1-i0, N, K, alpha, a, lda, B, ldb, beta, C[i0*ldc:], ldc)
			} else {
				off := i0 // op(b)'s columns i0..: columns of b, or its rows when transposed
				if tb {
					off = i0 * ldb
				}
				b := B[off:]
				c.blas.gemm(ta, tb, M, i1-i0, K, alpha, A, lda, b, ldb, beta, C[i0:], ldc)
			}
		}
	})
}

func scaleMat(c []float32, M, N, ld int, beta float32) {
	for m := range M {
		row := c[m*ld:][:N]
		if beta == 0 {
			clear(row)
			continue
		}
		for i := range row {
			row[i] *= beta
		}
	}
}

// gemmGo is the pure-Go product: op(a) as rows [M, K] and op(b)ᵀ as rows
// [N, K] (packed when the operands are not already so), then 4×4 blocks of
// dot products over K.
func (c *CPU) gemmGo(C []float32, ldc int, A []float32, lda int, ta bool, B []float32, ldb int, tb bool, M, N, K int, alpha, beta float32) {
	x, xp := c.rowsOf(A, lda, ta, M, K)
	w, wp := c.rowsOf(B, ldb, !tb, N, K)
	defer func() {
		if xp != nil {
			c.putScratch(xp)
		}
		if wp != nil {
			c.putScratch(wp)
		}
	}()
	store := func(m, n int, s float32) {
		o := &C[m*ldc+n]
		if beta == 0 {
			*o = alpha * s
		} else {
			*o = alpha*s + beta**o
		}
	}
	tiles := (N + 3) / 4
	c.parallel(tiles, max(1, 16384/(K*max(M, 1))), func(lo, hi int) {
		var blk [16]float32
		for m0 := 0; m0 < M; m0 += 4 {
			m1 := min(m0+4, M)
			for t := lo; t < hi; t++ {
				n0 := t * 4
				if n0+4 <= N && m1-m0 == 4 {
					kernel4x4(&blk, x, w, m0, n0, K)
					for i := range 4 {
						for j := range 4 {
							store(m0+i, n0+j, blk[4*i+j])
						}
					}
					continue
				}
				for m := m0; m < m1; m++ {
					for n := n0; n < min(n0+4, N); n++ {
						store(m, n, dot(x[m*K:][:K], w[n*K:][:K]))
					}
				}
			}
		}
	})
}

// rowsOf returns the R×K matrix that src holds as rows (src[r·ld + k]) or,
// when transposed, as columns (src[k·ld + r]), contiguous with stride K:
// src itself when it already is, else a pooled copy (returned to free).
func (c *CPU) rowsOf(src []float32, ld int, transposed bool, R, K int) ([]float32, *[]float32) {
	if !transposed && ld == K {
		return src[:R*K], nil
	}
	sp := c.getScratch(R * K)
	dst := *sp
	if !transposed {
		for r := range R {
			copy(dst[r*K:(r+1)*K], src[r*ld:])
		}
		return dst, sp
	}
	c.parallel(R, max(1, 4096/K), func(lo, hi int) {
		for r := lo; r < hi; r++ {
			row := dst[r*K : (r+1)*K]
			for k := range row {
				row[k] = src[k*ld+r]
			}
		}
	})
	return dst, sp
}

// kernel4x4 computes the 4×4 block at (m0, n0) of x·wᵀ, x and w rows of K,
// with 16 accumulators.
func kernel4x4(blk *[16]float32, x, w []float32, m0, n0, K int) {
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
	*blk = [16]float32{s00, s01, s02, s03, s10, s11, s12, s13, s20, s21, s22, s23, s30, s31, s32, s33}
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

package cpu

import "math"

// The naive kernels: each the plainest loop for its formula, kept as the
// reference the fast kernels are tested against (llm.c's matmul_forward_naive).
// Shapes follow the legend in the package doc.

// MatMulNaive computes out[M,N] = x[M,K] · w[N,K]ᵀ, w in PyTorch's
// [out_features, in_features] layout, accumulating in float64.
func MatMulNaive(out, x, w []float32, M, N, K int) {
	for m := range M {
		for n := range N {
			var s float64
			for k := range K {
				s += float64(x[m*K+k]) * float64(w[n*K+k])
			}
			out[m*N+n] = float32(s)
		}
	}
}

// RMSNormNaive computes out[r,:] = x[r,:] / sqrt(mean(x[r,:]²) + eps) * w.
func RMSNormNaive(out, x, w []float32, rows, dim int, eps float32) {
	for r := range rows {
		var ss float64
		for i := range dim {
			v := float64(x[r*dim+i])
			ss += v * v
		}
		scale := 1 / math.Sqrt(ss/float64(dim)+float64(eps))
		for i := range dim {
			out[r*dim+i] = float32(float64(x[r*dim+i])*scale) * w[i]
		}
	}
}

// RoPENaive rotates x[rows, heads, D] in place, rotate-half style (HF's
// rotate_half: pairs i and i+D/2), row r at position pos[r], with tables
// cos/sin[p*D/2 + i] for the angle p·θ^(-2i/D).
func RoPENaive(x []float32, pos []int32, rows, heads, D int, cos, sin []float32) {
	half := D / 2
	for r := range rows {
		p := int(pos[r])
		for h := range heads {
			v := x[(r*heads+h)*D:][:D]
			for i := range half {
				c, s := cos[p*half+i], sin[p*half+i]
				a, b := v[i], v[i+half]
				v[i] = a*c - b*s
				v[i+half] = b*c + a*s
			}
		}
	}
}

// AttentionNaive is causal grouped-query attention over a KV cache:
// q[T, H*D] holds queries at positions start..start+T-1, k and v[L, KV*D]
// the keys and values of positions 0..L-1 (L >= start+T); query head h reads
// kv head h/(H/KV); out[T, H*D].
func AttentionNaive(out, q, k, v []float32, T, start, H, KV, D int) {
	group := H / KV
	scale := 1 / math.Sqrt(float64(D))
	for t := range T {
		n := start + t + 1 // keys visible to this query
		for h := range H {
			kh := h / group
			qv := q[(t*H+h)*D:][:D]
			sc := make([]float64, n)
			mx := math.Inf(-1)
			for j := range n {
				var s float64
				for i := range D {
					s += float64(qv[i]) * float64(k[(j*KV+kh)*D+i])
				}
				sc[j] = s * scale
				mx = max(mx, sc[j])
			}
			var sum float64
			for j := range sc {
				sc[j] = math.Exp(sc[j] - mx)
				sum += sc[j]
			}
			o := out[(t*H+h)*D:][:D]
			for i := range D {
				var a float64
				for j := range n {
					a += sc[j] * float64(v[(j*KV+kh)*D+i])
				}
				o[i] = float32(a / sum)
			}
		}
	}
}

// SwiGLUNaive computes out[r,i] = silu(gu[r,i]) * gu[r,F+i] for gu[rows, 2F]
// (gate and up side by side, as the fused projection writes them).
func SwiGLUNaive(out, gu []float32, rows, F int) {
	for r := range rows {
		for i := range F {
			g, u := float64(gu[r*2*F+i]), float64(gu[r*2*F+F+i])
			out[r*F+i] = float32(g / (1 + math.Exp(-g)) * u)
		}
	}
}

// Naive is a backend that runs only the naive kernels: slow, plain, and the
// model-level reference for the fast backend.
type Naive struct{}

func (Naive) Name() string                            { return "cpu-naive" }
func (Naive) MatMul(out, x, w []float32, M, N, K int) { MatMulNaive(out, x, w, M, N, K) }
func (Naive) RMSNorm(out, x, w []float32, rows, dim int, eps float32) {
	RMSNormNaive(out, x, w, rows, dim, eps)
}
func (Naive) RoPE(x []float32, pos []int32, rows, heads, D int, cos, sin []float32) {
	RoPENaive(x, pos, rows, heads, D, cos, sin)
}
func (Naive) Attention(out, q, k, v []float32, T, start, H, KV, D int) {
	AttentionNaive(out, q, k, v, T, start, H, KV, D)
}
func (Naive) SwiGLU(out, gu []float32, rows, F int) { SwiGLUNaive(out, gu, rows, F) }
func (Naive) Add(dst, src []float32) {
	for i := range dst {
		dst[i] += src[i]
	}
}

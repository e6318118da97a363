package cpu

import (
	"math"
	"math/rand/v2"
	"testing"
)

func randSlice(r *rand.Rand, n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(r.NormFloat64())
	}
	return s
}

func maxDiff(t *testing.T, what string, got, want []float32, tol float64) {
	t.Helper()
	var worst float64
	for i := range want {
		d := math.Abs(float64(got[i]) - float64(want[i]))
		if d > tol*(1+math.Abs(float64(want[i]))) || d != d {
			t.Fatalf("%s: [%d] = %g, want %g", what, i, got[i], want[i])
		}
		worst = max(worst, d)
	}
}

func backends() map[string]*CPU {
	b := map[string]*CPU{"go": NewPureGo()}
	if c := New(); c.blas != nil {
		b["openblas"] = c
	}
	return b
}

func TestMatMul(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	for name, c := range backends() {
		for _, sz := range [][3]int{{1, 1, 1}, {1, 7, 5}, {3, 9, 17}, {4, 4, 4}, {8, 33, 64}, {13, 130, 70}, {64, 96, 128}} {
			M, N, K := sz[0], sz[1], sz[2]
			x, w := randSlice(r, M*K), randSlice(r, N*K)
			got, want := make([]float32, M*N), make([]float32, M*N)
			c.MatMul(got, x, w, M, N, K)
			MatMulNaive(want, x, w, M, N, K)
			maxDiff(t, name+" matmul", got, want, 1e-5*math.Sqrt(float64(K)))
		}
	}
	t.Logf("backend: %s", New().Name())
}

func TestRMSNorm(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 1))
	c := New()
	rows, dim := 5, 48
	x, w := randSlice(r, rows*dim), randSlice(r, dim)
	got, want := make([]float32, rows*dim), make([]float32, rows*dim)
	c.RMSNorm(got, x, w, rows, dim, 1e-6)
	RMSNormNaive(want, x, w, rows, dim, 1e-6)
	maxDiff(t, "rmsnorm", got, want, 1e-6)
	c.RMSNorm(x, x, w, rows, dim, 1e-6) // in place
	maxDiff(t, "rmsnorm in place", x, want, 1e-6)
}

func TestRoPE(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 1))
	c := New()
	rows, heads, D, P := 6, 3, 8, 20
	cos, sin := make([]float32, P*D/2), make([]float32, P*D/2)
	for i := range cos {
		cos[i], sin[i] = float32(r.Float64()), float32(r.Float64())
	}
	pos := []int32{0, 3, 19, 7, 7, 1}
	x := randSlice(r, rows*heads*D)
	y := append([]float32(nil), x...)
	c.RoPE(x, pos, rows, heads, D, cos, sin)
	RoPENaive(y, pos, rows, heads, D, cos, sin)
	maxDiff(t, "rope", x, y, 1e-6)
}

func TestAttention(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 1))
	c := New()
	for _, s := range [][5]int{{1, 0, 2, 1, 4}, {5, 0, 4, 2, 8}, {3, 7, 6, 3, 16}, {1, 30, 8, 8, 8}} {
		T, start, H, KV, D := s[0], s[1], s[2], s[3], s[4]
		L := start + T
		q, k, v := randSlice(r, T*H*D), randSlice(r, L*KV*D), randSlice(r, L*KV*D)
		got, want := make([]float32, T*H*D), make([]float32, T*H*D)
		c.Attention(got, q, k, v, T, start, H, KV, D)
		AttentionNaive(want, q, k, v, T, start, H, KV, D)
		maxDiff(t, "attention", got, want, 1e-5)
	}
}

func TestSwiGLU(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 1))
	c := New()
	rows, F := 3, 40
	gu := randSlice(r, rows*2*F)
	got, want := make([]float32, rows*F), make([]float32, rows*F)
	c.SwiGLU(got, gu, rows, F)
	SwiGLUNaive(want, gu, rows, F)
	maxDiff(t, "swiglu", got, want, 1e-6)
}

func BenchmarkMatMul(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	for name, c := range backends() {
		for _, sz := range [][3]int{{1, 1536, 512}, {8, 1536, 512}, {128, 1536, 512}, {512, 512, 512}} {
			M, N, K := sz[0], sz[1], sz[2]
			x, w, out := randSlice(r, M*K), randSlice(r, N*K), make([]float32, M*N)
			b.Run(name+"/"+itoa(M)+"x"+itoa(N)+"x"+itoa(K), func(b *testing.B) {
				for b.Loop() {
					c.MatMul(out, x, w, M, N, K)
				}
				b.ReportMetric(float64(2*M*N*K)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

func itoa(i int) string {
	s := ""
	for {
		s = string(rune('0'+i%10)) + s
		i /= 10
		if i == 0 {
			return s
		}
	}
}

package cpu

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/nextstate-rl/nextstate/trainer/backend"
)

// The fast kernels, forward and backward, against their naive twins.

func randSlice(r *rand.Rand, n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(r.NormFloat64())
	}
	return s
}

func maxDiff(t *testing.T, what string, got, want []float32, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range want {
		d := math.Abs(float64(got[i]) - float64(want[i]))
		if d > tol*(1+math.Abs(float64(want[i]))) || d != d {
			t.Fatalf("%s: [%d] = %g, want %g", what, i, got[i], want[i])
		}
	}
}

// fastBackends are the pure-Go backend and, when found, OpenBLAS's.
func fastBackends() map[string]*CPU {
	b := map[string]*CPU{"go": NewPureGo()}
	if c := New(); c.blas != nil {
		b["openblas"] = c
		b["openblas-3-workers"] = &CPU{Workers: 3, blas: c.blas} // uneven splits of a product
	}
	return b
}

func up(v []float32) backend.Buf {
	b := memory{}.Alloc(len(v))
	copy(f32(b), v)
	return b
}

func ids(v ...int32) backend.Buf {
	b := memory{}.AllocIDs(len(v))
	copy(i32(b), v)
	return b
}

func clone(b backend.Buf) backend.Buf { return up(f32(b)) }

// both runs op on a fast backend and on Naive with copies of the buffers it
// writes (outs), and compares them.
func both(t *testing.T, name string, fast backend.Trainer, tol float64, outs []backend.Buf, op func(be backend.Trainer, outs []backend.Buf)) {
	t.Helper()
	a, b := make([]backend.Buf, len(outs)), make([]backend.Buf, len(outs))
	for i, o := range outs {
		a[i], b[i] = clone(o), clone(o)
	}
	op(fast, a)
	op(Naive{}, b)
	for i := range outs {
		maxDiff(t, name, f32(a[i]), f32(b[i]), tol)
	}
}

func TestGemm(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	for name, c := range fastBackends() {
		for _, sz := range [][3]int{{1, 1, 1}, {1, 7, 5}, {3, 9, 17}, {4, 4, 4}, {8, 33, 64}, {13, 130, 70}, {64, 96, 128},
			{200, 90, 120}, {70, 230, 100}} { // the last two split over the workers, by rows and by columns
			M, N, K := sz[0], sz[1], sz[2]
			for _, tt := range [][2]bool{{false, true}, {false, false}, {true, false}, {true, true}} {
				ta, tb := tt[0], tt[1]
				ar, ac := M, K
				if ta {
					ar, ac = K, M
				}
				br, bc := K, N
				if tb {
					br, bc = N, K
				}
				// strided operands: each a block of columns of a wider matrix
				a := up(randSlice(r, ar*(ac+3))).Mat(ar, ac+3).Cols(1, ac+1)
				b := up(randSlice(r, br*(bc+2))).Mat(br, bc+2).Cols(2, bc+2)
				cm := up(randSlice(r, M*(N+1)))
				for _, ab := range [][2]float32{{1, 0}, {0.5, 1}, {-2, 0.25}} {
					both(t, name+" gemm", c, 1e-5*math.Sqrt(float64(K)), []backend.Buf{cm}, func(be backend.Trainer, o []backend.Buf) {
						be.Gemm(o[0].Mat(M, N+1).Cols(0, N), a, ta, b, tb, ab[0], ab[1])
					})
				}
			}
		}
	}
	t.Logf("backend: %s", New().Name())
}

func TestEmbed(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 1))
	c := New()
	V, C := 11, 40
	table, id := up(randSlice(r, V*C)), ids(3, 0, 10, 3, 7)
	both(t, "embed", c, 0, []backend.Buf{up(make([]float32, 5*C))}, func(be backend.Trainer, o []backend.Buf) {
		be.Embed(o[0], table, id, C)
	})
	dout := up(randSlice(r, 5*C))
	both(t, "embed backward", c, 1e-6, []backend.Buf{up(randSlice(r, V*C))}, func(be backend.Trainer, o []backend.Buf) {
		be.EmbedBackward(o[0], dout, id, C)
	})
}

func TestRMSNorm(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 1))
	c := New()
	rows, dim := 37, 48
	x, w := up(randSlice(r, rows*dim)), up(randSlice(r, dim))
	both(t, "rmsnorm", c, 1e-6, []backend.Buf{up(make([]float32, rows*dim)), up(make([]float32, rows))}, func(be backend.Trainer, o []backend.Buf) {
		be.RMSNorm(o[0], o[1], x, w, rows, dim, 1e-6)
	})
	xi := clone(x) // in place
	c.RMSNorm(xi, backend.Buf{}, xi, w, rows, dim, 1e-6)
	want := make([]float32, rows*dim)
	RMSNormNaive(want, f32(x), f32(w), rows, dim, 1e-6)
	maxDiff(t, "rmsnorm in place", f32(xi), want, 1e-6)

	rstd, dy := up(make([]float32, rows)), up(randSlice(r, rows*dim))
	c.RMSNorm(up(make([]float32, rows*dim)), rstd, x, w, rows, dim, 1e-6)
	both(t, "rmsnorm backward", c, 1e-5, []backend.Buf{up(randSlice(r, rows*dim)), up(randSlice(r, dim))}, func(be backend.Trainer, o []backend.Buf) {
		be.RMSNormBackward(o[0], o[1], dy, x, w, rstd, rows, dim)
	})
	both(t, "rmsnorm backward, frozen w", c, 1e-5, []backend.Buf{up(randSlice(r, rows*dim))}, func(be backend.Trainer, o []backend.Buf) {
		be.RMSNormBackward(o[0], backend.Buf{}, dy, x, w, rstd, rows, dim)
	})
}

func TestSwiGLU(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 1))
	c := New()
	rows, F := 13, 40
	gu, dy := up(randSlice(r, rows*2*F)), up(randSlice(r, rows*F))
	both(t, "swiglu", c, 1e-6, []backend.Buf{up(make([]float32, rows*F))}, func(be backend.Trainer, o []backend.Buf) {
		be.SwiGLU(o[0], gu, rows, F)
	})
	both(t, "swiglu backward", c, 1e-5, []backend.Buf{up(randSlice(r, rows*2*F))}, func(be backend.Trainer, o []backend.Buf) {
		be.SwiGLUBackward(o[0], dy, gu, rows, F)
	})
}

// ropeTables fills cos, sin [P, D/2] for the angles p·θ^(−2i/D).
func ropeTables(P, D int, theta float64) backend.Rope {
	c, s := ropeTables64(P, D, theta)
	cos, sin := make([]float32, len(c)), make([]float32, len(s))
	for i := range c {
		cos[i], sin[i] = float32(c[i]), float32(s[i])
	}
	return backend.Rope{Cos: up(cos), Sin: up(sin)}
}

func TestQKNormRoPE(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 1))
	c := New()
	h := backend.Heads{H: 4, KV: 2, D: 8}
	W, kvd := (h.H+2*h.KV)*h.D, h.KV*h.D
	N := 9
	rope := ropeTables(32, h.D, 1e4)
	qkv, qn, kn := up(randSlice(r, N*W)), up(randSlice(r, h.D)), up(randSlice(r, h.D))
	// inference: two segments continuing caches of 5 and 0 positions
	kc, vc := up(randSlice(r, 20*kvd)), up(randSlice(r, 20*kvd))
	k2, v2 := up(randSlice(r, 8*kvd)), up(randSlice(r, 8*kvd))
	both(t, "qknorm", c, 1e-5, []backend.Buf{up(make([]float32, N*h.H*h.D)), kc, vc, k2, v2}, func(be backend.Trainer, o []backend.Buf) {
		segs := []backend.Seg{{Row: 0, T: 6, Start: 5, K: o[1], V: o[2]}, {Row: 6, T: 3, K: o[3], V: o[4]}}
		be.QKNormRoPE(o[0], segs, qkv, qn, kn, rope, h, 1e-6)
	})
	dq, dk, dv := up(randSlice(r, N*h.H*h.D)), up(randSlice(r, N*kvd)), up(randSlice(r, N*kvd))
	segs := []backend.Seg{{Row: 0, T: 6, Start: 5}, {Row: 6, T: 3}}
	both(t, "qknorm backward", c, 1e-5, []backend.Buf{up(randSlice(r, N*W)), up(randSlice(r, h.D)), up(randSlice(r, h.D))}, func(be backend.Trainer, o []backend.Buf) {
		be.QKNormRoPEBackward(o[0], o[1], o[2], dq, dk, dv, qkv, qn, kn, segs, rope, h, 1e-6)
	})
}

func TestAttention(t *testing.T) {
	r := rand.New(rand.NewPCG(6, 1))
	c := New()
	for _, h := range []backend.Heads{{H: 2, KV: 1, D: 4}, {H: 6, KV: 3, D: 16}, {H: 8, KV: 8, D: 8}} {
		kvd := h.KV * h.D
		// inference: segments over caches, one continuing 7 cached positions
		N := 1 + 5 + 3
		q := up(randSlice(r, N*h.H*h.D))
		segs := []backend.Seg{
			{Row: 0, T: 1, Start: 30, K: up(randSlice(r, 31*kvd)), V: up(randSlice(r, 31*kvd))},
			{Row: 1, T: 5, K: up(randSlice(r, 5*kvd)), V: up(randSlice(r, 5*kvd))},
			{Row: 6, T: 3, Start: 7, K: up(randSlice(r, 12*kvd)), V: up(randSlice(r, 12*kvd))},
		}
		both(t, "attention", c, 1e-5, []backend.Buf{up(make([]float32, N*h.H*h.D)), up(make([]float32, N*h.H))}, func(be backend.Trainer, o []backend.Buf) {
			be.Attention(o[0], o[1], q, segs, h)
		})
		// training: a packed batch of three sequences
		N = 4 + 1 + 6
		q = up(randSlice(r, N*h.H*h.D))
		k, v := up(randSlice(r, N*kvd)), up(randSlice(r, N*kvd))
		segs = nil
		for _, s := range [][2]int{{0, 4}, {4, 1}, {5, 6}} {
			segs = append(segs, backend.Seg{Row: s[0], T: s[1], K: k.Rows(s[0], s[0]+s[1], kvd), V: v.Rows(s[0], s[0]+s[1], kvd)})
		}
		out, lse := up(make([]float32, N*h.H*h.D)), up(make([]float32, N*h.H))
		c.Attention(out, lse, q, segs, h)
		dout := up(randSlice(r, N*h.H*h.D))
		both(t, "attention backward", c, 1e-4, []backend.Buf{up(randSlice(r, N*h.H*h.D)), up(randSlice(r, N*kvd)), up(randSlice(r, N*kvd))}, func(be backend.Trainer, o []backend.Buf) {
			be.AttentionBackward(o[0], o[1], o[2], dout, q, out, lse, segs, h)
		})
	}
}

func TestLogSoftmax(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 1))
	c := New()
	rows, V, K := 9, 300, 3
	lg := randSlice(r, rows*V)
	for i := range lg {
		lg[i] *= 4
	}
	logits := up(lg)
	idv := make([]int32, rows*K)
	for i := range idv {
		idv[i] = int32(r.IntN(V))
	}
	id := ids(idv...)
	outs := []backend.Buf{up(make([]float32, rows*K)), up(make([]float32, rows)), up(make([]float32, rows))}
	both(t, "logsoftmax", c, 1e-5, outs, func(be backend.Trainer, o []backend.Buf) {
		be.LogSoftmax(o[0], o[1], o[2], logits, id, rows, V, K)
	})
	lp, ent, lse := up(make([]float32, rows*K)), up(make([]float32, rows)), up(make([]float32, rows))
	c.LogSoftmax(lp, ent, lse, logits, id, rows, V, K)
	dlp, dent := up(randSlice(r, rows*K)), up(randSlice(r, rows))
	both(t, "logsoftmax backward", c, 1e-5, []backend.Buf{up(make([]float32, rows*V))}, func(be backend.Trainer, o []backend.Buf) {
		be.LogSoftmaxBackward(o[0], logits, lse, ent, id, dlp, dent, rows, V, K)
	})
	both(t, "logsoftmax backward, no entropy, in place", c, 1e-5, []backend.Buf{clone(logits)}, func(be backend.Trainer, o []backend.Buf) {
		be.LogSoftmaxBackward(o[0], o[0], lse, backend.Buf{}, id, dlp, backend.Buf{}, rows, V, K)
	})
	tk := 20
	tid, ntid := memory{}.AllocIDs(rows*tk), memory{}.AllocIDs(rows*tk)
	both(t, "topk", c, 1e-5, []backend.Buf{up(make([]float32, rows*tk))}, func(be backend.Trainer, o []backend.Buf) {
		dst := tid
		if _, ok := be.(Naive); ok {
			dst = ntid
		}
		be.TopK(dst, o[0], logits, lse, rows, V, tk)
	})
	for i, v := range i32(tid) {
		if v != i32(ntid)[i] {
			t.Fatalf("topk id [%d] = %d, want %d", i, v, i32(ntid)[i])
		}
	}
}

func TestAdamW(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 1))
	c := New()
	n := 100_000
	g := up(randSlice(r, n))
	s := backend.AdamW{LR: 1e-3, Beta1: 0.9, Beta2: 0.95, Eps: 1e-8, WeightDecay: 0.1, GradScale: 0.5, Step: 3}
	v := randSlice(r, n)
	for i := range v {
		v[i] *= v[i]
	}
	both(t, "adamw", c, 1e-5, []backend.Buf{up(randSlice(r, n)), up(randSlice(r, n)), up(v)}, func(be backend.Trainer, o []backend.Buf) {
		be.AdamW(o[0], g, o[1], o[2], s)
	})
	if got, want := c.SumSquares(g), (Naive{}).SumSquares(g); math.Abs(got-want) > 1e-9*want {
		t.Fatalf("sum of squares %g, want %g", got, want)
	}
}

func TestExpf(t *testing.T) {
	for x := -90.0; x < 90; x += 0.0137 {
		got, want := float64(expf(float32(x))), math.Exp(float64(float32(x)))
		if want > math.MaxFloat32 {
			want = math.Inf(1)
		}
		if want < 0x1p-126 && got == 0 { // subnormal results flush to zero
			continue
		}
		if d := math.Abs(got - want); d > 3e-7*want && d > 1e-38 {
			t.Fatalf("expf(%g) = %g, want %g", x, got, want)
		}
	}
}

// The fast kernels give the same bits run after run (reductions in a fixed order).
func TestDeterministic(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 1))
	c := New()
	rows, dim := 301, 64
	x, w, dy := up(randSlice(r, rows*dim)), up(randSlice(r, dim)), up(randSlice(r, rows*dim))
	rstd := up(make([]float32, rows))
	c.RMSNorm(up(make([]float32, rows*dim)), rstd, x, w, rows, dim, 1e-6)
	var first []float32
	for range 5 {
		dw := up(make([]float32, dim))
		c.RMSNormBackward(backend.Buf{}, dw, dy, x, w, rstd, rows, dim)
		if first == nil {
			first = f32(dw)
			continue
		}
		for i, v := range f32(dw) {
			if math.Float32bits(v) != math.Float32bits(first[i]) {
				t.Fatalf("run differs at %d: %g vs %g", i, v, first[i])
			}
		}
	}
}

func mustPanic(t *testing.T, want string, fn func()) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		if r == nil {
			t.Fatalf("no panic, want one saying %q", want)
		}
		if s, _ := r.(string); !strings.Contains(s, want) {
			t.Fatalf("panic %v, want one saying %q", r, want)
		}
	}()
	fn()
}

// Misuse fails loudly.
func TestMisuse(t *testing.T) {
	c := New()
	a := c.Alloc(12)
	mustPanic(t, "does not fit", func() { c.Gemm(c.Alloc(6).Mat(2, 3), a.Mat(3, 4), false, a.Mat(3, 4), true, 1, 0) })
	mustPanic(t, "want 6 float32", func() { c.SwiGLU(c.Alloc(5), a, 2, 3) })
	mustPanic(t, "outside", func() { a.Slice(10, 3) })
	mustPanic(t, "int32 buffer", func() { c.Read(make([]float32, 4), c.AllocIDs(4)) })
	h := backend.Heads{H: 1, KV: 1, D: 2}
	kv := c.Alloc(4)
	mustPanic(t, "whole sequences", func() {
		c.AttentionBackward(c.Alloc(2), c.Alloc(2), c.Alloc(2), c.Alloc(2), c.Alloc(2), c.Alloc(2), c.Alloc(1),
			[]backend.Seg{{Row: 0, T: 1, Start: 1, K: kv, V: kv}}, h)
	})
	c.Free(a)
	mustPanic(t, "after Free", func() { c.Zero(a) })
	mustPanic(t, "Free of a view", func() { c.Free(kv.Slice(0, 2)) })
}

func BenchmarkGemm(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	for name, c := range fastBackends() {
		for _, sz := range [][3]int{{1, 1536, 512}, {8, 1536, 512}, {128, 1536, 512}, {512, 512, 512}} {
			M, N, K := sz[0], sz[1], sz[2]
			x, w, out := up(randSlice(r, M*K)), up(randSlice(r, N*K)), up(make([]float32, M*N))
			b.Run(name+"/"+itoa(M)+"x"+itoa(N)+"x"+itoa(K), func(b *testing.B) {
				for b.Loop() {
					c.Gemm(out.Mat(M, N), x.Mat(M, K), false, w.Mat(N, K), true, 1, 0)
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

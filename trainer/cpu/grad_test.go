package cpu

import (
	"math"
	"math/rand/v2"
	"testing"
)

// Every naive backward is checked against central finite differences of
// its naive forward, all in float64: L = Σ R⊙out for a random R, so the
// backward's input is dOut = R.

func rand64(r *rand.Rand, n int) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = r.NormFloat64()
	}
	return s
}

func dotR(a, b []float64) float64 {
	var s float64
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

// fdCheck compares grad[i] with (L(x+h) − L(x−h))/2h for every element of x.
func fdCheck(t *testing.T, name string, x []float64, loss func() float64, grad []float64) {
	t.Helper()
	const h = 1e-5
	for i := range x {
		v := x[i]
		x[i] = v + h
		up := loss()
		x[i] = v - h
		down := loss()
		x[i] = v
		fd := (up - down) / (2 * h)
		if d := math.Abs(fd - grad[i]); d > 1e-6*(1+math.Abs(fd)) {
			t.Fatalf("%s: ∂L/∂x[%d]: backward %.10g, finite differences %.10g", name, i, grad[i], fd)
		}
	}
}

func TestGradGemm(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	M, N, K := 3, 5, 4
	x, w := rand64(r, M*K), rand64(r, N*K)
	R := rand64(r, M*N)
	loss := func() float64 {
		out := make([]float64, M*N)
		gemmNaive(out, N, x, K, false, w, K, true, M, N, K, 1, 0) // out = x·wᵀ
		return dotR(out, R)
	}
	dx, dw := make([]float64, M*K), make([]float64, N*K)
	gemmNaive(dx, K, R, N, false, w, K, false, M, K, N, 1, 1) // dx += dy·w
	gemmNaive(dw, K, R, N, true, x, K, false, N, K, M, 1, 1)  // dw += dyᵀ·x
	fdCheck(t, "gemm dx", x, loss, dx)
	fdCheck(t, "gemm dw", w, loss, dw)
}

func TestGradRMSNorm(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 2))
	rows, dim, eps := 3, 7, 1e-6
	x, w, R := rand64(r, rows*dim), rand64(r, dim), rand64(r, rows*dim)
	loss := func() float64 {
		out := make([]float64, rows*dim)
		rmsNormNaive(out, nil, x, w, rows, dim, eps)
		return dotR(out, R)
	}
	out, rstd := make([]float64, rows*dim), make([]float64, rows)
	rmsNormNaive(out, rstd, x, w, rows, dim, eps)
	dx, dw := make([]float64, rows*dim), make([]float64, dim)
	rmsNormBackwardNaive(dx, dw, R, x, w, rstd, rows, dim)
	fdCheck(t, "rmsnorm dx", x, loss, dx)
	fdCheck(t, "rmsnorm dw", w, loss, dw)
}

func TestGradSwiGLU(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 2))
	rows, F := 2, 5
	gu, R := rand64(r, rows*2*F), rand64(r, rows*F)
	loss := func() float64 {
		out := make([]float64, rows*F)
		swigluNaive(out, gu, rows, F)
		return dotR(out, R)
	}
	dgu := make([]float64, rows*2*F)
	swigluBackwardNaive(dgu, R, gu, rows, F)
	fdCheck(t, "swiglu dgu", gu, loss, dgu)
}

func TestGradEmbed(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 2))
	V, C := 5, 3
	ids := []int32{4, 0, 4, 2}
	table, R := rand64(r, V*C), rand64(r, len(ids)*C)
	loss := func() float64 {
		out := make([]float64, len(ids)*C)
		embedNaive(out, table, ids, C)
		return dotR(out, R)
	}
	dt := make([]float64, V*C)
	embedBackwardNaive(dt, R, ids, C)
	fdCheck(t, "embed dtable", table, loss, dt)
}

// ropeTables64 fills cos, sin [P, D/2] with the angles p·θ^(−2i/D).
func ropeTables64(P, D int, theta float64) (cos, sin []float64) {
	half := D / 2
	cos, sin = make([]float64, P*half), make([]float64, P*half)
	for p := range P {
		for i := range half {
			a := float64(p) * math.Pow(theta, -float64(2*i)/float64(D))
			cos[p*half+i], sin[p*half+i] = math.Cos(a), math.Sin(a)
		}
	}
	return cos, sin
}

func TestGradQKNormRoPE(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 2))
	H, KV, D, eps := 4, 2, 6, 1e-6
	W, kvd := (H+2*KV)*D, KV*D
	lens := []int{3, 2}
	N := 5
	qkv, qn, kn := rand64(r, N*W), rand64(r, D), rand64(r, D)
	cos, sin := ropeTables64(8, D, 100)
	Rq, Rk, Rv := rand64(r, N*H*D), rand64(r, N*kvd), rand64(r, N*kvd)
	starts := []int{0, 2} // the second segment continues a cached prefix
	run := func() (q, k, v []float64) {
		q, k, v = make([]float64, N*H*D), make([]float64, N*kvd), make([]float64, N*kvd)
		var segs []segN[float64]
		row := 0
		for i, T := range lens {
			n := (starts[i] + T) * kvd
			segs = append(segs, segN[float64]{Row: row, T: T, Start: starts[i], K: make([]float64, n), V: make([]float64, n)})
			row += T
		}
		qkNormRopeNaive(q, segs, qkv, qn, kn, cos, sin, H, KV, D, eps)
		for _, sg := range segs { // row-aligned k, v
			copy(k[sg.Row*kvd:(sg.Row+sg.T)*kvd], sg.K[sg.Start*kvd:])
			copy(v[sg.Row*kvd:(sg.Row+sg.T)*kvd], sg.V[sg.Start*kvd:])
		}
		return
	}
	loss := func() float64 {
		q, k, v := run()
		return dotR(q, Rq) + dotR(k, Rk) + dotR(v, Rv)
	}
	dqkv, dqn, dkn := make([]float64, N*W), make([]float64, D), make([]float64, D)
	segs := []segN[float64]{{Row: 0, T: 3}, {Row: 3, T: 2, Start: 2}}
	qkNormRopeBackwardNaive(dqkv, dqn, dkn, Rq, Rk, Rv, segs, qkv, qn, kn, cos, sin, H, KV, D, eps)
	fdCheck(t, "qknorm dqkv", qkv, loss, dqkv)
	fdCheck(t, "qknorm dqNorm", qn, loss, dqn)
	fdCheck(t, "qknorm dkNorm", kn, loss, dkn)
}

func TestGradAttention(t *testing.T) {
	r := rand.New(rand.NewPCG(6, 2))
	H, KV, D := 4, 2, 3
	kvd := KV * D
	N := 6
	q, k, v := rand64(r, N*H*D), rand64(r, N*kvd), rand64(r, N*kvd)
	R := rand64(r, N*H*D)
	segs := func() []segN[float64] {
		return []segN[float64]{{Row: 0, T: 4, K: k[:4*kvd], V: v[:4*kvd]}, {Row: 4, T: 2, K: k[4*kvd:], V: v[4*kvd:]}}
	}
	loss := func() float64 {
		out := make([]float64, N*H*D)
		attentionNaive(out, nil, q, segs(), H, KV, D)
		return dotR(out, R)
	}
	dq, dk, dv := make([]float64, N*H*D), make([]float64, N*kvd), make([]float64, N*kvd)
	attentionBackwardNaive(dq, dk, dv, R, q, segs(), H, KV, D)
	fdCheck(t, "attention dq", q, loss, dq)
	fdCheck(t, "attention dk", k, loss, dk)
	fdCheck(t, "attention dv", v, loss, dv)
}

func TestGradLogSoftmax(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 2))
	rows, V, K := 3, 7, 2
	logits := rand64(r, rows*V)
	ids := []int32{1, 6, 0, 0, 5, 2}
	Rlp, Rent := rand64(r, rows*K), rand64(r, rows)
	loss := func() float64 {
		lp, ent, lse := make([]float64, rows*K), make([]float64, rows), make([]float64, rows)
		logSoftmaxNaive(lp, ent, lse, logits, ids, rows, V, K)
		return dotR(lp, Rlp) + dotR(ent, Rent)
	}
	dl := make([]float64, rows*V)
	logSoftmaxBackwardNaive(dl, logits, ids, Rlp, Rent, rows, V, K)
	fdCheck(t, "logsoftmax dlogits", logits, loss, dl)
}

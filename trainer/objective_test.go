package trainer

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/nextstate-rl/nextstate/trainer/cpu"
)

// Each term's derivatives agree with central differences of its loss in
// the log-probabilities and the entropy, in every PPO region.
func TestTermDerivatives(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	const S, K = 40, 4
	lps := make([]float32, S*(K+1))
	for i := range lps {
		lps[i] = float32(-1.5 - 3*r.Float64()) // log-probs: each row's top-K mass below 1
	}
	adv, old, roll, ref, teacher := make([]float32, S), make([]float32, S), make([]float32, S), make([]float32, S), make([]float32, S*K)
	for i := range S {
		adv[i] = float32(r.NormFloat64())
		old[i] = lps[i*(K+1)] + float32(0.6*r.NormFloat64()) // ratios on both sides of the clip range
		roll[i] = old[i] + float32(0.3*r.NormFloat64())
		ref[i] = lps[i*(K+1)] + float32(r.NormFloat64())
	}
	for i := range teacher {
		teacher[i] = float32(-1.5 - 3*r.Float64())
	}
	terms := map[string]TokenLoss{
		"ppo":      &PolicyGradient{Advantages: adv, Old: old},
		"ppo-tis":  &PolicyGradient{Advantages: adv, Old: old, Rollout: roll, TISCap: 1.5, DualClip: 3},
		"kl-k1":    &KL{Ref: ref, Estimator: K1},
		"kl-k2":    &KL{Ref: ref, Estimator: K2},
		"kl-k3":    &KL{Ref: ref, Estimator: K3},
		"entropy":  EntropyBonus{},
		"sft":      SFT{},
		"opd-topk": &TopKReverseKL{Teacher: teacher, K: K},
	}
	for name, term := range terms {
		for i := range S {
			lp := lps[i*(K+1) : (i+1)*(K+1)]
			if _, ok := term.(*TopKReverseKL); !ok {
				lp = lp[:1]
			}
			h := float32(1 + r.Float64())
			dlp := make([]float64, len(lp))
			_, dh := term.Loss(i, lp, h, dlp)
			at := func(lp []float32, h float32) float64 {
				l, _ := term.Loss(i, lp, h, make([]float64, len(lp)))
				return l
			}
			const eps = 1e-3
			for k := range lp {
				p, m := append([]float32(nil), lp...), append([]float32(nil), lp...)
				p[k] += eps
				m[k] -= eps
				fd := (at(p, h) - at(m, h)) / (2 * eps)
				if math.Abs(fd-dlp[k]) > 2e-3*max(1, math.Abs(fd)) {
					t.Fatalf("%s row %d target %d: ∂ℓ/∂lp %g, finite difference %g", name, i, k, dlp[k], fd)
				}
			}
			if fd := (at(lp, h+eps) - at(lp, h-eps)) / (2 * eps); math.Abs(fd-dh) > 1e-3 {
				t.Fatalf("%s row %d: ∂ℓ/∂h %g, finite difference %g", name, i, dh, fd)
			}
		}
	}
}

// On-policy, the first micro-batch has ratio exactly 1 and PPO-KL exactly
// 0 when the old log-probs are the trainer's own (Score), its gradient is
// the plain policy gradient −A·∇lp, and a token outside the loss mask
// changes no gradient when its id changes.
func TestPolicyGradientOnPolicy(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 9))
	c := tinyConfig(false)
	b := randBatch(r, c.VocabSize, 9, 6)
	b.Rows = []Row{{0, 2}, {0, 3}, {0, 4}, {1, 1}, {1, 2}}
	m := randomModel(t, c, cpu.New(), 3)
	tr := newTraining(t, m, TrainOptions{})
	sc, err := tr.Score(b, false, 0)
	if err != nil {
		t.Fatal(err)
	}
	adv := []float32{1, -0.5, 2, -1, 0.25}
	pg := &PolicyGradient{Advantages: adv, Old: sc.LogProbs, Rollout: sc.LogProbs, TISCap: 2}
	obj := &Objective{Terms: []Term{{Name: "pg", Weight: 1, Token: pg}}, Seqs: []int{0, 0, 0, 1, 1}}
	if _, err := tr.ForwardBackward(b, obj); err != nil {
		t.Fatal(err)
	}
	st := pg.Stats
	if st.RatioMin != 1 || st.RatioMax != 1 || st.KL() != 0 || st.Clipped != 0 || st.Gap() != 0 {
		t.Fatalf("on-policy: ratio [%g, %g], KL %g, clipped %d, gap %g; want exactly 1, 0, 0, 0", st.RatioMin, st.RatioMax, st.KL(), st.Clipped, st.Gap())
	}
	pgGrads := allGrads(t, tr)

	// The same gradient from CrossEntropy weighted by the advantages.
	tr2 := newTraining(t, randomModel(t, c, cpu.New(), 3), TrainOptions{})
	if _, err := tr2.ForwardBackward(b, CrossEntropy{Weights: adv}); err != nil {
		t.Fatal(err)
	}
	for name, g := range allGrads(t, tr2) {
		if d := relDiff(pgGrads[name], g); d > 1e-6 {
			t.Fatalf("%s: on-policy PPO gradient vs advantage-weighted cross-entropy: %.2e", name, d)
		}
	}

	// A token after the last scored row is masked out: changing it changes nothing.
	b2 := &Batch{Seqs: [][]int32{append([]int32(nil), b.Seqs[0]...), b.Seqs[1]}, Rows: b.Rows}
	b2.Seqs[0][7] = (b2.Seqs[0][7] + 1) % int32(c.VocabSize)
	tr3 := newTraining(t, randomModel(t, c, cpu.New(), 3), TrainOptions{})
	pg3 := &PolicyGradient{Advantages: adv, Old: sc.LogProbs}
	if _, err := tr3.ForwardBackward(b2, &Objective{Terms: []Term{{Name: "pg", Weight: 1, Token: pg3}}}); err != nil {
		t.Fatal(err)
	}
	for name, g := range allGrads(t, tr3) {
		for i := range g {
			if math.Float32bits(g[i]) != math.Float32bits(pgGrads[name][i]) {
				t.Fatalf("%s: a masked token's id changed the gradient at %d", name, i)
			}
		}
	}
}

// The aggregations weight rows as they say, and a term's weight scales it.
func TestObjectiveAggregation(t *testing.T) {
	lp := []float32{-1, -2, -3, -4}
	chunk := func() *Chunk {
		return &Chunk{Rows: 4, Total: 4, K: 1, LogProbs: lp, DLogProbs: make([]float32, 4)}
	}
	for _, tc := range []struct {
		agg  Aggregation
		want float64
	}{
		{TokenMean, (1 + 2 + 3 + 4) / 4.0},
		{SeqMeanTokenMean, ((1+2+3)/3.0 + 4) / 2},
		{SeqSum, (1 + 2 + 3 + 4) / (2 * 10.0)},
	} {
		o := &Objective{Terms: []Term{{Name: "sft", Weight: 2, Agg: tc.agg, Token: SFT{}}}, Seqs: []int{0, 0, 0, 1}, SeqSumConstant: 10}
		c := chunk()
		if got := o.Grad(c); math.Abs(got-2*tc.want) > 1e-9 || math.Abs(o.Metrics["sft"]-tc.want) > 1e-9 {
			t.Errorf("aggregation %d: loss %g, metric %g; want %g, %g", tc.agg, got, o.Metrics["sft"], 2*tc.want, tc.want)
		}
	}
	got, dropped := OPDAdvantages([]float32{1, 1}, []float32{-1, -1}, []float32{-3, -3}, []bool{true, false}, 1, 1)
	if got[0] != 3 || got[1] != 1 || dropped != 1 {
		t.Fatalf("OPD advantages %v, dropped %d", got, dropped)
	}
}

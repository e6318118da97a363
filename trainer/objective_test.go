package trainer

import (
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/nextstate-rl/nextstate/trainer/cpu"
	"github.com/nextstate-rl/nextstate/trainer/safetensors"
	"github.com/nextstate-rl/nextstate/trainer/torchref"
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

// Every term's value and the whole model's gradient match the same
// objective written plainly in PyTorch (torchref/objective.py): PPO in its
// clip regions with dual clip, TIS and ratio masks; k1, k2, k3; entropy;
// SFT; top-K reverse KL; each aggregation.
func TestObjectiveMatchesTorch(t *testing.T) {
	if _, err := torchref.Python(); err != nil {
		t.Skip(err)
	}
	r := rand.New(rand.NewPCG(11, 4))
	c := tinyConfig(false)
	m := randomModel(t, c, cpu.New(), 6)
	dir := t.TempDir()
	if err := m.Save(dir, safetensors.F32, 0); err != nil {
		t.Fatal(err)
	}
	b := randBatch(r, c.VocabSize, 10, 7)
	b.Rows = []Row{{0, 1}, {0, 2}, {0, 3}, {0, 6}, {0, 8}, {1, 0}, {1, 2}, {1, 4}, {1, 5}}
	const K = 3
	S := len(b.Rows)
	b.K = K + 1
	seqOf := make([]int, S)
	rows := make([][2]int, S)
	targets := make([][]int32, S)
	for i, rw := range b.Rows {
		seqOf[i], rows[i] = rw.Seq, [2]int{rw.Seq, rw.Pos}
		targets[i] = []int32{b.Seqs[rw.Seq][rw.Pos+1]}
		for len(targets[i]) < K+1 { // the teacher's top K: distinct ids other than the sampled one
			id := int32(r.IntN(c.VocabSize))
			if !slices.Contains(targets[i], id) {
				targets[i] = append(targets[i], id)
			}
		}
		b.Targets = append(b.Targets, targets[i]...)
	}
	tr := newTraining(t, m, TrainOptions{})
	sc, err := tr.Score(&Batch{Seqs: b.Seqs, Rows: b.Rows}, false, 0)
	if err != nil {
		t.Fatal(err)
	}
	vec := func(f func(i int) float64) []float32 {
		v := make([]float32, S)
		for i := range v {
			v[i] = float32(f(i))
		}
		return v
	}
	adv := vec(func(int) float64 { return r.NormFloat64() })
	old := vec(func(i int) float64 { return float64(sc.LogProbs[i]) + 0.5*r.NormFloat64() })
	roll := vec(func(i int) float64 { return float64(old[i]) + 0.4*r.NormFloat64() })
	ref := vec(func(i int) float64 { return float64(sc.LogProbs[i]) + r.NormFloat64() })
	teacher := make([]float32, S*K)
	for i := range teacher {
		teacher[i] = float32(-2 - 2*r.Float64())
	}
	aggName := map[Aggregation]string{TokenMean: "token", SeqMeanTokenMean: "seq", SeqSum: "seqsum"}
	type spec struct {
		term Term
		js   map[string]any
	}
	specs := []spec{
		{Term{"ppo", 1, TokenMean, &PolicyGradient{Advantages: adv, Old: old}}, map[string]any{"kind": "ppo", "adv": adv, "old": old}},
		{Term{"ppo-tis", 0.5, SeqMeanTokenMean, &PolicyGradient{Advantages: adv, Old: old, Rollout: roll, TISCap: 1.3, DualClip: 2, MaskLow: 0.5, MaskHigh: 2}},
			map[string]any{"kind": "ppo", "adv": adv, "old": old, "rollout": roll, "tis_cap": 1.3, "dual_clip": 2, "mask_low": 0.5, "mask_high": 2}},
		{Term{"k1", 0.1, TokenMean, &KL{Ref: ref, Estimator: K1}}, map[string]any{"kind": "kl", "ref": ref, "estimator": 1}},
		{Term{"k2", 0.2, SeqSum, &KL{Ref: ref, Estimator: K2}}, map[string]any{"kind": "kl", "ref": ref, "estimator": 2}},
		{Term{"k3", 0.3, SeqMeanTokenMean, &KL{Ref: ref, Estimator: K3}}, map[string]any{"kind": "kl", "ref": ref, "estimator": 3}},
		{Term{"entropy", 0.01, TokenMean, EntropyBonus{}}, map[string]any{"kind": "entropy"}},
		{Term{"sft", 0.7, SeqSum, SFT{}}, map[string]any{"kind": "sft"}},
		{Term{"opd-topk", 1, TokenMean, &TopKReverseKL{Teacher: teacher, K: K}}, map[string]any{"kind": "topk", "teacher": teacher2D(teacher, K)}},
	}
	obj := &Objective{Seqs: seqOf, SeqSumConstant: 16}
	var jsTerms []map[string]any
	for _, s := range specs {
		obj.Terms = append(obj.Terms, s.term)
		s.js["name"], s.js["weight"], s.js["agg"] = s.term.Name, s.term.Weight, aggName[s.term.Agg]
		jsTerms = append(jsTerms, s.js)
	}
	out := filepath.Join(t.TempDir(), "out.safetensors")
	js, err := torchref.Run(context.Background(), "objective", dir, map[string]any{"seqs": b.Seqs, "rows": rows, "targets": targets,
		"seq_of_row": seqOf, "seqsum_constant": 16, "terms": jsTerms}, out)
	if err != nil {
		t.Fatal(err)
	}
	var want struct {
		Loss  float64            `json:"loss"`
		Terms map[string]float64 `json:"terms"`
	}
	if err := json.Unmarshal(js, &want); err != nil {
		t.Fatalf("%v: %s", err, js)
	}
	got, err := tr.ForwardBackward(b, obj)
	if err != nil {
		t.Fatal(err)
	}
	if d := math.Abs(got.Loss - want.Loss); d > torchLossTol*max(1, math.Abs(want.Loss)) {
		t.Errorf("loss %.7f, PyTorch %.7f", got.Loss, want.Loss)
	}
	for name, v := range want.Terms {
		if d := math.Abs(obj.Metrics[name] - v); d > 1e-5*max(1, math.Abs(v)) {
			t.Errorf("term %s: %.7f, PyTorch %.7f", name, obj.Metrics[name], v)
		}
	}
	ref2 := readGrads(t, out)
	var worst float64
	for _, ti := range m.Tensors() {
		g, _ := tr.Grad(ti.Name)
		d := relDiff(g, ref2["grad."+ti.Name])
		worst = max(worst, d)
		if d > torchGradTol {
			t.Errorf("gradient of %s: relative difference %.2e", ti.Name, d)
		}
	}
	t.Logf("loss %.6f; worst gradient relative difference %.2e", got.Loss, worst)
}

func teacher2D(v []float32, K int) [][]float32 {
	var out [][]float32
	for i := 0; i < len(v); i += K {
		out = append(out, v[i:i+K])
	}
	return out
}

// readGrads reads every tensor of a safetensors file PyTorch wrote.
func readGrads(t *testing.T, path string) map[string][]float32 {
	t.Helper()
	f, err := safetensors.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][]float32{}
	for _, n := range f.Names() {
		info, _ := f.Info(n)
		v := make([]float32, info.Elems())
		if err := f.ReadFloat32(n, v); err != nil {
			t.Fatal(err)
		}
		out[n] = v
	}
	return out
}

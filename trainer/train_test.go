package trainer

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/nextstate-rl/nextstate/trainer/cpu"
)

// randBatch is a packed batch of sequences of the given lengths.
func randBatch(r *rand.Rand, V int, lens ...int) *Batch {
	seqs := make([][]int32, len(lens))
	for i, n := range lens {
		seqs[i] = randTokens(r, n, V)
	}
	return &Batch{Seqs: seqs}
}

// allGrads returns every parameter's gradient, in the layout's order.
func allGrads(t *testing.T, tr *Training) map[string][]float32 {
	t.Helper()
	out := map[string][]float32{}
	for _, ti := range tr.Model().Tensors() {
		g, err := tr.Grad(ti.Name)
		if err != nil {
			t.Fatal(err)
		}
		if g != nil {
			out[ti.Name] = g
		}
	}
	return out
}

func relDiff(a, b []float32) float64 {
	var num, den float64
	for i := range a {
		d := float64(a[i]) - float64(b[i])
		num += d * d
		den += float64(b[i]) * float64(b[i])
	}
	return math.Sqrt(num / max(den, 1e-30))
}

func newTraining(t *testing.T, m *Model, opt TrainOptions) *Training {
	t.Helper()
	tr, err := NewTraining(m, opt)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// The fast backend's gradients equal the naive backend's, with and without
// recomputation (which must give the very same bits as keeping activations).
func TestGradientsFastNaiveRecompute(t *testing.T) {
	for _, tied := range []bool{false, true} {
		r := rand.New(rand.NewPCG(1, 3))
		c := tinyConfig(tied)
		b := randBatch(r, c.VocabSize, 7, 1, 12)
		b.Rows = []Row{{0, 0}, {0, 3}, {0, 5}, {2, 0}, {2, 10}} // a loss mask
		grads := map[string]map[string][]float32{}
		losses := map[string]float64{}
		for name, setup := range map[string]struct {
			be        Backend
			recompute bool
			chunk     int
		}{"fast": {cpu.New(), false, 0}, "fast-recompute": {cpu.New(), true, 0}, "naive": {cpu.Naive{}, false, 3}} {
			m := randomModel(t, c, setup.be, 4)
			tr := newTraining(t, m, TrainOptions{Recompute: setup.recompute, LogitsChunk: setup.chunk})
			out, err := tr.ForwardBackward(b, CrossEntropy{})
			if err != nil {
				t.Fatal(err)
			}
			grads[name], losses[name] = allGrads(t, tr), out.Loss
		}
		if len(grads["fast"]) != len(tinyLayoutNames(c)) {
			t.Fatalf("%d gradients, want %d", len(grads["fast"]), len(tinyLayoutNames(c)))
		}
		for name, g := range grads["fast"] {
			if d := relDiff(g, grads["naive"][name]); d > 1e-4 {
				t.Errorf("tied %v: %s: fast vs naive gradient: relative difference %.2e", tied, name, d)
			}
			for i, v := range grads["fast-recompute"][name] {
				if math.Float32bits(v) != math.Float32bits(g[i]) {
					t.Fatalf("tied %v: %s: recomputed gradient differs at %d: %g vs %g", tied, name, i, v, g[i])
				}
			}
		}
		if math.Abs(losses["fast"]-losses["naive"]) > 1e-5 || losses["fast"] != losses["fast-recompute"] {
			t.Errorf("losses %v", losses)
		}
	}
}

func tinyLayoutNames(c Config) []string {
	l := newLayout(c)
	var names []string
	for _, t := range l.tensors {
		names = append(names, t.name)
	}
	return names
}

// Central differences in float32 on the naive backend agree with the
// backward for a sample of parameters (a coarse check; PyTorch's autograd is
// the tight one).
func TestGradientsFiniteDifferences(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 3))
	c := tinyConfig(false)
	c.NumHiddenLayers = 1
	m := randomModel(t, c, cpu.Naive{}, 5)
	b := randBatch(r, c.VocabSize, 5, 4)
	tr := newTraining(t, m, TrainOptions{})
	if _, err := tr.ForwardBackward(b, CrossEntropy{}); err != nil {
		t.Fatal(err)
	}
	grads := allGrads(t, tr)
	loss := func() float64 {
		s, err := tr.Score(b, false, 0)
		if err != nil {
			t.Fatal(err)
		}
		var l float64
		for _, v := range s.LogProbs {
			l -= float64(v)
		}
		return l / float64(len(s.LogProbs))
	}
	for _, name := range tinyLayoutNames(c) {
		w, _ := m.ReadTensor(name)
		g := grads[name]
		for k := range 3 {
			i := r.IntN(len(w))
			v := w[i]
			h := float32(1e-2) * max(1, float32(math.Abs(float64(v))))
			w[i] = v + h
			m.WriteTensor(name, w)
			up := loss()
			w[i] = v - h
			m.WriteTensor(name, w)
			down := loss()
			w[i] = v
			m.WriteTensor(name, w)
			fd := (up - down) / (2 * float64(h))
			if d := math.Abs(fd - float64(g[i])); d > 2e-2*math.Abs(fd)+2e-3 {
				t.Errorf("%s[%d] (sample %d): backward %g, finite differences %g", name, i, k, g[i], fd)
			}
		}
	}
}

// Misuse fails loudly.
func TestTrainingMisuse(t *testing.T) {
	m := randomModel(t, tinyConfig(true), cpu.New(), 1)
	tr := newTraining(t, m, TrainOptions{})
	if _, err := tr.Step(AdamWOptions{LR: 1e-3}); !errors.Is(err, ErrNoGradients) {
		t.Fatalf("Step before ForwardBackward: %v", err)
	}
	for _, b := range []*Batch{
		{},
		{Seqs: [][]int32{{1, 2}, {}}},
		{Seqs: [][]int32{{1, 300}}},
		{Seqs: [][]int32{{1, 2}}, Rows: []Row{{0, 1}}},
		{Seqs: [][]int32{{1, 2}}, Rows: []Row{{1, 0}}},
		{Seqs: [][]int32{{1, 2}}, K: 2},
		{Seqs: [][]int32{{1, 2}}, Rows: []Row{{0, 0}}, K: 2, Targets: []int32{1}},
	} {
		if _, err := tr.ForwardBackward(b, CrossEntropy{}); err == nil {
			t.Errorf("batch %+v accepted", b)
		}
	}
	if _, err := tr.ForwardBackward(&Batch{Seqs: [][]int32{{1, 2}}}, nil); err == nil {
		t.Error("ForwardBackward without a loss accepted")
	}
	if _, err := NewTraining(m, TrainOptions{Trainable: func(string) bool { return false }}); err == nil {
		t.Error("a training with nothing trainable accepted")
	}
}

// Same seed, data and thread count: bit-identical weights after several steps.
func TestTrainingDeterministic(t *testing.T) {
	run := func() []float32 {
		r := rand.New(rand.NewPCG(3, 3))
		m := randomModel(t, tinyConfig(false), cpu.New(), 6)
		tr := newTraining(t, m, TrainOptions{})
		for range 3 {
			b := randBatch(r, m.Config.VocabSize, 11, 6, 2)
			if _, err := tr.ForwardBackward(b, CrossEntropy{}); err != nil {
				t.Fatal(err)
			}
			if _, err := tr.Step(AdamWOptions{LR: 1e-2, WeightDecay: 0.1, MaxGradNorm: 1}); err != nil {
				t.Fatal(err)
			}
		}
		return m.ReadParams()
	}
	a, b := run(), run()
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			t.Fatalf("parameter %d differs between two identical runs: %g vs %g", i, a[i], b[i])
		}
	}
}

// Two micro-batches accumulated with a shared normaliser give the gradient
// of the whole batch.
func TestGradientAccumulation(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 3))
	c := tinyConfig(true)
	b := randBatch(r, c.VocabSize, 8, 5, 9)
	total := float64(7 + 4 + 8)
	whole := newTraining(t, randomModel(t, c, cpu.New(), 2), TrainOptions{})
	if _, err := whole.ForwardBackward(b, CrossEntropy{}); err != nil {
		t.Fatal(err)
	}
	acc := newTraining(t, randomModel(t, c, cpu.New(), 2), TrainOptions{})
	var loss float64
	for _, part := range [][][]int32{b.Seqs[:1], b.Seqs[1:]} {
		out, err := acc.ForwardBackward(&Batch{Seqs: part}, CrossEntropy{Norm: total})
		if err != nil {
			t.Fatal(err)
		}
		loss += out.Loss
	}
	gw, ga := allGrads(t, whole), allGrads(t, acc)
	for name, g := range gw {
		if d := relDiff(ga[name], g); d > 1e-5 {
			t.Errorf("%s: accumulated gradient differs by %.2e", name, d)
		}
	}
}

// Frozen parameters get no gradient and do not move.
func TestFrozenParameters(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 3))
	m := randomModel(t, tinyConfig(false), cpu.New(), 3)
	frozen := func(name string) bool {
		return name == "model.embed_tokens.weight" || strings.HasSuffix(name, "norm.weight") || strings.Contains(name, "layers.0.")
	}
	before := map[string][]float32{}
	for _, ti := range m.Tensors() {
		before[ti.Name], _ = m.ReadTensor(ti.Name)
	}
	tr := newTraining(t, m, TrainOptions{Trainable: func(n string) bool { return !frozen(n) }})
	if _, err := tr.ForwardBackward(randBatch(r, m.Config.VocabSize, 6, 6), CrossEntropy{}); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Step(AdamWOptions{LR: 1e-2}); err != nil {
		t.Fatal(err)
	}
	for _, ti := range m.Tensors() {
		g, _ := tr.Grad(ti.Name)
		w, _ := m.ReadTensor(ti.Name)
		moved := maxAbsDiff(w, before[ti.Name]) > 0
		if frozen(ti.Name) && (g != nil || moved) {
			t.Errorf("%s is frozen but has a gradient (%v) or moved (%v)", ti.Name, g != nil, moved)
		}
		if !frozen(ti.Name) && !moved {
			t.Errorf("%s is trainable but did not move", ti.Name)
		}
	}
}

func TestSchedules(t *testing.T) {
	for _, tc := range []struct {
		s    Schedule
		want []float64
	}{
		{Constant{}, []float64{1, 1, 1}},
		{Warmup{Steps: 2}, []float64{0, 0.5, 1, 1}},
		{Warmup{Steps: 2, Then: Linear{Steps: 4}}, []float64{0, 0.5, 1, 0.75, 0.5, 0.25, 0, 0}},
		{Cosine{Steps: 4, Final: 0.1}, []float64{1, 0.1 + 0.9*0.5*(1+math.Cos(math.Pi/4)), 0.55, 0.1 + 0.9*0.5*(1+math.Cos(3*math.Pi/4)), 0.1}},
	} {
		for step, w := range tc.want {
			if got := tc.s.Factor(step); math.Abs(got-w) > 1e-12 {
				t.Errorf("%T%+v step %d: %g, want %g", tc.s, tc.s, step, got, w)
			}
		}
	}
}

// Score's log-probabilities, entropies and top-K are those of the
// inference logits.
func TestScore(t *testing.T) {
	r := rand.New(rand.NewPCG(6, 3))
	m := randomModel(t, tinyConfig(false), cpu.New(), 8)
	tr := newTraining(t, m, TrainOptions{LogitsChunk: 3})
	b := randBatch(r, m.Config.VocabSize, 7, 4)
	s, err := tr.Score(b, true, 5)
	if err != nil {
		t.Fatal(err)
	}
	V, row := m.Config.VocabSize, 0
	for _, seq := range b.Seqs {
		lg := fullLogits(t, m, seq)
		for p := 0; p+1 < len(seq); p++ {
			l := lg[p*V : (p+1)*V]
			mx := l[0]
			for _, v := range l {
				mx = max(mx, v)
			}
			var sum, sx float64
			for _, v := range l {
				e := math.Exp(float64(v - mx))
				sum += e
				sx += e * float64(v-mx)
			}
			lse := float64(mx) + math.Log(sum)
			if d := math.Abs(float64(s.LogProbs[row]) - (float64(l[seq[p+1]]) - lse)); d > 1e-4 {
				t.Fatalf("row %d: log-prob %g, want %g", row, s.LogProbs[row], float64(l[seq[p+1]])-lse)
			}
			if d := math.Abs(float64(s.Entropy[row]) - (math.Log(sum) - sx/sum)); d > 1e-4 {
				t.Fatalf("row %d: entropy %g, want %g", row, s.Entropy[row], math.Log(sum)-sx/sum)
			}
			top := Sample(l, SampleParams{TopLogprobs: 5}, nil).Top
			for k, tp := range top {
				if s.TopIDs[row*5+k] != tp.ID || math.Abs(float64(s.TopLogProbs[row*5+k]-tp.Logprob)) > 1e-4 {
					t.Fatalf("row %d top %d: %d %g, want %d %g", row, k, s.TopIDs[row*5+k], s.TopLogProbs[row*5+k], tp.ID, tp.Logprob)
				}
			}
			row++
		}
	}
}

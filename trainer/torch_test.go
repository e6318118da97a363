package trainer

import (
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/nextstate-rl/nextstate/trainer/cpu"
	"github.com/nextstate-rl/nextstate/trainer/safetensors"
	"github.com/nextstate-rl/nextstate/trainer/torchref"
)

// Tolerances of the PyTorch parity tests (f32 on both sides; the sums run in
// different orders): the loss within 1e-5, each gradient tensor within 1e-4
// in relative L2 norm, and each tensor's change over the AdamW steps within
// 1e-3 of PyTorch's in relative L2 norm (Adam divides by √v, so an element
// whose gradient is ~1e-8, under the f32 noise of its sum, moves by ±lr on
// either side: the change is the stable thing to compare, not each element).
const (
	torchLossTol   = 1e-5
	torchGradTol   = 1e-4
	torchUpdateTol = 1e-3
)

// updateDiff is ‖got − want‖ / ‖want − init‖.
func updateDiff(got, want, init []float32) float64 {
	var num, den float64
	for i := range got {
		d, u := float64(got[i])-float64(want[i]), float64(want[i])-float64(init[i])
		num += d * d
		den += u * u
	}
	return math.Sqrt(num / max(den, 1e-30))
}

// lrList is the schedule of given learning rates (relative to the first).
type lrList []float64

func (l lrList) Factor(step int) float64 { return l[step] / l[0] }

type torchTrain struct {
	Losses  []float64
	tensors map[string][]float32
}

func runTorchTrain(t *testing.T, dir string, req map[string]any) torchTrain {
	t.Helper()
	out := filepath.Join(t.TempDir(), "out.safetensors")
	js, err := torchref.Run(context.Background(), "train", dir, req, out)
	if err != nil {
		t.Fatal(err)
	}
	var res torchTrain
	if err := json.Unmarshal(js, &res); err != nil {
		t.Fatalf("%v: %s", err, js)
	}
	res.tensors = readGrads(t, out)
	return res
}

func maxAbs(a, b []float32) float64 {
	var d float64
	for i := range a {
		d = max(d, math.Abs(float64(a[i])-float64(b[i])))
	}
	return d
}

// The loss and every parameter's gradient match PyTorch autograd on random
// Qwen3 folders (tied and untied heads, GQA with KV < H), and so do the
// weights after three steps of torch.optim.AdamW with weight decay,
// clipping and a changing learning rate.
func TestTrainMatchesTorch(t *testing.T) {
	if _, err := torchref.Python(); err != nil {
		t.Skip(err)
	}
	for _, tied := range []bool{false, true} {
		name := map[bool]string{false: "untied", true: "tied"}[tied]
		t.Run(name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(7, 7))
			c := tinyConfig(tied)
			m := randomModel(t, c, cpu.New(), 9)
			dir := t.TempDir()
			if err := m.Save(dir, safetensors.F32, 0); err != nil {
				t.Fatal(err)
			}
			b := randBatch(r, c.VocabSize, 9, 3, 14)
			b.Rows = []Row{{0, 1}, {0, 2}, {0, 7}, {1, 0}, {1, 1}, {2, 0}, {2, 4}, {2, 5}, {2, 6}, {2, 12}}
			rows := make([][2]int, len(b.Rows))
			for i, rw := range b.Rows {
				rows[i] = [2]int{rw.Seq, rw.Pos}
			}
			lrs := lrList{1e-2, 5e-3, 2e-3}
			opt := AdamWOptions{LR: lrs[0], Beta1: 0.9, Beta2: 0.95, Eps: 1e-6, WeightDecay: 0.1, MaxGradNorm: 1, Schedule: lrs}
			ref := runTorchTrain(t, dir, map[string]any{"seqs": b.Seqs, "rows": rows, "lrs": lrs, "betas": []float64{opt.Beta1, opt.Beta2},
				"eps": opt.Eps, "weight_decay": opt.WeightDecay, "max_grad_norm": opt.MaxGradNorm})

			init := map[string][]float32{}
			for _, ti := range m.Tensors() {
				init[ti.Name], _ = m.ReadTensor(ti.Name)
			}
			tr := newTraining(t, m, TrainOptions{})
			for step := range lrs {
				out, err := tr.ForwardBackward(b, CrossEntropy{})
				if err != nil {
					t.Fatal(err)
				}
				if d := math.Abs(out.Loss - ref.Losses[step]); d > torchLossTol {
					t.Fatalf("step %d: loss %.7f, PyTorch %.7f", step, out.Loss, ref.Losses[step])
				}
				if step == 0 {
					t.Logf("loss %.6f; worst gradient relative difference %.2e", out.Loss, checkGrads(t, m, tr, ref))
				}
				st, err := tr.Step(opt)
				if err != nil {
					t.Fatal(err)
				}
				if step == 0 && !st.Clipped {
					t.Logf("note: the first step was not clipped (norm %.3f)", st.GradNorm)
				}
			}
			var worst float64
			for _, ti := range m.Tensors() {
				w, _ := m.ReadTensor(ti.Name)
				d := updateDiff(w, ref.tensors["final."+ti.Name], init[ti.Name])
				worst = max(worst, d)
				if d > torchUpdateTol {
					t.Errorf("%s after %d AdamW steps: the change differs from PyTorch's by %.2e (relative), max |Δ| %.2e", ti.Name, len(lrs), d, maxAbs(w, ref.tensors["final."+ti.Name]))
				}
			}
			t.Logf("after %d AdamW steps: worst relative difference of a tensor's change %.2e", len(lrs), worst)
		})
	}
}

// The gradient matches PyTorch's on sequences of a few hundred tokens too
// (the learning demo's prompts are ~440), with the demo's rope_theta, so
// a model that fails to learn a long-range dependency is not being given
// a wrong attention gradient.
func TestLongSequenceGradMatchesTorch(t *testing.T) {
	if _, err := torchref.Python(); err != nil {
		t.Skip(err)
	}
	r := rand.New(rand.NewPCG(7, 7))
	c := tinyConfig(true)
	c.RopeTheta = 1e6
	m := randomModel(t, c, cpu.New(), 9)
	dir := t.TempDir()
	if err := m.Save(dir, safetensors.F32, 0); err != nil {
		t.Fatal(err)
	}
	b := randBatch(r, c.VocabSize, 450, 300)
	b.Rows = []Row{{0, 10}, {0, 440}, {0, 448}, {1, 298}}
	rows := make([][2]int, len(b.Rows))
	for i, rw := range b.Rows {
		rows[i] = [2]int{rw.Seq, rw.Pos}
	}
	ref := runTorchTrain(t, dir, map[string]any{"seqs": b.Seqs, "rows": rows, "lrs": lrList{1e-3}, "betas": []float64{0.9, 0.999},
		"eps": 1e-8, "weight_decay": 0.0, "max_grad_norm": 0.0})
	tr := newTraining(t, m, TrainOptions{})
	out, err := tr.ForwardBackward(b, CrossEntropy{})
	if err != nil {
		t.Fatal(err)
	}
	if d := math.Abs(out.Loss - ref.Losses[0]); d > torchLossTol {
		t.Fatalf("loss %.7f, PyTorch %.7f", out.Loss, ref.Losses[0])
	}
	t.Logf("sequences of 450 and 300 tokens: worst gradient relative difference %.2e", checkGrads(t, m, tr, ref))
}

// checkGrads compares every parameter's gradient with PyTorch's and
// returns the worst relative difference.
func checkGrads(t *testing.T, m *Model, tr *Training, ref torchTrain) float64 {
	t.Helper()
	var worst float64
	for _, ti := range m.Tensors() {
		g, _ := tr.Grad(ti.Name)
		d := relDiff(g, ref.tensors["grad."+ti.Name])
		worst = max(worst, d)
		if d > torchGradTol {
			t.Errorf("gradient of %s: relative difference %.2e", ti.Name, d)
		}
	}
	return worst
}

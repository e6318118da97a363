package trainer

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/nextstate-rl/nextstate/trainer/cpu"
)

// steps trains n steps on batches drawn from the training's own RNG.
func steps(t *testing.T, tr *Training, n int) {
	t.Helper()
	opt := AdamWOptions{LR: 1e-2, WeightDecay: 0.1, MaxGradNorm: 1, Schedule: Warmup{Steps: 2, Then: Cosine{Steps: 4}}}
	for range n {
		b := randBatch(tr.Rand(), tr.Model().Config.VocabSize, 7, 3)
		if _, err := tr.ForwardBackward(b, CrossEntropy{}); err != nil {
			t.Fatal(err)
		}
		if _, err := tr.Step(opt); err != nil {
			t.Fatal(err)
		}
	}
}

func sameBits(t *testing.T, what string, a, b []float32) {
	t.Helper()
	if len(a) != len(b) {
		t.Fatalf("%s: %d vs %d values", what, len(a), len(b))
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			t.Fatalf("%s differs at %d: %g vs %g", what, i, a[i], b[i])
		}
	}
}

// N steps straight equal k steps, save, load into a fresh model, N−k steps,
// bit for bit: full fine-tuning and LoRA.
func TestResumeBitExact(t *testing.T) {
	c := tinyConfig(false)
	lcfg := LoRAConfig{Rank: 4, Alpha: 8, Targets: []string{"q_proj", "v_proj", "down_proj"}}
	for _, withLoRA := range []bool{false, true} {
		fresh := func(seed uint64) *Model {
			m := randomModel(t, c, cpu.New(), 1)
			if withLoRA {
				if err := m.AddLoRA(lcfg, seed); err != nil {
					t.Fatal(err)
				}
			} else if seed != 1 {
				m = randomModel(t, c, cpu.New(), seed) // the state must bring the weights back
			}
			return m
		}
		weights := func(m *Model) []float32 {
			if !withLoRA {
				return m.ReadParams()
			}
			var all []float32
			for _, ti := range m.AdapterTensors() {
				v, _ := m.ReadTensor(ti.Name)
				all = append(all, v...)
			}
			return append(all, m.ReadParams()...)
		}
		straight := newTraining(t, fresh(1), TrainOptions{Seed: 5})
		steps(t, straight, 5)

		first := newTraining(t, fresh(1), TrainOptions{Seed: 5})
		steps(t, first, 2)
		dir := t.TempDir()
		if _, err := first.SaveState(dir, 0); err != nil {
			t.Fatal(err)
		}
		steps(t, first, 1)
		if _, err := first.SaveState(dir, 1); err != nil { // keep only the newest
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(dir, "step-00000002")); !os.IsNotExist(err) {
			t.Fatalf("the older state was not pruned: %v", err)
		}
		resumed := newTraining(t, fresh(77), TrainOptions{Seed: 99})
		if err := resumed.LoadState(dir); err != nil {
			t.Fatal(err)
		}
		if resumed.Steps() != 3 {
			t.Fatalf("resumed at step %d", resumed.Steps())
		}
		steps(t, resumed, 2)
		sameBits(t, map[bool]string{false: "full", true: "LoRA"}[withLoRA]+" weights after resume", weights(resumed.Model()), weights(straight.Model()))
		if resumed.Rand().Uint64() != straight.Rand().Uint64() {
			t.Fatal("the RNG did not resume")
		}
		if withLoRA {
			if _, err := os.Stat(filepath.Join(dir, "step-00000003", AdapterConfigFile)); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(filepath.Join(dir, "step-00000003", "model.safetensors")); !os.IsNotExist(err) {
				t.Fatal("a LoRA state holds the frozen base")
			}
		} else if _, err := Load(filepath.Join(dir, "step-00000003"), cpu.New()); err != nil {
			t.Fatalf("a full state is not a model folder: %v", err)
		}
	}
}

func TestStateMisuse(t *testing.T) {
	m := randomModel(t, tinyConfig(true), cpu.New(), 1)
	tr := newTraining(t, m, TrainOptions{})
	b := randBatch(tr.Rand(), m.Config.VocabSize, 4)
	if _, err := tr.ForwardBackward(b, CrossEntropy{}); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.SaveState(t.TempDir(), 0); err == nil {
		t.Fatal("saved with gradients pending")
	}
	tr.ZeroGrad()
	dir := t.TempDir()
	if _, err := tr.SaveState(dir, 0); err != nil {
		t.Fatal(err)
	}
	other := newTraining(t, randomModel(t, tinyConfig(true), cpu.New(), 1), TrainOptions{Trainable: func(n string) bool { return n == "model.norm.weight" }})
	if err := other.LoadState(dir); err == nil {
		t.Fatal("loaded a state that trained other tensors")
	}
	if err := tr.LoadState(t.TempDir()); err == nil {
		t.Fatal("loaded an empty folder")
	}
}

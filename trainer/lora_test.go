package trainer

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nextstate-rl/nextstate/trainer/cpu"
	"github.com/nextstate-rl/nextstate/trainer/safetensors"
	"github.com/nextstate-rl/nextstate/trainer/torchref"
)

// loraModel is a random model with adapters whose B are random too, so
// that the adapters change the output and every gradient is non-zero.
func loraModel(t *testing.T, c Config, be Backend, cfg LoRAConfig, seed uint64) *Model {
	t.Helper()
	m := randomModel(t, c, be, seed)
	if err := m.AddLoRA(cfg, seed); err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(seed, 11))
	for _, ti := range m.AdapterTensors() {
		if strings.Contains(ti.Name, ".lora_B.") {
			v := make([]float32, ti.Shape[0]*ti.Shape[1])
			for i := range v {
				v[i] = float32(0.2 * r.NormFloat64())
			}
			if err := m.WriteTensor(ti.Name, v); err != nil {
				t.Fatal(err)
			}
		}
	}
	return m
}

func TestLoRAForwardMergeAndPEFT(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 5))
	c := tinyConfig(false)
	toks := randTokens(r, 9, c.VocabSize)
	plain := fullLogits(t, randomModel(t, c, cpu.New(), 3), toks)

	// Fresh adapters (B = 0) leave the function unchanged.
	m := randomModel(t, c, cpu.New(), 3)
	if err := m.AddLoRA(LoRAConfig{Rank: 4, Alpha: 8}, 1); err != nil {
		t.Fatal(err)
	}
	if d := maxAbsDiff(fullLogits(t, m, toks), plain); d != 0 {
		t.Fatalf("fresh adapters changed the logits by %g", d)
	}

	cfg := LoRAConfig{Rank: 3, Alpha: 5, Targets: []string{"q_proj", "v_proj", "o_proj", "up_proj", "down_proj"}}
	m = loraModel(t, c, cpu.New(), cfg, 3)
	adapted := fullLogits(t, m, toks)
	if d := maxAbsDiff(adapted, plain); d < 1e-3 {
		t.Fatalf("adapters changed the logits by only %g", d)
	}
	// The same through the naive backend (no merged weight either way).
	n := loraModel(t, c, cpu.Naive{}, cfg, 3)
	if d := maxAbsDiff(fullLogits(t, n, toks), adapted); d > 1e-4 {
		t.Fatalf("fast vs naive with adapters: %g", d)
	}

	// PEFT layout round trip.
	dir := t.TempDir()
	if err := m.SaveAdapter(dir, "base"); err != nil {
		t.Fatal(err)
	}
	var ac map[string]any
	b, _ := os.ReadFile(filepath.Join(dir, AdapterConfigFile))
	if err := json.Unmarshal(b, &ac); err != nil || ac["peft_type"] != "LORA" || ac["r"] != float64(3) || ac["lora_alpha"] != float64(5) {
		t.Fatalf("adapter_config.json: %v %s", err, b)
	}
	f, err := safetensors.Open(filepath.Join(dir, AdapterWeightsFile))
	if err != nil {
		t.Fatal(err)
	}
	info, ok := f.Info("base_model.model.model.layers.1.self_attn.v_proj.lora_B.weight")
	f.Close()
	if !ok || info.Shape[0] != c.NumKeyValueHeads*c.HeadDim || info.Shape[1] != 3 {
		t.Fatalf("PEFT tensor name or shape: %v %+v", ok, info)
	}
	back := randomModel(t, c, cpu.New(), 3)
	if err := back.LoadAdapter(dir); err != nil {
		t.Fatal(err)
	}
	if d := maxAbsDiff(fullLogits(t, back, toks), adapted); d != 0 {
		t.Fatalf("adapters read back give logits off by %g", d)
	}
	other := randomModel(t, c, cpu.New(), 3)
	other.AddLoRA(LoRAConfig{Rank: 2, Alpha: 5}, 1)
	if err := other.LoadAdapter(dir); err == nil {
		t.Fatal("adapters of another rank loaded over existing ones")
	}

	// Merged, the model computes what the adapters did.
	if err := m.MergeLoRA(); err != nil {
		t.Fatal(err)
	}
	if m.LoRA() != nil {
		t.Fatal("adapters still there after the merge")
	}
	if d := maxAbsDiff(fullLogits(t, m, toks), adapted); d > 1e-4 {
		t.Fatalf("merged vs adapters: %g", d)
	}

	for _, bad := range []LoRAConfig{{Rank: 0, Alpha: 1}, {Rank: 2, Alpha: 1, Targets: []string{"x_proj"}}, {Rank: 2, Alpha: 1, Targets: []string{}}} {
		if err := randomModel(t, c, cpu.New(), 1).AddLoRA(bad, 1); err == nil {
			t.Errorf("LoRA %+v accepted", bad)
		}
	}
}

// LoRA trains the adapters only; the fast gradients equal the naive ones.
func TestLoRATraining(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 5))
	c := tinyConfig(true)
	cfg := LoRAConfig{Rank: 4, Alpha: 8, Targets: []string{"k_proj", "gate_proj", "o_proj"}}
	b := randBatch(r, c.VocabSize, 6, 9)
	grads := map[string]map[string][]float32{}
	for name, be := range map[string]Backend{"fast": cpu.New(), "naive": cpu.Naive{}} {
		m := loraModel(t, c, be, cfg, 4)
		base := m.ReadParams()
		tr := newTraining(t, m, TrainOptions{Recompute: name == "fast"})
		if _, err := tr.ForwardBackward(b, CrossEntropy{}); err != nil {
			t.Fatal(err)
		}
		grads[name] = map[string][]float32{}
		for _, ti := range m.AdapterTensors() {
			grads[name][ti.Name], _ = tr.Grad(ti.Name)
		}
		if g, _ := tr.Grad("model.embed_tokens.weight"); g != nil {
			t.Fatal("the base has a gradient under LoRA")
		}
		if _, err := tr.Step(AdamWOptions{LR: 1e-2}); err != nil {
			t.Fatal(err)
		}
		if d := maxAbsDiff(m.ReadParams(), base); d != 0 {
			t.Fatalf("the frozen base moved by %g", d)
		}
	}
	if len(grads["fast"]) != 2*3*c.NumHiddenLayers {
		t.Fatalf("%d adapter gradients", len(grads["fast"]))
	}
	for name, g := range grads["fast"] {
		if d := relDiff(g, grads["naive"][name]); d > 1e-4 {
			t.Errorf("%s: fast vs naive %.2e", name, d)
		}
	}
}

// LoRA's gradients and AdamW steps match a plain LoRA in PyTorch.
func TestLoRAMatchesTorch(t *testing.T) {
	if _, err := torchref.Python(); err != nil {
		t.Skip(err)
	}
	for _, cfg := range []LoRAConfig{{Rank: 4, Alpha: 8}, {Rank: 3, Alpha: 12, Targets: []string{"q_proj", "v_proj", "up_proj"}}} {
		r := rand.New(rand.NewPCG(3, 5))
		c := tinyConfig(false)
		m := loraModel(t, c, cpu.New(), cfg, 6)
		dir, adir := t.TempDir(), t.TempDir()
		m.RemoveLoRA()
		if err := m.Save(dir, safetensors.F32, 0); err != nil {
			t.Fatal(err)
		}
		m = loraModel(t, c, cpu.New(), cfg, 6)
		if err := m.SaveAdapter(adir, dir); err != nil {
			t.Fatal(err)
		}
		b := randBatch(r, c.VocabSize, 8, 13)
		lrs := lrList{1e-2, 1e-2, 5e-3}
		opt := AdamWOptions{LR: lrs[0], Beta2: 0.95, Eps: 1e-6, WeightDecay: 0.05, MaxGradNorm: 0.5, Schedule: lrs}
		ref := runTorchTrain(t, dir, map[string]any{"seqs": b.Seqs, "lrs": lrs, "betas": []float64{0.9, 0.95}, "eps": opt.Eps,
			"weight_decay": opt.WeightDecay, "max_grad_norm": opt.MaxGradNorm, "lora": map[string]any{"dir": adir, "r": cfg.Rank, "alpha": cfg.Alpha}})
		init := map[string][]float32{}
		for _, ti := range m.AdapterTensors() {
			init[ti.Name], _ = m.ReadTensor(ti.Name)
		}
		tr := newTraining(t, m, TrainOptions{})
		var worstG, worstU float64
		for step := range lrs {
			out, err := tr.ForwardBackward(b, CrossEntropy{})
			if err != nil {
				t.Fatal(err)
			}
			if d := out.Loss - ref.Losses[step]; d > torchLossTol || d < -torchLossTol {
				t.Fatalf("%+v step %d: loss %.7f, PyTorch %.7f", cfg, step, out.Loss, ref.Losses[step])
			}
			if step == 0 {
				for name := range init {
					g, _ := tr.Grad(name)
					d := relDiff(g, ref.tensors["grad."+name])
					worstG = max(worstG, d)
					if d > torchGradTol {
						t.Errorf("%+v: gradient of %s: relative difference %.2e", cfg, name, d)
					}
				}
			}
			if _, err := tr.Step(opt); err != nil {
				t.Fatal(err)
			}
		}
		for name, w0 := range init {
			w, _ := m.ReadTensor(name)
			d := updateDiff(w, ref.tensors["final."+name], w0)
			worstU = max(worstU, d)
			if d > torchUpdateTol {
				t.Errorf("%+v: %s after %d steps: change differs by %.2e", cfg, name, len(lrs), d)
			}
		}
		t.Logf("LoRA %+v: worst gradient difference %.2e, worst change difference %.2e", cfg, worstG, worstU)
	}
}

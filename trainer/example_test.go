package trainer_test

import (
	"fmt"
	"math/rand/v2"
	"os"

	"github.com/nextstate-rl/nextstate/trainer"
	"github.com/nextstate-rl/nextstate/trainer/cpu"
)

// A LoRA fine-tune of a small random Qwen3 on one repeated sequence: the
// loss falls, the training state is saved, and the adapter is written in
// PEFT's layout.
func ExampleTraining() {
	m, err := trainer.New(trainer.Config{ModelType: "qwen3", VocabSize: 64, HiddenSize: 32, IntermediateSize: 64,
		NumHiddenLayers: 2, NumAttentionHeads: 4, NumKeyValueHeads: 2, HeadDim: 8, MaxPositionEmbeddings: 128,
		RMSNormEps: 1e-6, RopeTheta: 1e6, TieWordEmbeddings: true, HiddenAct: "silu"}, cpu.New())
	if err != nil {
		panic(err)
	}
	m.InitRandom(1, 0.02)
	if err := m.AddLoRA(trainer.LoRAConfig{Rank: 8, Alpha: 16}, 1); err != nil {
		panic(err)
	}
	tr, err := trainer.NewTraining(m, trainer.TrainOptions{Seed: 1})
	if err != nil {
		panic(err)
	}
	defer tr.Close()
	r := rand.New(rand.NewPCG(1, 2))
	seq := make([]int32, 24)
	for i := range seq {
		seq[i] = int32(r.IntN(64))
	}
	batch := trainer.NextTokenBatch([][]int32{seq}, nil)
	var first, last float64
	for step := range 30 {
		out, err := tr.ForwardBackward(batch, trainer.CrossEntropy{})
		if err != nil {
			panic(err)
		}
		if _, err := tr.Step(trainer.AdamWOptions{LR: 1e-2, MaxGradNorm: 1, Schedule: trainer.Cosine{Steps: 30}}); err != nil {
			panic(err)
		}
		if step == 0 {
			first = out.Loss
		}
		last = out.Loss
	}
	dir, err := os.MkdirTemp("", "trainer-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	if _, err := tr.SaveState(dir+"/ckpt", 3); err != nil {
		panic(err)
	}
	if err := m.SaveAdapter(dir+"/adapter", "Qwen/Qwen3-0.6B"); err != nil {
		panic(err)
	}
	_, err = os.Stat(dir + "/adapter/adapter_model.safetensors")
	fmt.Printf("steps %d, loss fell by more than 0.5: %v, adapter written: %v\n", tr.Steps(), last < first-0.5, err == nil)
	// Output: steps 30, loss fell by more than 0.5: true, adapter written: true
}

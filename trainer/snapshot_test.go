package trainer

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/nextstate-rl/nextstate/trainer/cpu"
)

// A snapshot keeps computing what the model computed when it was taken,
// while the model trains on; a shared-base snapshot of a LoRA run copies
// only the adapters and refuses writes to the base it shares.
func TestSnapshot(t *testing.T) {
	for _, lora := range []bool{false, true} {
		c := tinyConfig(true)
		var m *Model
		if lora {
			m = loraModel(t, c, cpu.New(), LoRAConfig{Rank: 4, Alpha: 8}, 3)
		} else {
			m = randomModel(t, c, cpu.New(), 3)
		}
		toks := randTokens(rand.New(rand.NewPCG(1, 1)), 20, c.VocabSize)
		before, sum := fullLogits(t, m, toks), m.Checksum()
		snap, err := m.Snapshot(true, lora)
		if err != nil {
			t.Fatal(err)
		}
		if got := snap.Checksum(); got != sum {
			t.Fatalf("lora %v: snapshot checksum %s, model %s", lora, got, sum)
		}
		digest, err := m.BaseDigest()
		if err != nil {
			t.Fatal(err)
		}
		if got, err := snap.ChecksumFrom(digest); err != nil || got != sum {
			t.Fatalf("lora %v: checksum from the base digest %s (%v), want %s", lora, got, err, sum)
		}
		base, err := m.Snapshot(false, lora)
		if err != nil {
			t.Fatal(err)
		}
		tr, err := NewTraining(m, TrainOptions{})
		if err != nil {
			t.Fatal(err)
		}
		batch := NextTokenBatch([][]int32{toks}, nil)
		for range 2 {
			if _, err := tr.ForwardBackward(batch, CrossEntropy{}); err != nil {
				t.Fatal(err)
			}
			if _, err := tr.Step(AdamWOptions{LR: 1e-2}); err != nil {
				t.Fatal(err)
			}
		}
		if m.Checksum() == sum {
			t.Fatalf("lora %v: training changed nothing", lora)
		}
		if d := maxAbsDiff(fullLogits(t, snap, toks), before); d != 0 {
			t.Fatalf("lora %v: the snapshot's logits moved by %g while the model trained", lora, d)
		}
		if base.LoRA() != nil {
			t.Fatalf("lora %v: a snapshot without adapters has adapters", lora)
		}
		if lora {
			if err := base.WriteTensor("model.norm.weight", make([]float32, c.HiddenSize)); !errors.Is(err, ErrSharedBase) {
				t.Fatalf("writing a shared base: %v, want ErrSharedBase", err)
			}
			if _, err := NewTraining(base, TrainOptions{Trainable: func(string) bool { return true }}); !errors.Is(err, ErrSharedBase) {
				t.Fatalf("training a shared base: %v, want ErrSharedBase", err)
			}
		}
		sc, err := NewScoring(base, TrainOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := sc.ForwardBackward(batch, CrossEntropy{}); err == nil {
			t.Fatal("ForwardBackward on a scoring Training succeeded")
		}
		out, err := sc.Score(batch, false, 0)
		if err != nil || len(out.LogProbs) != len(toks)-1 {
			t.Fatalf("Score: %v, %d log-probs", err, len(out.LogProbs))
		}
		snap.Close()
		base.Close()
		sc.Close()
		// the model still works after its snapshots are closed
		if _, err := tr.ForwardBackward(batch, CrossEntropy{}); err != nil {
			t.Fatal(err)
		}
		tr.Close()
		m.Close()
	}
}

// Package testmodel writes the tests' model folder: a byte-level
// tokenizer.json (the 256 bytes as GPT-2's byte-level alphabet, then the
// chat template's special tokens) and a random one-layer Qwen3 of that
// vocabulary, small enough to train in a test.
package testmodel

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/nextstate-rl/nextstate/trainer"
	"github.com/nextstate-rl/nextstate/trainer/cpu"
	"github.com/nextstate-rl/nextstate/trainer/safetensors"
)

// EOS is the id of <|im_end|>.
const EOS = 258

// Write writes the folder in a temporary directory of t, the weights
// drawn with seed 1 and standard deviation std, stored as dtype.
func Write(t testing.TB, std float64, dtype safetensors.DType) string {
	t.Helper()
	dir := t.TempDir()
	vocab := map[string]int{}
	n := 0
	for b := range 256 {
		r := rune(b)
		if !(b >= '!' && b <= '~' || b >= 0xA1 && b <= 0xAC || b >= 0xAE) {
			r = rune(256 + n)
			n++
		}
		vocab[string(r)] = b
	}
	added := []map[string]any{}
	for i, a := range []string{"<|endoftext|>", "<|im_start|>", "<|im_end|>"} {
		added = append(added, map[string]any{"id": 256 + i, "content": a, "special": true})
	}
	js, err := json.Marshal(map[string]any{"added_tokens": added, "model": map[string]any{"type": "BPE", "vocab": vocab, "merges": []string{}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), js, 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := trainer.New(trainer.Config{ModelType: "qwen3", VocabSize: 260, HiddenSize: 32, IntermediateSize: 64, NumHiddenLayers: 1,
		NumAttentionHeads: 2, NumKeyValueHeads: 1, HeadDim: 16, MaxPositionEmbeddings: 2048, RMSNormEps: 1e-6, RopeTheta: 1e6,
		TieWordEmbeddings: true, HiddenAct: "silu", EOSTokenID: float64(EOS)}, cpu.New())
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	m.InitRandom(1, std)
	if err := m.Save(dir, dtype, 0); err != nil {
		t.Fatal(err)
	}
	return dir
}

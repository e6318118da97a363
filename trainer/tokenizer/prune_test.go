package tokenizer

import (
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
)

// A tokenizer pruned to a corpus encodes the corpus to the same tokens as
// the real Qwen3 one, renders the chat template to the same ids, and
// still round-trips any other text.
func TestPrune(t *testing.T) {
	q := qwen3(t)
	chat, err := ApplyChatTemplate([]Message{{Role: "system", Content: "Guess the number between 1 and 100."},
		{Role: "user", Content: "Your guess was too low. Try again."}}, nil, ChatOptions{AddGenerationPrompt: true})
	if err != nil {
		t.Fatal(err)
	}
	corpus := []string{chat, "I guess 50.<|im_end|>", "The order #W2378156 was delivered; héllo wörld 1234 \n\n  done", `{"name": "get_order", "arguments": {"id": 7}}`}
	p, err := q.Prune(corpus)
	if err != nil {
		t.Fatal(err)
	}
	small, err := Parse(p.JSON)
	if err != nil {
		t.Fatal(err)
	}
	if small.VocabSize() >= q.VocabSize()/50 || small.VocabSize() < 256 {
		t.Fatalf("pruned vocabulary of %d from %d", small.VocabSize(), q.VocabSize())
	}
	for _, text := range corpus {
		want := q.Encode(text)
		for i, id := range want {
			nid, ok := p.NewID[id]
			if !ok {
				t.Fatalf("%q: token %d (%q) was pruned away", text, id, q.tokens[id])
			}
			want[i] = nid
		}
		if got := small.Encode(text); !slices.Equal(got, want) {
			t.Fatalf("%q: pruned ids %v, want the original's mapped %v", text, got, want)
		}
		if got := small.Decode(small.Encode(text), false); got != text {
			t.Fatalf("decode: %q, want %q", got, text)
		}
	}
	for _, a := range []string{"<|im_start|>", "<|im_end|>", "<tool_call>", "<think>"} {
		id, ok := small.TokenID(a)
		old, _ := q.TokenID(a)
		if !ok || p.OldID[id] != old {
			t.Fatalf("added token %s: %d (ok %v), want the original %d mapped", a, id, ok, old)
		}
	}
	other := "Entirely unseen text: Zürich ⚙ 987654 ∑"
	if got := small.Decode(small.Encode(other), false); got != other {
		t.Fatalf("unseen text round trip: %q", got)
	}
	// Hugging Face's format, read by another implementation: the same ids
	// on the corpus and on random text.
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node missing (apt-get install nodejs): the reference tokenizer runs in node")
	}
	path := filepath.Join(t.TempDir(), "tokenizer.json")
	if err := os.WriteFile(path, p.JSON, 0o644); err != nil {
		t.Fatal(err)
	}
	texts := append(slices.Clone(corpus), other)
	r := rand.New(rand.NewPCG(3, 3))
	for range 200 {
		texts = append(texts, randomText(r))
	}
	want := referenceIDs(t, texts, path)
	for i, text := range texts {
		if got := small.Encode(text); !slices.Equal(got, want[i]) && len(got)+len(want[i]) > 0 {
			t.Fatalf("%q: %v, the reference reading the pruned tokenizer.json gives %v", text, got, want[i])
		}
	}
	t.Logf("pruned %d → %d tokens; %d texts encode as the reference reads the pruned file", q.VocabSize(), small.VocabSize(), len(texts))
}

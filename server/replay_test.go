package server

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"

	"github.com/nextstate-rl/nextstate/gym"
	"github.com/nextstate-rl/nextstate/store"
)

// TestByContent: a large file sent inline is recorded as a blob reference,
// and a retry of its step after the session ended must still match it.
func TestByContent(t *testing.T) {
	big := bytes.Repeat([]byte("x"), 40<<10)
	sum := sha256.Sum256(big)
	file := func(b gym.Blob) gym.Action {
		b.MIME = "application/octet-stream"
		return gym.Action{Parts: []gym.Part{{Type: gym.PartFile, File: &gym.File{Path: "a.bin", Blob: b}}}}
	}
	inline := file(gym.Blob{Data: big})
	stored := file(gym.Blob{Ref: store.RefPrefix + hex.EncodeToString(sum[:]), Size: int64(len(big))})
	x, _ := json.Marshal(byContent(inline))
	y, _ := json.Marshal(byContent(stored))
	if !bytes.Equal(x, y) {
		t.Fatalf("inline %s and stored %s differ", x, y)
	}
	if z, _ := json.Marshal(byContent(file(gym.Blob{Data: big[1:]}))); bytes.Equal(z, y) {
		t.Fatal("different content compares equal")
	}
	if inline.Parts[0].File.Data == nil {
		t.Fatal("byContent changed its argument")
	}
}

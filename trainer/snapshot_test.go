package trainer

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/nextstate-rl/nextstate/trainer/backend"
	"github.com/nextstate-rl/nextstate/trainer/cpu"
	"github.com/nextstate-rl/nextstate/trainer/torchref"
)

// snapshotModel is a tiny model (with LoRA adapters, or not) and a prompt.
func snapshotModel(t *testing.T, lora bool) (Config, *Model, []int32) {
	c := tinyConfig(true)
	var m *Model
	if lora {
		m = loraModel(t, c, cpu.New(), LoRAConfig{Rank: 4, Alpha: 8}, 3)
	} else {
		m = randomModel(t, c, cpu.New(), 3)
	}
	return c, m, randTokens(rand.New(rand.NewPCG(1, 1)), 20, c.VocabSize)
}

// A snapshot keeps computing what the model computed when it was taken,
// while the model trains on; a shared-base snapshot of a LoRA run copies
// only the adapters and refuses writes to the base it shares.
func TestSnapshot(t *testing.T) {
	for _, lora := range []bool{false, true} {
		c, m, toks := snapshotModel(t, lora)
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

// Checksum is what its doc says: the SHA-256 of the SHA-256s of the
// leaves, each tensor (the base's, then the adapters') cut into leaves of
// ChecksumLeaf values as f32 little-endian; whatever GOMAXPROCS is; and
// what docs/training.md's line of Python computes. The embedding here
// spans two leaves.
func TestChecksumDefinition(t *testing.T) {
	c := tinyConfig(true)
	c.VocabSize, c.HiddenSize, c.IntermediateSize, c.NumHiddenLayers = ChecksumLeaf/64+100, 64, 32, 1
	m := loraModel(t, c, cpu.New(), LoRAConfig{Rank: 2, Alpha: 4}, 5)
	defer m.Close()
	want := sha256.New()
	var tensors [][]float32
	for _, ti := range append(m.Tensors(), m.AdapterTensors()...) {
		v, err := m.ReadTensor(ti.Name)
		if err != nil {
			t.Fatal(err)
		}
		tensors = append(tensors, v)
		for o := 0; o < len(v); o += ChecksumLeaf {
			leaf := sha256.New()
			for _, x := range v[o:min(o+ChecksumLeaf, len(v))] {
				leaf.Write(binary.LittleEndian.AppendUint32(nil, math.Float32bits(x)))
			}
			want.Write(leaf.Sum(nil))
		}
	}
	if len(tensors[0]) <= ChecksumLeaf {
		t.Fatalf("the embedding has %d values: want more than one leaf's %d", len(tensors[0]), ChecksumLeaf)
	}
	sum := hex.EncodeToString(want.Sum(nil))
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, procs := range []int{1, 3, 8} {
		runtime.GOMAXPROCS(procs)
		if got := m.Checksum(); got != sum {
			t.Fatalf("GOMAXPROCS %d: checksum %s, want %s", procs, got, sum)
		}
		snap, got, err := m.SnapshotInto(backend.Buf{}, true)
		if err != nil || got != sum {
			t.Fatalf("GOMAXPROCS %d: SnapshotInto's checksum %s (%v), want %s", procs, got, err, sum)
		}
		snap.Close()
	}
	py, err := torchref.Python()
	if err != nil {
		t.Skip(err)
	}
	dir := t.TempDir()
	var files []string
	for i, v := range tensors {
		b := make([]byte, 0, 4*len(v))
		for _, x := range v {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
		}
		f := filepath.Join(dir, fmt.Sprint(i))
		if err := os.WriteFile(f, b, 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	// the line of docs/training.md, over the tensors as numpy arrays
	script := `import sys, numpy
from hashlib import sha256
tensors = [numpy.fromfile(f, dtype="<f4") for f in sys.argv[1:]]
print(sha256(b"".join(sha256(t[i:i + 2**22].astype("<f4").tobytes()).digest() for t in tensors for i in
range(0, t.size, 2**22))).hexdigest())`
	out, err := exec.Command(py, append([]string{"-c", script}, files...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("python: %v: %s", err, out)
	}
	if got := strings.TrimSpace(string(out)); got != sum {
		t.Fatalf("docs/training.md's Python gives %s, Checksum %s", got, sum)
	}
}

// SnapshotInto copies into the arena a closed snapshot left (Recycle), and
// its checksum is the snapshot's; the recycled snapshot's weights are then
// the new one's, while a live snapshot never changes as the model trains.
func TestSnapshotInto(t *testing.T) {
	for _, lora := range []bool{false, true} {
		_, m, toks := snapshotModel(t, lora)
		tr, err := NewTraining(m, TrainOptions{Trainable: func(string) bool { return true }})
		if err != nil {
			t.Fatal(err)
		}
		step := func() {
			t.Helper()
			if _, err := tr.ForwardBackward(NextTokenBatch([][]int32{toks}, nil), CrossEntropy{}); err != nil {
				t.Fatal(err)
			}
			if _, err := tr.Step(AdamWOptions{LR: 1e-2}); err != nil {
				t.Fatal(err)
			}
		}
		first, sum1, err := m.SnapshotInto(backend.Buf{}, true)
		if err != nil || sum1 != m.Checksum() || first.Checksum() != sum1 {
			t.Fatalf("lora %v: SnapshotInto's checksum %s (%v), the model's %s, the snapshot's %s", lora, sum1, err, m.Checksum(), first.Checksum())
		}
		held, sumHeld, err := m.SnapshotInto(backend.Buf{}, true)
		if err != nil {
			t.Fatal(err)
		}
		heldLogits := fullLogits(t, held, toks)
		step()
		arena := first.Recycle()
		if arena.Nil() || !first.Params.Nil() {
			t.Fatalf("lora %v: Recycle returned no arena or left the snapshot its weights", lora)
		}
		if _, _, err := m.SnapshotInto(arena.Slice(0, arena.Len()-1), true); err == nil {
			t.Fatalf("lora %v: SnapshotInto a buffer of the wrong size succeeded", lora)
		}
		second, sum2, err := m.SnapshotInto(arena, true)
		if err != nil {
			t.Fatal(err)
		}
		if second.Params.Mem() != arena.Mem() {
			t.Fatalf("lora %v: SnapshotInto did not copy into the arena it was given", lora)
		}
		if sum2 == sum1 || sum2 != m.Checksum() || second.Checksum() != sum2 {
			t.Fatalf("lora %v: after a step the snapshot's checksum %s (before %s), the model's %s", lora, sum2, sum1, m.Checksum())
		}
		if d := maxAbsDiff(fullLogits(t, second, toks), fullLogits(t, m, toks)); d != 0 {
			t.Fatalf("lora %v: the snapshot's logits differ from the model's by %g", lora, d)
		}
		step()
		if held.Checksum() != sumHeld || maxAbsDiff(fullLogits(t, held, toks), heldLogits) != 0 {
			t.Fatalf("lora %v: a live snapshot changed while the model trained and snapshots were recycled", lora)
		}
		if lora {
			shared, err := m.Snapshot(true, true)
			if err != nil {
				t.Fatal(err)
			}
			if !shared.Recycle().Nil() {
				t.Fatal("Recycle of a shared-base snapshot handed out the base it shares")
			}
		}
		second.Close()
		held.Close()
		tr.Close()
		m.Close()
	}
}

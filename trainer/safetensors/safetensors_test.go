package safetensors

import (
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

func TestF16RoundTripExhaustive(t *testing.T) {
	for h := range 1 << 16 {
		f := F16ToF32(uint16(h))
		if f != f {
			if got := F32ToF16(f); got&0x7c00 != 0x7c00 || got&0x3ff == 0 {
				t.Fatalf("NaN %#04x -> %#04x", h, got)
			}
			continue
		}
		if got := F32ToF16(f); got != uint16(h) {
			t.Fatalf("%#04x -> %g -> %#04x", h, f, got)
		}
	}
}

// nearest is the reference rounding: of all finite values of a 16-bit format,
// the nearest to f, ties to the even bit pattern.
func nearest(f float32, widen func(uint16) float32) uint16 {
	best, bestD := uint16(0), math.Inf(1)
	for h := range 1 << 16 {
		v := widen(uint16(h))
		if v != v || math.IsInf(float64(v), 0) || math.Signbit(float64(v)) != math.Signbit(float64(f)) {
			continue
		}
		d := math.Abs(float64(v) - float64(f))
		if d < bestD || (d == bestD && h&1 == 0) {
			best, bestD = uint16(h), d
		}
	}
	return best
}

func TestRoundingToNearestEven(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 300 {
		f := float32(r.NormFloat64() * math.Pow(2, float64(r.IntN(30)-20)))
		if g, w := F32ToF16(f), nearest(f, F16ToF32); g != w && math.Abs(float64(f)) < 65504 {
			t.Fatalf("F32ToF16(%g) = %#04x, want %#04x", f, g, w)
		}
		if g, w := F32ToBF16(f), nearest(f, BF16ToF32); g != w {
			t.Fatalf("F32ToBF16(%g) = %#04x, want %#04x", f, g, w)
		}
	}
	// Ties: 1 + 2^-11 is halfway between two halves and rounds to the even one.
	if g := F32ToF16(1 + 1.0/2048); g != 0x3c00 {
		t.Fatalf("tie rounded to %#04x", g)
	}
	if g := F32ToF16(70000); g != 0x7c00 {
		t.Fatalf("overflow gave %#04x, want +inf", g)
	}
}

func randTensor(r *rand.Rand, name string, d DType, shape ...int) Tensor {
	n := 1
	for _, s := range shape {
		n *= s
	}
	data := make([]float32, n)
	for i := range data {
		data[i] = float32(r.NormFloat64())
	}
	return Tensor{Name: name, DType: d, Shape: shape, Data: data}
}

func TestWriteReadDir(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	tensors := []Tensor{
		randTensor(r, "a.weight", F32, 3, 5),
		randTensor(r, "b.weight", BF16, 7),
		randTensor(r, "c.weight", F16, 2, 2, 2),
		randTensor(r, "scalar", F32),
	}
	// Half of them written through Fill, as weights held on a backend are.
	written := make([]Tensor, len(tensors))
	for i, tt := range tensors {
		written[i] = tt
		if i%2 == 0 {
			written[i].Data, written[i].Fill = nil, func(dst []float32) { copy(dst, tt.Data) }
		}
	}
	for _, maxShard := range []int64{0, 40} {
		dir := t.TempDir()
		if err := WriteDir(dir, written, maxShard); err != nil {
			t.Fatal(err)
		}
		_, errIdx := os.Stat(filepath.Join(dir, Index))
		if sharded := errIdx == nil; sharded != (maxShard > 0) {
			t.Fatalf("maxShard %d: index present = %v", maxShard, sharded)
		}
		d, err := OpenDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		if got := len(d.Names()); got != len(tensors) {
			t.Fatalf("%d names", got)
		}
		for _, tt := range tensors {
			info, ok := d.Info(tt.Name)
			if !ok || info.DType != tt.DType || info.Elems() != len(tt.Data) {
				t.Fatalf("%s: info %+v", tt.Name, info)
			}
			got := make([]float32, len(tt.Data))
			if err := d.ReadFloat32(tt.Name, got); err != nil {
				t.Fatal(err)
			}
			for i, v := range tt.Data {
				want := v
				switch tt.DType {
				case BF16:
					want = BF16ToF32(F32ToBF16(v))
				case F16:
					want = F16ToF32(F32ToF16(v))
				}
				if got[i] != want {
					t.Fatalf("%s[%d] = %g, want %g", tt.Name, i, got[i], want)
				}
			}
		}
		if err := d.ReadFloat32("nope", nil); !errors.Is(err, ErrNotFound) {
			t.Fatalf("missing tensor: %v", err)
		}
		d.Close()
	}
}

func TestBadFiles(t *testing.T) {
	dir := t.TempDir()
	cases := map[string][]byte{
		"short":     {1, 2},
		"hugeLen":   {0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0},
		"badJSON":   append([]byte{2, 0, 0, 0, 0, 0, 0, 0}, "{x"...),
		"outOfData": append([]byte{52, 0, 0, 0, 0, 0, 0, 0}, `{"t":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`[:52]...),
		"badShape":  append([]byte{54, 0, 0, 0, 0, 0, 0, 0}, append([]byte(`{"t":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}} `), 0, 0, 0, 0)...),
	}
	for name, b := range cases {
		p := filepath.Join(dir, name)
		os.WriteFile(p, b, 0o644)
		if f, err := Open(p); err == nil {
			f.Close()
			t.Errorf("%s: opened", name)
		}
	}
}

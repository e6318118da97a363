package trainer

import (
	"crypto/sha256"
	"encoding"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/nextstate-rl/nextstate/trainer/backend"
)

// Snapshot returns a copy of the model's weights as they are now, on the
// same backend: a frozen reference policy, a teacher, or one weight version
// for an Engine to serve while training goes on. With shareBase set, the
// copy reads m's base parameters in place (no copy) and copies only the
// LoRA adapters: the base must then never change while the snapshot is
// used, which holds while a Training trains only the adapters. withAdapters
// false leaves the adapters out (the frozen base of a LoRA run). Close the
// snapshot when done; closing it never frees what it shares.
func (m *Model) Snapshot(withAdapters, shareBase bool) (*Model, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if shareBase {
		return m.snapshotLocked(m.Params, true, withAdapters, nil)
	}
	params := m.Backend.Alloc(m.layout.total)
	s, err := m.snapshotLocked(params, false, withAdapters, nil)
	if err != nil {
		m.Backend.Free(params)
	}
	return s, err
}

// SnapshotInto is Snapshot(withAdapters, false) that copies the base into
// into instead of allocating, and returns the snapshot's Checksum too,
// computed in the same pass (each piece hashed as it is copied, while it
// is in the cache). into is the parameter arena of a closed snapshot of a
// model of the same configuration on the same backend, as Recycle
// returns it: a large fresh allocation costs far more than the copy (the
// operating system zeroes and maps every page on first touch: 10 s
// against 0.3 s for Qwen3-0.6B's 2.4 GB on a 2-core VM), so a trainer
// publishing versions reuses the arena of one it retired. The zero Buf
// allocates. The snapshot owns into from then on; on an error, into stays
// the caller's.
func (m *Model) SnapshotInto(into backend.Buf, withAdapters bool) (*Model, string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	h := sha256.New()
	if into.Nil() {
		into = m.Backend.Alloc(m.layout.total)
		s, err := m.snapshotLocked(into, false, withAdapters, h)
		if err != nil {
			m.Backend.Free(into)
			return nil, "", err
		}
		return s, hex.EncodeToString(h.Sum(nil)), nil
	}
	if into.Kind() != backend.F32 || into.Off() != 0 || into.Len() != m.layout.total || into.Mem().Len() != into.Len() {
		return nil, "", fmt.Errorf("trainer: SnapshotInto a buffer of %d %s at %d of %d: want a parameter arena of %d float32",
			into.Len(), into.Kind(), into.Off(), into.Mem().Len(), m.layout.total)
	}
	s, err := m.snapshotLocked(into, false, withAdapters, h)
	if err != nil {
		return nil, "", err
	}
	return s, hex.EncodeToString(h.Sum(nil)), nil
}

// snapshotLocked makes the snapshot over params: m's own (shared) or an
// arena to copy m's base into, in pieces on every core (m.mu held); with h
// set, it writes the snapshot's leaves' hashes to h (see Checksum). On an
// error, params stay the caller's.
func (m *Model) snapshotLocked(params backend.Buf, shared, withAdapters bool, h hash.Hash) (*Model, error) {
	s := &Model{Config: m.Config, Backend: m.Backend, layout: m.layout, Params: params, sharedBase: shared}
	if !shared {
		m.sweep(h, &m.layout, params, m.Params)
	} else if h != nil {
		m.sweep(h, &m.layout, params, backend.Buf{})
	}
	s.W = s.layout.point(s.Config, s.Params)
	if withAdapters && m.lora != nil {
		lo, err := s.newLoRA(m.lora.cfg)
		if err != nil {
			s.Params = backend.Buf{}
			s.closeLocked()
			return nil, err
		}
		m.sweep(h, &lo.lay, lo.arena, m.lora.arena)
		s.lora = lo
	}
	return s, nil
}

// Recycle closes m, a snapshot that owns its base parameters, and returns
// its parameter arena for SnapshotInto instead of freeing it; it returns
// the zero Buf (and only closes m) when m shares its base or is already
// closed. Nothing may use m, or any view of its weights, afterwards.
func (m *Model) Recycle() backend.Buf {
	m.mu.Lock()
	defer m.mu.Unlock()
	var keep backend.Buf
	if !m.sharedBase {
		keep, m.Params = m.Params, backend.Buf{}
	}
	m.closeLocked()
	return keep
}

// ErrSharedBase is returned by operations that would change a base a
// snapshot shares with another model.
var ErrSharedBase = errors.New("trainer: the model shares its base parameters with another (a Snapshot with shareBase): they are read-only")

// ChecksumLeaf is how many values one leaf of Checksum's hash tree holds
// at most: 2²² (16 MiB of f32).
const ChecksumLeaf = 1 << 22

// Checksum is the SHA-256 of the SHA-256s of the model's weights' leaves,
// one after another (32 bytes each): each tensor, the base's in the
// layout's order and then the adapters' (when present), is cut into
// leaves of ChecksumLeaf consecutive values (its last leaf shorter), and
// a leaf's SHA-256 is that of its values as f32 little-endian. Equal
// checksums mean the model computes the same function. The leaves are
// hashed in parallel, on up to GOMAXPROCS goroutines; the checksum does
// not depend on how many.
func (m *Model) Checksum() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	h := sha256.New()
	m.sweep(h, &m.layout, m.Params, backend.Buf{})
	return m.finishChecksum(h)
}

// BaseDigest is the hash state of Checksum after the base's leaves, for
// ChecksumFrom: a LoRA run hashes its frozen base once, not at every
// published version.
func (m *Model) BaseDigest() ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	h := sha256.New()
	m.sweep(h, &m.layout, m.Params, backend.Buf{})
	return h.(encoding.BinaryMarshaler).MarshalBinary()
}

// ChecksumFrom is Checksum resumed from a BaseDigest of a model with the
// same base weights (a snapshot sharing them, or the model itself while
// its base has not changed): it hashes only the adapters.
func (m *Model) ChecksumFrom(base []byte) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	h := sha256.New()
	if err := h.(encoding.BinaryUnmarshaler).UnmarshalBinary(base); err != nil {
		return "", fmt.Errorf("trainer: base digest: %w", err)
	}
	return m.finishChecksum(h), nil
}

func (m *Model) finishChecksum(h hash.Hash) string {
	if m.lora != nil {
		m.sweep(h, &m.lora.lay, m.lora.arena, backend.Buf{})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// sweep goes over every leaf of lay's tensors in arena, on up to
// GOMAXPROCS goroutines: it copies the leaf from from first, unless from
// is the zero Buf, and writes the leaves' SHA-256s to h in order, unless
// h is nil. Copying and hashing go a cache-sized chunk at a time, so the
// hash reads what the copy just wrote.
func (m *Model) sweep(h hash.Hash, lay *layout, arena, from backend.Buf) {
	ps := pieces(lay)
	w := workers(lay.total, len(ps))
	if h == nil {
		if from.Nil() || lay.total == 0 {
			return
		}
		if w == 1 { // one copy of the whole run
			m.Backend.Copy(arena.Slice(0, lay.total), from.Slice(0, lay.total))
			return
		}
		inParallel(len(ps), w, func() func(int) {
			return func(i int) {
				p := ps[i]
				m.Backend.Copy(arena.Slice(p.off, p.n), from.Slice(p.off, p.n))
			}
		})
		return
	}
	sums := make([][sha256.Size]byte, len(ps))
	inParallel(len(ps), w, func() func(int) {
		host := make([]float32, min(hashChunk, lay.total))
		var buf []byte
		d := sha256.New()
		return func(i int) {
			p := ps[i]
			d.Reset()
			for o := 0; o < p.n; o += hashChunk {
				k := min(hashChunk, p.n-o)
				if !from.Nil() {
					m.Backend.Copy(arena.Slice(p.off+o, k), from.Slice(p.off+o, k))
				}
				m.Backend.Read(host[:k], arena.Slice(p.off+o, k))
				buf = writeF32(d, host[:k], buf)
			}
			d.Sum(sums[i][:0])
		}
	})
	for i := range sums {
		h.Write(sums[i][:])
	}
}

// hashChunk is how many values a leaf's hash reads from the backend at a
// time: small enough to stay in a core's cache.
const hashChunk = 1 << 16

// writeF32 writes x to h as f32 little-endian; buf is scratch, returned
// for reuse.
func writeF32(h hash.Hash, x []float32, buf []byte) []byte {
	if len(x) == 0 {
		return buf
	}
	if littleEndian { // the bytes as they are
		h.Write(unsafe.Slice((*byte)(unsafe.Pointer(&x[0])), 4*len(x)))
		return buf
	}
	buf = buf[:0]
	for _, v := range x {
		buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(v))
	}
	h.Write(buf)
	return buf
}

// piece is a run of values of an arena: one leaf of the checksum, and the
// unit of a snapshot's parallel copy.
type piece struct{ off, n int }

// pieces cuts every tensor of lay into runs of at most ChecksumLeaf values.
func pieces(lay *layout) []piece {
	var ps []piece
	for _, t := range lay.tensors {
		for o := 0; o < t.size(); o += ChecksumLeaf {
			ps = append(ps, piece{t.off + o, min(ChecksumLeaf, t.size()-o)})
		}
	}
	return ps
}

// sweepGrain is the fewest values worth a goroutine of a sweep.
const sweepGrain = 1 << 20

// workers is how many goroutines sweep n pieces of total values: up to
// GOMAXPROCS, one per sweepGrain values at most.
func workers(total, n int) int {
	return max(1, min(runtime.GOMAXPROCS(0), n, total/sweepGrain))
}

// inParallel runs items 0..n-1 on w goroutines (on the caller's when w is
// 1), each running the function its call of worker returns (with that
// goroutine's scratch) on the items it takes, and returns when every item
// is done.
func inParallel(n, w int, worker func() func(i int)) {
	if w <= 1 {
		if n > 0 {
			run := worker()
			for i := range n {
				run(i)
			}
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range w {
		run := worker()
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				run(i)
			}
		})
	}
	wg.Wait()
}

var littleEndian = func() bool { x := uint16(1); return *(*byte)(unsafe.Pointer(&x)) == 1 }()

// NewScoring prepares m for Score only: a frozen reference's or a
// teacher's forward passes, with no gradient or optimizer state.
// ForwardBackward on it fails (and so Step).
func NewScoring(m *Model, opt TrainOptions) (*Training, error) {
	be, ok := m.Backend.(backend.Trainer)
	if !ok {
		return nil, ErrNotTrainer
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	none := func(string) bool { return false }
	t := &Training{m: m, be: be, opt: opt, base: newGroup(&m.layout, m.Params, none), scoreOnly: true, pcg: rand.NewPCG(opt.Seed, 0x73636f7265)}
	t.rand = rand.New(t.pcg)
	if m.lora != nil {
		t.adapters = newGroup(&m.lora.lay, m.lora.arena, none)
	}
	return t, nil
}

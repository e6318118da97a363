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
	"slices"
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
	s := &Model{Config: m.Config, Backend: m.Backend, layout: m.layout}
	if shareBase {
		s.Params, s.sharedBase = m.Params, true
	} else {
		s.Params = m.Backend.Alloc(m.layout.total)
		m.Backend.Copy(s.Params, m.Params)
	}
	s.W = s.layout.point(s.Config, s.Params)
	if withAdapters && m.lora != nil {
		lo, err := s.newLoRA(m.lora.cfg)
		if err != nil {
			s.closeLocked()
			return nil, err
		}
		m.Backend.Copy(lo.arena, m.lora.arena)
		s.lora = lo
	}
	return s, nil
}

// ErrSharedBase is returned by operations that would change a base a
// snapshot shares with another model.
var ErrSharedBase = errors.New("trainer: the model shares its base parameters with another (a Snapshot with shareBase): they are read-only")

// Checksum is the SHA-256 of the model's weights as f32 little-endian, the
// base's tensors in the layout's order, then the adapters' (when present):
// equal checksums mean the model computes the same function.
func (m *Model) Checksum() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	h := sha256.New()
	m.hashArena(h, &m.layout, m.Params)
	return m.finishChecksum(h)
}

// BaseDigest is the hash state of Checksum after the base's tensors, for
// ChecksumFrom: a LoRA run hashes its frozen base once, not at every
// published version.
func (m *Model) BaseDigest() ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	h := sha256.New()
	m.hashArena(h, &m.layout, m.Params)
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
		m.hashArena(h, &m.lora.lay, m.lora.arena)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// hashArena writes every tensor of lay in arena to h as f32 little-endian.
func (m *Model) hashArena(h hash.Hash, lay *layout, arena backend.Buf) {
	var host []float32
	var buf []byte
	for _, t := range lay.tensors {
		host = slices.Grow(host[:0], t.size())[:t.size()]
		m.Backend.Read(host, arena.Slice(t.off, t.size()))
		if littleEndian && len(host) > 0 { // the bytes as they are
			h.Write(unsafe.Slice((*byte)(unsafe.Pointer(&host[0])), 4*len(host)))
			continue
		}
		buf = buf[:0]
		for _, x := range host {
			buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(x))
		}
		h.Write(buf)
	}
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

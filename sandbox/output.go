package sandbox

import (
	"fmt"
	"sync"
)

// CappedBuffer is an io.Writer that keeps at most Max bytes of what is
// written to it: the first half and the last half. What falls between is
// dropped and counted, and Bytes puts TruncationMarker, with that count,
// where it was. Memory stays bounded by Max however much is written. It is
// safe for concurrent use.
type CappedBuffer struct {
	mu      sync.Mutex
	max     int
	head    []byte // the first headCap bytes
	tail    []byte // a ring of the last tailCap bytes once full
	pos     int    // next write position in tail once it is full
	full    bool   // tail has wrapped
	total   int64
	headCap int
	tailCap int
}

// NewCappedBuffer returns a buffer that keeps at most max bytes; max <= 0
// means DefaultMaxOutput.
func NewCappedBuffer(max int) *CappedBuffer {
	if max <= 0 {
		max = DefaultMaxOutput
	}
	h := max / 2
	return &CappedBuffer{max: max, headCap: h, tailCap: max - h}
}

// Write keeps what fits and counts the rest. It never fails.
func (b *CappedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := len(p)
	b.total += int64(n)
	if room := b.headCap - len(b.head); room > 0 {
		k := min(room, len(p))
		b.head = append(b.head, p[:k]...)
		p = p[k:]
	}
	if len(p) == 0 || b.tailCap == 0 {
		return n, nil
	}
	if !b.full {
		if len(b.tail)+len(p) <= b.tailCap {
			b.tail = append(b.tail, p...)
			return n, nil
		}
		// Grow to the cap, then wrap.
		grown := make([]byte, b.tailCap)
		copy(grown, b.tail)
		b.pos = len(b.tail)
		b.tail = grown
		b.full = true
	}
	if len(p) >= b.tailCap {
		copy(b.tail, p[len(p)-b.tailCap:])
		b.pos = 0
		return n, nil
	}
	k := copy(b.tail[b.pos:], p)
	if k < len(p) {
		copy(b.tail, p[k:])
	}
	b.pos = (b.pos + len(p)) % b.tailCap
	return n, nil
}

// Len is the number of bytes written so far, kept or not.
func (b *CappedBuffer) Len() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.total
}

// Truncated reports whether bytes were dropped.
func (b *CappedBuffer) Truncated() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.total > int64(len(b.head)+b.tailLen())
}

func (b *CappedBuffer) tailLen() int {
	if b.full {
		return b.tailCap
	}
	return len(b.tail)
}

// Bytes returns what was kept: everything when nothing was dropped,
// otherwise the head, the marker and the tail.
func (b *CappedBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	kept := len(b.head) + b.tailLen()
	dropped := b.total - int64(kept)
	out := make([]byte, 0, kept+64)
	out = append(out, b.head...)
	if dropped > 0 {
		out = fmt.Appendf(out, TruncationMarker, dropped)
	}
	if b.full {
		out = append(out, b.tail[b.pos:]...)
		out = append(out, b.tail[:b.pos]...)
	} else {
		out = append(out, b.tail...)
	}
	return out
}

// String is Bytes as a string.
func (b *CappedBuffer) String() string { return string(b.Bytes()) }

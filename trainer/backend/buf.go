package backend

import "fmt"

// Kind is what a buffer holds.
type Kind uint8

// The element kinds: F32 for everything numeric, I32 for token and row ids.
const (
	F32 Kind = iota
	I32
)

func (k Kind) String() string {
	if k == I32 {
		return "int32"
	}
	return "float32"
}

// Mem is one allocation a backend made (host memory for the CPU backend,
// device memory for a GPU one). Only its backend looks inside; everyone else
// holds Bufs into it.
type Mem interface {
	Len() int // elements
	Kind() Kind
}

// Buf is a window of n elements starting at element off of a backend's
// allocation: a parameter tensor inside the parameter arena, a layer's
// activations, a KV cache. A Buf is a small value: slicing it makes a view,
// never a copy. The zero Buf is "absent" (an optional output not wanted, a
// frozen parameter's missing gradient).
type Buf struct {
	mem    Mem
	off, n int
}

// Whole is a Buf over all of m; backends return it from Alloc.
func Whole(m Mem) Buf { return Buf{mem: m, n: m.Len()} }

// Mem is the allocation b views (nil for the zero Buf).
func (b Buf) Mem() Mem { return b.mem }

// Off is b's first element within its allocation.
func (b Buf) Off() int { return b.off }

// Len is b's number of elements.
func (b Buf) Len() int { return b.n }

// Nil reports the zero Buf.
func (b Buf) Nil() bool { return b.mem == nil }

// Kind is the element kind of b's allocation.
func (b Buf) Kind() Kind {
	if b.mem == nil {
		return F32
	}
	return b.mem.Kind()
}

// Slice is the view of n elements from off; it panics outside b.
func (b Buf) Slice(off, n int) Buf {
	if b.mem == nil {
		panic("backend: slice of an absent buffer")
	}
	if off < 0 || n < 0 || off+n > b.n {
		panic(fmt.Sprintf("backend: slice [%d, %d) outside a buffer of %d", off, off+n, b.n))
	}
	return Buf{mem: b.mem, off: b.off + off, n: n}
}

// Rows is the view of rows [r0, r1) of b seen as rows of width elements.
func (b Buf) Rows(r0, r1, width int) Buf { return b.Slice(r0*width, (r1-r0)*width) }

// Mat sees b as a row-major [r, c] matrix; b must hold exactly r·c elements.
func (b Buf) Mat(r, c int) Mat {
	Need(b, r*c, "matrix")
	return Mat{B: b, R: r, C: c, Ld: c}
}

// Mat is a row-major matrix view: R rows of C elements, row i starting at
// element i·Ld of B (Ld ≥ C; Ld > C selects a block of columns).
type Mat struct {
	B        Buf
	R, C, Ld int
}

// Cols is the view of columns [c0, c1) of m.
func (m Mat) Cols(c0, c1 int) Mat {
	if c0 < 0 || c1 < c0 || c1 > m.C {
		panic(fmt.Sprintf("backend: columns [%d, %d) outside a matrix of %d", c0, c1, m.C))
	}
	if m.R == 0 {
		return Mat{B: m.B, C: c1 - c0, Ld: m.Ld}
	}
	return Mat{B: m.B.Slice(c0, (m.R-1)*m.Ld+c1-c0), R: m.R, C: c1 - c0, Ld: m.Ld}
}

// Span is the number of elements of B the matrix reaches.
func (m Mat) Span() int {
	if m.R == 0 || m.C == 0 {
		return 0
	}
	return (m.R-1)*m.Ld + m.C
}

// Need panics unless b holds exactly n float32 elements: the loud failure
// of a mismatched shape (what says which operand).
func Need(b Buf, n int, what string) {
	if b.mem == nil {
		panic(fmt.Sprintf("backend: %s: absent buffer, want %d elements", what, n))
	}
	if b.n != n || b.mem.Kind() != F32 {
		panic(fmt.Sprintf("backend: %s: buffer of %d %s, want %d float32", what, b.n, b.mem.Kind(), n))
	}
}

// NeedIDs panics unless b holds exactly n int32 elements.
func NeedIDs(b Buf, n int, what string) {
	if b.mem == nil || b.n != n || b.mem.Kind() != I32 {
		panic(fmt.Sprintf("backend: %s: buffer of %d %s, want %d int32", what, b.n, b.Kind(), n))
	}
}

// Optional is Need for a buffer that may be absent.
func Optional(b Buf, n int, what string) {
	if !b.Nil() {
		Need(b, n, what)
	}
}

// CheckGemm returns the M, N, K of c[M,N] = op(a)[M,K]·op(b)[K,N] and panics
// when the three matrices do not fit together.
func CheckGemm(c, a Mat, ta bool, b Mat, tb bool) (M, N, K int) {
	M, K = a.R, a.C
	if ta {
		M, K = a.C, a.R
	}
	Kb, N := b.R, b.C
	if tb {
		Kb, N = b.C, b.R
	}
	if K != Kb || c.R != M || c.C != N {
		panic(fmt.Sprintf("backend: gemm: c[%d,%d] = a[%d,%d]%s · b[%d,%d]%s does not fit", c.R, c.C, a.R, a.C, tick(ta), b.R, b.C, tick(tb)))
	}
	for _, x := range []struct {
		m    Mat
		name string
	}{{a, "a"}, {b, "b"}, {c, "c"}} {
		if x.m.Ld < x.m.C || x.m.B.Nil() || x.m.Span() > x.m.B.Len() || x.m.B.Kind() != F32 {
			panic(fmt.Sprintf("backend: gemm: %s [%d,%d] with stride %d does not fit its buffer of %d", x.name, x.m.R, x.m.C, x.m.Ld, x.m.B.Len()))
		}
	}
	return M, N, K
}

func tick(t bool) string {
	if t {
		return "ᵀ"
	}
	return ""
}

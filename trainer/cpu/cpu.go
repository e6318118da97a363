// Package cpu is the trainer's CPU backend: it implements backend.Backend
// and backend.Trainer over buffers that wrap Go slices. Matrix products go
// to OpenBLAS's sgemm, loaded at run time through purego (no cgo) when
// Debian's libopenblas0-pthread (or any libopenblas.so.0) is installed, and
// to a register-blocked pure-Go kernel otherwise; NEXTSTATE_NO_BLAS=1 forces
// the latter. The other kernels are goroutine-parallel Go.
//
// Every kernel has a naive twin (naive.go) that states its formula in the
// plainest loops, computing in float64 and generic over float32 and float64
// so that its backward can be checked against finite differences in
// float64; the fast kernels are tested against the twins, and Naive is a
// backend made of them. Shapes follow the legend of trainer/backend.
//
// Determinism: with the same Workers (and OpenBLAS thread count), every
// kernel gives bit-identical results run after run: work is split into
// chunks that depend only on the sizes and Workers, and every sum over a
// split is reduced in a fixed order. A CPU value is safe for concurrent use
// on disjoint buffers; its kernels do not allocate in steady state except
// per-call goroutines and pooled scratch.
package cpu

import (
	"fmt"
	"runtime"
	"sync"

	"github.com/nextstate-rl/nextstate/trainer/backend"
)

// CPU runs the kernels with up to Workers goroutines.
type CPU struct {
	Workers int
	blas    *openBLAS
	scratch sync.Pool // *[]float32: attention rows, packed gemm panels
}

var (
	_ backend.Trainer = (*CPU)(nil)
	_ backend.Trainer = Naive{}
)

// New returns a CPU backend using GOMAXPROCS goroutines and OpenBLAS when found.
func New() *CPU {
	return &CPU{Workers: runtime.GOMAXPROCS(0), blas: loadBLAS()}
}

// NewPureGo returns a CPU backend that never calls OpenBLAS.
func NewPureGo() *CPU { return &CPU{Workers: runtime.GOMAXPROCS(0)} }

// Name says which matrix-product kernel runs: "cpu+openblas (path)" or "cpu+go".
func (c *CPU) Name() string {
	if c.blas != nil {
		return "cpu+openblas (" + c.blas.path + ")"
	}
	return "cpu+go"
}

// mem is an allocation: a float32 or an int32 slice.
type mem struct {
	f     []float32
	i     []int32
	kind  backend.Kind
	freed bool
}

func (m *mem) Len() int {
	if m.kind == backend.I32 {
		return len(m.i)
	}
	return len(m.f)
}

func (m *mem) Kind() backend.Kind { return m.kind }

// Host is the memory an allocation's view covers: the slice itself, not a
// copy. It is for this package's tests and for callers that know they hold
// CPU buffers; it panics on another backend's buffer.
func Host(b backend.Buf) []float32 { return f32(b) }

func cpuMem(b backend.Buf) *mem {
	m, ok := b.Mem().(*mem)
	if !ok {
		if b.Nil() {
			panic("cpu: absent buffer")
		}
		panic(fmt.Sprintf("cpu: buffer of another backend (%T)", b.Mem()))
	}
	if m.freed {
		panic("cpu: buffer used after Free")
	}
	return m
}

// f32 is the slice a float32 buffer views, capacity capped at its length.
func f32(b backend.Buf) []float32 {
	m := cpuMem(b)
	if m.kind != backend.F32 {
		panic("cpu: int32 buffer where float32 is needed")
	}
	o, n := b.Off(), b.Len()
	return m.f[o : o+n : o+n]
}

// i32 is the slice an int32 buffer views.
func i32(b backend.Buf) []int32 {
	m := cpuMem(b)
	if m.kind != backend.I32 {
		panic("cpu: float32 buffer where int32 is needed")
	}
	o, n := b.Off(), b.Len()
	return m.i[o : o+n : o+n]
}

// opt is f32 of an optional buffer: nil when absent.
func opt(b backend.Buf) []float32 {
	if b.Nil() {
		return nil
	}
	return f32(b)
}

// memory is the part of a backend that holds buffers; CPU and Naive share it.
type memory struct{}

func (memory) Alloc(n int) backend.Buf {
	return backend.Whole(&mem{f: make([]float32, n), kind: backend.F32})
}

func (memory) AllocIDs(n int) backend.Buf {
	return backend.Whole(&mem{i: make([]int32, n), kind: backend.I32})
}

func (memory) Free(b backend.Buf) {
	m := cpuMem(b)
	if b.Off() != 0 || b.Len() != m.Len() {
		panic("cpu: Free of a view; free what Alloc returned")
	}
	m.f, m.i, m.freed = nil, nil, true
}

func (memory) Write(dst backend.Buf, src []float32) {
	d := f32(dst)
	if len(src) != len(d) {
		panic(fmt.Sprintf("cpu: Write of %d values into a buffer of %d", len(src), len(d)))
	}
	copy(d, src)
}

func (memory) WriteIDs(dst backend.Buf, src []int32) {
	d := i32(dst)
	if len(src) != len(d) {
		panic(fmt.Sprintf("cpu: WriteIDs of %d ids into a buffer of %d", len(src), len(d)))
	}
	copy(d, src)
}

func (memory) Read(dst []float32, src backend.Buf) {
	s := f32(src)
	if len(dst) != len(s) {
		panic(fmt.Sprintf("cpu: Read of a buffer of %d into %d values", len(s), len(dst)))
	}
	copy(dst, s)
}

func (memory) ReadIDs(dst []int32, src backend.Buf) {
	s := i32(src)
	if len(dst) != len(s) {
		panic(fmt.Sprintf("cpu: ReadIDs of a buffer of %d into %d ids", len(s), len(dst)))
	}
	copy(dst, s)
}

func (memory) Copy(dst, src backend.Buf) {
	if src.Kind() == backend.I32 {
		s, d := i32(src), i32(dst)
		if len(s) != len(d) {
			panic(fmt.Sprintf("cpu: Copy of %d ids into %d", len(s), len(d)))
		}
		copy(d, s)
		return
	}
	s, d := f32(src), f32(dst)
	if len(s) != len(d) {
		panic(fmt.Sprintf("cpu: Copy of %d values into %d", len(s), len(d)))
	}
	copy(d, s)
}

func (memory) Zero(b backend.Buf) {
	if b.Kind() == backend.I32 {
		clear(i32(b))
		return
	}
	clear(f32(b))
}

// Alloc and the other memory methods are memory's (CPU and Naive share them).
func (c *CPU) Alloc(n int) backend.Buf               { return memory{}.Alloc(n) }
func (c *CPU) AllocIDs(n int) backend.Buf            { return memory{}.AllocIDs(n) }
func (c *CPU) Free(b backend.Buf)                    { memory{}.Free(b) }
func (c *CPU) Write(dst backend.Buf, src []float32)  { memory{}.Write(dst, src) }
func (c *CPU) WriteIDs(dst backend.Buf, src []int32) { memory{}.WriteIDs(dst, src) }
func (c *CPU) Read(dst []float32, src backend.Buf)   { memory{}.Read(dst, src) }
func (c *CPU) ReadIDs(dst []int32, src backend.Buf)  { memory{}.ReadIDs(dst, src) }
func (c *CPU) Copy(dst, src backend.Buf)             { memory{}.Copy(dst, src) }
func (c *CPU) Zero(b backend.Buf)                    { memory{}.Zero(b) }

// parallel calls fn over [0,n) in at most Workers contiguous chunks, each at
// least grain long, and returns when all are done. The chunks depend only on
// n, grain and Workers.
func (c *CPU) parallel(n, grain int, fn func(lo, hi int)) {
	c.parallelChunks(n, grain, func(_, lo, hi int) { fn(lo, hi) })
}

// parallelChunks is parallel that also tells fn its chunk's index, and
// returns the number of chunks (for reductions in a fixed order).
func (c *CPU) parallelChunks(n, grain int, fn func(i, lo, hi int)) int {
	w := min(c.Workers, (n+grain-1)/grain)
	if w <= 1 {
		fn(0, 0, n)
		return 1
	}
	var wg sync.WaitGroup
	chunk := (n + w - 1) / w
	k := 1
	for lo := chunk; lo < n; lo += chunk {
		wg.Add(1)
		go func(i, lo int) {
			defer wg.Done()
			fn(i, lo, min(lo+chunk, n))
		}(k, lo)
		k++
	}
	fn(0, 0, min(chunk, n))
	wg.Wait()
	return k
}

// maxChunks bounds parallelChunks' count, to size per-chunk partials.
func (c *CPU) maxChunks() int { return max(c.Workers, 1) }

// getScratch returns a pooled float32 slice of length n (contents undefined).
func (c *CPU) getScratch(n int) *[]float32 {
	sp, _ := c.scratch.Get().(*[]float32)
	if sp == nil {
		sp = new([]float32)
	}
	if cap(*sp) < n {
		*sp = make([]float32, n+n/4)
	}
	*sp = (*sp)[:n]
	return sp
}

func (c *CPU) putScratch(sp *[]float32) { c.scratch.Put(sp) }

package cpu

import (
	"os"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

// The CBLAS enum values of the one call used here.
const (
	cblasRowMajor = 101
	cblasNoTrans  = 111
	cblasTrans    = 112
)

// openBLAS is OpenBLAS's sgemm, loaded at run time (no cgo): nil when the
// library is absent or NEXTSTATE_NO_BLAS is set.
type openBLAS struct {
	path string
	// threads is the library's own thread count: 1 when
	// openblas_set_num_threads exists, since the backend splits each
	// product over its Workers itself (OpenBLAS's idle threads would
	// otherwise spin between products, taking the cores from the other
	// kernels).
	threads int
	sgemm   func(order, transA, transB, m, n, k int32, alpha float32, a unsafe.Pointer, lda int32, b unsafe.Pointer, ldb int32, beta float32, c unsafe.Pointer, ldc int32)
}

// blasPaths are tried in order: Debian's libopenblas0-pthread, then whatever
// the dynamic loader finds.
var blasPaths = []string{
	"/usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblas.so.0",
	"/usr/lib/aarch64-linux-gnu/openblas-pthread/libopenblas.so.0",
	"libopenblas.so.0",
	"libopenblas.so",
}

var (
	blasOnce sync.Once
	blasLib  *openBLAS
)

// loadBLAS finds OpenBLAS once per process.
func loadBLAS() *openBLAS {
	blasOnce.Do(func() {
		if os.Getenv("NEXTSTATE_NO_BLAS") != "" {
			return
		}
		for _, p := range blasPaths {
			h, err := purego.Dlopen(p, purego.RTLD_NOW|purego.RTLD_LOCAL)
			if err != nil {
				continue
			}
			sym, err := purego.Dlsym(h, "cblas_sgemm")
			if err != nil {
				purego.Dlclose(h)
				continue
			}
			b := &openBLAS{path: p, threads: 0}
			purego.RegisterFunc(&b.sgemm, sym)
			if set, err := purego.Dlsym(h, "openblas_set_num_threads"); err == nil {
				var setThreads func(int32)
				purego.RegisterFunc(&setThreads, set)
				setThreads(1)
				b.threads = 1
			}
			blasLib = b
			return
		}
	})
	return blasLib
}

// gemm computes c = alpha·op(a)·op(b) + beta·c with sgemm, row-major with
// leading dimensions lda, ldb, ldc.
func (b *openBLAS) gemm(ta, tb bool, M, N, K int, alpha float32, a []float32, lda int, x []float32, ldb int, beta float32, c []float32, ldc int) {
	tA, tB := int32(cblasNoTrans), int32(cblasNoTrans)
	if ta {
		tA = cblasTrans
	}
	if tb {
		tB = cblasTrans
	}
	b.sgemm(cblasRowMajor, tA, tB, int32(M), int32(N), int32(K), alpha,
		unsafe.Pointer(&a[0]), int32(lda), unsafe.Pointer(&x[0]), int32(ldb), beta, unsafe.Pointer(&c[0]), int32(ldc))
}

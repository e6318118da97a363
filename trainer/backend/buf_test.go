package backend

import (
	"strings"
	"testing"
)

// mem is a host allocation for the tests.
type mem struct{ n int }

func (m mem) Len() int   { return m.n }
func (m mem) Kind() Kind { return F32 }

func mustPanic(t *testing.T, want string, fn func()) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		if s, _ := r.(string); !strings.Contains(s, want) {
			t.Fatalf("panic %v, want one saying %q", r, want)
		}
	}()
	fn()
}

func TestViews(t *testing.T) {
	b := Whole(mem{24})
	v := b.Slice(4, 12)
	if v.Off() != 4 || v.Len() != 12 || v.Slice(2, 3).Off() != 6 {
		t.Fatalf("slice: %+v", v)
	}
	if r := b.Rows(1, 3, 6); r.Off() != 6 || r.Len() != 12 {
		t.Fatalf("rows: %+v", r)
	}
	m := b.Mat(4, 6).Cols(2, 5)
	if m.R != 4 || m.C != 3 || m.Ld != 6 || m.B.Off() != 2 || m.Span() != 21 {
		t.Fatalf("cols: %+v", m)
	}
	mustPanic(t, "outside", func() { v.Slice(10, 3) })
	mustPanic(t, "absent", func() { Buf{}.Slice(0, 0) })
	mustPanic(t, "want 20", func() { b.Mat(4, 5) })
	mustPanic(t, "columns", func() { b.Mat(4, 6).Cols(4, 7) })
}

func TestCheckGemm(t *testing.T) {
	a, b, c := Whole(mem{6}).Mat(2, 3), Whole(mem{12}).Mat(4, 3), Whole(mem{8}).Mat(2, 4)
	if M, N, K := CheckGemm(c, a, false, b, true); M != 2 || N != 4 || K != 3 {
		t.Fatalf("M, N, K = %d, %d, %d", M, N, K)
	}
	mustPanic(t, "does not fit", func() { CheckGemm(c, a, false, b, false) })
	mustPanic(t, "does not fit", func() { CheckGemm(c, a, true, b, true) })
}

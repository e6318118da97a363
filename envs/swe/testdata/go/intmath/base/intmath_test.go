package intmath

import "testing"

func TestAbs(t *testing.T) {
	for _, c := range []struct{ in, want int }{{3, 3}, {-4, 4}, {0, 0}} {
		if got := Abs(c.in); got != c.want {
			t.Errorf("Abs(%d) = %d, want %d", c.in, got, c.want)
		}
	}
}

func TestClamp(t *testing.T) {
	t.Run("below", func(t *testing.T) {
		if got := Clamp(-5, 0, 10); got != 0 {
			t.Errorf("Clamp(-5, 0, 10) = %d, want 0", got)
		}
	})
	t.Run("inside", func(t *testing.T) {
		if got := Clamp(7, 0, 10); got != 7 {
			t.Errorf("Clamp(7, 0, 10) = %d, want 7", got)
		}
	})
}

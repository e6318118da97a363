package strs

import "testing"

func TestReverseASCII(t *testing.T) {
	if got := Reverse("abc"); got != "cba" {
		t.Errorf("Reverse(abc) = %q", got)
	}
}

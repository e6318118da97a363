package util

import "testing"

func TestDouble(t *testing.T) {
	if Double(2) != 4 {
		t.Fatal("Double(2) != 4")
	}
}

// TestShared has the name of a test of package calc.
func TestShared(t *testing.T) {}

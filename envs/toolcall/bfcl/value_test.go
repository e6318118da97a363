package bfcl

import (
	"math"
	"testing"
)

func TestStandardize(t *testing.T) {
	for in, want := range map[string]string{
		"San Francisco, CA": "sanfranciscoca",
		"April 1, 2024":     "april12024",
		"New_York-City./*^": "newyorkcity",
		"it's":              `it"s`,
	} {
		if got := standardize(in); got != want {
			t.Errorf("standardize(%q) = %q; want %q", in, got, want)
		}
	}
}

func TestPyIntAndFloat(t *testing.T) {
	for s, want := range map[string]int64{"42": 42, " -7 ": -7, "+3": 3, "1_000": 1000, "007": 7} {
		if v, ok := pyInt(s); !ok || v != want {
			t.Errorf("int(%q) = %v, %v; want %d", s, v, ok, want)
		}
	}
	for _, s := range []string{"", "1.0", "1_", "_1", "1__0", "0x10", "abc"} {
		if _, ok := pyInt(s); ok {
			t.Errorf("int(%q): want ValueError", s)
		}
	}
	for s, want := range map[string]float64{"1.5": 1.5, " 2 ": 2, "1e3": 1000, ".5": 0.5, "5.": 5, "-1_0.5": -10.5} {
		if v, ok := pyFloat(s); !ok || v != want {
			t.Errorf("float(%q) = %v, %v; want %v", s, v, ok, want)
		}
	}
	if v, ok := pyFloat("-Infinity"); !ok || !math.IsInf(v, -1) {
		t.Errorf("float('-Infinity') = %v, %v", v, ok)
	}
	for _, s := range []string{"", "1.5f", "0x1p3", "1e", "--1", "in f"} {
		if _, ok := pyFloat(s); ok {
			t.Errorf("float(%q): want ValueError", s)
		}
	}
}

package pyval

import (
	"math"
	"testing"
)

// Floats are written as Python's repr writes them, strings as json.dumps.
func TestPythonFormatting(t *testing.T) {
	for f, want := range map[float64]string{
		100: "100.0", 0.30000000000000004: "0.30000000000000004", 1e-05: "1e-05", 0.0001: "0.0001", 1e16: "1e+16",
		1234567890123456: "1234567890123456.0", 1.5e300: "1.5e+300", -0.5: "-0.5", math.Copysign(0, -1): "-0.0",
		123.45: "123.45", 5e-324: "5e-324", math.Inf(1): "inf",
	} {
		if got := FloatRepr(f); got != want {
			t.Errorf("repr(%v) = %q, want %q", f, got, want)
		}
	}
	for f, want := range map[float64]float64{2.675: 2.67, 0.125: 0.12, 0.375: 0.38, 1.005: 1, -0.001: math.Copysign(0, -1), 1e20: 1e20} {
		if got := Round2(f); !SameFloat(got, want) {
			t.Errorf("round(%v, 2) = %v, want %v", f, got, want)
		}
	}
	if got, want := string(AppendString(nil, "a\"\\/\n\t\x01\x7fé😀<>&")), `"a\"\\/\n\t\u0001\u007f\u00e9\ud83d\ude00<>&"`; got != want {
		t.Errorf("string: %s, want %s", got, want)
	}
}

// Lower is Python's str.lower, which differs from Go's for 'İ' and a final
// 'Σ'; Quote is Python's repr of a str.
func TestLowerAndQuote(t *testing.T) {
	for s, want := range map[string]string{
		"John SMITH": "john smith", "İstanbul": "i\u0307stanbul", "ΟΔΟΣ": "\u03bf\u03b4\u03bf\u03c2",
		"ΟΔΟΣ ΟΔΟΣ.": "\u03bf\u03b4\u03bf\u03c2 \u03bf\u03b4\u03bf\u03c2.", "Σ": "\u03c3", "AΣb": "a\u03c3b",
		"AΣ'": "a\u03c2'", "ΣA": "\u03c3a", "ÉCOLE": "école",
	} {
		if got := Lower(s); got != want {
			t.Errorf("Lower(%q) = %q, want %q", s, got, want)
		}
	}
	for s, want := range map[string]string{
		"sms": "'sms'", "it's": `"it's"`, `a'b"c`: `'a\'b"c'`, "tab\there\n": `'tab\there\n'`, "\x00é\u200b😀": `'\x00é\u200b😀'`, "\x7f\u00a0": `'\x7f\xa0'`,
	} {
		if got := Quote(s); got != want {
			t.Errorf("Quote(%q) = %s, want %s", s, got, want)
		}
	}
}

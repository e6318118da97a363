package bfcl

import (
	"math"
	"math/big"
	"strings"
	"testing"
)

func mustDecode(t *testing.T, s string) any {
	t.Helper()
	v, err := decodeJSON([]byte(s))
	if err != nil {
		t.Fatalf("decode %s: %v", s, err)
	}
	return v
}

func TestDecodeKeepsPythonTypesAndOrder(t *testing.T) {
	v := mustDecode(t, `{"b": 5, "a": 5.0, "c": 1e2, "d": [true, null, "x\u00e9\ud83d\ude00"], "b": 7, "big": 123456789012345678901234567890}`)
	d := v.(*Dict)
	if got := strings.Join(d.Keys, ","); got != "b,a,c,d,big" {
		t.Errorf("keys %s; want b,a,c,d,big (a repeated key keeps its first place)", got)
	}
	if d.Value("b") != int64(7) {
		t.Errorf("b = %#v; want the last value, int 7", d.Value("b"))
	}
	if kindOf(d.Value("a")) != kFloat || kindOf(d.Value("c")) != kFloat {
		t.Errorf("5.0 and 1e2 must decode as floats: %#v %#v", d.Value("a"), d.Value("c"))
	}
	if s := d.Value("d").([]any)[2]; s != "xé😀" {
		t.Errorf("escapes: %q", s)
	}
	if b, ok := d.Value("big").(*big.Int); !ok || b.String() != "123456789012345678901234567890" {
		t.Errorf("big int: %#v", d.Value("big"))
	}
	if got := toJSON(d); got != `{"b": 7, "a": 5.0, "c": 100.0, "d": [true, null, "xé😀"], "big": 123456789012345678901234567890}` {
		t.Errorf("encode: %s", got)
	}
}

func TestDecodeRejectsBadJSON(t *testing.T) {
	for _, s := range []string{``, `{`, `{"a":1,}`, `[1 2]`, `{"a" 1}`, `01`, `1.`, `.5`, `-`, `1e`, `"a` + "\x01" + `"`, `"\x"`, `{"a":1} x`, `tru`, `NaN`, `{'a': 1}`} {
		if _, err := decodeJSON([]byte(s)); err == nil {
			t.Errorf("decode %q: want an error", s)
		}
	}
	for _, s := range []string{` {} `, `[]`, `-0`, `0.5e-3`, `"\/\b\f\n\r\t"`, `1E+2`} {
		if _, err := decodeJSON([]byte(s)); err != nil {
			t.Errorf("decode %q: %v", s, err)
		}
	}
}

func TestFloatRepr(t *testing.T) {
	for f, want := range map[float64]string{
		5: "5.0", 0.1: "0.1", 1e16: "1e+16", 1e15: "1000000000000000.0", 1e-5: "1e-05",
		0.0001: "0.0001", -2.5: "-2.5", 123456.789: "123456.789", math.Inf(1): "inf",
	} {
		if got := floatRepr(f); got != want {
			t.Errorf("floatRepr(%v) = %s; want %s", f, got, want)
		}
	}
}

func TestPyEq(t *testing.T) {
	eq := [][2]any{
		{int64(1), 1.0}, {true, int64(1)}, {false, 0.0}, {"a", "a"}, {nil, nil},
		{[]any{int64(1), "x"}, []any{1.0, "x"}},
		{dictOf("a", int64(1), "b", "x"), dictOf("b", "x", "a", 1.0)},
		{new(big.Int).Lsh(big.NewInt(1), 70), math.Ldexp(1, 70)},
	}
	for _, p := range eq {
		if !pyEq(p[0], p[1]) {
			t.Errorf("%s == %s: want true", pyRepr(p[0]), pyRepr(p[1]))
		}
	}
	ne := [][2]any{
		{int64(1), "1"}, {"a", "A"}, {nil, ""}, {[]any{int64(1)}, []any{int64(1), int64(2)}},
		{dictOf("a", int64(1)), dictOf("a", int64(2))}, {1.5, int64(1)}, {math.NaN(), math.NaN()},
	}
	for _, p := range ne {
		if pyEq(p[0], p[1]) {
			t.Errorf("%s == %s: want false", pyRepr(p[0]), pyRepr(p[1]))
		}
	}
}

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

package pyval

import (
	"math"
	"math/big"
	"strings"
	"testing"
)

func dictOf(kv ...any) *Dict {
	d := NewDict()
	for i := 0; i < len(kv); i += 2 {
		d.Set(kv[i].(string), kv[i+1])
	}
	return d
}

func mustDecode(t *testing.T, s string) any {
	t.Helper()
	v, err := Decode([]byte(s))
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
	if _, ok := d.Value("a").(float64); !ok {
		t.Errorf("5.0 must decode as a float: %#v", d.Value("a"))
	}
	if _, ok := d.Value("c").(float64); !ok {
		t.Errorf("5.0 and 1e2 must decode as floats: %#v %#v", d.Value("a"), d.Value("c"))
	}
	if s := d.Value("d").([]any)[2]; s != "xé😀" {
		t.Errorf("escapes: %q", s)
	}
	if b, ok := d.Value("big").(*big.Int); !ok || b.String() != "123456789012345678901234567890" {
		t.Errorf("big int: %#v", d.Value("big"))
	}
	if got := Dumps(d); got != `{"b": 7, "a": 5.0, "c": 100.0, "d": [true, null, "x\u00e9\ud83d\ude00"], "big": 123456789012345678901234567890}` {
		t.Errorf("encode: %s (want json.dumps's, ensure_ascii)", got)
	}
}

func TestDecodeRejectsBadJSON(t *testing.T) {
	for _, s := range []string{``, `{`, `{"a":1,}`, `[1 2]`, `{"a" 1}`, `01`, `1.`, `.5`, `-`, `1e`, `"a` + "\x01" + `"`, `"\x"`, `{"a":1} x`, `tru`, `NaN`, `{'a': 1}`} {
		if _, err := Decode([]byte(s)); err == nil {
			t.Errorf("decode %q: want an error", s)
		}
	}
	for _, s := range []string{` {} `, `[]`, `-0`, `0.5e-3`, `"\/\b\f\n\r\t"`, `1E+2`} {
		if _, err := Decode([]byte(s)); err != nil {
			t.Errorf("decode %q: %v", s, err)
		}
	}
}

func TestFloatReprValues(t *testing.T) {
	for f, want := range map[float64]string{
		5: "5.0", 0.1: "0.1", 1e16: "1e+16", 1e15: "1000000000000000.0", 1e-5: "1e-05",
		0.0001: "0.0001", -2.5: "-2.5", 123456.789: "123456.789", math.Inf(1): "inf",
	} {
		if got := FloatRepr(f); got != want {
			t.Errorf("FloatRepr(%v) = %s; want %s", f, got, want)
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
		if !Eq(p[0], p[1]) {
			t.Errorf("%s == %s: want true", Repr(p[0]), Repr(p[1]))
		}
	}
	ne := [][2]any{
		{int64(1), "1"}, {"a", "A"}, {nil, ""}, {[]any{int64(1)}, []any{int64(1), int64(2)}},
		{dictOf("a", int64(1)), dictOf("a", int64(2))}, {1.5, int64(1)}, {math.NaN(), math.NaN()},
	}
	for _, p := range ne {
		if Eq(p[0], p[1]) {
			t.Errorf("%s == %s: want false", Repr(p[0]), Repr(p[1]))
		}
	}
}

package bfcl

import (
	"testing"

	"github.com/nextstate-rl/nextstate/envs/internal/pyval"
)

// converted runs a converter, turning a raised Python exception into ok=false.
func converted(f func() any) (v any, ok bool) {
	defer func() {
		if r := recover(); r != nil {
			if _, isPy := r.(pyException); !isPy {
				panic(r)
			}
			ok = false
		}
	}()
	return f(), true
}

// same is equality with the same Python types, element by element.
func same(a, b any) bool {
	if kindOf(a) != kindOf(b) {
		return false
	}
	switch x := a.(type) {
	case []any:
		y := b.([]any)
		if len(x) != len(y) {
			return false
		}
		for i := range x {
			if !same(x[i], y[i]) {
				return false
			}
		}
		return true
	case *Dict:
		y := b.(*Dict)
		if x.Len() != y.Len() {
			return false
		}
		for i, k := range x.Keys {
			w, ok := y.Get(k)
			if !ok || !same(x.Vals[i], w) {
				return false
			}
		}
		return true
	}
	return pyval.Eq(a, b)
}

func TestJavaConvert(t *testing.T) {
	for _, c := range []struct {
		in, typ, nested string
		want            any
	}{
		{"42", "integer", "", int64(42)},
		{"-7", "short", "", int64(-7)},
		{"42L", "integer", "", "42L"}, // not an int: stays the text
		{"42L", "long", "", int64(42)},
		{"42", "long", "", "42"},
		{"1.5f", "float", "", 1.5},
		{"2e3F", "float", "", 2000.0},
		{"1.5", "float", "", "1.5"},
		{"0.25", "double", "", 0.25},
		{"3", "double", "", 3.0},
		{"true", "boolean", "", true},
		{"True", "boolean", "", "True"},
		{"'a'", "char", "", "'a'"},
		{"hello world", "String", "", "hello world"},
		{`"quoted"`, "String", "", `"quoted"`},
		{"myVar", "any", "", "myVar"},
		{"new int[]{1, 2, 3}", "Array", "integer", []any{int64(1), int64(2), int64(3)}},
		{"new int[] { }", "Array", "integer", []any{}},
		{"new String[]{a, b}", "Array", "String", []any{"a", "b"}},
		{`new String[]{"a"}`, "Array", "String", []any{`"a"`}}, // Array elements keep their quotes
		{"new long[]{1L, 2, 3L}", "Array", "long", []any{int64(1), "2", int64(3)}},
		{"args", "Array", "String", "args"},
		{`new ArrayList<>(Arrays.asList("a", "b"))`, "ArrayList", "String", []any{"a", "b"}},
		{`new ArrayList<Integer>(Arrays.asList(1, 2))`, "ArrayList", "integer", []any{int64(1), int64(2)}},
		{"new ArrayList<Long>() {{ add(5L); add(6L); }}", "ArrayList", "long", []any{int64(5), int64(6)}},
		{"new ArrayList<>()", "ArrayList", "String", []any{}},
		{`new ArrayList<>(Arrays.asList(1, "x", true))`, "ArrayList", "any", []any{"1", `"x"`, "true"}},
		{`new HashMap<String, Object>() {{ put("k", 1); put("s", "v"); put("b", false); put("f", 2.5f); }}`, "HashMap", "",
			dictOf("k", int64(1), "s", "v", "b", false, "f", 2.5)},
		{"new HashMap<>()", "HashMap", "", NewDict()},
		{"new HashMap<String, String>() {{}}", "HashMap", "", NewDict()},
		{"props", "HashMap", "", "props"},
	} {
		got, ok := converted(func() any { return javaConvert(c.in, c.typ, c.nested) })
		if !ok || !same(got, c.want) {
			t.Errorf("java %s %q (items %s) = %s (ok %v); want %s", c.typ, c.in, c.nested, pyval.Repr(got), ok, pyval.Repr(c.want))
		}
	}
	for _, typ := range []string{"Set", "Queue", "Object"} {
		if _, ok := converted(func() any { return javaConvert("x", typ, "") }); ok {
			t.Errorf("java %s: want an exception, as BFCL raises", typ)
		}
	}
}

func TestJSConvert(t *testing.T) {
	for _, c := range []struct {
		in, typ, nested string
		want            any
	}{
		{`"abc"`, "String", "", "abc"},
		{`'abc'`, "String", "", "abc"},
		{`abc`, "String", "", "abc"},
		{"12", "integer", "", int64(12)},
		{"12.0", "integer", "", "12.0"},
		{"3.5", "float", "", 3.5},
		{"3", "float", "", 3.0},
		{"1e3", "float", "", "1e3"},
		{"10n", "Bigint", "", int64(10)},
		{"false", "Boolean", "", false},
		{"[1, 2, 3]", "array", "integer", []any{int64(1), int64(2), int64(3)}},
		{"new Array(1.5, 2)", "array", "float", []any{1.5, 2.0}},
		{`["a", 'b', c]`, "array", "String", []any{"a", "b", "c"}},
		{"[]", "array", "String", []any{}},
		{`[1, "two", true]`, "array", "", []any{int64(1), "two", true}},
		{"[[1, 2], [3, 4]]", "array", "array", []any{[]any{int64(1), int64(2)}, []any{int64(3), int64(4)}}},
		{"myList", "array", "String", "myList"},
		{"{}", "dict", "", NewDict()},
		{"{key: 'value', n: 3, ok: true}", "dict", "", dictOf("key", "value", "n", int64(3), "ok", true)},
		{`{"a": ["x", "y"], b: obj}`, "dict", "", dictOf("a", []any{"x", "y"}, "b", "obj")},
		{"{url: 'http://x.org/a', t: 5}", "dict", "", dictOf("url", "http://x.org/a", "t", int64(5))},
		{"state", "dict", "", "state"},
	} {
		got, ok := converted(func() any { return jsConvert(c.in, c.typ, c.nested) })
		if !ok || !same(got, c.want) {
			t.Errorf("js %s %q (items %s) = %s (ok %v); want %s", c.typ, c.in, c.nested, pyval.Repr(got), ok, pyval.Repr(c.want))
		}
	}
}

// TestJSPairs checks the object splitter against what BFCL's pattern
// finds: a value runs to the comma after which another key: follows.
func TestJSPairs(t *testing.T) {
	for in, want := range map[string][][2]string{
		"a: 1, b: 2":               {{"a", "1"}, {"b", "2"}},
		"a: x, y, b: 2":            {{"a", "x, y"}, {"b", "2"}},
		"u: 'http://h', n:1":       {{"u", "'http://h'"}, {"n", "1"}},
		"a:1,,b:2":                 {{"a", "1,"}, {"b", "2"}},
		"::a: 1":                   {{"a", "1"}},
		"no colon":                 nil,
		"a: [1, 2], b: {c: 3":      {{"a", "[1, 2]"}, {"b", "{c: 3"}},
		"a: 1,   :b: 2":            {{"a", "1"}, {"b", "2"}},
		"k:  v":                    {{"k", "v"}},
		"x: 1, y:":                 {{"x", "1"}, {"y", ""}},
		`"q": "a, b", "r": "c"`:    {{`"q"`, `"a, b"`}, {`"r"`, `"c"`}},
		"a: 1 , b: 2":              {{"a", "1 "}, {"b", "2"}},
		"first: a, second b: c, d": {{"first", "a"}, {"second b", "c, d"}},
	} {
		got := jsPairs(in)
		if len(got) != len(want) {
			t.Errorf("jsPairs(%q) = %q; want %q", in, got, want)
			continue
		}
		for i := range got {
			if got[i] != want[i] {
				t.Errorf("jsPairs(%q) = %q; want %q", in, got, want)
				break
			}
		}
	}
}

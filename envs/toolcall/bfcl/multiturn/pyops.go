package multiturn

import (
	"math/big"
	"slices"
	"strings"

	"github.com/nextstate-rl/nextstate/envs/internal/pyval"
)

// Python's operations on values of any type, with the TypeErrors Python
// raises when an argument of the wrong type reaches them (a model may pass
// a string where the class expects an int; the class then fails as its
// Python original does).

// TypeName is type(v).__name__.
func TypeName(v any) string {
	switch v.(type) {
	case nil:
		return "NoneType"
	case bool:
		return "bool"
	case int64, *big.Int:
		return "int"
	case float64:
		return "float"
	case string:
		return "str"
	case []any:
		return "list"
	case *pyval.Dict:
		return "dict"
	}
	return "object"
}

// Truthy is bool(v).
func Truthy(v any) bool {
	switch t := v.(type) {
	case nil:
		return false
	case bool:
		return t
	case int64:
		return t != 0
	case *big.Int:
		return t.Sign() != 0
	case float64:
		return t != 0
	case string:
		return t != ""
	case []any:
		return len(t) > 0
	case *pyval.Dict:
		return t.Len() > 0
	}
	return true
}

// Compare is a < b, a <= b, a > b or a >= b (op "<", "<=", ">", ">="):
// numbers by value, strings by code point, lists element-wise; other
// pairs raise TypeError as Python does.
func Compare(op string, a, b any) (bool, error) {
	if isNaN(a) && isNum(b) || isNaN(b) && isNum(a) {
		return false, nil // every comparison with a NaN is false
	}
	c, ok := order(a, b)
	if !ok {
		return false, raiseKind("TypeError", "%s not supported between instances of %s and %s", pyval.Quote(op), pyval.Quote(TypeName(a)), pyval.Quote(TypeName(b)))
	}
	switch op {
	case "<":
		return c < 0, nil
	case "<=":
		return c <= 0, nil
	case ">":
		return c > 0, nil
	}
	return c >= 0, nil
}

// order is the ordering of two comparable values.
func order(a, b any) (int, bool) {
	if isNum(a) && isNum(b) {
		fa, fb := num(a), num(b)
		switch {
		case fa.Cmp(fb) < 0:
			return -1, true
		case fa.Cmp(fb) > 0:
			return 1, true
		}
		return 0, true
	}
	switch x := a.(type) {
	case string:
		y, ok := b.(string)
		if !ok {
			return 0, false
		}
		switch {
		case x < y:
			return -1, true
		case x > y:
			return 1, true
		}
		return 0, true
	case []any:
		y, ok := b.([]any)
		if !ok {
			return 0, false
		}
		for i := 0; i < len(x) && i < len(y); i++ {
			if pyval.Eq(x[i], y[i]) {
				continue
			}
			return order(x[i], y[i])
		}
		return len(x) - len(y), true
	}
	return 0, false
}

func isNaN(v any) bool {
	f, ok := v.(float64)
	return ok && f != f
}

func isNum(v any) bool {
	switch v.(type) {
	case bool, int64, *big.Int, float64:
		return true
	}
	return false
}

// num is a number as an exact big.Float (not NaN: Compare handles it).
func num(v any) *big.Float {
	if f, ok := v.(float64); ok {
		return new(big.Float).SetFloat64(f)
	}
	return new(big.Float).SetInt(pyval.BigOf(v))
}

// Str is str(v) as an f-string writes a value: a string itself, anything
// else its repr.
func Str(v any) string { return pyval.Str(v) }

// dictOf is the dict display {k1: v1, k2: v2, ...}, its str keys and
// values given in turn.
func dictOf(kv ...any) *pyval.Dict {
	d := pyval.NewDict()
	for i := 0; i+1 < len(kv); i += 2 {
		d.Set(kv[i].(string), kv[i+1])
	}
	return d
}

// errDict is {"error": msg}.
func errDict(msg string) *pyval.Dict { return dictOf("error", msg) }

// noAttr is the AttributeError of v.attr where v's type has no attr.
func noAttr(v any, attr string) error {
	return raiseKind("AttributeError", "%s object has no attribute %s", pyval.Quote(TypeName(v)), pyval.Quote(attr))
}

// getItem is v[key] for a str key: a dict's value (KeyError when
// missing), the TypeError of a str, a list or anything else.
func getItem(v any, key string) (any, error) {
	switch t := v.(type) {
	case *pyval.Dict:
		if x, ok := t.Get(key); ok {
			return x, nil
		}
		return nil, KeyError(key)
	case string:
		return nil, raiseKind("TypeError", "string indices must be integers, not 'str'")
	case []any:
		return nil, raiseKind("TypeError", "list indices must be integers or slices, not str")
	}
	return nil, raiseKind("TypeError", "%s object is not subscriptable", pyval.Quote(TypeName(v)))
}

// iterate is the items iter(v) gives (what a for loop over v visits): a
// list's elements, a str's characters, a dict's keys.
func iterate(v any) ([]any, error) {
	switch t := v.(type) {
	case []any:
		return t, nil
	case string:
		var out []any
		for _, r := range t {
			out = append(out, string(r))
		}
		return out, nil
	case *pyval.Dict:
		out := make([]any, len(t.Keys))
		for i, k := range t.Keys {
			out[i] = k
		}
		return out, nil
	}
	return nil, raiseKind("TypeError", "%s object is not iterable", pyval.Quote(TypeName(v)))
}

// indexOf is the index of the first element of l == x, or -1: list's
// `in`, index and remove.
func indexOf(l []any, x any) int {
	return slices.IndexFunc(l, func(e any) bool { return pyval.Eq(e, x) })
}

// contains is `item in container`: a substring of a str (item must be a
// str), an element == item of a list, a key of a dict (item must be
// hashable); any other container is not iterable.
func contains(container, item any) (bool, error) {
	switch t := container.(type) {
	case string:
		s, ok := item.(string)
		if !ok {
			return false, raiseKind("TypeError", "'in <string>' requires string as left operand, not %s", TypeName(item))
		}
		return strings.Contains(t, s), nil
	case []any:
		return indexOf(t, item) >= 0, nil
	case *pyval.Dict:
		return dictHas(t, item)
	}
	return false, raiseKind("TypeError", "argument of type %s is not iterable", pyval.Quote(TypeName(container)))
}

// lower is v.lower() (an AttributeError for a v that is no str).
func lower(v any) (string, error) {
	s, ok := v.(string)
	if !ok {
		return "", noAttr(v, "lower")
	}
	return pyval.Lower(s), nil
}

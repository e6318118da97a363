package multiturn

import (
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/nextstate-rl/nextstate/envs/internal/pyval"
)

// TwitterAPI's helpers: Python's operations on values of any type, as its
// methods use them, with the errors Python raises.

// twKey is a dict key as a string: a str is itself; None, bools, ints and
// floats are "\xff" (a byte no UTF-8 string holds) and a canonical
// number, the same for numbers Python finds equal (1, 1.0, True); a list
// or dict is Python's TypeError.
func twKey(k any) (string, error) {
	const tag = "\xff"
	switch v := k.(type) {
	case string:
		return v, nil
	case nil:
		return tag + "None", nil
	case bool:
		if v {
			return tag + "1", nil
		}
		return tag + "0", nil
	case int64:
		return tag + strconv.FormatInt(v, 10), nil
	case *big.Int:
		return tag + v.String(), nil
	case float64:
		if !math.IsInf(v, 0) && v == math.Trunc(v) {
			i, _ := new(big.Float).SetFloat64(v).Int(nil)
			return tag + i.String(), nil
		}
		return tag + pyval.FloatRepr(v), nil
	}
	return "", Raise("unhashable type: %s", pyval.Quote(TypeName(k)))
}

// twIntKey is twKey(int(s)) for a loaded tweet id: Python's int() of a
// str (surrounding space, a sign, digits of any script, single
// underscores between digits).
func twIntKey(s string) (string, error) {
	bad := Raise("invalid literal for int() with base 10: %s", pyval.Quote(s))
	body := strings.TrimSpace(s)
	neg := false
	if body != "" && (body[0] == '+' || body[0] == '-') {
		neg = body[0] == '-'
		body = body[1:]
	}
	var digits []byte
	prevDigit := false
	for _, r := range body {
		switch {
		case r == '_' && prevDigit:
			prevDigit = false
			continue
		case unicode.Is(unicode.Nd, r):
			// Nd digits come in runs of ten, 0 to 9, in code point order.
			n := 0
			for z := r - 1; unicode.Is(unicode.Nd, z); z-- {
				n++
			}
			digits = append(digits, byte('0'+n%10))
		default:
			return "", bad
		}
		prevDigit = true
	}
	if len(digits) == 0 || !prevDigit {
		return "", bad
	}
	n, _ := new(big.Int).SetString(string(digits), 10)
	if neg {
		n.Neg(n)
	}
	return twKey(n)
}

// twItem is v[key] for a str key.
func twItem(v any, key string) (any, error) {
	switch t := v.(type) {
	case *pyval.Dict:
		if x, ok := t.Get(key); ok {
			return x, nil
		}
		return nil, KeyError(key)
	case string:
		return nil, Raise("string indices must be integers, not 'str'")
	case []any:
		return nil, Raise("list indices must be integers or slices, not str")
	}
	return nil, Raise("%s object is not subscriptable", pyval.Quote(TypeName(v)))
}

// twLower is v.lower().
func twLower(v any) (string, error) {
	s, ok := v.(string)
	if !ok {
		return "", Raise("%s object has no attribute 'lower'", pyval.Quote(TypeName(v)))
	}
	return pyval.Lower(s), nil
}

// twIter is the items iterating v gives: a list's elements, a str's
// characters, a dict's keys.
func twIter(v any) ([]any, error) {
	switch t := v.(type) {
	case []any:
		return t, nil
	case string:
		out := []any{}
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
	return nil, Raise("%s object is not iterable", pyval.Quote(TypeName(v)))
}

// twIndexOf is the index of the first element == x, or -1 (list's in,
// index and remove).
func twIndexOf(l []any, x any) int {
	return slices.IndexFunc(l, func(e any) bool { return pyval.Eq(e, x) })
}

// twIncr is v += 1.
func twIncr(v any) (any, error) {
	switch t := v.(type) {
	case bool:
		if t {
			return int64(2), nil
		}
		return int64(1), nil
	case int64:
		if t < math.MaxInt64 {
			return t + 1, nil
		}
		return new(big.Int).Add(big.NewInt(t), big.NewInt(1)), nil
	case *big.Int:
		n := new(big.Int).Add(t, big.NewInt(1))
		if n.IsInt64() {
			return n.Int64(), nil
		}
		return n, nil
	case float64:
		return t + 1, nil
	case string:
		return nil, Raise(`can only concatenate str (not "int") to str`)
	case []any:
		return nil, Raise("'int' object is not iterable")
	}
	return nil, Raise("unsupported operand type(s) for +=: %s and 'int'", pyval.Quote(TypeName(v)))
}

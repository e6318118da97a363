package multiturn

import (
	"math/big"

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
		return false, Raise("%s not supported between instances of %s and %s", pyval.Quote(op), pyval.Quote(TypeName(a)), pyval.Quote(TypeName(b)))
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

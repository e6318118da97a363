package multiturn

import (
	"math"
	"math/big"
	"regexp"
	"strconv"
	"strings"
	"unicode"

	"github.com/nextstate-rl/nextstate/envs/internal/pyval"
)

// Python's operations as VehicleControlAPI applies them to its arguments
// and attributes, with the exceptions Python raises on the wrong types.

// vehDict is a dict of key, value pairs in order.
func vehDict(kv ...any) *pyval.Dict {
	d := pyval.NewDict()
	for i := 0; i+1 < len(kv); i += 2 {
		d.Set(kv[i].(string), kv[i+1])
	}
	return d
}

// vehError is {"error": msg}.
func vehError(msg string) *pyval.Dict { return vehDict("error", msg) }

func vehBoolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// vehInt is an int (bool, int64 or *big.Int) as a *big.Int.
func vehInt(v any) (*big.Int, bool) {
	switch v.(type) {
	case bool, int64, *big.Int:
		return pyval.BigOf(v), true
	}
	return nil, false
}

// vehNorm is a *big.Int as an int64 when it fits.
func vehNorm(b *big.Int) any {
	if b.IsInt64() {
		return b.Int64()
	}
	return b
}

// vehToFloat is float(x) of a number: an int rounded to the nearest
// float, or OverflowError.
func vehToFloat(v any) (float64, error) {
	switch t := v.(type) {
	case float64:
		return t, nil
	case int64:
		return float64(t), nil
	case bool:
		return float64(vehBoolInt(t)), nil
	case *big.Int:
		f, _ := new(big.Float).SetInt(t).Float64()
		if math.IsInf(f, 0) {
			return 0, Raise("int too large to convert to float")
		}
		return f, nil
	}
	return 0, Raise("float() argument must be a string or a real number, not %s", pyval.Quote(TypeName(v)))
}

func vehIsSeq(v any) bool {
	switch v.(type) {
	case string, []any:
		return true
	}
	return false
}

// vehArith is a op b for op '+', '-', '*' or '/', as Python computes it:
// int with int stays an int ('/' excepted), a float with any number is a
// float; str and list concatenate.
func vehArith(op byte, a, b any) (any, error) {
	ia, aInt := vehInt(a)
	ib, bInt := vehInt(b)
	if aInt && bInt {
		switch op {
		case '+':
			return vehNorm(new(big.Int).Add(ia, ib)), nil
		case '-':
			return vehNorm(new(big.Int).Sub(ia, ib)), nil
		case '*':
			return vehNorm(new(big.Int).Mul(ia, ib)), nil
		}
		if ib.Sign() == 0 {
			return nil, Raise("division by zero")
		}
		f, _ := new(big.Rat).SetFrac(ia, ib).Float64()
		if math.IsInf(f, 0) {
			return nil, Raise("integer division result too large for a float")
		}
		return f, nil
	}
	_, aFloat := a.(float64)
	_, bFloat := b.(float64)
	if (aFloat || aInt) && (bFloat || bInt) {
		x, err := vehToFloat(a)
		if err != nil {
			return nil, err
		}
		y, err := vehToFloat(b)
		if err != nil {
			return nil, err
		}
		switch op {
		case '+':
			return x + y, nil
		case '-':
			return x - y, nil
		case '*':
			return float64(x * y), nil // rounded: never fused with an add
		}
		if y == 0 {
			return nil, Raise("float division by zero")
		}
		return x / y, nil
	}
	switch op {
	case '+':
		switch x := a.(type) {
		case string:
			if y, ok := b.(string); ok {
				return x + y, nil
			}
			return nil, Raise("can only concatenate str (not %q) to str", TypeName(b))
		case []any:
			if y, ok := b.([]any); ok {
				return append(append([]any{}, x...), y...), nil
			}
			return nil, Raise("can only concatenate list (not %q) to list", TypeName(b))
		}
	case '*':
		// A str or list times an int repeats it; this class never
		// multiplies one by an int (its factors are floats, or follow a
		// test that admits only numbers), so only the error is written.
		if vehIsSeq(a) && !bInt {
			return nil, Raise("can't multiply sequence by non-int of type %s", pyval.Quote(TypeName(b)))
		}
		if vehIsSeq(b) && !aInt {
			return nil, Raise("can't multiply sequence by non-int of type %s", pyval.Quote(TypeName(a)))
		}
	}
	return nil, Raise("unsupported operand type(s) for %c: %s and %s", op, pyval.Quote(TypeName(a)), pyval.Quote(TypeName(b)))
}

// vehCompare is Compare, with a NaN comparing false with any number as
// in Python.
func vehCompare(op string, a, b any) (bool, error) {
	if isNum(a) && isNum(b) {
		fa, aok := a.(float64)
		fb, bok := b.(float64)
		if aok && math.IsNaN(fa) || bok && math.IsNaN(fb) {
			return false, nil
		}
	}
	return Compare(op, a, b)
}

// vehFloatSyntax is what Python's float() reads from a str (once
// stripped): a decimal literal whose underscores stand between digits,
// or inf, infinity or nan, signed or not, in any case.
var vehFloatSyntax = regexp.MustCompile(`^[+-]?(?:(?:\d(?:_?\d)*(?:\.(?:\d(?:_?\d)*)?)?|\.\d(?:_?\d)*)(?:[eE][+-]?\d(?:_?\d)*)?|(?i:inf|infinity|nan))$`)

// vehFloat is float(v).
func vehFloat(v any) (float64, error) {
	s, ok := v.(string)
	if !ok {
		return vehToFloat(v)
	}
	t := strings.TrimFunc(s, unicode.IsSpace)
	if vehFloatSyntax.MatchString(t) {
		if strings.EqualFold(strings.TrimLeft(t, "+-"), "nan") {
			return math.NaN(), nil // strconv refuses a signed NaN
		}
		f, err := strconv.ParseFloat(strings.ReplaceAll(t, "_", ""), 64)
		if err == nil || err.(*strconv.NumError).Err == strconv.ErrRange {
			return f, nil
		}
	}
	return 0, Raise("could not convert string to float: %s", pyval.Quote(s))
}

// vehFloatMod is x % y for floats: the remainder with the sign of y.
func vehFloatMod(x, y float64) float64 {
	m := math.Mod(x, y)
	switch {
	case m == 0:
		return math.Copysign(0, y)
	case (m < 0) != (y < 0):
		return m + y
	}
	return m
}

// vehIter is the items of iter(v): a list's elements, a str's characters,
// a dict's keys.
func vehIter(v any) ([]any, error) {
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
	return nil, Raise("%s object is not iterable", pyval.Quote(TypeName(v)))
}

// vehLookup is d[k]: KeyError for a missing key, TypeError for an
// unhashable one.
func vehLookup(d *pyval.Dict, k any) (any, error) {
	switch k.(type) {
	case []any, *pyval.Dict:
		return nil, Raise("unhashable type: %s", pyval.Quote(TypeName(k)))
	}
	if s, ok := k.(string); ok {
		if v, ok := d.Get(s); ok {
			return v, nil
		}
	}
	return nil, KeyError(k)
}

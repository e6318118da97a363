package multiturn

import (
	"errors"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/nextstate-rl/nextstate/envs/internal/pyval"
)

// Python's numbers: int() and float() of any value, the arithmetic
// operators, abs(), with the exceptions Python raises, of their classes.

// isInt is isinstance(v, int): a bool, an int64 or a *big.Int.
func isInt(v any) bool {
	switch v.(type) {
	case bool, int64, *big.Int:
		return true
	}
	return false
}

// intVal is an int as pyval keeps it: an int64 when it fits.
func intVal(b *big.Int) any {
	if b.IsInt64() {
		return b.Int64()
	}
	return b
}

// maxStrDigits is sys.get_int_max_str_digits(): int() of a str of more
// digits, and str() of an int of more, raise ValueError.
const maxStrDigits = 4300

// decimalDigit is the value of a character str.isdecimal accepts, as
// int() and float() read it and re's \d matches it: Python 3.11's
// Unicode 14 decimal digits (Go's tables are Unicode 15, newer by two
// scripts).
func decimalDigit(r rune) (int, bool) {
	if r >= '0' && r <= '9' {
		return int(r - '0'), true
	}
	if r < 0x80 || !unicode.IsDigit(r) || r >= 0x11F50 && r <= 0x11F59 || r >= 0x1E4F0 && r <= 0x1E4F9 {
		return 0, false
	}
	start := r // each run of decimal digits is whole sets of 0 to 9
	for unicode.IsDigit(start - 1) {
		start--
	}
	return int(r-start) % 10, true
}

// digitOnlyRanges are the characters str.isdigit accepts that are not
// decimal (superscripts, circled digits...), as Python 3.11 has them.
var digitOnlyRanges = [][2]rune{
	{0xB2, 0xB3}, {0xB9, 0xB9}, {0x1369, 0x1371}, {0x19DA, 0x19DA}, {0x2070, 0x2070},
	{0x2074, 0x2079}, {0x2080, 0x2089}, {0x2460, 0x2468}, {0x2474, 0x247C}, {0x2488, 0x2490},
	{0x24EA, 0x24EA}, {0x24F5, 0x24FD}, {0x24FF, 0x24FF}, {0x2776, 0x277E}, {0x2780, 0x2788},
	{0x278A, 0x2792}, {0x10A40, 0x10A43}, {0x10E60, 0x10E68}, {0x11052, 0x1105A}, {0x1F100, 0x1F10A},
}

// isDigits is s.isdigit(): s is not empty and all its characters are
// decimal digits or other digits.
func isDigits(s string) bool {
	for _, r := range s {
		_, dec := decimalDigit(r)
		if !dec && !slices.ContainsFunc(digitOnlyRanges, func(g [2]rune) bool { return r >= g[0] && r <= g[1] }) {
			return false
		}
	}
	return s != ""
}

// parseInt is int(s) of a str: white space around, a sign, and decimal
// digits of any script with single underscores between them. More than
// maxStrDigits digits, or anything else, is ValueError.
func parseInt(s string) (*big.Int, error) {
	t := strings.TrimLeftFunc(s, unicode.IsSpace)
	neg := strings.HasPrefix(t, "-")
	if neg || strings.HasPrefix(t, "+") {
		t = t[1:]
	}
	var digits []byte
	prev, i := rune(0), 0
	for i < len(t) {
		r, n := utf8.DecodeRuneInString(t[i:])
		if d, ok := decimalDigit(r); ok {
			digits = append(digits, byte('0'+d))
		} else if r != '_' || prev == '_' || len(digits) == 0 {
			break
		}
		prev, i = r, i+n
	}
	if prev != '_' && len(digits) > maxStrDigits {
		return nil, raiseKind("ValueError", "Exceeds the limit (%d digits) for integer string conversion: value has %d digits; use sys.set_int_max_str_digits() to increase the limit", maxStrDigits, len(digits))
	}
	if prev == '_' || len(digits) == 0 || strings.TrimLeftFunc(t[i:], unicode.IsSpace) != "" {
		bad := []rune(pyval.Quote(s)) // %.200R: the repr cut to 200 characters
		bad = bad[:min(len(bad), 200)]
		return nil, raiseKind("ValueError", "invalid literal for int() with base 10: %s", string(bad))
	}
	n, _ := new(big.Int).SetString(string(digits), 10)
	if neg {
		n.Neg(n)
	}
	return n, nil
}

// toInt is int(v): an int itself, a float truncated toward zero, a str
// as parseInt reads it.
func toInt(v any) (*big.Int, error) {
	switch t := v.(type) {
	case bool, int64, *big.Int:
		return new(big.Int).Set(pyval.BigOf(t)), nil
	case float64:
		switch {
		case math.IsNaN(t):
			return nil, raiseKind("ValueError", "cannot convert float NaN to integer")
		case math.IsInf(t, 0):
			return nil, raiseKind("OverflowError", "cannot convert float infinity to integer")
		}
		b, _ := new(big.Float).SetFloat64(math.Trunc(t)).Int(nil)
		return b, nil
	case string:
		return parseInt(t)
	}
	return nil, raiseKind("TypeError", "int() argument must be a string, a bytes-like object or a real number, not %s", pyval.Quote(TypeName(v)))
}

// parseFloat reads a str as float() does: decimal digits of any script
// and white space around them, underscores between digits, inf,
// infinity and nan in any case, an overflow as an infinity. ok is false
// where float() raises ValueError.
func parseFloat(s string) (float64, bool) {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r < 127:
			b.WriteRune(r)
		case unicode.IsSpace(r):
			b.WriteByte(' ')
		default:
			d, ok := decimalDigit(r)
			if !ok {
				return 0, false
			}
			b.WriteByte(byte('0' + d))
		}
	}
	t := strings.Trim(b.String(), " \t\n\v\f\r")
	if strings.Contains(t, "_") {
		var c strings.Builder
		prev := byte(0)
		for i := 0; i < len(t); i++ {
			ch := t[i]
			if ch == '_' {
				if prev < '0' || prev > '9' {
					return 0, false
				}
			} else {
				if prev == '_' && (ch < '0' || ch > '9') {
					return 0, false
				}
				c.WriteByte(ch)
			}
			prev = ch
		}
		if prev == '_' {
			return 0, false
		}
		t = c.String()
	}
	body, neg := t, false
	if body != "" && (body[0] == '+' || body[0] == '-') {
		neg, body = body[0] == '-', body[1:]
	}
	switch strings.ToLower(body) {
	case "inf", "infinity":
		if neg {
			return math.Inf(-1), true
		}
		return math.Inf(1), true
	case "nan":
		return math.NaN(), true
	}
	// digits [. digits] | . digits, then an optional e[sign]digits.
	i, mant := 0, 0
	for i < len(body) && body[i] >= '0' && body[i] <= '9' {
		i, mant = i+1, mant+1
	}
	if i < len(body) && body[i] == '.' {
		i++
		for i < len(body) && body[i] >= '0' && body[i] <= '9' {
			i, mant = i+1, mant+1
		}
	}
	if mant == 0 {
		return 0, false
	}
	if i < len(body) && (body[i] == 'e' || body[i] == 'E') {
		i++
		if i < len(body) && (body[i] == '+' || body[i] == '-') {
			i++
		}
		exp := 0
		for i < len(body) && body[i] >= '0' && body[i] <= '9' {
			i, exp = i+1, exp+1
		}
		if exp == 0 {
			return 0, false
		}
	}
	if i != len(body) {
		return 0, false
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, false
	}
	return f, true
}

// toFloat is float(v): a float itself, an int rounded to the nearest
// float (OverflowError past the largest), a str as parseFloat reads it.
func toFloat(v any) (float64, error) {
	switch x := v.(type) {
	case float64:
		return x, nil
	case int64:
		return float64(x), nil
	case bool, *big.Int:
		f, _ := new(big.Float).SetInt(pyval.BigOf(x)).Float64()
		if math.IsInf(f, 0) {
			return 0, raiseKind("OverflowError", "int too large to convert to float")
		}
		return f, nil
	case string:
		if f, ok := parseFloat(x); ok {
			return f, nil
		}
		return 0, raiseKind("ValueError", "could not convert string to float: %s", pyval.Quote(x))
	}
	return 0, raiseKind("TypeError", "float() argument must be a string or a real number, not %s", pyval.Quote(TypeName(v)))
}

// toFloats is float(a) and float(b), as an operator converts the operands
// of a mixed int and float operation.
func toFloats(a, b any) (float64, float64, error) {
	x, err := toFloat(a)
	if err != nil {
		return 0, 0, err
	}
	y, err := toFloat(b)
	return x, y, err
}

// arith is a op b for op "+", "-", "*" or "/", or the augmented a op= b
// ("+=", ...), as Python computes it: int with int stays an int ('/'
// excepted, correctly rounded), a float with any number is a float; str
// and list concatenate, and repeat times an int; list += extends by any
// iterable. Anything else raises Python's TypeError.
func arith(op string, a, b any) (any, error) {
	bin := strings.TrimSuffix(op, "=")
	if isInt(a) && isInt(b) {
		x, y := pyval.BigOf(a), pyval.BigOf(b)
		switch bin {
		case "+":
			return intVal(new(big.Int).Add(x, y)), nil
		case "-":
			return intVal(new(big.Int).Sub(x, y)), nil
		case "*":
			return intVal(new(big.Int).Mul(x, y)), nil
		}
		if y.Sign() == 0 {
			return nil, raiseKind("ZeroDivisionError", "division by zero")
		}
		f, _ := new(big.Rat).SetFrac(x, y).Float64()
		if math.IsInf(f, 0) {
			return nil, raiseKind("OverflowError", "integer division result too large for a float")
		}
		return f, nil
	}
	if isNum(a) && isNum(b) {
		x, y, err := toFloats(a, b)
		if err != nil {
			return nil, err
		}
		switch bin {
		case "+":
			return x + y, nil
		case "-":
			return x - y, nil
		case "*":
			return float64(x * y), nil // rounded: never fused with an add
		}
		if y == 0 {
			return nil, raiseKind("ZeroDivisionError", "float division by zero")
		}
		return x / y, nil
	}
	if bin == "+" {
		switch x := a.(type) {
		case string:
			if y, ok := b.(string); ok {
				return x + y, nil
			}
			return nil, raiseKind("TypeError", `can only concatenate str (not "%s") to str`, TypeName(b))
		case []any:
			if op == "+=" {
				items, err := iterate(b)
				if err != nil {
					return nil, err
				}
				return append(x, items...), nil
			}
			if y, ok := b.([]any); ok {
				return append(append([]any{}, x...), y...), nil
			}
			return nil, raiseKind("TypeError", `can only concatenate list (not "%s") to list`, TypeName(b))
		}
	}
	if bin == "*" {
		switch {
		case isSeq(a) && isInt(b):
			return repeat(a, pyval.BigOf(b))
		case isSeq(b) && isInt(a):
			return repeat(b, pyval.BigOf(a))
		case isSeq(a):
			return nil, raiseKind("TypeError", "can't multiply sequence by non-int of type %s", pyval.Quote(TypeName(b)))
		case isSeq(b):
			return nil, raiseKind("TypeError", "can't multiply sequence by non-int of type %s", pyval.Quote(TypeName(a)))
		}
	}
	return nil, raiseKind("TypeError", "unsupported operand type(s) for %s: %s and %s", op, pyval.Quote(TypeName(a)), pyval.Quote(TypeName(b)))
}

func isSeq(v any) bool {
	switch v.(type) {
	case string, []any:
		return true
	}
	return false
}

// repeat is seq * n for a str or list: n copies (none for n <= 0). Past
// 2^24 copies it is MemoryError, where Python would first fill memory.
func repeat(seq any, n *big.Int) (any, error) {
	if n.Cmp(big.NewInt(1<<24)) > 0 {
		return nil, raiseKind("MemoryError", "")
	}
	k := 0
	if n.Sign() > 0 {
		k = int(n.Int64())
	}
	if s, ok := seq.(string); ok {
		return strings.Repeat(s, k), nil
	}
	l := seq.([]any)
	out := make([]any, 0, len(l)*k)
	for range k {
		out = append(out, l...)
	}
	return out, nil
}

// absOf is abs(v).
func absOf(v any) (any, error) {
	switch t := v.(type) {
	case float64:
		return math.Abs(t), nil
	case bool, int64, *big.Int:
		return intVal(new(big.Int).Abs(pyval.BigOf(t))), nil
	}
	return nil, raiseKind("TypeError", "bad operand type for abs(): %s", pyval.Quote(TypeName(v)))
}

// floatMod is x % y for floats: the remainder with the sign of y.
func floatMod(x, y float64) float64 {
	m := math.Mod(x, y)
	switch {
	case m == 0:
		return math.Copysign(0, y)
	case (m < 0) != (y < 0):
		return m + y
	}
	return m
}

package multiturn

import (
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"

	"github.com/nextstate-rl/nextstate/envs/internal/pyval"
)

// Python's arithmetic on the values a model passes MathAPI (bool, int,
// float, and whatever else reaches it), with the exceptions Python raises.

// mathExc is a Python exception: its class, which decides whether a
// method's except clause catches it, and str() of it.
type mathExc struct{ kind, text string }

func (e *mathExc) Error() string { return e.text }

func mathRaise(kind, format string, args ...any) error {
	return &mathExc{kind: kind, text: fmt.Sprintf(format, args...)}
}

// mathIsExc reports whether err is an exception of one of the classes.
func mathIsExc(err error, kinds ...string) bool {
	e, ok := err.(*mathExc)
	if !ok {
		return false
	}
	for _, k := range kinds {
		if e.kind == k {
			return true
		}
	}
	return false
}

// mathIsInt is isinstance(v, int) (bool included); mathIsNum adds float.
func mathIsInt(v any) bool {
	switch v.(type) {
	case bool, int64, *big.Int:
		return true
	}
	return false
}

func mathIsNum(v any) bool {
	_, f := v.(float64)
	return f || mathIsInt(v)
}

// mathBig is an int (or bool) as a *big.Int.
func mathBig(v any) *big.Int { return new(big.Int).Set(pyval.BigOf(v)) }

// mathInt is a *big.Int as the value pyval keeps: int64 when it fits.
func mathInt(b *big.Int) any {
	if b.IsInt64() {
		return b.Int64()
	}
	return b
}

// mathFloat is float(v) for a number: an int rounds to the nearest float
// or raises OverflowError.
func mathFloat(v any) (float64, error) {
	switch t := v.(type) {
	case float64:
		return t, nil
	case int64:
		return float64(t), nil
	}
	f, _ := new(big.Float).SetInt(mathBig(v)).Float64()
	if math.IsInf(f, 0) {
		return 0, mathRaise("OverflowError", "int too large to convert to float")
	}
	return f, nil
}

// mathOperands converts both operands of a mixed int/float operation.
func mathOperands(a, b any) (float64, float64, error) {
	x, err := mathFloat(a)
	if err != nil {
		return 0, 0, err
	}
	y, err := mathFloat(b)
	return x, y, err
}

func mathUnsupported(op string, a, b any) error {
	return mathRaise("TypeError", "unsupported operand type(s) for %s: %s and %s", op, pyval.Quote(TypeName(a)), pyval.Quote(TypeName(b)))
}

// mathAdd is a + b: numbers, or str + str and list + list.
func mathAdd(a, b any) (any, error) {
	switch {
	case mathIsInt(a) && mathIsInt(b):
		return mathInt(new(big.Int).Add(mathBig(a), mathBig(b))), nil
	case mathIsNum(a) && mathIsNum(b):
		x, y, err := mathOperands(a, b)
		return x + y, err
	}
	switch x := a.(type) {
	case string:
		if y, ok := b.(string); ok {
			return x + y, nil
		}
		return nil, mathRaise("TypeError", "can only concatenate str (not \"%s\") to str", TypeName(b))
	case []any:
		if y, ok := b.([]any); ok {
			return append(append([]any{}, x...), y...), nil
		}
		return nil, mathRaise("TypeError", "can only concatenate list (not \"%s\") to list", TypeName(b))
	}
	return nil, mathUnsupported("+", a, b)
}

// mathSub is a - b.
func mathSub(a, b any) (any, error) {
	switch {
	case mathIsInt(a) && mathIsInt(b):
		return mathInt(new(big.Int).Sub(mathBig(a), mathBig(b))), nil
	case mathIsNum(a) && mathIsNum(b):
		x, y, err := mathOperands(a, b)
		return x - y, err
	}
	return nil, mathUnsupported("-", a, b)
}

// mathMul is a * b for numbers.
func mathMul(a, b any) (any, error) {
	switch {
	case mathIsInt(a) && mathIsInt(b):
		return mathInt(new(big.Int).Mul(mathBig(a), mathBig(b))), nil
	case mathIsNum(a) && mathIsNum(b):
		x, y, err := mathOperands(a, b)
		return x * y, err
	}
	return nil, mathUnsupported("*", a, b)
}

// mathDiv is a / b: true division, int / int correctly rounded.
func mathDiv(a, b any) (any, error) {
	switch {
	case mathIsInt(a) && mathIsInt(b):
		d := mathBig(b)
		if d.Sign() == 0 {
			return nil, mathRaise("ZeroDivisionError", "division by zero")
		}
		f, _ := new(big.Rat).SetFrac(mathBig(a), d).Float64()
		if math.IsInf(f, 0) {
			return nil, mathRaise("OverflowError", "integer division result too large for a float")
		}
		return f, nil
	case mathIsNum(a) && mathIsNum(b):
		x, y, err := mathOperands(a, b)
		if err != nil {
			return nil, err
		}
		if y == 0 {
			return nil, mathRaise("ZeroDivisionError", "float division by zero")
		}
		return x / y, nil
	}
	return nil, mathUnsupported("/", a, b)
}

// mathAbs is abs(v).
func mathAbs(v any) (any, error) {
	switch t := v.(type) {
	case float64:
		return math.Abs(t), nil
	case bool, int64, *big.Int:
		return mathInt(new(big.Int).Abs(mathBig(t))), nil
	}
	return nil, mathRaise("TypeError", "bad operand type for abs(): %s", pyval.Quote(TypeName(v)))
}

// mathIter is iter(v)'s items: a list's elements, a str's characters, a
// dict's keys.
func mathIter(v any) ([]any, error) {
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
	return nil, mathRaise("TypeError", "%s object is not iterable", pyval.Quote(TypeName(v)))
}

// mathSum is sum(v): the items added left to right onto 0.
func mathSum(v any) (any, error) {
	items, err := mathIter(v)
	if err != nil {
		return nil, err
	}
	var acc any = int64(0)
	for _, x := range items {
		if acc, err = mathAdd(acc, x); err != nil {
			return nil, err
		}
	}
	return acc, nil
}

// mathComplex is a Python complex, which float ** gives for a negative
// base and a fractional exponent.
type mathComplex struct{ re, im float64 }

// String is repr() of the complex: its parts as repr() writes floats but
// with no ".0" on whole values.
func (c mathComplex) String() string {
	part := func(f float64) string { return strings.TrimSuffix(pyval.FloatRepr(f), ".0") }
	if c.re == 0 && !math.Signbit(c.re) {
		return part(c.im) + "j"
	}
	im := part(c.im)
	if im[0] != '-' {
		im = "+" + im
	}
	return "(" + part(c.re) + im + "j)"
}

// mathPow is a ** b: int ** non-negative int exactly, else float **
// (float(a) ** float(b)).
func mathPow(a, b any) (any, error) {
	if !mathIsNum(a) || !mathIsNum(b) {
		return nil, mathRaise("TypeError", "unsupported operand type(s) for ** or pow(): %s and %s", pyval.Quote(TypeName(a)), pyval.Quote(TypeName(b)))
	}
	if mathIsInt(a) && mathIsInt(b) && mathBig(b).Sign() >= 0 {
		return mathIntPow(mathBig(a), mathBig(b))
	}
	x, y, err := mathOperands(a, b)
	if err != nil {
		return nil, err
	}
	return mathFloatPow(x, y)
}

// mathMaxStrDigits is sys.get_int_max_str_digits(): str() of an int
// with more digits raises ValueError.
const mathMaxStrDigits = 4300

var mathErrDigits = &mathExc{kind: "ValueError", text: "Exceeds the limit (4300 digits) for integer string conversion; use sys.set_int_max_str_digits() to increase the limit"}

// mathIntPow is x ** n for n >= 0. A result too long for str() (which
// is how the executor reports it) is that ValueError, without computing
// it: Python might take hours to.
func mathIntPow(x, n *big.Int) (any, error) {
	switch {
	case n.Sign() == 0:
		return int64(1), nil
	case x.CmpAbs(big.NewInt(1)) <= 0:
		if x.Sign() < 0 && n.Bit(0) == 0 {
			return int64(1), nil
		}
		return mathInt(x), nil
	}
	// |x|^n has at least this many digits
	if !n.IsInt64() || float64(x.BitLen()-1)*math.Log10(2)*float64(n.Int64()) > mathMaxStrDigits+10 {
		return nil, mathErrDigits
	}
	return mathInt(new(big.Int).Exp(x, n, nil)), nil
}

// mathTooLong is the ValueError str() raises on an int past the limit.
func mathTooLong(v any) error {
	if b, ok := v.(*big.Int); ok && b.BitLen() > 14000 {
		if len(new(big.Int).Abs(b).String()) > mathMaxStrDigits {
			return mathErrDigits
		}
	}
	return nil
}

// mathOdd is DOUBLE_IS_ODD_INTEGER.
func mathOdd(x float64) bool { return math.Mod(math.Abs(x), 2) == 1 }

var mathErrRange = &mathExc{kind: "OverflowError", text: "(34, 'Numerical result out of range')"}

// mathFloatPow is CPython's float_pow: its special cases, the C
// library's pow (correctly rounded here), and complex ** for a negative
// base and a fractional exponent.
func mathFloatPow(v, w float64) (any, error) {
	switch {
	case w == 0:
		return 1.0, nil
	case math.IsNaN(v):
		return v, nil
	case math.IsNaN(w):
		if v == 1 {
			return 1.0, nil
		}
		return w, nil
	case math.IsInf(w, 0):
		v = math.Abs(v)
		switch {
		case v == 1:
			return 1.0, nil
		case (w > 0) == (v > 1):
			return math.Abs(w), nil
		}
		return 0.0, nil
	case math.IsInf(v, 0):
		odd := mathOdd(w)
		if w > 0 {
			if odd {
				return v, nil
			}
			return math.Abs(v), nil
		}
		if odd {
			return math.Copysign(0, v), nil
		}
		return 0.0, nil
	case v == 0:
		if w < 0 {
			return nil, mathRaise("ZeroDivisionError", "0.0 cannot be raised to a negative power")
		}
		if mathOdd(w) {
			return v, nil
		}
		return 0.0, nil
	}
	negate := false
	if v < 0 {
		if w != math.Floor(w) {
			return mathComplexPow(v, w)
		}
		v = -v
		negate = mathOdd(w)
	}
	if v == 1 {
		if negate {
			return -1.0, nil
		}
		return 1.0, nil
	}
	r := mathCRPow(v, w)
	if math.IsInf(r, 0) {
		return nil, mathErrRange
	}
	if negate {
		r = -r
	}
	return r, nil
}

// mathComplexPow is complex(v) ** complex(w) for v < 0 and a fractional
// w, as CPython's _Py_c_pow computes it.
func mathComplexPow(v, w float64) (any, error) {
	length := mathCRPow(-v, w) // hypot(v, 0) is |v|
	phase := float64(math.Pi * w)
	c := mathComplex{
		re: float64(length * mathCRSinCos(phase, true)),
		im: float64(length * mathCRSinCos(phase, false)),
	}
	if math.IsInf(c.re, 0) || math.IsInf(c.im, 0) {
		return nil, mathRaise("OverflowError", "complex exponentiation")
	}
	return c, nil
}

// mathPyInt is int(v) with its exceptions.
func mathPyInt(v any) (*big.Int, error) {
	switch t := v.(type) {
	case bool, int64, *big.Int:
		return mathBig(t), nil
	case float64:
		switch {
		case math.IsNaN(t):
			return nil, mathRaise("ValueError", "cannot convert float NaN to integer")
		case math.IsInf(t, 0):
			return nil, mathRaise("OverflowError", "cannot convert float infinity to integer")
		}
		b, _ := new(big.Float).SetFloat64(math.Trunc(t)).Int(nil)
		return b, nil
	case string:
		if b, ok := mathParseInt(mathPyStrip(t)); ok {
			return b, nil
		}
		return nil, mathRaise("ValueError", "invalid literal for int() with base 10: %s", pyval.Quote(t))
	}
	return nil, mathRaise("TypeError", "int() argument must be a string, a bytes-like object or a real number, not %s", pyval.Quote(TypeName(v)))
}

// mathParseInt reads a base-10 int literal as int() does: a sign, then
// digits with single underscores between them.
func mathParseInt(s string) (*big.Int, bool) {
	digits := make([]byte, 0, len(s)+1)
	if s != "" && (s[0] == '+' || s[0] == '-') {
		if s[0] == '-' {
			digits = append(digits, '-')
		}
		s = s[1:]
	}
	if s == "" {
		return nil, false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			digits = append(digits, c)
		case c == '_' && i > 0 && i+1 < len(s) && s[i-1] != '_' && s[i+1] >= '0' && s[i+1] <= '9':
		default:
			return nil, false
		}
	}
	b, ok := new(big.Int).SetString(string(digits), 10)
	return b, ok
}

// mathRound is round(number, ndigits) (ndigits None: round(number)).
func mathRound(number, ndigits any) (any, error) {
	if !mathIsNum(number) {
		return nil, mathRaise("TypeError", "type %s doesn't define __round__ method", TypeName(number))
	}
	if ndigits == nil {
		if x, ok := number.(float64); ok {
			return mathFloatToInt(math.RoundToEven(x))
		}
		return mathInt(mathBig(number)), nil
	}
	if !mathIsInt(ndigits) {
		return nil, mathRaise("TypeError", "%s object cannot be interpreted as an integer", pyval.Quote(TypeName(ndigits)))
	}
	nd := mathBig(ndigits)
	if x, ok := number.(float64); ok {
		return mathRoundFloat(x, nd)
	}
	n := mathBig(number)
	if nd.Sign() >= 0 {
		return mathInt(n), nil
	}
	// round half to even at 10^-nd
	if nd.CmpAbs(big.NewInt(int64(len(n.String())+1))) > 0 {
		return int64(0), nil
	}
	pow := new(big.Int).Exp(big.NewInt(10), new(big.Int).Neg(nd), nil)
	q, r := new(big.Int).DivMod(n, pow, new(big.Int))
	twice := new(big.Int).Lsh(r, 1)
	if c := twice.Cmp(pow); c > 0 || c == 0 && q.Bit(0) == 1 {
		q.Add(q, big.NewInt(1))
	}
	return mathInt(q.Mul(q, pow)), nil
}

// mathFloatToInt is int() of a whole float.
func mathFloatToInt(x float64) (any, error) {
	switch {
	case math.IsNaN(x):
		return nil, mathRaise("ValueError", "cannot convert float NaN to integer")
	case math.IsInf(x, 0):
		return nil, mathRaise("OverflowError", "cannot convert float infinity to integer")
	}
	b, _ := new(big.Float).SetFloat64(x).Int(nil)
	return mathInt(b), nil
}

// mathRoundFloat is float.__round__(ndigits): the decimal nearest the
// float's exact value at 10^-ndigits (ties to even), read back as a float.
func mathRoundFloat(x float64, ndigits *big.Int) (any, error) {
	if math.IsInf(x, 0) || math.IsNaN(x) {
		return x, nil
	}
	switch {
	case ndigits.Cmp(big.NewInt(323)) > 0:
		return x, nil
	case ndigits.Cmp(big.NewInt(-308)) < 0:
		return 0.0 * x, nil
	}
	nd := ndigits.Int64()
	r := new(big.Rat).SetFloat64(x)
	scale := new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(mathAbs64(nd)), nil))
	if nd >= 0 {
		r.Mul(r, scale)
	} else {
		r.Quo(r, scale)
	}
	// round half to even to an integer
	num, den := new(big.Int).Abs(r.Num()), r.Denom()
	q, rem := new(big.Int).QuoRem(num, den, new(big.Int))
	twice := rem.Lsh(rem, 1)
	if c := twice.Cmp(den); c > 0 || c == 0 && q.Bit(0) == 1 {
		q.Add(q, big.NewInt(1))
	}
	s := q.String() + "e" + strconv.FormatInt(-nd, 10)
	if math.Signbit(x) {
		s = "-" + s
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && math.IsInf(f, 0) {
		return nil, mathRaise("OverflowError", "rounded value too large to represent")
	}
	return f, nil
}

func mathAbs64(n int64) int64 {
	if n < 0 {
		return -n
	}
	return n
}

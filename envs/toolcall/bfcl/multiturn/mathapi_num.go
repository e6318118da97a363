package multiturn

import (
	"math"
	"math/big"
	"strconv"
	"strings"

	"github.com/nextstate-rl/nextstate/envs/internal/pyval"
)

// The Python arithmetic MathAPI needs beyond pynum.go's: sum(), **,
// round(), and complex results, with the exceptions Python raises.

// mathSum is sum(v): the items added left to right onto 0.
func mathSum(v any) (any, error) {
	items, err := iterate(v)
	if err != nil {
		return nil, err
	}
	var acc any = int64(0)
	for _, x := range items {
		if acc, err = arith("+", acc, x); err != nil {
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
	if !isNum(a) || !isNum(b) {
		return nil, raiseKind("TypeError", "unsupported operand type(s) for ** or pow(): %s and %s", pyval.Quote(TypeName(a)), pyval.Quote(TypeName(b)))
	}
	if isInt(a) && isInt(b) && pyval.BigOf(b).Sign() >= 0 {
		return mathIntPow(pyval.BigOf(a), pyval.BigOf(b))
	}
	x, y, err := toFloats(a, b)
	if err != nil {
		return nil, err
	}
	return mathFloatPow(x, y)
}

// mathErrDigits is the ValueError of str() of an int of more than
// maxStrDigits digits.
var mathErrDigits = &Exception{Kind: "ValueError", Text: "Exceeds the limit (4300 digits) for integer string conversion; use sys.set_int_max_str_digits() to increase the limit"}

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
		return intVal(x), nil
	}
	// |x|^n has at least this many digits
	if !n.IsInt64() || float64(x.BitLen()-1)*math.Log10(2)*float64(n.Int64()) > maxStrDigits+10 {
		return nil, mathErrDigits
	}
	return intVal(new(big.Int).Exp(x, n, nil)), nil
}

// mathTooLong is the ValueError str() raises on an int past the limit.
func mathTooLong(v any) error {
	if b, ok := v.(*big.Int); ok && b.BitLen() > 14000 {
		if len(new(big.Int).Abs(b).String()) > maxStrDigits {
			return mathErrDigits
		}
	}
	return nil
}

// mathOdd is DOUBLE_IS_ODD_INTEGER.
func mathOdd(x float64) bool { return math.Mod(math.Abs(x), 2) == 1 }

var mathErrRange = &Exception{Kind: "OverflowError", Text: "(34, 'Numerical result out of range')"}

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
			return nil, raiseKind("ZeroDivisionError", "0.0 cannot be raised to a negative power")
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
		return nil, raiseKind("OverflowError", "complex exponentiation")
	}
	return c, nil
}

// mathRound is round(number, ndigits) (ndigits None: round(number)).
func mathRound(number, ndigits any) (any, error) {
	if !isNum(number) {
		return nil, raiseKind("TypeError", "type %s doesn't define __round__ method", TypeName(number))
	}
	if ndigits == nil {
		if x, ok := number.(float64); ok {
			n, err := toInt(math.RoundToEven(x))
			if err != nil {
				return nil, err
			}
			return intVal(n), nil
		}
		return intVal(pyval.BigOf(number)), nil
	}
	if !isInt(ndigits) {
		return nil, raiseKind("TypeError", "%s object cannot be interpreted as an integer", pyval.Quote(TypeName(ndigits)))
	}
	nd := pyval.BigOf(ndigits)
	if x, ok := number.(float64); ok {
		return mathRoundFloat(x, nd)
	}
	n := pyval.BigOf(number)
	if nd.Sign() >= 0 {
		return intVal(n), nil
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
	return intVal(q.Mul(q, pow)), nil
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
		return nil, raiseKind("OverflowError", "rounded value too large to represent")
	}
	return f, nil
}

func mathAbs64(n int64) int64 {
	if n < 0 {
		return -n
	}
	return n
}

package multiturn

import (
	"math"
	"math/big"
	"strings"

	"github.com/nextstate-rl/nextstate/envs/internal/pyval"
)

// MathAPI's square_root runs on the decimal module: getcontext().prec =
// precision, then Decimal(number).sqrt(), rendered as the repr of the
// Decimal. This file is that path: a Decimal made exactly from an int or
// a float, its square root correctly rounded (half to even) to the
// context's precision with the exponent the decimal specification makes
// ideal, and str() of it.

// mathDecimal is a finite Decimal, (-1)^neg * coef * 10^exp, or an
// infinity or NaN (special "Infinity" or "NaN").
type mathDecimal struct {
	neg     bool
	coef    *big.Int
	exp     int64
	special string
}

// mathDecimalOf is Decimal(v) for an int, a bool or a float: exact.
func mathDecimalOf(v any) mathDecimal {
	f, ok := v.(float64)
	if !ok {
		n := pyval.BigOf(v)
		return mathDecimal{neg: n.Sign() < 0, coef: new(big.Int).Abs(n)}
	}
	d := mathDecimal{neg: math.Signbit(f)}
	switch {
	case math.IsNaN(f):
		d.special = "NaN"
		return d
	case math.IsInf(f, 0):
		d.special = "Infinity"
		return d
	}
	// |f| = n / 2^k = n 5^k / 10^k
	r := new(big.Rat).SetFloat64(math.Abs(f))
	k := int64(r.Denom().BitLen() - 1)
	d.coef = new(big.Int).Mul(r.Num(), new(big.Int).Exp(big.NewInt(5), big.NewInt(k), nil))
	d.exp = -k
	return d
}

// mathDecimalSqrt is d.sqrt() at precision prec for d >= 0 (or -0).
func mathDecimalSqrt(d mathDecimal, prec int64) mathDecimal {
	if d.special != "" {
		return d
	}
	if d.coef.Sign() == 0 {
		return mathDecimal{neg: d.neg, coef: new(big.Int), exp: mathFloorDiv2(d.exp)}
	}
	// Write d as c * 100^e with c of exactly prec+1 base-100 digits; the
	// root's floor n, with the exponent e an exact root would have.
	p := prec + 1
	digits := int64(len(d.coef.String()))
	e := mathFloorDiv2(d.exp)
	c := new(big.Int).Set(d.coef)
	var l int64
	if d.exp&1 != 0 {
		c.Mul(c, big.NewInt(10))
		l = digits>>1 + 1
	} else {
		l = (digits + 1) >> 1
	}
	shift := p - l
	exact := true
	if shift >= 0 {
		c.Mul(c, mathPow10(2*shift))
	} else {
		var rem big.Int
		c.QuoRem(c, mathPow10(-2*shift), &rem)
		exact = rem.Sign() == 0
	}
	e -= shift
	n := new(big.Int).Sqrt(c)
	exact = exact && new(big.Int).Mul(n, n).Cmp(c) == 0
	if exact {
		if shift >= 0 {
			n.Quo(n, mathPow10(shift))
		} else {
			n.Mul(n, mathPow10(-shift))
		}
		e += shift
	} else if new(big.Int).Mod(n, big.NewInt(5)).Sign() == 0 {
		n.Add(n, big.NewInt(1))
	}
	return mathDecimalFix(mathDecimal{coef: n, exp: e}, prec)
}

// mathDecimalFix rounds a coefficient longer than prec digits, half to
// even (the exponent range is never reached from a float or a JSON int).
func mathDecimalFix(d mathDecimal, prec int64) mathDecimal {
	s := d.coef.String()
	drop := int64(len(s)) - prec
	if drop <= 0 {
		return d
	}
	pow := mathPow10(drop)
	q, r := new(big.Int).QuoRem(d.coef, pow, new(big.Int))
	if c := r.Lsh(r, 1).Cmp(pow); c > 0 || c == 0 && q.Bit(0) == 1 {
		q.Add(q, big.NewInt(1))
	}
	d.exp += drop
	if int64(len(q.String())) > prec {
		q.Quo(q, big.NewInt(10))
		d.exp++
	}
	d.coef = q
	return d
}

func mathPow10(n int64) *big.Int { return new(big.Int).Exp(big.NewInt(10), big.NewInt(n), nil) }

func mathFloorDiv2(n int64) int64 { return n >> 1 }

// String is str(d): scientific notation when the exponent is positive or
// the number small, with a capital E.
func (d mathDecimal) String() string {
	sign := ""
	if d.neg {
		sign = "-"
	}
	if d.special != "" {
		return sign + d.special
	}
	digits := d.coef.String()
	left := d.exp + int64(len(digits))
	dot := int64(1)
	if d.exp <= 0 && left > -6 {
		dot = left
	}
	var intPart, frac string
	switch {
	case dot <= 0:
		intPart, frac = "0", "."+strings.Repeat("0", int(-dot))+digits
	case dot >= int64(len(digits)):
		intPart = digits + strings.Repeat("0", int(dot)-len(digits))
	default:
		intPart, frac = digits[:dot], "."+digits[dot:]
	}
	exp := ""
	if left != dot {
		e := left - dot
		exp = "E+"
		if e < 0 {
			exp, e = "E-", -e
		}
		exp += mathItoa(int(e))
	}
	return sign + intPart + frac + exp
}

package multiturn

import "math/big"

// MathAPI's logarithm runs on mpmath: mpmath.mp.dps = precision, then
// mpmath.log(value) / mpmath.log(base), rendered as the repr of an mpf
// (or, from a negative or complex argument, an mpc). This file is the
// part of mpmath that path reaches, on big.Float: mpmath's numbers are
// binary floats rounded to the context's precision, with no negative zero
// and with ±inf and nan, and its basic operations round correctly, as
// big.Float's do.

// mathMpf is an mpmath mpf: a finite value (an unsigned zero included),
// or v == nil for ±inf (inf = ±1) and nan (inf = 0).
type mathMpf struct {
	v   *big.Float
	inf int
}

// mathMpc is an mpmath mpc.
type mathMpc struct{ re, im mathMpf }

// mathMp is what mpmath.log returns: an mpf, or an mpc when complex.
type mathMp struct {
	complex bool
	r       mathMpf
	c       mathMpc
}

var (
	mathMpNan  = mathMpf{}
	mathMpInf  = mathMpf{inf: 1}
	mathMpNInf = mathMpf{inf: -1}
)

func mathMpFin(v *big.Float) mathMpf {
	if v.Sign() == 0 {
		v = new(big.Float)
	}
	return mathMpf{v: v}
}

func mathMpInt(n int64) mathMpf { return mathMpFin(new(big.Float).SetInt64(n)) }

func (x mathMpf) special() bool { return x.v == nil }
func (x mathMpf) nan() bool     { return x.v == nil && x.inf == 0 }
func (x mathMpf) zero() bool    { return x.v != nil && x.v.Sign() == 0 }

// regular is a finite nonzero value (an mpf whose mantissa is nonzero).
func (x mathMpf) regular() bool { return x.v != nil && x.v.Sign() != 0 }

func (x mathMpf) same(y mathMpf) bool {
	if x.v == nil || y.v == nil {
		return x.v == nil && y.v == nil && x.inf == y.inf
	}
	return x.v.Cmp(y.v) == 0
}

// sign is mpf_sign: -1, 0 or 1, nan 0.
func (x mathMpf) sign() int {
	if x.v == nil {
		return x.inf
	}
	return x.v.Sign()
}

func (x mathMpf) neg() mathMpf {
	if x.v == nil {
		return mathMpf{inf: -x.inf}
	}
	return mathMpFin(new(big.Float).Neg(x.v))
}

// shift is x * 2^n, exactly.
func (x mathMpf) shift(n int) mathMpf {
	if !x.regular() {
		return x
	}
	return mathMpf{v: new(big.Float).SetMantExp(x.v, n)}
}

// mag is exp+bc in mpmath's terms: 2^(mag-1) <= |x| < 2^mag.
func (x mathMpf) mag() int { return x.v.MantExp(nil) }

// lsb is mpmath's exp: the weight of the mantissa's lowest set bit.
func (x mathMpf) lsb() int { return x.v.MantExp(nil) - int(x.v.MinPrec()) }

// mpmath's rounding modes as big.Float's: 'n' nearest (ties to even),
// 'd' toward zero (mpmath's round_fast), 'u' away from zero, 'f' floor
// and 'c' ceiling.
const (
	mathRndN = big.ToNearestEven
	mathRndD = big.ToZero
	mathRndU = big.AwayFromZero
	mathRndF = big.ToNegativeInf
	mathRndC = big.ToPositiveInf
)

func mathNegativeRnd(r big.RoundingMode) big.RoundingMode {
	switch r {
	case mathRndF:
		return mathRndC
	case mathRndC:
		return mathRndF
	}
	return r
}

func mathReciprocalRnd(r big.RoundingMode) big.RoundingMode {
	switch r {
	case mathRndD:
		return mathRndU
	case mathRndU:
		return mathRndD
	}
	return mathNegativeRnd(r)
}

// round is mpf_pos(x, prec, rnd); prec 0 keeps x exact.
func (x mathMpf) round(prec uint, rnd big.RoundingMode) mathMpf {
	if x.v == nil || prec == 0 {
		return x
	}
	return mathMpFin(new(big.Float).SetPrec(prec).SetMode(rnd).Set(x.v))
}

// mathMpExact is the exact value man * 2^exp.
func mathMpExact(man *big.Int, exp int) mathMpf {
	f := new(big.Float).SetInt(man)
	return mathMpFin(f.SetMantExp(f, exp))
}

// mathMpAdd is mpf_add: s + t rounded to prec in rnd (prec 0: exact).
func mathMpAdd(s, t mathMpf, prec uint, rnd big.RoundingMode) mathMpf {
	if s.regular() && t.regular() {
		hi := max(s.mag(), t.mag())
		lo := min(s.lsb(), t.lsb())
		sum := new(big.Float).SetPrec(uint(hi-lo)+2).Add(s.v, t.v)
		return mathMpFin(sum).round(prec, rnd)
	}
	if !s.regular() {
		if s.special() {
			if s.same(t) || t.regular() || t.zero() {
				return s
			}
			return mathMpNan
		}
		if t.regular() {
			return t.round(prec, rnd)
		}
		return t
	}
	if t.special() {
		return t
	}
	return s.round(prec, rnd)
}

// mathMpMul is mpf_mul, exact.
func mathMpMul(s, t mathMpf) mathMpf {
	if s.regular() && t.regular() {
		return mathMpFin(new(big.Float).SetPrec(s.v.MinPrec()+t.v.MinPrec()+1).Mul(s.v, t.v))
	}
	if !s.special() && !t.special() {
		return mathMpInt(0)
	}
	if s.nan() || t.nan() {
		return mathMpNan
	}
	if t.special() {
		s, t = t, s
	}
	if t.zero() {
		return mathMpNan
	}
	return mathMpf{inf: s.sign() * t.sign()}
}

// mathMpDiv is mpf_div; dividing by zero is mpmath's ZeroDivisionError,
// whose text is empty.
func mathMpDiv(s, t mathMpf, prec uint, rnd big.RoundingMode) (mathMpf, error) {
	if s.regular() && t.regular() {
		return mathMpFin(new(big.Float).SetPrec(prec).SetMode(rnd).Quo(s.v, t.v)), nil
	}
	if s.zero() {
		if t.zero() {
			return mathMpf{}, raiseKind("ZeroDivisionError", "")
		}
		if t.nan() {
			return mathMpNan, nil
		}
		return mathMpInt(0), nil
	}
	if t.zero() {
		return mathMpf{}, raiseKind("ZeroDivisionError", "")
	}
	if s.special() && t.special() || s.nan() || t.nan() {
		return mathMpNan, nil
	}
	if !t.special() {
		return mathMpf{inf: s.sign() * t.sign()}, nil
	}
	return mathMpInt(0), nil
}

// mathMpPerturb is mpf_perturb: x plus an infinitesimal of the given
// sign, rounded.
func mathMpPerturb(x mathMpf, epsNeg bool, prec uint, rnd big.RoundingMode) mathMpf {
	if rnd == mathRndN {
		return x.round(prec, rnd)
	}
	var away bool
	if x.sign() < 0 {
		away = (rnd == mathRndD || rnd == mathRndC) != epsNeg
	} else {
		away = (rnd == mathRndU || rnd == mathRndC) != epsNeg
	}
	if !away {
		return x.round(prec, rnd)
	}
	eps := mathMpExact(big.NewInt(1), x.mag()-int(prec)-1)
	if epsNeg {
		eps = eps.neg()
	}
	return mathMpAdd(x, eps, prec, rnd)
}

// mathMpPi is mpf_pi(prec, rnd).
func mathMpPi(prec uint, rnd big.RoundingMode) mathMpf {
	return mathMpFin(mathZiv(prec, true, func(wp uint) *big.Float { return mathPi(wp + 8) }, mathToMpf(prec, rnd)))
}

// mathMpLn2 and mathMpLn10 are mpf_ln2 and mpf_ln10.
func mathMpLn2(prec uint, rnd big.RoundingMode) mathMpf {
	return mathMpFin(mathZiv(prec, true, func(wp uint) *big.Float { return mathLn2(wp + 8) }, mathToMpf(prec, rnd)))
}

func mathMpLn10(prec uint, rnd big.RoundingMode) mathMpf {
	ten := big.NewFloat(10)
	return mathMpFin(mathZiv(prec, true, func(wp uint) *big.Float { return mathLnApprox(ten, wp) }, mathToMpf(prec, rnd)))
}

// mathMpLog is mpf_log; complex reports a negative x (mpmath's
// ComplexResult).
func mathMpLog(x mathMpf, prec uint, rnd big.RoundingMode) (r mathMpf, complex bool) {
	switch {
	case x.zero():
		return mathMpNInf, false
	case x.nan():
		return mathMpNan, false
	case x.sign() < 0:
		return mathMpf{}, true
	case x.special():
		return mathMpInf, false
	case x.v.Cmp(big.NewFloat(1)) == 0:
		return mathMpInt(0), false
	}
	return mathMpFin(mathZiv(prec, true, func(wp uint) *big.Float { return mathLnApprox(x.v, wp) }, mathToMpf(prec, rnd))), false
}

// mathMpAtan is mpf_atan.
func mathMpAtan(x mathMpf, prec uint, rnd big.RoundingMode) mathMpf {
	if !x.regular() {
		switch {
		case x.zero():
			return x
		case x.nan():
			return mathMpNan
		}
		return mathMpAtanInf(x.inf < 0, prec, rnd)
	}
	m := x.mag()
	if m > int(prec)+20 {
		return mathMpAtanInf(x.sign() < 0, prec, rnd)
	}
	if -m > int(prec)+20 {
		return mathMpPerturb(x, x.sign() > 0, prec, rnd)
	}
	return mathMpFin(mathZiv(prec, true, func(wp uint) *big.Float { return mathAtanApprox(x.v, wp) }, mathToMpf(prec, rnd)))
}

// mathMpAtanInf is atan(±inf), ±pi/2.
func mathMpAtanInf(neg bool, prec uint, rnd big.RoundingMode) mathMpf {
	if !neg {
		return mathMpPi(prec, rnd).shift(-1)
	}
	return mathMpPi(prec, mathNegativeRnd(rnd)).shift(-1).neg()
}

// mathMpAtan2 is mpf_atan2(y, x).
func mathMpAtan2(y, x mathMpf, prec uint, rnd big.RoundingMode) mathMpf {
	if !y.regular() {
		switch {
		case y.zero() && !x.nan():
			if x.sign() >= 0 {
				return mathMpInt(0)
			}
			return mathMpPi(prec, rnd)
		case y.special() && y.inf != 0:
			if x.special() && x.inf != 0 {
				return mathMpNan
			}
			return mathMpAtanInf(y.inf < 0, prec, rnd)
		}
		return mathMpNan
	}
	if y.sign() < 0 {
		return mathMpAtan2(y.neg(), x, prec, mathNegativeRnd(rnd)).neg()
	}
	if !x.regular() {
		switch {
		case x.nan():
			return mathMpNan
		case x.inf > 0:
			return mathMpInt(0)
		case x.inf < 0:
			return mathMpPi(prec, rnd)
		}
		return mathMpPi(prec, rnd).shift(-1)
	}
	q, _ := mathMpDiv(y, x, prec+4, mathRndD)
	t := mathMpAtan(q, prec+4, mathRndD)
	if x.sign() < 0 {
		return mathMpAdd(mathMpPi(prec+4, mathRndD), t, prec, rnd)
	}
	return t.round(prec, rnd)
}

// mathMpLogHypot is mpf_log_hypot: log(sqrt(a^2 + b^2)).
func mathMpLogHypot(a, b mathMpf, prec uint, rnd big.RoundingMode) mathMpf {
	if !b.regular() {
		a, b = b, a
	}
	if !a.regular() {
		if !b.regular() {
			switch {
			case a.zero() && b.zero():
				return mathMpNInf
			case a.nan() || b.nan():
				return mathMpNan
			}
			return mathMpInf
		}
		switch {
		case a.zero():
			r, _ := mathMpLog(mathMpFin(new(big.Float).Abs(b.v)), prec, rnd)
			return r
		case a.nan():
			return mathMpNan
		}
		return mathMpInf
	}
	a2, b2 := mathMpMul(a, a), mathMpMul(b, b)
	const extra = 20
	h2 := mathMpAdd(a2, b2, prec+extra, mathRndD)
	cancelled := mathMpAdd(h2, mathMpInt(-1), 10, mathRndD)
	if cancelled.zero() || cancelled.mag() < -extra/2 {
		// the sum exactly (a precision of 0 is exact too)
		h2 = mathMpAdd(a2, b2, uint(max(0, int(prec)+extra-min(a2.lsb(), b2.lsb()))), mathRndD)
	}
	r, _ := mathMpLog(h2, prec, rnd)
	return r.shift(-1)
}

// mathMpLn is mpmath.ln: an mpf, or an mpc for a negative or complex x.
func mathMpLn(x mathMp, prec uint) mathMp {
	if !x.complex {
		if r, complex := mathMpLog(x.r, prec, mathRndN); !complex {
			return mathMp{r: r}
		}
		x = mathMp{complex: true, c: mathMpc{x.r, mathMpInt(0)}}
	}
	z := x.c
	return mathMp{complex: true, c: mathMpc{
		re: mathMpLogHypot(z.re, z.im, prec, mathRndN),
		im: mathMpAtan2(z.im, z.re, prec, mathRndN),
	}}
}

// mathMpQuo is x / y for mpmath's mpf and mpc.
func mathMpQuo(x, y mathMp, prec uint) (mathMp, error) {
	const rnd = mathRndN
	div := func(s, t mathMpf) (mathMpf, error) { return mathMpDiv(s, t, prec, rnd) }
	switch {
	case !x.complex && !y.complex:
		r, err := div(x.r, y.r)
		return mathMp{r: r}, err
	case !x.complex:
		// mpc_mpf_div(p, z)
		p, a, b := x.r, y.c.re, y.c.im
		m := mathMpAdd(mathMpMul(a, a), mathMpMul(b, b), prec+10, mathRndD)
		re, err := div(mathMpMul(a, p), m)
		if err != nil {
			return mathMp{}, err
		}
		im, err := div(mathMpMul(b, p).neg(), m)
		return mathMp{complex: true, c: mathMpc{re, im}}, err
	case !y.complex:
		// mpc_div_mpf(z, p)
		re, err := div(x.c.re, y.r)
		if err != nil {
			return mathMp{}, err
		}
		im, err := div(x.c.im, y.r)
		return mathMp{complex: true, c: mathMpc{re, im}}, err
	}
	// mpc_div(z, w)
	a, b, c, d := x.c.re, x.c.im, y.c.re, y.c.im
	wp := prec + 10
	mag := mathMpAdd(mathMpMul(c, c), mathMpMul(d, d), wp, mathRndD)
	t := mathMpAdd(mathMpMul(a, c), mathMpMul(b, d), wp, mathRndD)
	u := mathMpAdd(mathMpMul(b, c), mathMpMul(a, d).neg(), wp, mathRndD)
	re, err := div(t, mag)
	if err != nil {
		return mathMp{}, err
	}
	im, err := div(u, mag)
	return mathMp{complex: true, c: mathMpc{re, im}}, err
}

// mathMpPowInt is mpf_pow_int(s, n, prec, rnd) for the s = 10 that
// mpmath's from_str raises to large exponents: exact while small, then
// binary powering truncated at a working precision, as mpmath does.
func mathMpPowInt(s mathMpf, n int64, prec uint, rnd big.RoundingMode) mathMpf {
	switch n {
	case 0:
		return mathMpInt(1)
	case 1:
		return s.round(prec, rnd)
	case -1:
		r, _ := mathMpDiv(mathMpInt(1), s, prec, rnd)
		return r
	}
	if n < 0 {
		inv := mathMpPowInt(s, -n, prec+5, mathReciprocalRnd(rnd))
		r, _ := mathMpDiv(mathMpInt(1), inv, prec, rnd)
		return r
	}
	if n == 2 {
		return mathMpMul(s, s).round(prec, rnd)
	}
	// s is positive here (10).
	man, _ := new(big.Float).SetMantExp(s.v, int(s.v.MinPrec())-s.mag()).Int(nil)
	exp := s.lsb()
	if man.BitLen()*int(n) < 1000 {
		return mathMpExact(new(big.Int).Exp(man, big.NewInt(n), nil), exp*int(n)).round(prec, rnd)
	}
	down := rnd == mathRndN || rnd == mathRndD || rnd == mathRndF
	work := int(prec) + 4*mathBitLen(n) + 4
	cut := func(m *big.Int, e *int) {
		if over := m.BitLen() - work; over > 0 {
			if down {
				m.Rsh(m, uint(over))
			} else {
				m.Neg(m).Rsh(m, uint(over)).Neg(m)
			}
			*e += over
		}
	}
	pm, pe := big.NewInt(1), 0
	for {
		if n&1 == 1 {
			pm.Mul(pm, man)
			pe += exp
			cut(pm, &pe)
			n--
			if n == 0 {
				break
			}
		}
		man = new(big.Int).Mul(man, man)
		exp += exp
		cut(man, &exp)
		n /= 2
	}
	return mathMpExact(pm, pe).round(prec, rnd)
}

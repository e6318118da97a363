package multiturn

import (
	"math"
	"math/big"
	"sync"
)

// Correctly rounded elementary functions on big.Float, for MathAPI's
// emulation of mpmath (whose log, atan and pi are correctly rounded but
// at near-ties within 2^-18 of an ulp) and of the C library's pow, sin and
// cos under CPython's float ** (glibc's are correctly rounded but at exact
// ties and some near-ties).
//
// Each kernel returns an approximation within 2^-wp of the value
// (relatively or absolutely); mathZiv widens the working precision until
// rounding the interval the approximation stands for gives one answer
// (Ziv's method).

// mathRoundTo rounds an approximation of a result to a target. ok is false
// when the target cannot be decided at this working precision.
type mathRoundTo func(lo, hi *big.Float) (*big.Float, bool)

// mathToMpf rounds to prec bits in mode, as an mpf would be.
func mathToMpf(prec uint, mode big.RoundingMode) mathRoundTo {
	return func(lo, hi *big.Float) (*big.Float, bool) {
		a := new(big.Float).SetPrec(prec).SetMode(mode).Set(lo)
		b := new(big.Float).SetPrec(prec).SetMode(mode).Set(hi)
		return a, a.Cmp(b) == 0
	}
}

// mathToFloat64 rounds to the nearest float64 (subnormals included).
func mathToFloat64(lo, hi *big.Float) (*big.Float, bool) {
	a, _ := lo.Float64()
	b, _ := hi.Float64()
	return new(big.Float).SetFloat64(a), math.Float64bits(a) == math.Float64bits(b) || a == 0 && b == 0
}

// mathZiv evaluates approx (relative error below 2^-wp when relative,
// else absolute error below 2^-wp) at rising precisions until the result
// rounds one way; an exact or tied result, which never does, is rounded
// as its last approximation is.
func mathZiv(start uint, relative bool, approx func(wp uint) *big.Float, to mathRoundTo) *big.Float {
	wp := start + 24
	var r *big.Float
	for try := 0; try < 6; try++ {
		a := approx(wp)
		if a.Sign() == 0 && relative {
			return a
		}
		err := new(big.Float).SetMantExp(big.NewFloat(1), -int(wp))
		if relative {
			err.Mul(err, new(big.Float).Abs(a))
		}
		p := a.Prec() + wp + 64
		lo := new(big.Float).SetPrec(p).Sub(a, err)
		hi := new(big.Float).SetPrec(p).Add(a, err)
		var ok bool
		if r, ok = to(lo, hi); ok {
			return r
		}
		r, _ = to(a, a)
		wp *= 2
	}
	return r
}

// mathConsts caches ln 2 and pi at the highest precision computed yet.
var mathConsts struct {
	sync.Mutex
	ln2, pi *big.Float
}

// mathLn2 is ln 2 rounded to p bits.
func mathLn2(p uint) *big.Float {
	mathConsts.Lock()
	defer mathConsts.Unlock()
	if c := mathConsts.ln2; c != nil && c.Prec() >= p+16 {
		return new(big.Float).SetPrec(p).Set(c)
	}
	q := p + 32
	// ln 2 = 18 atanh(1/26) - 2 atanh(1/4801) + 8 atanh(1/8749)
	s := new(big.Float).SetPrec(q).Mul(big.NewFloat(18), mathAtanhInv(26, q, false))
	s.Sub(s, new(big.Float).SetPrec(q).Mul(big.NewFloat(2), mathAtanhInv(4801, q, false)))
	s.Add(s, new(big.Float).SetPrec(q).Mul(big.NewFloat(8), mathAtanhInv(8749, q, false)))
	mathConsts.ln2 = s
	return new(big.Float).SetPrec(p).Set(s)
}

// mathPi is pi rounded to p bits.
func mathPi(p uint) *big.Float {
	mathConsts.Lock()
	defer mathConsts.Unlock()
	if c := mathConsts.pi; c != nil && c.Prec() >= p+16 {
		return new(big.Float).SetPrec(p).Set(c)
	}
	q := p + 32
	// pi = 16 atan(1/5) - 4 atan(1/239)
	s := new(big.Float).SetPrec(q).Mul(big.NewFloat(16), mathAtanhInv(5, q, true))
	s.Sub(s, new(big.Float).SetPrec(q).Mul(big.NewFloat(4), mathAtanhInv(239, q, true)))
	mathConsts.pi = s
	return new(big.Float).SetPrec(p).Set(s)
}

// mathAtanhInv is atanh(1/n), or atan(1/n) when alternating, with an
// absolute error below 2^-q: the series sum of ±1/((2k+1) n^(2k+1)),
// in fixed point.
func mathAtanhInv(n int64, q uint, alternating bool) *big.Float {
	f := q + 16
	pow := new(big.Int).Lsh(big.NewInt(1), f)
	pow.Quo(pow, big.NewInt(n))
	sum := new(big.Int).Set(pow)
	n2 := big.NewInt(n * n)
	term, div := new(big.Int), new(big.Int)
	for k := int64(1); pow.Sign() != 0; k++ {
		pow.Quo(pow, n2)
		term.Quo(pow, div.SetInt64(2*k+1))
		if alternating && k%2 == 1 {
			sum.Sub(sum, term)
		} else {
			sum.Add(sum, term)
		}
	}
	r := new(big.Float).SetInt(sum)
	return r.SetMantExp(r, -int(f))
}

// mathLnApprox is ln x for a finite x > 0, x != 1, with a relative error
// below 2^-wp.
func mathLnApprox(x *big.Float, wp uint) *big.Float {
	m := new(big.Float)
	e := x.MantExp(m) // x = m 2^e, m in [0.5, 1)
	if m.Cmp(big.NewFloat(math.Sqrt2/2)) < 0 {
		m.SetMantExp(m, 1)
		e--
	}
	// ln m = 2^(r+1) atanh(z), z = (m' - 1)/(m' + 1), m' = m^(1/2^r):
	// the square roots make z small, at the cost of r bits.
	q := wp + 64
	d := new(big.Float).SetPrec(m.Prec()+2).Sub(m, big.NewFloat(1))
	r := uint(0)
	if d.Sign() != 0 && q > 400 {
		r = uint(math.Sqrt(float64(q)) / 2)
		if lost := uint(max(0, -d.MantExp(nil))); lost >= r {
			r = 0
		} else {
			r -= lost
		}
	}
	q += r + uint(mathBitLen(int64(e))) + 8
	lnm := new(big.Float)
	if d.Sign() != 0 {
		mr := new(big.Float).SetPrec(q).Set(m)
		for i := uint(0); i < r; i++ {
			mr.Sqrt(mr)
		}
		num := new(big.Float).SetPrec(q).Sub(mr, big.NewFloat(1))
		den := new(big.Float).SetPrec(q).Add(mr, big.NewFloat(1))
		z := new(big.Float).SetPrec(q).Quo(num, den)
		lnm = mathAtanhSeries(z, q)
		lnm.SetMantExp(lnm, int(r)+1)
	}
	if e == 0 {
		return lnm
	}
	t := mathLn2(q)
	t.Mul(t, new(big.Float).SetInt64(int64(e)))
	return t.Add(t, lnm)
}

func mathBitLen(n int64) int {
	if n < 0 {
		n = -n
	}
	b := 0
	for ; n > 0; n >>= 1 {
		b++
	}
	return b
}

// mathAtanhSeries is atanh z for a small z, at precision q.
func mathAtanhSeries(z *big.Float, q uint) *big.Float {
	z2 := new(big.Float).SetPrec(q).Mul(z, z)
	pow := new(big.Float).SetPrec(q).Set(z)
	sum := new(big.Float).SetPrec(q).Set(z)
	term := new(big.Float).SetPrec(q)
	for k := int64(1); ; k++ {
		pow.Mul(pow, z2)
		term.Quo(pow, new(big.Float).SetInt64(2*k+1))
		if term.Sign() == 0 || term.MantExp(nil) < sum.MantExp(nil)-int(q)-4 {
			return sum
		}
		sum.Add(sum, term)
	}
}

// mathExpApprox is e^t for a finite t, with a relative error below 2^-wp
// (|t| is small enough that the result is a big.Float).
func mathExpApprox(t *big.Float, wp uint) *big.Float {
	q := wp + 64
	tf, _ := t.Float64()
	k := int64(math.Round(tf / math.Ln2))
	q += uint(mathBitLen(k))
	const s = 12 // halvings of the reduced argument
	q += s
	r := new(big.Float).SetPrec(q).Set(t)
	if k != 0 {
		l := mathLn2(q + uint(mathBitLen(k)))
		l.Mul(l, new(big.Float).SetInt64(k))
		r.Sub(r, l)
	}
	r.SetMantExp(r, -s)
	sum := new(big.Float).SetPrec(q).SetInt64(1)
	term := new(big.Float).SetPrec(q).SetInt64(1)
	for n := int64(1); ; n++ {
		term.Mul(term, r)
		term.Quo(term, new(big.Float).SetInt64(n))
		if term.Sign() == 0 || term.MantExp(nil) < -int(q)-4 {
			break
		}
		sum.Add(sum, term)
	}
	for i := 0; i < s; i++ {
		sum.Mul(sum, sum)
	}
	return sum.SetMantExp(sum, int(k))
}

// mathAtanApprox is atan x for a finite nonzero x, with a relative error
// below 2^-wp.
func mathAtanApprox(x *big.Float, wp uint) *big.Float {
	q := wp + 64
	neg := x.Sign() < 0
	a := new(big.Float).SetPrec(q + uint(max(0, x.MantExp(nil)))).Abs(x)
	recip := a.Cmp(big.NewFloat(1)) > 0
	if recip {
		a.Quo(big.NewFloat(1), a)
	}
	// atan a = 2^h atan(a_h), a_{i+1} = a_i / (1 + sqrt(1 + a_i^2))
	h := uint(math.Sqrt(float64(q)) / 2)
	q += h + 8
	a.SetPrec(q)
	one := big.NewFloat(1)
	for i := uint(0); i < h; i++ {
		s := new(big.Float).SetPrec(q).Mul(a, a)
		s.Add(s, one).Sqrt(s).Add(s, one)
		a.Quo(a, s)
	}
	a2 := new(big.Float).SetPrec(q).Mul(a, a)
	pow := new(big.Float).SetPrec(q).Set(a)
	sum := new(big.Float).SetPrec(q).Set(a)
	term := new(big.Float).SetPrec(q)
	for k := int64(1); ; k++ {
		pow.Mul(pow, a2)
		term.Quo(pow, new(big.Float).SetInt64(2*k+1))
		if term.Sign() == 0 || term.MantExp(nil) < sum.MantExp(nil)-int(q)-4 {
			break
		}
		if k%2 == 1 {
			sum.Sub(sum, term)
		} else {
			sum.Add(sum, term)
		}
	}
	sum.SetMantExp(sum, int(h))
	if recip {
		half := mathPi(q)
		half.SetMantExp(half, -1)
		sum.Sub(half, sum)
	}
	if neg {
		sum.Neg(sum)
	}
	return sum
}

// mathSinCosApprox is sin x (or cos x) for a finite float64 x, with an
// absolute error below 2^-wp.
func mathSinCosApprox(x float64, wp uint, cos bool) *big.Float {
	q := wp + 64
	bx := new(big.Float).SetFloat64(x)
	ex := max(0, bx.MantExp(nil))
	twoPi := mathPi(q + uint(ex) + 8)
	twoPi.SetMantExp(twoPi, 1)
	r := new(big.Float).SetPrec(q+uint(ex)+8).Quo(bx, twoPi)
	n, _ := r.Int(nil)
	r.Sub(bx, new(big.Float).SetPrec(q+uint(ex)+8).Mul(twoPi, new(big.Float).SetInt(n)))
	r.SetPrec(q)
	// r in (-2pi, 2pi): Taylor series, its terms below 2^8 in size.
	r2 := new(big.Float).SetPrec(q).Mul(r, r)
	term := new(big.Float).SetPrec(q).SetInt64(1)
	k := int64(1)
	if !cos {
		term.Set(r)
		k = 2
	}
	sum := new(big.Float).SetPrec(q).Set(term)
	for {
		term.Mul(term, r2)
		term.Quo(term, new(big.Float).SetInt64(k*(k+1)))
		term.Neg(term)
		k += 2
		if term.Sign() == 0 || term.MantExp(nil) < -int(q)-4 {
			return sum
		}
		sum.Add(sum, term)
	}
}

// mathCRPow is pow(x, y) correctly rounded, for finite x > 0, x != 1
// and finite y != 0; ±Inf when it overflows.
func mathCRPow(x, y float64) float64 {
	if y == math.Trunc(y) && math.Abs(y) <= 64 {
		// Exact: x^|y| has at most 64*53 bits.
		n := int(math.Abs(y))
		bx := new(big.Float).SetFloat64(x)
		p := new(big.Float).SetPrec(uint(53*n + 64)).SetInt64(1)
		for i := 0; i < n; i++ {
			p.Mul(p, bx)
		}
		if y < 0 {
			den, _ := p.Rat(nil)
			f, _ := new(big.Rat).Inv(den).Float64()
			return f
		}
		f, _ := p.Float64()
		return f
	}
	bx := new(big.Float).SetFloat64(x)
	by := new(big.Float).SetFloat64(y)
	// Settle overflow and underflow from a float estimate: |y ln x| far
	// past 745 is out of any float64's range.
	est := y * math.Log(x)
	switch {
	case est > 710:
		return math.Inf(1)
	case est < -746:
		return 0
	}
	r := mathZiv(53, true, func(wp uint) *big.Float {
		t := mathLnApprox(bx, wp+16)
		t.Mul(t, by)
		return mathExpApprox(t, wp+16)
	}, mathToFloat64)
	f, _ := r.Float64()
	return f
}

// mathCRSinCos is sin x or cos x correctly rounded.
func mathCRSinCos(x float64, cos bool) float64 {
	r := mathZiv(53, false, func(wp uint) *big.Float {
		return mathSinCosApprox(x, wp, cos)
	}, mathToFloat64)
	f, _ := r.Float64()
	return f
}

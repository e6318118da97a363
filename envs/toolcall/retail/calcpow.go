package retail

import (
	"math"
	"math/big"
)

// pow is x**y for floats, correctly rounded (as the C library's pow that
// Python calls is, but Go's math.Pow is not): computed with 192-bit
// big.Float arithmetic and rounded once. Infinities and NaN go to
// math.Pow.
func pow(x, y float64) float64 {
	switch {
	case y == 0 || x == 1:
		return 1
	case math.IsInf(x, 0) || math.IsInf(y, 0) || math.IsNaN(x) || math.IsNaN(y) || x == 0:
		return math.Pow(x, y)
	}
	neg := false
	if x < 0 { // only integer y here
		x = -x
		neg = math.Mod(y, 2) != 0
	}
	var r *big.Float
	if y == math.Trunc(y) && math.Abs(y) <= 1<<16 {
		r = powInt(big.NewFloat(x).SetPrec(powPrec), int64(math.Abs(y)))
		if y < 0 {
			r = new(big.Float).SetPrec(powPrec).Quo(big.NewFloat(1).SetPrec(powPrec), r)
		}
	} else {
		t := bigLog(big.NewFloat(x).SetPrec(powPrec))
		t.Mul(t, big.NewFloat(y).SetPrec(powPrec))
		if tf, _ := t.Float64(); tf > 710 {
			r = big.NewFloat(math.Inf(1))
		} else if tf < -746 {
			r = new(big.Float)
		} else {
			r = bigExp(t)
		}
	}
	f, _ := r.Float64()
	if neg {
		f = -f
	}
	return f
}

const powPrec = 192

func powInt(x *big.Float, n int64) *big.Float {
	r := big.NewFloat(1).SetPrec(powPrec)
	for ; n > 0; n >>= 1 {
		if n&1 == 1 {
			r.Mul(r, x)
		}
		x = new(big.Float).SetPrec(powPrec).Mul(x, x)
	}
	return r
}

// bigLn2 is ln 2 = 2·atanh(1/3).
var bigLn2 = func() *big.Float {
	third := new(big.Float).SetPrec(powPrec).Quo(big.NewFloat(1).SetPrec(powPrec), big.NewFloat(3).SetPrec(powPrec))
	return atanh2(third)
}()

// atanh2 is 2·atanh(z) = ln((1+z)/(1-z)) by its series, for small |z|.
func atanh2(z *big.Float) *big.Float {
	z2 := new(big.Float).SetPrec(powPrec).Mul(z, z)
	term := new(big.Float).SetPrec(powPrec).Set(z)
	sum := new(big.Float).SetPrec(powPrec).Set(z)
	eps := new(big.Float).SetMantExp(big.NewFloat(1), -powPrec-8)
	for k := int64(3); ; k += 2 {
		term.Mul(term, z2)
		t := new(big.Float).SetPrec(powPrec).Quo(term, new(big.Float).SetInt64(k))
		sum.Add(sum, t)
		if t.Abs(t).Cmp(eps) < 0 {
			break
		}
	}
	return sum.Mul(sum, big.NewFloat(2))
}

// bigLog is ln x for x > 0: x = m·2^e with m in [1/√2, √2), ln m from
// the atanh series of (m-1)/(m+1).
func bigLog(x *big.Float) *big.Float {
	m := new(big.Float).SetPrec(powPrec)
	e := x.MantExp(m) // m in [0.5, 1)
	if m.Cmp(big.NewFloat(math.Sqrt2/2)) < 0 {
		m.SetMantExp(m, 1)
		e--
	}
	one := big.NewFloat(1).SetPrec(powPrec)
	num := new(big.Float).SetPrec(powPrec).Sub(m, one)
	den := new(big.Float).SetPrec(powPrec).Add(m, one)
	r := atanh2(num.Quo(num, den))
	return r.Add(r, new(big.Float).SetPrec(powPrec).Mul(bigLn2, big.NewFloat(float64(e))))
}

// bigExp is e^t: t = k·ln 2 + r, e^(r/256) by its Taylor series, squared
// eight times, scaled by 2^k.
func bigExp(t *big.Float) *big.Float {
	kf, _ := new(big.Float).Quo(t, bigLn2).Float64()
	k := math.Round(kf)
	r := new(big.Float).SetPrec(powPrec).Sub(t, new(big.Float).SetPrec(powPrec).Mul(bigLn2, big.NewFloat(k)))
	r.SetMantExp(r, -8)
	sum := big.NewFloat(1).SetPrec(powPrec)
	term := big.NewFloat(1).SetPrec(powPrec)
	eps := new(big.Float).SetMantExp(big.NewFloat(1), -powPrec-8)
	for n := int64(1); ; n++ {
		term.Mul(term, r)
		term.Quo(term, new(big.Float).SetInt64(n))
		sum.Add(sum, term)
		if new(big.Float).Abs(term).Cmp(eps) < 0 {
			break
		}
	}
	for range 8 {
		sum.Mul(sum, sum)
	}
	return sum.SetMantExp(sum, int(k))
}

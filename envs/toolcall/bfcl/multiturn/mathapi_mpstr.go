package multiturn

import (
	"math"
	"math/big"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/nextstate-rl/nextstate/envs/internal/pyval"
)

// Reading MathAPI's arguments as mpmath does (its precision, and numbers
// and numeric strings as mpmath.convert reads them) and writing its
// results as mpmath's repr does.

// mathMpDps is `mpmath.mp.dps = precision`: the context's precision in
// bits, dps_to_prec(int(precision)), or int()'s exception.
func mathMpDps(precision any) (uint, error) {
	n, err := toInt(precision)
	if err != nil {
		return 0, err
	}
	f, err := toFloat(new(big.Int).Add(n, big.NewInt(1)))
	if err != nil {
		return 0, err
	}
	bits := f * 3.3219280948873626
	if math.IsInf(bits, 0) {
		return 0, raiseKind("OverflowError", "cannot convert float infinity to integer")
	}
	bits = math.RoundToEven(bits)
	switch {
	case bits < 1:
		return 1, nil
	case bits > 6.5e19:
		// mpmath shifts an int by about that many bits
		return 0, raiseKind("OverflowError", "too many digits in integer")
	case bits > mathMpMaxPrec:
		return 0, mathErrMemory
	}
	return uint(bits), nil
}

// mathMpMaxPrec bounds the precision logarithm computes at (in bits,
// about 30,000 digits); past it mpmath runs for minutes or hours, or out
// of memory.
const mathMpMaxPrec = 100000

// mathErrMemory is MemoryError(), whose text is empty.
var mathErrMemory = &Exception{Kind: "MemoryError"}

// mathMpConvert is mpmath's convert(x) at precision prec (the context's):
// numbers exactly, strings as decimal or complex literals.
func mathMpConvert(x any, prec uint) (mathMp, error) {
	switch t := x.(type) {
	case bool, int64, *big.Int:
		return mathMp{r: mathMpFin(new(big.Float).SetInt(pyval.BigOf(t)))}, nil
	case float64:
		switch {
		case math.IsNaN(t):
			return mathMp{r: mathMpNan}, nil
		case math.IsInf(t, 0):
			return mathMp{r: mathMpf{inf: int(math.Copysign(1, t))}}, nil
		}
		return mathMp{r: mathMpFin(new(big.Float).SetFloat64(t))}, nil
	case string:
		r, err := mathMpFromStr(t, prec)
		if err == nil {
			return mathMp{r: r}, nil
		}
		if !isExc(err, "ValueError") {
			return mathMp{}, err
		}
		if l := pyval.Lower(t); strings.Contains(l, "j") {
			return mathMpComplex(strings.ReplaceAll(l, " ", ""), prec)
		}
	}
	return mathMp{}, raiseKind("TypeError", "cannot create mpf from %s", pyval.Repr(x))
}

// mathMpComplexRe is mpmath's get_complex pattern; Python's $ also
// matches before a final newline.
var mathMpComplexRe = regexp.MustCompile(`^\(?(?P<re>[\+\-]?\d*(\.\d*)?(e[\+\-]?\d+)?)??(?P<im>[\+\-]?\d*(\.\d*)?(e[\+\-]?\d+)?j)?\)?\n?\z`)

// mathMpComplex reads a complex literal as mpmath's _convert_fallback.
func mathMpComplex(x string, prec uint) (mathMp, error) {
	m := mathMpComplexRe.FindStringSubmatchIndex(x)
	if m == nil {
		return mathMp{}, noAttr(nil, "group")
	}
	group := func(name string) (string, bool) {
		i := mathMpComplexRe.SubexpIndex(name)
		if m[2*i] < 0 {
			return "", false
		}
		return x[m[2*i]:m[2*i+1]], true
	}
	var re any = int64(0)
	if s, _ := group("re"); s != "" {
		re = s
	}
	im, ok := group("im")
	if !ok {
		return mathMp{}, noAttr(nil, "rstrip")
	}
	im = strings.TrimRight(im, "j")
	r, err := mathMpConvert(re, prec)
	if err != nil {
		return mathMp{}, err
	}
	i, err := mathMpConvert(im, prec)
	if err != nil {
		return mathMp{}, err
	}
	return mathMp{complex: true, c: mathMpc{r.r.round(prec, mathRndN), i.r.round(prec, mathRndN)}}, nil
}

// mathPyStrip is str.strip().
func mathPyStrip(s string) string { return strings.TrimFunc(s, isSpace) }

// mathMpFromStr is mpmath's from_str(x, prec, round_nearest); a
// ValueError means x is no number literal.
func mathMpFromStr(x string, prec uint) (mathMpf, error) {
	x = mathPyStrip(pyval.Lower(x))
	switch x {
	case "inf", "+inf":
		return mathMpInf, nil
	case "-inf":
		return mathMpNInf, nil
	case "nan":
		return mathMpNan, nil
	}
	if strings.Contains(x, "/") {
		parts := strings.Split(x, "/")
		if len(parts) != 2 {
			return mathMpf{}, raiseKind("ValueError", "too many values to unpack")
		}
		p, err := toInt(strings.TrimRight(parts[0], "l"))
		if err != nil {
			return mathMpf{}, err
		}
		q, err := toInt(strings.TrimRight(parts[1], "l"))
		if err != nil {
			return mathMpf{}, err
		}
		return mathMpDiv(mathMpExact(p, 0), mathMpExact(q, 0), prec, mathRndN)
	}
	// str_to_man_exp
	x = strings.TrimRight(x, "l")
	if _, err := toFloat(x); err != nil {
		return mathMpf{}, err
	}
	exp := int64(0)
	if parts := strings.Split(x, "e"); len(parts) > 1 {
		x = parts[0]
		e, err := toInt(parts[1])
		if err != nil {
			return mathMpf{}, err
		}
		if !e.IsInt64() || e.Int64() > 5e8 || e.Int64() < -5e8 {
			// past big.Float's exponent range
			return mathMpf{}, raiseKind("ValueError", "exponent too large for this port of mpmath")
		}
		exp = e.Int64()
	}
	if parts := strings.Split(x, "."); len(parts) == 2 {
		b := strings.TrimRight(parts[1], "0")
		exp -= int64(utf8.RuneCountInString(b))
		x = parts[0] + b
	}
	man, err := toInt(x)
	if err != nil {
		return mathMpf{}, err
	}
	if exp > 400 || exp < -400 {
		s := mathMpExact(man, 0).round(prec+10, mathRndD)
		ten := mathMpInt(10)
		return mathMpMul(s, mathMpPowInt(ten, exp, prec+10, mathRndD)).round(prec, mathRndN), nil
	}
	if exp >= 0 {
		return mathMpExact(new(big.Int).Mul(man, new(big.Int).Exp(big.NewInt(10), big.NewInt(exp), nil)), 0).round(prec, mathRndN), nil
	}
	return mathMpDiv(mathMpExact(man, 0), mathMpExact(new(big.Int).Exp(big.NewInt(10), big.NewInt(-exp), nil), 0), prec, mathRndN)
}

// mathMpRepr is repr() of mpmath.log's result at precision prec.
func mathMpRepr(x mathMp, prec uint) string {
	dps := mathMpReprDps(prec)
	if !x.complex {
		return "mpf('" + mathMpToStr(x.r, dps) + "')"
	}
	return "mpc(real='" + mathMpToStr(x.c.re, dps) + "', imag='" + mathMpToStr(x.c.im, dps) + "')"
}

// mathMpReprDps is repr_dps(prec): the digits an mpf's repr shows.
func mathMpReprDps(prec uint) int {
	dps := max(1, int(math.RoundToEven(float64(prec)/3.3219280948873626))-1)
	if dps == 15 {
		return 17
	}
	return dps + 3
}

// mathMpToStr is mpmath's to_str(x, dps) with its defaults.
func mathMpToStr(x mathMpf, dps int) string {
	switch {
	case x.nan():
		return "nan"
	case x.special() && x.inf > 0:
		return "+inf"
	case x.special():
		return "-inf"
	case x.zero():
		return "0.0"
	}
	minFixed, maxFixed := min(-(dps/3), -5), dps
	sign, digits, exponent := mathMpDigitsExp(x, dps+3)
	if len(digits) > dps && digits[dps] >= '5' {
		d := []byte(digits[:dps])
		i := dps - 1
		for i >= 0 && d[i] == '9' {
			i--
		}
		if i >= 0 {
			d[i]++
			for j := i + 1; j < dps; j++ {
				d[j] = '0'
			}
			digits = string(d)
		} else {
			digits = "1" + strings.Repeat("0", dps-1)
			exponent++
		}
	} else if len(digits) > dps {
		digits = digits[:dps]
	}
	split := 1
	if minFixed < exponent && exponent < maxFixed {
		if exponent < 0 {
			digits = strings.Repeat("0", -exponent) + digits
		} else {
			split = exponent + 1
			if split > dps {
				digits += strings.Repeat("0", split-dps)
			}
		}
		exponent = 0
	}
	digits = digits[:split] + "." + digits[split:]
	digits = strings.TrimRight(digits, "0")
	if strings.HasSuffix(digits, ".") {
		digits += "0"
	}
	switch {
	case exponent == 0:
		return sign + digits
	case exponent > 0:
		return sign + digits + "e+" + mathItoa(exponent)
	}
	return sign + digits + "e" + mathItoa(exponent)
}

func mathItoa(n int) string { return big.NewInt(int64(n)).String() }

// mathMpDigitsExp is to_digits_exp(x, dps): x's sign, its leading decimal
// digits (truncated) and the decimal exponent of the first.
func mathMpDigitsExp(x mathMpf, dps int) (sign, digits string, exponent int) {
	if x.sign() < 0 {
		sign = "-"
		x = x.neg()
	}
	bitprec := int(float64(dps)*3.3219280948873626) + 10
	if e := x.mag(); e > 3500 || e < -3500 {
		// Scale by a power of ten near the number's size first.
		exp := x.lsb()
		expprec := uint(mathBitLen(int64(exp)) + 5)
		t := mathMpMul(mathMpInt(int64(exp)), mathMpLn2(expprec, mathRndD))
		t, _ = mathMpDiv(t, mathMpLn10(expprec, mathRndD), expprec, mathRndD)
		b, _ := t.v.Int(nil) // toward zero
		x, _ = mathMpDiv(x, mathMpPowInt(mathMpInt(10), b.Int64(), uint(bitprec), mathRndD), uint(bitprec), mathRndD)
		exponent = int(b.Int64())
	}
	fixprec := max(bitprec-x.mag(), 0)
	fixdps := int(float64(fixprec)/3.3219280948873626 + 0.5)
	sf, _ := new(big.Float).SetMantExp(x.v, fixprec).Int(nil)
	sd := sf.Mul(sf, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(fixdps)), nil))
	sd.Rsh(sd, uint(fixprec))
	digits = sd.String()
	exponent += len(digits) - fixdps - 1
	return sign, digits, exponent
}

package pyval

import (
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// json.dumps with its defaults writes ", " and ": " separators,
// everything outside printable ASCII escaped as \uXXXX, and floats as
// Python's repr writes them (100.0, 1e-05). The functions here write the
// same bytes, so an agent reads exactly what it would read from the
// Python original (tau2's tools, BFCL's classes).

// AppendString writes s as Python's json.dumps does with ensure_ascii:
// " and \ escaped, \n \r \t \b \f by name, every other character outside
// " ".."~" as \uXXXX (UTF-16 surrogate pairs beyond the BMP); "/" is kept.
func AppendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	u := func(v rune) {
		b = append(b, '\\', 'u', hex[v>>12&0xf], hex[v>>8&0xf], hex[v>>4&0xf], hex[v&0xf])
	}
	b = append(b, '"')
	plain := true
	for i := 0; i < len(s) && plain; i++ {
		plain = s[i] >= ' ' && s[i] <= '~' && s[i] != '"' && s[i] != '\\'
	}
	if plain {
		return append(append(b, s...), '"')
	}
	for i := 0; i < len(s); {
		c := s[i]
		if c >= ' ' && c <= '~' {
			if c == '"' || c == '\\' {
				b = append(b, '\\')
			}
			b = append(b, c)
			i++
			continue
		}
		if c < utf8.RuneSelf {
			switch c {
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				u(rune(c))
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		if r >= 0x10000 {
			r -= 0x10000
			u(0xd800 + (r>>10)&0x3ff)
			u(0xdc00 + r&0x3ff)
		} else {
			u(r)
		}
	}
	return append(b, '"')
}

// AppendFloat writes f as json.dumps does: repr(f), with infinities and
// NaN as Infinity, -Infinity and NaN.
func AppendFloat(b []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(b, "NaN"...)
	case math.IsInf(f, 1):
		return append(b, "Infinity"...)
	case math.IsInf(f, -1):
		return append(b, "-Infinity"...)
	}
	if a := math.Abs(f); a == 0 || a >= 1e-4 && a < 1e16 {
		// Fixed notation: the shortest digits, and ".0" for a whole value.
		n := len(b)
		b = strconv.AppendFloat(b, f, 'f', -1, 64)
		for _, c := range b[n:] {
			if c == '.' {
				return b
			}
		}
		return append(b, ".0"...)
	}
	return append(b, FloatRepr(f)...)
}

// FloatRepr is Python's repr(f), which str(f) equals: the shortest digits
// that read back as f, in fixed notation when the decimal point falls in
// (-4, 16] digits from the start (with ".0" when the value is whole), else
// scientific with a signed exponent of at least two digits (1e-05, 1e+16).
func FloatRepr(f float64) string {
	switch {
	case math.IsNaN(f):
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	s := strconv.FormatFloat(f, 'e', -1, 64) // d.ddde±XX, shortest
	neg := s[0] == '-'
	if neg {
		s = s[1:]
	}
	ei := strings.IndexByte(s, 'e')
	e, _ := strconv.Atoi(s[ei+1:])
	digits := strings.Replace(s[:ei], ".", "", 1)
	decpt := e + 1 // value = 0.digits × 10^decpt
	var out string
	if decpt > -4 && decpt <= 16 {
		switch {
		case decpt <= 0:
			out = "0." + strings.Repeat("0", -decpt) + digits
		case decpt >= len(digits):
			out = digits + strings.Repeat("0", decpt-len(digits)) + ".0"
		default:
			out = digits[:decpt] + "." + digits[decpt:]
		}
	} else {
		m := digits[:1]
		if len(digits) > 1 {
			m += "." + digits[1:]
		}
		sign := "+"
		if e < 0 {
			sign, e = "-", -e
		}
		es := strconv.Itoa(e)
		if len(es) < 2 {
			es = "0" + es
		}
		out = m + "e" + sign + es
	}
	if neg {
		out = "-" + out
	}
	return out
}

// Round2 is Python's round(x, 2) for a float: the two-decimal value
// nearest the exact binary value of x (the correctly rounded "%.2f"),
// keeping the sign of a zero (round(-0.001, 2) is -0.0).
func Round2(x float64) float64 {
	if math.IsInf(x, 0) || math.IsNaN(x) {
		return x
	}
	r, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'f', 2, 64), 64)
	if r == 0 {
		return math.Copysign(0, x)
	}
	return r
}

// SameFloat is equality as tau2's database hash sees it: the same repr,
// so 0.0 and -0.0 differ.
func SameFloat(a, b float64) bool {
	return a == b && math.Signbit(a) == math.Signbit(b) || a != a && b != b
}

// AppendStrings writes a list of strings as json.dumps does (null for nil).
func AppendStrings(b []byte, ss []string) []byte {
	if ss == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = AppendString(b, s)
	}
	return append(b, ']')
}

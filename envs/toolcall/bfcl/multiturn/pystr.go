package multiturn

import (
	"regexp"
	"time"
	"unicode"

	"github.com/nextstate-rl/nextstate/envs/internal/pyval"
)

// Python's operations on strs beyond pyval's, with Python's errors.

// isSpace is whether str.isspace(), str.strip() and str.split() take r
// for white space: Unicode's, and the separators \x1c to \x1f.
func isSpace(r rune) bool { return unicode.IsSpace(r) || r >= 0x1c && r <= 0x1f }

// The regular expressions Python's _strptime makes of "%Y-%m-%d" and
// "%Y-%m-%d %H:%M:%S" (\d is a decimal digit of Python's Unicode, a space
// in the format any run of white space), anchored at the start only.
const (
	reDigit  = `[^\P{Nd}\x{11F50}-\x{11F59}\x{1E4F0}-\x{1E4F9}]` // decimalDigit's
	reDateRE = `^(` + reDigit + reDigit + reDigit + reDigit + `)-(1[0-2]|0[1-9]|[1-9])-(3[0-1]|[1-2]` + reDigit + `|0[1-9]|[1-9]| [1-9])`
)

var (
	reDate     = regexp.MustCompile(reDateRE)
	reDateTime = regexp.MustCompile(reDateRE + `[\t\n\v\f\r \x1c-\x1f\x85\p{Z}]+(2[0-3]|[0-1]` + reDigit + `|` + reDigit + `):([0-5]` + reDigit + `|` + reDigit + `):(6[0-1]|[0-5]` + reDigit + `|` + reDigit + `)`)
)

// strptime is datetime.strptime(v, "%Y-%m-%d") or, withTime,
// datetime.strptime(v, "%Y-%m-%d %H:%M:%S"), with Python's errors: a
// ValueError for a str it cannot read, a TypeError for a v that is no
// str.
func strptime(v any, withTime bool) (time.Time, error) {
	s, ok := v.(string)
	if !ok {
		return time.Time{}, raiseKind("TypeError", "strptime() argument 1 must be str, not %s", TypeName(v))
	}
	re, format := reDate, "%Y-%m-%d"
	if withTime {
		re, format = reDateTime, "%Y-%m-%d %H:%M:%S"
	}
	m := re.FindStringSubmatchIndex(s)
	if m == nil {
		return time.Time{}, raiseKind("ValueError", "time data %s does not match format %s", pyval.Quote(s), pyval.Quote(format))
	}
	if m[1] != len(s) {
		return time.Time{}, raiseKind("ValueError", "unconverted data remains: %s", s[m[1]:])
	}
	var f [6]int
	for i := 0; 2*i+2 < len(m); i++ {
		for _, r := range s[m[2*i+2]:m[2*i+3]] {
			if d, ok := decimalDigit(r); ok {
				f[i] = f[i]*10 + d
			}
		}
	}
	year, month, day := f[0], f[1], f[2]
	if year < 1 {
		return time.Time{}, raiseKind("ValueError", "year %d is out of range", year)
	}
	if day > time.Date(year, time.Month(month)+1, 0, 0, 0, 0, 0, time.UTC).Day() {
		return time.Time{}, raiseKind("ValueError", "day is out of range for month")
	}
	if f[5] > 59 {
		return time.Time{}, raiseKind("ValueError", "second must be in 0..59")
	}
	return time.Date(year, time.Month(month), day, f[3], f[4], f[5], 0, time.UTC), nil
}

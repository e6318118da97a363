package multiturn

import (
	"errors"
	"math"
	"math/big"
	"strconv"
	"strings"
	"unicode"

	"github.com/nextstate-rl/nextstate/envs/internal/pyval"
)

// TravelAPI's tables and the Python operations its methods apply to the
// model's arguments, with the exceptions Python raises for wrong types.

// trAirports is list_all_airports's answer, in its order.
var trAirports = []string{
	"RMS", "SBK", "MPC", "SVP", "SHD", "CDG", "LHR", "SSV", "OKD", "WLB", "PEK", "HND",
	"HKG", "CIA", "CRH", "ATV", "PHV", "GFD", "SFO", "LAX", "JFK", "ORD", "BOS",
}

// trCityAirports is get_nearest_airport_by_city's map.
var trCityAirports = map[string]string{
	"Rivermist": "RMS", "Stonebrook": "SBK", "Maplecrest": "MPC", "Silverpine": "SVP",
	"Shadowridge": "SHD", "London": "LHR", "Paris": "CDG", "Sunset Valley": "SSV",
	"Oakendale": "OKD", "Willowbend": "WLB", "Crescent Hollow": "CRH", "Autumnville": "ATV",
	"Pinehaven": "PHV", "Greenfield": "GFD", "San Francisco": "SFO", "Los Angeles": "LAX",
	"New York": "JFK", "Chicago": "ORD", "Boston": "BOS", "Beijing": "PEK",
	"Hong Kong": "HKG", "Rome": "CIA", "Tokyo": "HND",
}

// trRoutes are get_flight_cost's base costs in USD, by (from, to).
var trRoutes = map[[2]string]int64{
	{"SFO", "LAX"}: 200, {"SFO", "JFK"}: 500, {"SFO", "ORD"}: 400, {"SFO", "BOS"}: 450,
	{"SFO", "RMS"}: 300, {"SFO", "SBK"}: 350, {"SFO", "MPC"}: 370, {"SFO", "SVP"}: 320,
	{"SFO", "SHD"}: 330, {"SFO", "SSV"}: 340, {"SFO", "OKD"}: 360, {"SFO", "WLB"}: 310,
	{"SFO", "CRH"}: 380, {"SFO", "ATV"}: 390, {"SFO", "PHV"}: 420, {"SFO", "GFD"}: 430,
	{"SFO", "CIA"}: 700, {"LAX", "SFO"}: 100, {"LAX", "JFK"}: 600, {"LAX", "ORD"}: 500,
	{"LAX", "BOS"}: 550, {"LAX", "RMS"}: 310, {"LAX", "SBK"}: 320, {"LAX", "MPC"}: 330,
	{"LAX", "SVP"}: 340, {"LAX", "SHD"}: 350, {"LAX", "SSV"}: 360, {"LAX", "OKD"}: 370,
	{"LAX", "WLB"}: 380, {"LAX", "CRH"}: 390, {"LAX", "ATV"}: 400, {"LAX", "PHV"}: 410,
	{"LAX", "GFD"}: 420, {"LAX", "HND"}: 430, {"JFK", "ORD"}: 300, {"JFK", "BOS"}: 250,
	{"JFK", "RMS"}: 450, {"JFK", "SBK"}: 460, {"JFK", "MPC"}: 470, {"JFK", "SVP"}: 480,
	{"JFK", "SHD"}: 490, {"JFK", "SSV"}: 500, {"JFK", "OKD"}: 510, {"JFK", "WLB"}: 520,
	{"JFK", "CRH"}: 530, {"JFK", "ATV"}: 540, {"JFK", "PHV"}: 550, {"JFK", "GFD"}: 560,
	{"JFK", "LAX"}: 570, {"JFK", "HND"}: 800, {"JFK", "PVG"}: 950, {"JFK", "PEK"}: 1000,
	{"ORD", "LAX"}: 180, {"ORD", "BOS"}: 200, {"ORD", "RMS"}: 350, {"ORD", "SBK"}: 360,
	{"ORD", "MPC"}: 370, {"ORD", "SVP"}: 380, {"ORD", "SHD"}: 390, {"ORD", "SSV"}: 400,
	{"ORD", "OKD"}: 410, {"ORD", "WLB"}: 420, {"ORD", "CRH"}: 430, {"ORD", "ATV"}: 440,
	{"ORD", "PHV"}: 450, {"ORD", "GFD"}: 460, {"BOS", "RMS"}: 400, {"BOS", "SBK"}: 410,
	{"BOS", "MPC"}: 420, {"BOS", "SVP"}: 430, {"BOS", "SHD"}: 440, {"BOS", "SSV"}: 450,
	{"BOS", "OKD"}: 460, {"BOS", "WLB"}: 470, {"BOS", "CRH"}: 480, {"BOS", "ATV"}: 490,
	{"BOS", "PHV"}: 500, {"BOS", "GFD"}: 510, {"RMS", "BOS"}: 200, {"RMS", "JFK"}: 210,
	{"RMS", "SBK"}: 220, {"RMS", "MPC"}: 230, {"RMS", "SVP"}: 240, {"RMS", "SHD"}: 250,
	{"RMS", "SSV"}: 260, {"RMS", "OKD"}: 270, {"RMS", "WLB"}: 280, {"RMS", "CRH"}: 290,
	{"RMS", "ATV"}: 300, {"RMS", "PHV"}: 310, {"RMS", "GFD"}: 320, {"RMS", "LAX"}: 330,
	{"SBK", "MPC"}: 200, {"SBK", "SVP"}: 210, {"SBK", "SHD"}: 220, {"SBK", "SSV"}: 230,
	{"SBK", "OKD"}: 240, {"SBK", "WLB"}: 250, {"SBK", "CRH"}: 260, {"SBK", "ATV"}: 270,
	{"SBK", "PHV"}: 280, {"SBK", "GFD"}: 290, {"MPC", "SVP"}: 210, {"MPC", "SHD"}: 220,
	{"MPC", "SSV"}: 230, {"MPC", "OKD"}: 240, {"MPC", "WLB"}: 250, {"MPC", "CRH"}: 260,
	{"MPC", "ATV"}: 270, {"MPC", "PHV"}: 280, {"MPC", "GFD"}: 290, {"SVP", "SHD"}: 230,
	{"SVP", "SSV"}: 240, {"SVP", "OKD"}: 250, {"SVP", "WLB"}: 260, {"SVP", "CRH"}: 270,
	{"SVP", "ATV"}: 280, {"SVP", "PHV"}: 290, {"SVP", "GFD"}: 300, {"SHD", "SSV"}: 220,
	{"SHD", "OKD"}: 230, {"SHD", "WLB"}: 240, {"SHD", "CRH"}: 250, {"SHD", "ATV"}: 260,
	{"SHD", "PHV"}: 270, {"SHD", "GFD"}: 280, {"SSV", "OKD"}: 240, {"SSV", "WLB"}: 250,
	{"SSV", "CRH"}: 260, {"SSV", "ATV"}: 270, {"SSV", "PHV"}: 280, {"SSV", "GFD"}: 290,
	{"OKD", "WLB"}: 230, {"OKD", "CRH"}: 240, {"OKD", "ATV"}: 250, {"OKD", "PHV"}: 260,
	{"OKD", "GFD"}: 270, {"WLB", "CRH"}: 250, {"WLB", "ATV"}: 260, {"WLB", "PHV"}: 270,
	{"WLB", "GFD"}: 280, {"CRH", "ATV"}: 240, {"CRH", "PHV"}: 250, {"CRH", "GFD"}: 260,
	{"CRH", "SFO"}: 270, {"CRH", "RMS"}: 280, {"CRH", "HKG"}: 290, {"CRH", "JFK"}: 300,
	{"ATV", "PHV"}: 230, {"ATV", "GFD"}: 240, {"PHV", "GFD"}: 220, {"LHR", "CDG"}: 100,
	{"OKD", "LAX"}: 220,
}

// trRates are compute_exchange_rate's rates from USD, in the order it
// tries them; a rate is an int or a float, as in the Python.
var trRates = []struct {
	from, to string
	rate     any
}{
	{"USD", "RMB", int64(7)}, {"USD", "EUR", 0.8}, {"USD", "JPY", int64(110)},
	{"USD", "GBP", 0.7}, {"USD", "CAD", 1.3}, {"USD", "AUD", 1.4},
	{"USD", "INR", int64(70)}, {"USD", "RUB", int64(60)}, {"USD", "BRL", 3.8},
	{"USD", "MXN", int64(20)},
}

// trValueError is a ValueError, which book_flight catches from
// get_flight_cost.
type trValueError struct{ text string }

func (e *trValueError) Error() string { return e.text }

// trDict builds a dict from keys and values in turn.
func trDict(kv ...any) *pyval.Dict {
	d := pyval.NewDict()
	for i := 0; i+1 < len(kv); i += 2 {
		d.Set(kv[i].(string), kv[i+1])
	}
	return d
}

func trIsAirport(v any) bool {
	s, ok := v.(string)
	if !ok {
		return false
	}
	for _, a := range trAirports {
		if a == s {
			return true
		}
	}
	return false
}

// trFlightCost is get_flight_cost's one cost (long_context=False).
func trFlightCost(from, to, date, class any) (float64, error) {
	for _, v := range []any{from, to} { // hash((from, to))
		if err := trHashable(v); err != nil {
			return 0, err
		}
	}
	f, fok := from.(string)
	t, tok := to.(string)
	base, found := trRoutes[[2]string{f, t}]
	if !fok || !tok || !found {
		return 0, &trValueError{"No available route for the given airports."}
	}
	var factor int64
	switch class {
	case "economy":
		factor = 1
	case "business":
		factor = 2
	case "first":
		factor = 5
	default:
		return 0, &trValueError{"Invalid travel class. Options are: economy, business, first."}
	}
	odd, err := trDigitSumOdd(date)
	if err != nil {
		return 0, err
	}
	mult := int64(2)
	if odd {
		mult = 1
	}
	return float64(base * factor * mult), nil
}

// trDigitSumOdd is whether sum(int(c) for c in v if c.isdigit()) is odd.
func trDigitSumOdd(v any) (bool, error) {
	odd := false
	switch x := v.(type) {
	case string:
		for _, r := range x {
			if d, ok := trDecimal(r); ok {
				odd = odd != (d%2 == 1)
			} else if trDigitOnly(r) {
				return false, &trValueError{"invalid literal for int() with base 10: " + pyval.Quote(string(r))}
			}
		}
		return odd, nil
	case []any:
		for _, e := range x {
			o, err := trIntParityIfDigits(e)
			if err != nil {
				return false, err
			}
			odd = odd != o
		}
		return odd, nil
	case *pyval.Dict:
		for _, k := range x.Keys {
			o, err := trIntParityIfDigits(k)
			if err != nil {
				return false, err
			}
			odd = odd != o
		}
		return odd, nil
	}
	return false, Raise("%s object is not iterable", pyval.Quote(TypeName(v)))
}

// trIntParityIfDigits is, for one element of an iterated travel_date,
// whether int(e) is odd when e.isdigit() (false when it is not).
func trIntParityIfDigits(e any) (bool, error) {
	s, ok := e.(string)
	if !ok {
		return false, Raise("%s object has no attribute 'isdigit'", pyval.Quote(TypeName(e)))
	}
	if s == "" {
		return false, nil
	}
	lead, last, bad := 0, 0, false
	for _, r := range s {
		if d, ok := trDecimal(r); ok {
			if !bad {
				lead++
			}
			last = d
		} else if trDigitOnly(r) {
			bad = true
		} else {
			return false, nil // not isdigit()
		}
	}
	if lead > 4300 {
		return false, &trValueError{"Exceeds the limit (4300 digits) for integer string conversion: value has " +
			strconv.Itoa(lead) + " digits; use sys.set_int_max_str_digits() to increase the limit"}
	}
	if bad {
		return false, &trValueError{"invalid literal for int() with base 10: " + trTruncate(pyval.Quote(s), 200)}
	}
	return last%2 == 1, nil
}

// trTruncate is %.Ns: s cut to n code points.
func trTruncate(s string, n int) string {
	i := 0
	for j := range s {
		if i == n {
			return s[:j]
		}
		i++
	}
	return s
}

// trDecimal is the value of a decimal digit as Python's str.isdecimal
// and int() see it (Unicode 14: Go's tables are newer by two scripts).
func trDecimal(r rune) (int, bool) {
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

// trDigitOnlyRanges are the characters str.isdigit accepts that are not
// decimal (superscripts, circled digits...), as Python 3.11 has them.
var trDigitOnlyRanges = [][2]rune{
	{0xB2, 0xB3}, {0xB9, 0xB9}, {0x1369, 0x1371}, {0x19DA, 0x19DA}, {0x2070, 0x2070},
	{0x2074, 0x2079}, {0x2080, 0x2089}, {0x2460, 0x2468}, {0x2474, 0x247C}, {0x2488, 0x2490},
	{0x24EA, 0x24EA}, {0x24F5, 0x24FD}, {0x24FF, 0x24FF}, {0x2776, 0x277E}, {0x2780, 0x2788},
	{0x278A, 0x2792}, {0x10A40, 0x10A43}, {0x10E60, 0x10E68}, {0x11052, 0x1105A}, {0x1F100, 0x1F10A},
}

func trDigitOnly(r rune) bool {
	for _, g := range trDigitOnlyRanges {
		if r >= g[0] && r <= g[1] {
			return true
		}
	}
	return false
}

// trParseDate is datetime.strptime(v, "%Y-%m-%d") as Python 3.11's
// _strptime reads it: ok is false where it raises ValueError; a v that is
// not a str is its TypeError.
func trParseDate(v any) (year, month, day int, ok bool, err error) {
	s, isStr := v.(string)
	if !isStr {
		return 0, 0, 0, false, Raise("strptime() argument 1 must be str, not %s", TypeName(v))
	}
	r := []rune(s)
	at := func(i int) rune {
		if i < len(r) {
			return r[i]
		}
		return -1
	}
	in := func(c, lo, hi rune) bool { return c >= lo && c <= hi }
	// (?P<Y>\d\d\d\d)
	for i := 0; i < 4; i++ {
		d, isDec := trDecimal(at(i))
		if !isDec {
			return 0, 0, 0, false, nil
		}
		year = year*10 + d
	}
	if at(4) != '-' {
		return 0, 0, 0, false, nil
	}
	// (?P<m>1[0-2]|0[1-9]|[1-9]) then "-": the first alternative that
	// the "-" can follow.
	p := 5
	switch c, n := at(p), at(p+1); {
	case c == '1' && in(n, '0', '2') && at(p+2) == '-':
		month, p = 10+int(n-'0'), p+2
	case c == '0' && in(n, '1', '9') && at(p+2) == '-':
		month, p = int(n-'0'), p+2
	case in(c, '1', '9') && n == '-':
		month, p = int(c-'0'), p+1
	default:
		return 0, 0, 0, false, nil
	}
	p++
	// (?P<d>3[0-1]|[1-2]\d|0[1-9]|[1-9]| [1-9]): the first alternative
	// that matches; what follows it must be the end.
	c, n := at(p), at(p+1)
	nd, nDec := trDecimal(n)
	switch {
	case c == '3' && in(n, '0', '1'):
		day, p = 30+int(n-'0'), p+2
	case in(c, '1', '2') && nDec:
		day, p = int(c-'0')*10+nd, p+2
	case c == '0' && in(n, '1', '9'):
		day, p = int(n-'0'), p+2
	case in(c, '1', '9'):
		day, p = int(c-'0'), p+1
	case c == ' ' && in(n, '1', '9'):
		day, p = int(n-'0'), p+2
	default:
		return 0, 0, 0, false, nil
	}
	if p != len(r) || year < 1 || day > trDaysIn(year, month) {
		return 0, 0, 0, false, nil
	}
	return year, month, day, true, nil
}

func trDaysIn(year, month int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// trExchange is compute_exchange_rate.
func trExchange(base, target, value any) (any, error) {
	for _, x := range trRates {
		if pyval.Eq(base, x.from) && pyval.Eq(target, x.to) {
			p, err := trMul(value, x.rate)
			if err != nil {
				return nil, err
			}
			f, err := trFloat(p)
			if err != nil {
				return nil, err
			}
			return trDict("exchanged_value", f), nil
		}
		if pyval.Eq(base, x.to) && pyval.Eq(target, x.from) {
			q, err := trDiv(value, x.rate)
			if err != nil {
				return nil, err
			}
			return trDict("exchanged_value", pyval.Round2(q)), nil
		}
	}
	return nil, &trValueError{"No available exchange rate for the given currencies."}
}

// trHashable is hash(v)'s TypeError for the unhashable values.
func trHashable(v any) error {
	switch v.(type) {
	case []any, *pyval.Dict:
		return Raise("unhashable type: %s", pyval.Quote(TypeName(v)))
	}
	return nil
}

// trHasKey is key in d, for d's str keys.
func trHasKey(d *pyval.Dict, key any) (bool, error) {
	if err := trHashable(key); err != nil {
		return false, err
	}
	s, ok := key.(string)
	return ok && d.Has(s), nil
}

// trGetKey is d[key], for d's str keys.
func trGetKey(d *pyval.Dict, key any) (any, error) {
	if err := trHashable(key); err != nil {
		return nil, err
	}
	if s, ok := key.(string); ok {
		if v, ok := d.Get(s); ok {
			return v, nil
		}
	}
	return nil, KeyError(key)
}

// trItem is v[key] for a str key.
func trItem(v any, key string) (any, error) {
	switch x := v.(type) {
	case *pyval.Dict:
		if e, ok := x.Get(key); ok {
			return e, nil
		}
		return nil, KeyError(key)
	case []any:
		return nil, Raise("list indices must be integers or slices, not str")
	case string:
		return nil, Raise("string indices must be integers, not 'str'")
	}
	return nil, Raise("%s object is not subscriptable", pyval.Quote(TypeName(v)))
}

// trContains is item in v, for a str item.
func trContains(v any, item string) (bool, error) {
	switch x := v.(type) {
	case *pyval.Dict:
		return x.Has(item), nil
	case []any:
		for _, e := range x {
			if pyval.Eq(e, item) {
				return true, nil
			}
		}
		return false, nil
	case string:
		return strings.Contains(x, item), nil
	}
	return false, Raise("argument of type %s is not iterable", pyval.Quote(TypeName(v)))
}

// trUpdate is v[key] += x or v[key] -= x (op "+=" or "-=").
func trUpdate(v any, key, op string, x any) error {
	cur, err := trItem(v, key)
	if err != nil {
		return err
	}
	res, err := trAddSub(cur, x, op)
	if err != nil {
		return err
	}
	v.(*pyval.Dict).Set(key, res)
	return nil
}

func trIsInt(v any) bool {
	switch v.(type) {
	case bool, int64, *big.Int:
		return true
	}
	return false
}

// trIntResult is an int result as pyval keeps it: an int64 when it fits.
func trIntResult(b *big.Int) any {
	if b.IsInt64() {
		return b.Int64()
	}
	return b
}

// trAddSub is a += b or a -= b.
func trAddSub(a, b any, op string) (any, error) {
	switch {
	case trIsInt(a) && trIsInt(b):
		if op == "+=" {
			return trIntResult(new(big.Int).Add(pyval.BigOf(a), pyval.BigOf(b))), nil
		}
		return trIntResult(new(big.Int).Sub(pyval.BigOf(a), pyval.BigOf(b))), nil
	case isNum(a) && isNum(b):
		fa, err := trFloat(a)
		if err != nil {
			return nil, err
		}
		fb, err := trFloat(b)
		if err != nil {
			return nil, err
		}
		if op == "+=" {
			return fa + fb, nil
		}
		return fa - fb, nil
	}
	if op == "+=" {
		switch x := a.(type) {
		case string:
			y, ok := b.(string)
			if !ok {
				return nil, Raise("can only concatenate str (not \"%s\") to str", TypeName(b))
			}
			return x + y, nil
		case []any: // list += iterable extends the list
			switch y := b.(type) {
			case []any:
				return append(x, y...), nil
			case string:
				for _, r := range y {
					x = append(x, string(r))
				}
				return x, nil
			case *pyval.Dict:
				for _, k := range y.Keys {
					x = append(x, k)
				}
				return x, nil
			}
			return nil, Raise("%s object is not iterable", pyval.Quote(TypeName(b)))
		}
	}
	return nil, Raise("unsupported operand type(s) for %s: %s and %s", op, pyval.Quote(TypeName(a)), pyval.Quote(TypeName(b)))
}

// trMul is v * rate, rate an int or a float.
func trMul(v, rate any) (any, error) {
	ri, rateIsInt := rate.(int64)
	rf, _ := rate.(float64)
	switch x := v.(type) {
	case bool, int64, *big.Int:
		if rateIsInt {
			return trIntResult(new(big.Int).Mul(pyval.BigOf(x), big.NewInt(ri))), nil
		}
		f, err := trFloat(x)
		if err != nil {
			return nil, err
		}
		return f * rf, nil
	case float64:
		if rateIsInt {
			return x * float64(ri), nil
		}
		return x * rf, nil
	case string, []any:
		if !rateIsInt {
			return nil, Raise("can't multiply sequence by non-int of type 'float'")
		}
		n := int(max(ri, 0))
		if s, ok := x.(string); ok {
			return strings.Repeat(s, n), nil
		}
		l := x.([]any)
		out := make([]any, 0, len(l)*n)
		for range n {
			out = append(out, l...)
		}
		return out, nil
	}
	return nil, Raise("unsupported operand type(s) for *: %s and %s", pyval.Quote(TypeName(v)), pyval.Quote(TypeName(rate)))
}

// trDiv is v / rate, rate an int or a float.
func trDiv(v, rate any) (float64, error) {
	ri, rateIsInt := rate.(int64)
	rf, _ := rate.(float64)
	switch x := v.(type) {
	case bool, int64, *big.Int:
		if rateIsInt { // int / int is correctly rounded
			q, _ := new(big.Rat).SetFrac(pyval.BigOf(x), big.NewInt(ri)).Float64()
			if math.IsInf(q, 0) {
				return 0, Raise("integer division result too large for a float")
			}
			return q, nil
		}
		f, err := trFloat(x)
		if err != nil {
			return 0, err
		}
		return f / rf, nil
	case float64:
		if rateIsInt {
			return x / float64(ri), nil
		}
		return x / rf, nil
	}
	return 0, Raise("unsupported operand type(s) for /: %s and %s", pyval.Quote(TypeName(v)), pyval.Quote(TypeName(rate)))
}

// trFloat is float(v).
func trFloat(v any) (float64, error) {
	switch x := v.(type) {
	case bool:
		if x {
			return 1, nil
		}
		return 0, nil
	case int64:
		return float64(x), nil
	case *big.Int:
		f, _ := new(big.Float).SetInt(x).Float64()
		if math.IsInf(f, 0) {
			return 0, Raise("int too large to convert to float")
		}
		return f, nil
	case float64:
		return x, nil
	case string:
		if f, ok := trParseFloat(x); ok {
			return f, nil
		}
		return 0, &trValueError{"could not convert string to float: " + pyval.Quote(x)}
	}
	return 0, Raise("float() argument must be a string or a real number, not %s", pyval.Quote(TypeName(v)))
}

// trParseFloat reads a str as Python's float() does: decimal digits of
// any script and surrounding white space, underscores between digits,
// inf, infinity and nan in any case, an overflow as an infinity.
func trParseFloat(s string) (float64, bool) {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r < 127:
			b.WriteRune(r)
		case unicode.IsSpace(r):
			b.WriteByte(' ')
		default:
			d, ok := trDecimal(r)
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

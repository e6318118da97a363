package multiturn

import (
	"math"
	"math/big"
	"regexp"
	"strconv"
	"time"
	"unicode"

	"github.com/nextstate-rl/nextstate/envs/internal/pyval"
)

// TradingBot's Python operations: its int-keyed orders dict, and what
// Python does with the values a model passes (numbers converted and
// formatted, datetime.strptime), with Python's exceptions.

// tbOrders is TradingBot's orders: a dict keyed by Python values (ints
// mostly, strings that are not all digits), in insertion order.
type tbOrders struct {
	keys, vals []any
}

// find is the index of key k (Python's dict lookup: 12345 and 12345.0 are
// one key, "12345" another), -1 when absent; an unhashable k raises.
func (o *tbOrders) find(k any) (int, error) {
	if err := tbHashable(k); err != nil {
		return -1, err
	}
	for i, x := range o.keys {
		if pyval.Eq(x, k) {
			return i, nil
		}
	}
	return -1, nil
}

// set is o[k] = v: a present key keeps its place (and its first form).
func (o *tbOrders) set(k, v any) error {
	i, err := o.find(k)
	if err != nil {
		return err
	}
	if i >= 0 {
		o.vals[i] = v
		return nil
	}
	o.keys = append(o.keys, k)
	o.vals = append(o.vals, v)
	return nil
}

// keyList is list(orders.keys()).
func (o *tbOrders) keyList() []any {
	out := make([]any, len(o.keys))
	copy(out, o.keys)
	return out
}

// dict is the orders as a Dict for State: each key written as tbKeyText.
func (o *tbOrders) dict() *pyval.Dict {
	d := pyval.NewDict()
	for i, k := range o.keys {
		d.Set(tbKeyText(k), o.vals[i])
	}
	return d
}

// tbKeyText writes a hashable key so that keys Python finds equal are
// written alike and others not: a number by its integer value when it is
// whole, anything else by its repr.
func tbKeyText(k any) string {
	switch t := k.(type) {
	case bool, int64, *big.Int:
		return pyval.BigOf(k).String()
	case float64:
		if !math.IsInf(t, 0) && !math.IsNaN(t) && t == math.Trunc(t) {
			i, _ := new(big.Float).SetFloat64(t).Int(nil)
			return i.String()
		}
	}
	return pyval.Repr(k)
}

// tbOrderKey is _load_scenario's key conversion: a key of digits only
// (str.isdigit, as far as int() reads it) becomes an int.
func tbOrderKey(k string) any {
	if k == "" {
		return k
	}
	n := new(big.Int)
	for _, r := range k {
		d, ok := tbDigit(r)
		if !ok {
			return k
		}
		n.Mul(n, big.NewInt(10))
		n.Add(n, big.NewInt(int64(d)))
	}
	if n.IsInt64() {
		return n.Int64()
	}
	return n
}

// tbDigit is the value of a Unicode decimal digit (Nd), as int() reads it.
func tbDigit(r rune) (int, bool) {
	if !unicode.IsDigit(r) {
		return 0, false
	}
	zero := r
	for unicode.IsDigit(zero - 1) {
		zero--
	}
	return int(r-zero) % 10, true
}

// tbHashable raises Python's TypeError for a list or dict used as a key.
func tbHashable(v any) error {
	switch v.(type) {
	case []any, *pyval.Dict:
		return Raise("unhashable type: %s", pyval.Quote(TypeName(v)))
	}
	return nil
}

// tbItem is v[key] for a str key.
func tbItem(v any, key string) (any, error) {
	switch t := v.(type) {
	case *pyval.Dict:
		if x, ok := t.Get(key); ok {
			return x, nil
		}
		return nil, KeyError(key)
	case string:
		return nil, Raise("string indices must be integers, not 'str'")
	case []any:
		return nil, Raise("list indices must be integers or slices, not str")
	}
	return nil, Raise("%s object is not subscriptable", pyval.Quote(TypeName(v)))
}

// tbIter is the items a for loop over v visits: a list's elements, a
// str's characters, a dict's keys.
func tbIter(v any) ([]any, error) {
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
	return nil, Raise("%s object is not iterable", pyval.Quote(TypeName(v)))
}

// tbFloat is float(v) for a number.
func tbFloat(v any) (float64, error) {
	switch t := v.(type) {
	case float64:
		return t, nil
	case int64:
		return float64(t), nil
	case bool, *big.Int:
		f, _ := new(big.Float).SetInt(pyval.BigOf(t)).Float64()
		if math.IsInf(f, 0) {
			return 0, Raise("int too large to convert to float")
		}
		return f, nil
	}
	return 0, Raise("float() argument must be a string or a real number, not %s", pyval.Quote(TypeName(v)))
}

// tbInt is int(v) for a number: a float truncated toward zero.
func tbInt(v any) (any, error) {
	switch t := v.(type) {
	case int64, *big.Int:
		return t, nil
	case bool:
		return pyval.BigOf(t).Int64(), nil
	case float64:
		switch {
		case math.IsNaN(t):
			return nil, Raise("cannot convert float NaN to integer")
		case math.IsInf(t, 0):
			return nil, Raise("cannot convert float infinity to integer")
		}
		i, _ := new(big.Float).SetFloat64(math.Trunc(t)).Int(nil)
		return tbNorm(i), nil
	}
	return nil, Raise("int() argument must be a string, a bytes-like object or a real number, not %s", pyval.Quote(TypeName(v)))
}

// tbNorm is an int as an int64 when it fits.
func tbNorm(i *big.Int) any {
	if i.IsInt64() {
		return i.Int64()
	}
	return i
}

// tbAbs is abs(v).
func tbAbs(v any) (any, error) {
	switch t := v.(type) {
	case float64:
		return math.Abs(t), nil
	case bool, int64, *big.Int:
		return tbNorm(new(big.Int).Abs(pyval.BigOf(t))), nil
	}
	return nil, Raise("bad operand type for abs(): %s", pyval.Quote(TypeName(v)))
}

// tbArith is a += b or a -= b (op "+=" or "-=") for numbers: ints stay
// ints, anything with a float is a float.
func tbArith(op string, a, b any) (any, error) {
	if !isNum(a) || !isNum(b) {
		return nil, Raise("unsupported operand type(s) for %s: %s and %s", op, pyval.Quote(TypeName(a)), pyval.Quote(TypeName(b)))
	}
	_, af := a.(float64)
	_, bf := b.(float64)
	if af || bf {
		x, err := tbFloat(a)
		if err != nil {
			return nil, err
		}
		y, err := tbFloat(b)
		if err != nil {
			return nil, err
		}
		if op == "-=" {
			return x - y, nil
		}
		return x + y, nil
	}
	if op == "-=" {
		return tbNorm(new(big.Int).Sub(pyval.BigOf(a), pyval.BigOf(b))), nil
	}
	return tbNorm(new(big.Int).Add(pyval.BigOf(a), pyval.BigOf(b))), nil
}

// tbFixed2 is f"{v:.2f}" for a number.
func tbFixed2(v any) (string, error) {
	switch v.(type) {
	case string:
		return "", Raise("Unknown format code 'f' for object of type 'str'")
	case nil, []any, *pyval.Dict:
		name := TypeName(v)
		return "", Raise("unsupported format string passed to %s.__format__", name)
	}
	f, err := tbFloat(v)
	if err != nil {
		return "", err
	}
	switch {
	case math.IsNaN(f):
		return "nan", nil
	case math.IsInf(f, 1):
		return "inf", nil
	case math.IsInf(f, -1):
		return "-inf", nil
	}
	return strconv.FormatFloat(f, 'f', 2, 64), nil
}

// datetime.min and datetime.max.
var (
	tbMinTime = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)
	tbMaxTime = time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC)
)

// The regular expressions Python's _strptime makes of "%Y-%m-%d" and
// "%Y-%m-%d %H:%M:%S" (\d is any Unicode decimal digit, a space in the
// format any run of whitespace), anchored at the start only.
const tbDateRE = `^(\p{Nd}\p{Nd}\p{Nd}\p{Nd})-(1[0-2]|0[1-9]|[1-9])-(3[0-1]|[1-2]\p{Nd}|0[1-9]|[1-9]| [1-9])`

var (
	tbDate     = regexp.MustCompile(tbDateRE)
	tbDateTime = regexp.MustCompile(tbDateRE + `[\t\n\v\f\r \x1c-\x1f\x85\p{Z}]+(2[0-3]|[0-1]\p{Nd}|\p{Nd}):([0-5]\p{Nd}|\p{Nd}):(6[0-1]|[0-5]\p{Nd}|\p{Nd})`)
)

// tbStrptime is datetime.strptime(v, "%Y-%m-%d") or, withTime,
// datetime.strptime(v, "%Y-%m-%d %H:%M:%S"), with Python's errors.
func tbStrptime(v any, withTime bool) (time.Time, error) {
	s, ok := v.(string)
	if !ok {
		return time.Time{}, Raise("strptime() argument 1 must be str, not %s", TypeName(v))
	}
	re, format := tbDate, "%Y-%m-%d"
	if withTime {
		re, format = tbDateTime, "%Y-%m-%d %H:%M:%S"
	}
	m := re.FindStringSubmatchIndex(s)
	if m == nil {
		return time.Time{}, Raise("time data %s does not match format %s", pyval.Quote(s), pyval.Quote(format))
	}
	if m[1] != len(s) {
		return time.Time{}, Raise("unconverted data remains: %s", s[m[1]:])
	}
	var f [6]int
	for i := 0; 2*i+2 < len(m); i++ {
		for _, r := range s[m[2*i+2]:m[2*i+3]] {
			if d, ok := tbDigit(r); ok {
				f[i] = f[i]*10 + d
			}
		}
	}
	year, month, day := f[0], f[1], f[2]
	if year < 1 {
		return time.Time{}, Raise("year %d is out of range", year)
	}
	if day > time.Date(year, time.Month(month)+1, 0, 0, 0, 0, 0, time.UTC).Day() {
		return time.Time{}, Raise("day is out of range for month")
	}
	if f[5] > 59 {
		return time.Time{}, Raise("second must be in 0..59")
	}
	return time.Date(year, time.Month(month), day, f[3], f[4], f[5], 0, time.UTC), nil
}

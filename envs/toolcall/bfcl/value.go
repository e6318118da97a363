package bfcl

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"regexp"
	"strconv"
	"strings"
)

// Values are JSON values with Python's types, because BFCL's checker
// compares Python objects decoded by json.loads: nil (None), bool, int64 or
// *big.Int (int), float64 (float), string (str), []any (list) and *Dict
// (dict, keys in insertion order). An integer literal decodes to an int and
// a literal with a fraction or exponent to a float, as in Python, so 5 and
// 5.0 stay apart where the checker's type test tells them apart.

// Dict is a JSON object that keeps its keys in order, as a Python dict.
// A repeated key keeps its first position and its last value. Objects in
// function calls are small, so lookups scan the keys.
type Dict struct {
	Keys []string
	Vals []any
}

// NewDict returns an empty Dict.
func NewDict() *Dict { return &Dict{} }

func (d *Dict) index(k string) int {
	for i, key := range d.Keys {
		if key == k {
			return i
		}
	}
	return -1
}

// Set adds or replaces a key.
func (d *Dict) Set(k string, v any) {
	if i := d.index(k); i >= 0 {
		d.Vals[i] = v
		return
	}
	d.Keys = append(d.Keys, k)
	d.Vals = append(d.Vals, v)
}

// Get returns a key's value.
func (d *Dict) Get(k string) (any, bool) {
	if i := d.index(k); i >= 0 {
		return d.Vals[i], true
	}
	return nil, false
}

// Value returns a key's value, nil when absent.
func (d *Dict) Value(k string) any {
	v, _ := d.Get(k)
	return v
}

// Has reports whether the key is present.
func (d *Dict) Has(k string) bool { return d.index(k) >= 0 }

// Len is the number of keys.
func (d *Dict) Len() int { return len(d.Keys) }

// pyKind is a value's Python type.
type pyKind int

const (
	kAbsent pyKind = iota // no type (Python None as a type argument)
	kNone
	kBool
	kInt
	kFloat
	kStr
	kList
	kDict
	kSet // Java's Set: named by the type table, never produced
)

var kindNames = [...]string{"absent", "NoneType", "bool", "int", "float", "str", "list", "dict", "set"}

func (k pyKind) String() string { return kindNames[k] }

func kindOf(v any) pyKind {
	switch v.(type) {
	case nil:
		return kNone
	case bool:
		return kBool
	case int64, *big.Int:
		return kInt
	case float64:
		return kFloat
	case string:
		return kStr
	case []any:
		return kList
	case *Dict:
		return kDict
	}
	return kAbsent
}

// pyException is a Python exception BFCL's checker would raise on an input
// (a KeyError on an undeclared type, a TypeError on a malformed ground
// truth). The checker panics with it and Check reports it as the
// "checker_exception" failure.
type pyException struct{ msg string }

func raise(format string, args ...any) { panic(pyException{fmt.Sprintf(format, args...)}) }

// numberValue types a JSON number literal as Python's json does.
func numberValue(s string) any {
	if strings.ContainsAny(s, ".eE") {
		f, _ := strconv.ParseFloat(s, 64) // out of range gives ±Inf, as Python
		return f
	}
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		return i
	}
	b, _ := new(big.Int).SetString(s, 10)
	return b
}

// encodeJSON writes v as json.dumps would (floats keep their fraction).
func encodeJSON(b *bytes.Buffer, v any) {
	switch t := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(t))
	case int64:
		b.WriteString(strconv.FormatInt(t, 10))
	case *big.Int:
		b.WriteString(t.String())
	case float64:
		switch {
		case math.IsInf(t, 1):
			b.WriteString("Infinity")
		case math.IsInf(t, -1):
			b.WriteString("-Infinity")
		case math.IsNaN(t):
			b.WriteString("NaN")
		default:
			b.WriteString(floatRepr(t))
		}
	case string:
		s, _ := json.Marshal(t)
		b.Write(s)
	case []any:
		b.WriteByte('[')
		for i, e := range t {
			if i > 0 {
				b.WriteString(", ")
			}
			encodeJSON(b, e)
		}
		b.WriteByte(']')
	case *Dict:
		b.WriteByte('{')
		for i, k := range t.Keys {
			if i > 0 {
				b.WriteString(", ")
			}
			s, _ := json.Marshal(k)
			b.Write(s)
			b.WriteString(": ")
			encodeJSON(b, t.Vals[i])
		}
		b.WriteByte('}')
	default:
		b.WriteString("null")
	}
}

func toJSON(v any) string {
	var b bytes.Buffer
	encodeJSON(&b, v)
	return b.String()
}

// floatRepr is Python's repr of a float: the shortest digits that round
// trip, fixed notation for exponents -4..15 (with ".0" when whole), else
// scientific with a two-digit exponent.
func floatRepr(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case math.IsNaN(f):
		return "nan"
	}
	e := strconv.FormatFloat(f, 'e', -1, 64) // -d.ddde±dd
	mant, exps, _ := strings.Cut(e, "e")
	exp, _ := strconv.Atoi(exps)
	if exp < -4 || exp >= 16 {
		sign := "+"
		if exp < 0 {
			sign, exp = "-", -exp
		}
		return fmt.Sprintf("%se%s%02d", mant, sign, exp)
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.ContainsAny(s, ".") {
		s += ".0"
	}
	return s
}

// pyRepr is Python's repr of a value, for failure details.
func pyRepr(v any) string {
	switch t := v.(type) {
	case nil:
		return "None"
	case bool:
		if t {
			return "True"
		}
		return "False"
	case int64:
		return strconv.FormatInt(t, 10)
	case *big.Int:
		return t.String()
	case float64:
		return floatRepr(t)
	case string:
		if strings.Contains(t, "'") && !strings.Contains(t, `"`) {
			return `"` + t + `"`
		}
		return "'" + strings.NewReplacer(`\`, `\\`, "'", `\'`, "\n", `\n`).Replace(t) + "'"
	case []any:
		parts := make([]string, len(t))
		for i, e := range t {
			parts[i] = pyRepr(e)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case *Dict:
		parts := make([]string, len(t.Keys))
		for i, k := range t.Keys {
			parts[i] = pyRepr(k) + ": " + pyRepr(t.Vals[i])
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	return fmt.Sprint(v)
}

// pyStr is Python's str: a string itself, anything else its repr.
func pyStr(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return pyRepr(v)
}

// pyEq is Python's ==: numbers (bool, int, float) compare by value, lists
// element by element, dicts by key set and values.
func pyEq(a, b any) bool {
	ka, kb := kindOf(a), kindOf(b)
	if isNumber(ka) && isNumber(kb) {
		return numEq(a, b)
	}
	if ka != kb {
		return false
	}
	switch x := a.(type) {
	case nil:
		return true
	case string:
		return x == b.(string)
	case []any:
		y := b.([]any)
		if len(x) != len(y) {
			return false
		}
		for i := range x {
			if !pyEq(x[i], y[i]) {
				return false
			}
		}
		return true
	case *Dict:
		y := b.(*Dict)
		if x.Len() != y.Len() {
			return false
		}
		for i, k := range x.Keys {
			w, ok := y.Get(k)
			if !ok || !pyEq(x.Vals[i], w) {
				return false
			}
		}
		return true
	}
	return false
}

func isNumber(k pyKind) bool { return k == kBool || k == kInt || k == kFloat }

func numEq(a, b any) bool {
	if fa, ok := a.(float64); ok {
		return floatEqNum(fa, b)
	}
	if fb, ok := b.(float64); ok {
		return floatEqNum(fb, a)
	}
	ia, oka := smallInt(a)
	ib, okb := smallInt(b)
	if oka && okb {
		return ia == ib
	}
	return bigOf(a).Cmp(bigOf(b)) == 0
}

// smallInt is a bool or int64 as an int64.
func smallInt(v any) (int64, bool) {
	switch t := v.(type) {
	case int64:
		return t, true
	case bool:
		if t {
			return 1, true
		}
		return 0, true
	}
	return 0, false
}

func floatEqNum(f float64, v any) bool {
	if g, ok := v.(float64); ok {
		return f == g
	}
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return false
	}
	if i, ok := smallInt(v); ok && i > -1<<53 && i < 1<<53 {
		return float64(i) == f
	}
	bf := new(big.Float).SetFloat64(f)
	return bf.Cmp(new(big.Float).SetInt(bigOf(v))) == 0
}

func bigOf(v any) *big.Int {
	switch t := v.(type) {
	case bool:
		if t {
			return big.NewInt(1)
		}
		return big.NewInt(0)
	case int64:
		return big.NewInt(t)
	case *big.Int:
		return t
	}
	return big.NewInt(0)
}

// pyIter is what Python's iteration over v yields: a list's elements, a
// string's characters, a dict's keys. Anything else raises TypeError.
func pyIter(v any) []any {
	switch t := v.(type) {
	case []any:
		return t
	case string:
		out := make([]any, 0, len(t))
		for _, r := range t {
			out = append(out, string(r))
		}
		return out
	case *Dict:
		out := make([]any, len(t.Keys))
		for i, k := range t.Keys {
			out[i] = k
		}
		return out
	}
	raise("TypeError: object of type '%s' has no len()", kindOf(v))
	return nil
}

// pyContains is Python's `x in container`: membership in a list, a key of
// a dict, a substring of a string.
func pyContains(container, x any) bool {
	switch t := container.(type) {
	case []any:
		for _, e := range t {
			if pyEq(e, x) {
				return true
			}
		}
		return false
	case *Dict:
		k, ok := x.(string)
		if !ok {
			return false
		}
		_, has := t.Get(k)
		return has
	case string:
		s, ok := x.(string)
		if !ok {
			raise("TypeError: 'in <string>' requires string as left operand, not %s", kindOf(x))
		}
		return strings.Contains(t, s)
	}
	raise("TypeError: argument of type '%s' is not iterable", kindOf(container))
	return false
}

// pyIndex is Python's container[key] for a dict and a string key.
func pyIndex(container any, key string) any {
	d, ok := container.(*Dict)
	if !ok {
		raise("TypeError: %s indices must be integers, not str", kindOf(container))
	}
	v, has := d.Get(key)
	if !has {
		raise("KeyError: %s", pyRepr(key))
	}
	return v
}

// standardize is BFCL's string normalisation: drop spaces and the
// characters ,./-_*^, lower-case, and turn ' into ".
func standardize(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		switch r {
		case ' ', ',', '.', '/', '-', '_', '*', '^':
			continue
		}
		b.WriteRune(r)
	}
	return strings.ReplaceAll(strings.ToLower(b.String()), "'", `"`)
}

// pyStrip is Python's str.strip(): whitespace off both ends.
func pyStrip(s string) string { return strings.TrimSpace(s) }

// pyTrim1 is s[1:-1] on code points.
func pyTrim1(s string) string {
	r := []rune(s)
	if len(r) <= 2 {
		return ""
	}
	return string(r[1 : len(r)-1])
}

var (
	rePyInt   = regexp.MustCompile(`^[+-]?\d(?:_?\d)*$`)
	rePyFloat = regexp.MustCompile(`^[+-]?(?:\d(?:_?\d)*(?:\.(?:\d(?:_?\d)*)?)?|\.\d(?:_?\d)*)(?:[eE][+-]?\d(?:_?\d)*)?$`)
)

// pyInt is Python's int(s) on a string; ok is false where int raises.
func pyInt(s string) (any, bool) {
	s = pyStrip(s)
	if !rePyInt.MatchString(s) {
		return nil, false
	}
	s = strings.ReplaceAll(s, "_", "")
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		return i, true
	}
	b, ok := new(big.Int).SetString(strings.TrimPrefix(s, "+"), 10)
	return b, ok
}

// pyFloat is Python's float(s) on a string; ok is false where float raises.
func pyFloat(s string) (float64, bool) {
	s = pyStrip(s)
	switch strings.ToLower(strings.TrimLeft(s, "+-")) {
	case "inf", "infinity":
		if strings.HasPrefix(s, "-") {
			return math.Inf(-1), true
		}
		if strings.Count(s, "-")+strings.Count(s, "+") <= 1 {
			return math.Inf(1), true
		}
		return 0, false
	case "nan":
		if strings.Count(s, "-")+strings.Count(s, "+") <= 1 {
			return math.NaN(), true
		}
		return 0, false
	}
	if !rePyFloat.MatchString(s) {
		return 0, false
	}
	f, err := strconv.ParseFloat(strings.ReplaceAll(s, "_", ""), 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, false
	}
	return f, true
}

package pyval

import (
	"bytes"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
)

// Dict is a JSON object that keeps its keys in order, as a Python dict.
// A repeated key keeps its first position and its last value. Lookups
// scan the keys: the dicts of tool calls and tool states are small.
type Dict struct {
	Keys []string
	Vals []any
}

// NewDict returns an empty Dict.
func NewDict() *Dict { return &Dict{} }

func (d *Dict) index(k string) int {
	for i, x := range d.Keys {
		if x == k {
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

// Delete removes a key, as Python's del d[k]; it reports whether the key
// was there.
func (d *Dict) Delete(k string) bool {
	i := d.index(k)
	if i < 0 {
		return false
	}
	d.Keys = append(d.Keys[:i:i], d.Keys[i+1:]...)
	d.Vals = append(d.Vals[:i:i], d.Vals[i+1:]...)
	return true
}

// Copy is copy.deepcopy of a value: Dicts and lists are copied all the
// way down; the other values are immutable.
func Copy(v any) any {
	switch t := v.(type) {
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = Copy(e)
		}
		return out
	case *Dict:
		out := &Dict{Keys: append([]string(nil), t.Keys...), Vals: make([]any, len(t.Vals))}
		for i, e := range t.Vals {
			out.Vals[i] = Copy(e)
		}
		return out
	}
	return v
}

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

// AppendJSON writes v as json.dumps does with its defaults (", " and ": "
// separators, ensure_ascii, floats as their repr, Infinity and NaN); a
// value of a type outside the model is written as null.
func AppendJSON(b []byte, v any) []byte {
	switch t := v.(type) {
	case nil:
		return append(b, "null"...)
	case bool:
		return strconv.AppendBool(b, t)
	case int64:
		return strconv.AppendInt(b, t, 10)
	case *big.Int:
		return t.Append(b, 10)
	case float64:
		return AppendFloat(b, t)
	case string:
		return AppendString(b, t)
	case []any:
		b = append(b, '[')
		for i, e := range t {
			if i > 0 {
				b = append(b, ", "...)
			}
			b = AppendJSON(b, e)
		}
		return append(b, ']')
	case *Dict:
		b = append(b, '{')
		for i, k := range t.Keys {
			if i > 0 {
				b = append(b, ", "...)
			}
			b = AppendString(b, k)
			b = append(b, ": "...)
			b = AppendJSON(b, t.Vals[i])
		}
		return append(b, '}')
	}
	return append(b, "null"...)
}

// Dumps is json.dumps(v) (AppendJSON).
func Dumps(v any) string { return string(AppendJSON(nil, v)) }

// Repr is Python's repr of a value: None, True, False, integers, floats
// as FloatRepr, strings quoted as Python quotes them (Quote), lists and
// dicts with ", " and ": ".
func Repr(v any) string {
	var b bytes.Buffer
	appendRepr(&b, v)
	return b.String()
}

func appendRepr(b *bytes.Buffer, v any) {
	switch t := v.(type) {
	case nil:
		b.WriteString("None")
	case bool:
		if t {
			b.WriteString("True")
		} else {
			b.WriteString("False")
		}
	case int64:
		b.WriteString(strconv.FormatInt(t, 10))
	case *big.Int:
		b.WriteString(t.String())
	case float64:
		b.WriteString(FloatRepr(t))
	case string:
		b.WriteString(Quote(t))
	case []any:
		b.WriteByte('[')
		for i, e := range t {
			if i > 0 {
				b.WriteString(", ")
			}
			appendRepr(b, e)
		}
		b.WriteByte(']')
	case *Dict:
		b.WriteByte('{')
		for i, k := range t.Keys {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(Quote(k))
			b.WriteString(": ")
			appendRepr(b, t.Vals[i])
		}
		b.WriteByte('}')
	default:
		fmt.Fprint(b, v)
	}
}

// Str is Python's str: a string itself, anything else its repr.
func Str(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return Repr(v)
}

// Eq is Python's ==: numbers (bool, int, float) compare by value, lists
// element by element, dicts by key set and values (not order).
func Eq(a, b any) bool {
	na, nb := isNumber(a), isNumber(b)
	if na && nb {
		return numEq(a, b)
	}
	if na != nb {
		return false
	}
	switch x := a.(type) {
	case nil:
		return b == nil
	case string:
		y, ok := b.(string)
		return ok && x == y
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !Eq(x[i], y[i]) {
				return false
			}
		}
		return true
	case *Dict:
		y, ok := b.(*Dict)
		if !ok || x.Len() != y.Len() {
			return false
		}
		for i, k := range x.Keys {
			w, ok := y.Get(k)
			if !ok || !Eq(x.Vals[i], w) {
				return false
			}
		}
		return true
	}
	return false
}

func isNumber(v any) bool {
	switch v.(type) {
	case bool, int64, *big.Int, float64:
		return true
	}
	return false
}

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
	return BigOf(a).Cmp(BigOf(b)) == 0
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

// floatEqNum compares a float with a number exactly, as Python does.
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
	return bf.Cmp(new(big.Float).SetInt(BigOf(v))) == 0
}

// BigOf is an integer value (bool, int64 or *big.Int) as a *big.Int; 0
// for anything else.
func BigOf(v any) *big.Int {
	switch t := v.(type) {
	case *big.Int:
		return t
	case int64:
		return big.NewInt(t)
	case bool:
		if t {
			return big.NewInt(1)
		}
		return big.NewInt(0)
	}
	return big.NewInt(0)
}

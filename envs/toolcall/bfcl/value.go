package bfcl

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"regexp"
	"strconv"
	"strings"

	"github.com/nextstate-rl/nextstate/envs/internal/pyval"
)

// Values are JSON values with Python's types, because BFCL's checker
// compares Python objects decoded by json.loads: nil (None), bool, int64 or
// *big.Int (int), float64 (float), string (str), []any (list) and *Dict
// (dict, keys in insertion order). An integer literal decodes to an int and
// a literal with a fraction or exponent to a float, as in Python, so 5 and
// 5.0 stay apart where the checker's type test tells them apart.

// Dict is a Python dict (pyval.Dict).
type Dict = pyval.Dict

// NewDict returns an empty Dict.
func NewDict() *Dict { return pyval.NewDict() }

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
			if pyval.Eq(e, x) {
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
		raise("KeyError: %s", pyval.Repr(key))
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

func isNumber(k pyKind) bool { return k == kBool || k == kInt || k == kFloat }

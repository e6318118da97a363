package telecom

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/nextstate-rl/nextstate/envs/internal/pyval"
)

// tau2's telecom tools return pydantic models, dicts and strings; the
// environment writes a model or a dict with json.dumps (", " and ": ",
// ASCII only, a date or a datetime as str writes it) and the database hash
// is the SHA-256 of json.dumps(model_dump(), sort_keys=True). A record
// becomes a dict (an *obj: keys in the model's field order) of these
// values, and appendPy writes it either way:
//
//	nil, bool, string, float64 (a Python float), int (a Python int),
//	pyNum (a number that is either, as a tool's argument left it),
//	*obj (a dict), []any (a list)

// obj is a Python dict: its keys in order.
type obj struct {
	keys []string
	vals []any
}

func dict(kv ...any) *obj {
	o := &obj{keys: make([]string, 0, len(kv)/2), vals: make([]any, 0, len(kv)/2)}
	for i := 0; i < len(kv); i += 2 {
		o.keys = append(o.keys, kv[i].(string))
		o.vals = append(o.vals, kv[i+1])
	}
	return o
}

func (o *obj) add(k string, v any) *obj {
	o.keys = append(o.keys, k)
	o.vals = append(o.vals, v)
	return o
}

// appendPy writes v as json.dumps does, with its dicts' keys sorted when
// sorted is set.
func appendPy(b []byte, v any, sorted bool) []byte {
	switch v := v.(type) {
	case nil:
		return append(b, "null"...)
	case bool:
		if v {
			return append(b, "true"...)
		}
		return append(b, "false"...)
	case string:
		return pyval.AppendString(b, v)
	case float64:
		return pyval.AppendFloat(b, v)
	case int:
		return strconv.AppendInt(b, int64(v), 10)
	case pyNum:
		if v.isInt {
			return append(b, v.lit...)
		}
		return pyval.AppendFloat(b, v.f)
	case *obj:
		order := make([]int, len(v.keys))
		for i := range order {
			order[i] = i
		}
		if sorted {
			sort.SliceStable(order, func(i, j int) bool { return v.keys[order[i]] < v.keys[order[j]] })
		}
		b = append(b, '{')
		for n, i := range order {
			if n > 0 {
				b = append(b, ", "...)
			}
			b = pyval.AppendString(b, v.keys[i])
			b = append(b, ": "...)
			b = appendPy(b, v.vals[i], sorted)
		}
		return append(b, '}')
	case []any:
		b = append(b, '[')
		for i, e := range v {
			if i > 0 {
				b = append(b, ", "...)
			}
			b = appendPy(b, e, sorted)
		}
		return append(b, ']')
	}
	panic(fmt.Sprintf("telecom: no Python rendering for %T", v))
}

// dumps is json.dumps(v).
func dumps(v any) string { return string(appendPy(nil, v, false)) }

// pyStr is Python's str() of a number or a bool, as tau2's environment
// writes the numbers and bools of a dict a tool returns.
func pyStr(v any) string {
	switch v := v.(type) {
	case float64:
		return pyval.FloatRepr(v)
	case int:
		return strconv.Itoa(v)
	case pyNum:
		return v.String()
	case bool:
		if v {
			return "True"
		}
		return "False"
	}
	panic(fmt.Sprintf("telecom: no Python str for %T", v))
}

// pyNum is a number from JSON as Python's json reads it: an int when it
// has no fraction or exponent (lit, its digits, may exceed a float64),
// else a float. f is the value as a float; inf for an int too large for
// one.
type pyNum struct {
	f     float64
	isInt bool
	lit   string
}

// numOf reads a JSON number.
func numOf(raw json.RawMessage) (pyNum, error) {
	s := strings.TrimSpace(string(raw))
	var n json.Number
	if err := json.Unmarshal([]byte(s), &n); err != nil {
		return pyNum{}, fmt.Errorf("want a number, not %s", s)
	}
	f, _ := strconv.ParseFloat(s, 64) // ±inf beyond the float range, as Python reads it
	if strings.ContainsAny(s, ".eE") {
		return pyNum{f: f}, nil
	}
	if s == "-0" {
		s = "0"
	}
	return pyNum{f: f, isInt: true, lit: s}, nil
}

func floatNum(f float64) pyNum { return pyNum{f: f} }

// String is str(n).
func (n pyNum) String() string {
	if n.isInt {
		return n.lit
	}
	return pyval.FloatRepr(n.f)
}

// toFloat is float(n): an int too large for a float is Python's
// OverflowError.
func (n pyNum) toFloat() (float64, error) {
	if n.isInt && math.IsInf(n.f, 0) {
		return 0, fail("int too large to convert to float")
	}
	return n.f, nil
}

// sign is -1, 0 or 1 (an int's exactly: its digits decide).
func (n pyNum) sign() int {
	if n.isInt {
		switch {
		case n.lit == "0":
			return 0
		case strings.HasPrefix(n.lit, "-"):
			return -1
		}
		return 1
	}
	switch {
	case n.f > 0:
		return 1
	case n.f < 0:
		return -1
	}
	return 0
}

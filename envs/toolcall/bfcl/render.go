package bfcl

import (
	"fmt"
	"math/big"
	"strconv"
	"strings"

	"github.com/nextstate-rl/nextstate/envs/internal/pyval"
)

// Reference is the ground truth's own answer: for each expected call, a
// call of the offered name whose arguments are each parameter's first
// acceptable value. "" (the mark of an omittable parameter) is skipped;
// a parameter with no other value, or one the function does not declare,
// is left out. A parameter declared as a dict takes, for each key, the
// key's first acceptable value. Java and JavaScript values are written as
// the source text BFCL parses back to them ("42L", "new ArrayList<>(...)",
// "[1, 2]"). For irrelevance the reference is a message with no call.
func (c *Case) Reference() (Answer, error) {
	if !HasGroundTruth(c.Category) {
		if strings.Contains(c.Category, "irrelevance") {
			return Answer{Text: true}, nil
		}
		return Answer{}, fmt.Errorf("bfcl: case %s (%s) has no ground truth to answer with", c.ID, c.Category)
	}
	lang := c.Language()
	var a Answer
	for i, g := range c.GroundTruth {
		gt := g.(*Dict)
		name := gt.Keys[0]
		fd := c.function(name)
		if fd == nil {
			return Answer{}, fmt.Errorf("bfcl: case %s: ground truth call %d names %s, which the case does not offer", c.ID, i+1, name)
		}
		props := NewDict()
		if params, ok := fd.Value("parameters").(*Dict); ok {
			if p, ok := params.Value("properties").(*Dict); ok {
				props = p
			}
		}
		args := NewDict()
		possible := gt.Value(name).(*Dict)
		for _, param := range possible.Keys {
			details, declared := props.Value(param).(*Dict)
			if !declared {
				continue
			}
			v, ok := firstAcceptable(possible.Value(param))
			if !ok {
				continue
			}
			typ, _ := details.Value("type").(string)
			itemType := ""
			if items, ok := details.Value("items").(*Dict); ok {
				itemType, _ = items.Value("type").(string)
			}
			v = fillTemplates(v, lang, typ, itemType)
			switch lang {
			case "java":
				v = javaSource(v, typ, itemType)
			case "javascript":
				v = jsSource(v, typ, itemType)
			}
			args.Set(param, v)
		}
		a.Calls = append(a.Calls, Call{Name: c.offered(name), Arguments: pyval.Dumps(args)})
	}
	return a, nil
}

// firstAcceptable is the first value of a list of acceptable values that
// is not "".
func firstAcceptable(values any) (any, bool) {
	list, ok := values.([]any)
	if !ok {
		return values, true
	}
	for _, v := range list {
		if s, isStr := v.(string); isStr && s == "" {
			continue
		}
		return v, true
	}
	return nil, false
}

// fillTemplates turns an acceptable dict, whose values are lists of
// acceptable values, into a dict of first acceptable values (and a list
// of such dicts for a list of dicts).
func fillTemplates(v any, lang, typ, itemType string) any {
	kinds := pyTypes
	switch lang {
	case "java":
		kinds = javaTypes
	case "javascript":
		kinds = jsTypes
	}
	fill := func(d *Dict) *Dict {
		out := NewDict()
		for _, k := range d.Keys {
			if x, ok := firstAcceptable(d.Value(k)); ok {
				out.Set(k, x)
			}
		}
		return out
	}
	switch t := v.(type) {
	case *Dict:
		if kinds[typ] == kDict {
			return fill(t)
		}
	case []any:
		if kinds[typ] == kList && kinds[itemType] == kDict {
			out := make([]any, len(t))
			for i, e := range t {
				if d, ok := e.(*Dict); ok {
					out[i] = fill(d)
				} else {
					out[i] = e
				}
			}
			return out
		}
	}
	return v
}

// javaSource writes a value as the Java source text that BFCL's Java
// converter reads back as that value.
func javaSource(v any, typ, itemType string) string {
	switch typ {
	case "Array":
		if l, ok := v.([]any); ok {
			parts := make([]string, len(l))
			for i, e := range l {
				parts[i] = javaScalar(e, itemType)
			}
			return "new " + javaElemName(itemType) + "[]{" + strings.Join(parts, ", ") + "}"
		}
	case "ArrayList":
		if l, ok := v.([]any); ok {
			if len(l) == 0 {
				return "new ArrayList<>()"
			}
			parts := make([]string, len(l))
			for i, e := range l {
				if itemType == "String" || itemType == "char" {
					parts[i] = `"` + pyval.Str(e) + `"`
				} else {
					parts[i] = javaScalar(e, itemType)
				}
			}
			return "new ArrayList<>(Arrays.asList(" + strings.Join(parts, ", ") + "))"
		}
	case "HashMap":
		if d, ok := v.(*Dict); ok {
			if d.Len() == 0 {
				return "new HashMap<>()"
			}
			var b strings.Builder
			b.WriteString("new HashMap<String, Object>() {{ ")
			for _, k := range d.Keys {
				fmt.Fprintf(&b, "put(%q, %s); ", k, javaLiteral(d.Value(k)))
			}
			b.WriteString("}}")
			return b.String()
		}
	}
	return javaScalar(v, typ)
}

// javaScalar writes one value of a scalar Java type.
func javaScalar(v any, typ string) string {
	switch typ {
	case "long":
		if kindOf(v) == kInt {
			return pyval.Repr(v) + "L"
		}
	case "float":
		if isNumber(kindOf(v)) && kindOf(v) != kBool {
			return pyval.FloatRepr(toFloat(v)) + "f"
		}
	case "boolean":
		if b, ok := v.(bool); ok {
			return strconv.FormatBool(b)
		}
	}
	return pyval.Str(v)
}

// javaLiteral writes a value as a Java literal of its own type (HashMap
// values carry no declared type).
func javaLiteral(v any) string {
	switch t := v.(type) {
	case string:
		return `"` + t + `"`
	case bool:
		return strconv.FormatBool(t)
	}
	return pyval.Str(v)
}

func javaElemName(itemType string) string {
	switch itemType {
	case "integer":
		return "int"
	case "any", "":
		return "Object"
	}
	return itemType
}

// jsSource writes a value as the JavaScript source text that BFCL's
// JavaScript converter reads back as that value.
func jsSource(v any, typ, itemType string) string {
	switch typ {
	case "String":
		if s, ok := v.(string); ok {
			return `"` + s + `"`
		}
	case "array":
		if l, ok := v.([]any); ok {
			parts := make([]string, len(l))
			for i, e := range l {
				if itemType == "" || itemType == "dict" || itemType == "array" {
					parts[i] = jsLiteral(e)
				} else {
					parts[i] = jsSource(e, itemType, "")
				}
			}
			return "[" + strings.Join(parts, ", ") + "]"
		}
	case "dict":
		if d, ok := v.(*Dict); ok {
			return jsLiteral(d)
		}
	case "float":
		if isNumber(kindOf(v)) && kindOf(v) != kBool {
			return jsDecimal(toFloat(v))
		}
	case "Bigint":
		if kindOf(v) == kInt {
			return pyval.Repr(v) + "n"
		}
	case "Boolean":
		if b, ok := v.(bool); ok {
			return strconv.FormatBool(b)
		}
	}
	return pyval.Str(v)
}

// jsLiteral writes a value as a JavaScript literal.
func jsLiteral(v any) string {
	switch t := v.(type) {
	case nil:
		return "null"
	case string:
		return `"` + t + `"`
	case bool:
		return strconv.FormatBool(t)
	case float64:
		return jsDecimal(t)
	case []any:
		parts := make([]string, len(t))
		for i, e := range t {
			parts[i] = jsLiteral(e)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case *Dict:
		if t.Len() == 0 {
			return "{}"
		}
		parts := make([]string, len(t.Keys))
		for i, k := range t.Keys {
			parts[i] = strconv.Quote(k) + ": " + jsLiteral(t.Value(k))
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	return pyval.Repr(v)
}

// jsDecimal writes a float in plain decimal notation with a fraction, the
// only float form BFCL's JavaScript converter reads.
func jsDecimal(f float64) string {
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}

func toFloat(v any) float64 {
	switch t := v.(type) {
	case float64:
		return t
	case int64:
		return float64(t)
	case *big.Int:
		f, _ := new(big.Float).SetInt(t).Float64()
		return f
	case bool:
		if t {
			return 1
		}
	}
	return 0
}

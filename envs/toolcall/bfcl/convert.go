package bfcl

import (
	"regexp"
	"strings"

	"github.com/nextstate-rl/nextstate/envs/internal/pyval"
)

// Java and JavaScript cases declare parameters in those languages' types,
// and a model passes every argument as a string of source text ("42L",
// "new ArrayList<>(Arrays.asList(1, 2))", "[1, 2]"). BFCL parses the string
// by the declared type before checking it; text that does not parse as the
// type stays a string, which then fails the type check unless the ground
// truth itself is a string (a variable name). These converters follow
// BFCL's rules, their regular expressions included, so that the same text
// passes or fails as it does there.

// Python's `$` also matches before a final newline; the patterns below
// that BFCL anchors with `$` say so with `\n?$`.
var (
	reJavaInt    = regexp.MustCompile(`^-?\d+\n?$`)
	reJavaFloat  = regexp.MustCompile(`^-?\d+(\.\d+)?([eE][+-]?\d+)?[fF]\n?$`)
	reJavaDouble = regexp.MustCompile(`^-?\d+(\.\d+)?([eE][+-]?\d+)?\n?$`)
	reJavaLong   = regexp.MustCompile(`^-?\d+[lL]\n?$`)
	reJavaAsList = regexp.MustCompile(`new\s+ArrayList<\w*>\(Arrays\.asList\((.+?)\)\)`)
	reJavaAdds   = regexp.MustCompile(`(?s)new\s+ArrayList<\w*>\(\)\s*\{\{\s*(.+?)\s*\}\}`)
	reJavaAdd    = regexp.MustCompile(`add\((.+?)\)`)
	reJavaNoList = regexp.MustCompile(`new\s+ArrayList<\w*>\(\)`)
	reJavaArray  = regexp.MustCompile(`new\s+\w+\[\]\s*\{(.*?)\}`)
	reJavaMap    = regexp.MustCompile(`(?s)new\s+HashMap<.*?>\s*\(\)\s*\{\s*\{?\s*(.*?)\s*\}?\s*\}`)
	reJavaPut    = regexp.MustCompile(`put\("(.*?)",\s*(.*?)\)`)
	reJavaNoMap  = regexp.MustCompile(`new\s+HashMap<.*?>\s*\(\)`)
	reJavaLongV  = regexp.MustCompile(`^-?\d+[lL]$`)
	reJavaFloatV = regexp.MustCompile(`^-?\d+(\.\d+)?([eE][+-]?\d+)?[fF]$`)

	reJSInt    = regexp.MustCompile(`^-?\d+\n?$`)
	reJSFloat  = regexp.MustCompile(`^-?\d+(\.\d+)?\n?$`)
	reJSBigint = regexp.MustCompile(`^-?\d+n\n?$`)
	reJS2D     = regexp.MustCompile(`^(?:\[\s*\[.*?\]\s*(,\s*\[.*?\]\s*)*\]|\bnew\s+Array\(\s*\[.*?\]\s*(,\s*\[.*?\]\s*)*\))`)
	reJS1D     = regexp.MustCompile(`^(?:\[(.*?)\]|\bnew\s+Array\((.*?)\))`)
	reJSInner  = regexp.MustCompile(`\[(.*?)\]`)
	reJSDict   = regexp.MustCompile(`^\{(.*?)\}`)
)

// javaTypes maps Java type names to the Python type of their value
// (BFCL's JAVA_TYPE_CONVERSION).
var javaTypes = map[string]pyKind{
	"byte": kInt, "short": kInt, "integer": kInt, "long": kInt,
	"float": kFloat, "double": kFloat, "boolean": kBool, "char": kStr,
	"Array": kList, "ArrayList": kList, "Queue": kList, "Stack": kList,
	"Set": kSet, "HashMap": kDict, "Hashtable": kDict, "String": kStr, "any": kStr,
}

// jsTypes maps JavaScript type names likewise (JS_TYPE_CONVERSION).
var jsTypes = map[string]pyKind{
	"String": kStr, "integer": kInt, "float": kFloat, "Bigint": kInt,
	"Boolean": kBool, "dict": kDict, "array": kList, "any": kStr,
}

// pyTypes maps the Python categories' type names (PYTHON_TYPE_MAPPING).
var pyTypes = map[string]pyKind{
	"string": kStr, "integer": kInt, "float": kFloat, "boolean": kBool,
	"array": kList, "tuple": kList, "dict": kDict, "any": kStr,
}

func mustInt(s string) any {
	v, ok := pyInt(s)
	if !ok {
		raise("ValueError: invalid literal for int(): %s", pyval.Repr(s))
	}
	return v
}

func mustFloat(s string) any {
	f, ok := pyFloat(s)
	if !ok {
		raise("ValueError: could not convert string to float: %s", pyval.Repr(s))
	}
	return f
}

// javaConvert parses a Java argument string by its declared type; nested
// is the element type of Array and ArrayList.
func javaConvert(value, typ, nested string) any {
	if _, ok := javaTypes[typ]; !ok {
		raise("ValueError: Unsupported type: %s", typ)
	}
	switch typ {
	case "byte", "short", "integer":
		if !reJavaInt.MatchString(value) {
			return value
		}
		return mustInt(value)
	case "float":
		if !reJavaFloat.MatchString(value) {
			return value
		}
		v := strings.TrimSuffix(value, "\n")
		return mustFloat(v[:len(v)-1])
	case "double":
		if !reJavaDouble.MatchString(value) {
			return value
		}
		return mustFloat(value)
	case "long":
		if !reJavaLong.MatchString(value) {
			return value
		}
		v := strings.TrimSuffix(value, "\n")
		return mustInt(v[:len(v)-1])
	case "boolean":
		if value != "true" && value != "false" {
			return value
		}
		return value == "true"
	case "char":
		// BFCL's char pattern can never match, so a char stays the text.
		return value
	case "Array":
		return javaArray(value, nested)
	case "ArrayList":
		return javaArrayList(value, nested)
	case "HashMap":
		return javaHashMap(value)
	case "Set", "Hashtable", "Queue", "Stack":
		raise("NotImplementedError: %s conversion is not implemented", typ)
	}
	return value // String, any
}

func javaElement(s, nested string) any {
	switch nested {
	case "char", "String":
		return pyTrim1(s)
	case "":
		return javaValue(s)
	}
	return javaConvert(s, nested, "")
}

func javaArrayList(in, nested string) any {
	if m := reJavaAsList.FindStringSubmatch(in); m != nil {
		var out []any
		for _, e := range strings.Split(m[1], ",") {
			out = append(out, javaElement(pyStrip(e), nested))
		}
		return out
	}
	if m := reJavaAdds.FindStringSubmatch(in); m != nil {
		out := []any{}
		for _, a := range reJavaAdd.FindAllStringSubmatch(m[1], -1) {
			out = append(out, javaElement(pyStrip(a[1]), nested))
		}
		return out
	}
	if reJavaNoList.MatchString(in) {
		return []any{}
	}
	return in
}

func javaArray(in, nested string) any {
	m := reJavaArray.FindStringSubmatch(in)
	if m == nil {
		return in
	}
	out := []any{}
	for _, e := range strings.Split(m[1], ",") {
		e = pyStrip(e)
		if e == "" {
			continue
		}
		if nested != "" {
			out = append(out, javaConvert(e, nested, ""))
		} else {
			out = append(out, javaValue(e))
		}
	}
	return out
}

func javaHashMap(in string) any {
	if m := reJavaMap.FindStringSubmatch(in); m != nil {
		d := NewDict()
		if pyStrip(m[1]) != "" {
			for _, p := range reJavaPut.FindAllStringSubmatch(m[1], -1) {
				d.Set(p[1], javaValue(pyStrip(p[2])))
			}
		}
		return d
	}
	if reJavaNoMap.MatchString(in) {
		return NewDict()
	}
	return in
}

// javaValue parses a Java literal of unknown type: a boolean, a quoted
// string, a long, a float, then whatever int() or float() accept.
func javaValue(s string) any {
	switch {
	case s == "true":
		return true
	case s == "false":
		return false
	case strings.HasPrefix(s, `"`) && strings.HasSuffix(s, `"`):
		return pyTrim1(s)
	case reJavaLongV.MatchString(s):
		return mustInt(s[:len(s)-1])
	case reJavaFloatV.MatchString(s):
		return mustFloat(s[:len(s)-1])
	}
	if v, ok := pyInt(s); ok {
		return v
	}
	if f, ok := pyFloat(s); ok {
		return f
	}
	return s
}

// jsConvert parses a JavaScript argument string by its declared type;
// nested is the element type of an array.
func jsConvert(value, typ, nested string) any {
	if _, ok := jsTypes[typ]; !ok {
		raise("ValueError: Unsupported type: %s", typ)
	}
	switch typ {
	case "String":
		if !(strings.HasPrefix(value, `"`) && strings.HasSuffix(value, `"`)) &&
			!(strings.HasPrefix(value, "'") && strings.HasSuffix(value, "'")) {
			return value
		}
		return pyTrim1(value)
	case "integer":
		if !reJSInt.MatchString(value) {
			return value
		}
		return mustInt(value)
	case "float":
		if !reJSFloat.MatchString(value) {
			return value
		}
		return mustFloat(value)
	case "Bigint":
		if !reJSBigint.MatchString(value) {
			return value
		}
		return mustInt(value[:len(value)-1])
	case "Boolean":
		if value != "true" && value != "false" {
			return value
		}
		return value == "true"
	case "dict":
		return jsCollection(value, "dict", nested)
	case "array":
		return jsCollection(value, "array", nested)
	}
	return value // any
}

// jsCollection parses an array or object literal; text it cannot parse
// (or whose parse raises) comes back as the string.
func jsCollection(code, typ, nested string) (out any) {
	code = pyStrip(code)
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(pyException); !ok {
				panic(r)
			}
			out = code
		}
	}()
	if typ == "array" {
		if loc := reJS2D.FindStringIndex(code); loc != nil {
			m := code[loc[0]:loc[1]]
			var rows []any
			for i, inner := range reJSInner.FindAllStringSubmatch(m, -1) {
				s := pyStrip(inner[1])
				if i == 0 && strings.HasPrefix(s, "[") {
					s = s[1:]
				}
				row := []any{}
				for _, e := range strings.Split(s, ",") {
					row = append(row, jsValue(pyStrip(e)))
				}
				rows = append(rows, row)
			}
			if rows == nil {
				rows = []any{}
			}
			return rows
		}
		idx := reJS1D.FindStringSubmatchIndex(code)
		if idx == nil {
			return code
		}
		var inner string
		switch {
		case idx[2] >= 0:
			inner = code[idx[2]:idx[3]]
		case idx[4] >= 0:
			inner = code[idx[4]:idx[5]]
		}
		inner = pyStrip(inner)
		var parts []string
		if inner != "" {
			parts = strings.Split(inner, ",")
		}
		elems := []any{}
		for _, e := range parts {
			e = pyStrip(e)
			switch {
			case nested == "":
				elems = append(elems, jsValue(e))
			case strings.HasPrefix(e, "'") || strings.HasPrefix(e, `"`):
				elems = append(elems, jsConvert(e, nested, "String"))
			default:
				elems = append(elems, jsConvert(e, nested, ""))
			}
		}
		return elems
	}
	if code == "{}" {
		return NewDict()
	}
	m := reJSDict.FindStringSubmatch(code)
	if m == nil {
		return code
	}
	d := NewDict()
	for _, kv := range jsPairs(m[1]) {
		key := strings.Trim(pyStrip(kv[0]), `'"`)
		val := pyStrip(kv[1])
		switch {
		case strings.HasPrefix(val, "[") && strings.HasSuffix(val, "]"):
			d.Set(key, jsCollection(val, "array", ""))
		case strings.HasPrefix(val, "{") && strings.HasSuffix(val, "}"):
			d.Set(key, jsCollection(val, "dict", ""))
		default:
			d.Set(key, jsValue(strings.Trim(val, `'"`)))
		}
	}
	return d
}

// jsPairs finds the key: value pairs of an object literal's inside as
// BFCL's pattern ([^:]+):\s*(.*?)(?:,\s*(?=[^,]+:)|$) does with findall: a
// key runs to the first colon, and a value ends at the first comma after
// which, before the next comma, another colon follows, or at the end. The
// text holds no newline (the enclosing pattern's dot stops at one).
func jsPairs(s string) [][2]string {
	var out [][2]string
	pos := 0
	for pos < len(s) {
		// The first start at or after pos whose key is not empty and
		// that has a colon after it.
		start := pos
		for start < len(s) && s[start] == ':' {
			start++
		}
		colon := strings.IndexByte(s[start:], ':')
		if start >= len(s) || colon < 0 {
			break
		}
		colon += start
		key := s[start:colon]
		v := colon + 1
		for v < len(s) && isPySpace(s[v]) {
			v++
		}
		end, next := len(s), len(s)
	search:
		for e := v; e < len(s); e++ {
			if s[e] != ',' {
				continue
			}
			rmax := e + 1
			for rmax < len(s) && isPySpace(s[rmax]) {
				rmax++
			}
			// \s* is greedy: the longest run of spaces is tried first.
			for r := rmax; r > e; r-- {
				if colonBeforeComma(s, r) {
					end, next = e, r
					break search
				}
			}
		}
		out = append(out, [2]string{key, s[v:end]})
		pos = next
	}
	return out
}

// colonBeforeComma reports whether [^,]+: matches at r: one or more
// characters that are not commas, then a colon.
func colonBeforeComma(s string, r int) bool {
	if r >= len(s) || s[r] == ',' {
		return false
	}
	for t := r + 1; t < len(s); t++ {
		switch s[t] {
		case ',':
			return false
		case ':':
			return true
		}
	}
	return false
}

func isPySpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

// jsValue parses a JavaScript literal of unknown type.
func jsValue(s string) any {
	s = pyStrip(s)
	switch {
	case s == "true":
		return true
	case s == "false":
		return false
	case strings.HasPrefix(s, `"`) && strings.HasSuffix(s, `"`),
		strings.HasPrefix(s, "'") && strings.HasSuffix(s, "'"):
		return pyTrim1(s)
	}
	if v, ok := pyInt(s); ok {
		return v
	}
	if f, ok := pyFloat(s); ok {
		return f
	}
	return s
}

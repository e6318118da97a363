package server

import (
	"encoding/json"
	"errors"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// errNotObject is memberIter's answer to a document that is not a JSON object.
var errNotObject = errors.New("not a JSON object")

// errNotArray is elemIter's answer to a document that is not a JSON array.
var errNotArray = errors.New("not a JSON array")

// memberIter walks the members of a JSON object without decoding the values
// or allocating: next gives each key and the raw text of its value, in the
// document's order. It is for the request hot path: reading a request and
// a step's params (decode.go), finding "session" to route a request. The
// document must be valid JSON (callers have checked it); memberIter only
// checks that it is an object. A key with escapes is unescaped, as
// encoding/json reads it.
type memberIter struct {
	b    []byte
	i    int
	err  error
	done bool
}

// iterMembers starts walking the object b.
func iterMembers(b []byte) memberIter {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return memberIter{err: errNotObject, done: true}
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return memberIter{done: true}
	}
	return memberIter{b: b, i: i}
}

// next returns the next member, or false at the end of the object or at
// the first thing that is not an object member (err says which).
func (m *memberIter) next() (key, val []byte, ok bool) {
	if m.done {
		return nil, nil, false
	}
	b, i := m.b, m.i
	if i >= len(b) || b[i] != '"' {
		return m.fail(errNotObject)
	}
	end, escaped := scanString(b, i)
	if end < 0 {
		return m.fail(errNotObject)
	}
	key = b[i+1 : end-1]
	if escaped {
		k, ok := unquote(b[i:end])
		if !ok {
			if err := json.Unmarshal(b[i:end], &k); err != nil {
				return m.fail(err)
			}
		}
		key = []byte(k)
	}
	i = skipSpace(b, end)
	if i >= len(b) || b[i] != ':' {
		return m.fail(errNotObject)
	}
	i = skipSpace(b, i+1)
	vend := scanValue(b, i)
	if vend < 0 {
		return m.fail(errNotObject)
	}
	val = b[i:vend]
	i = skipSpace(b, vend)
	switch {
	case i < len(b) && b[i] == '}':
		m.done = true
	case i < len(b) && b[i] == ',':
		m.i = skipSpace(b, i+1)
	default:
		return m.fail(errNotObject)
	}
	return key, val, true
}

func (m *memberIter) fail(err error) ([]byte, []byte, bool) {
	m.err, m.done = err, true
	return nil, nil, false
}

// topLevel calls fn with each key of a JSON object and the raw text of its
// value (see memberIter) until fn returns false, and returns the walk's
// error.
func topLevel(b []byte, fn func(key string, val []byte) bool) error {
	m := iterMembers(b)
	for {
		k, v, ok := m.next()
		if !ok {
			return m.err
		}
		if !fn(string(k), v) {
			return nil
		}
	}
}

// elemIter walks the elements of a JSON array, as memberIter walks an
// object's members: next gives the raw text of each. The document must be
// valid JSON; elemIter only checks that it is an array.
type elemIter struct {
	b    []byte
	i    int
	err  error
	done bool
}

// iterElems starts walking the array b.
func iterElems(b []byte) elemIter {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '[' {
		return elemIter{err: errNotArray, done: true}
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return elemIter{done: true}
	}
	return elemIter{b: b, i: i}
}

// next returns the next element, or false at the end of the array or at
// the first thing that is not an element (err says which).
func (a *elemIter) next() (val []byte, ok bool) {
	if a.done {
		return nil, false
	}
	b := a.b
	end := scanValue(b, a.i)
	if end < 0 {
		a.err, a.done = errNotArray, true
		return nil, false
	}
	val = b[a.i:end]
	i := skipSpace(b, end)
	switch {
	case i < len(b) && b[i] == ']':
		a.done = true
	case i < len(b) && b[i] == ',':
		a.i = skipSpace(b, i+1)
	default:
		a.err, a.done = errNotArray, true
		return nil, false
	}
	return val, true
}

// unquote returns the string a JSON string token holds, as encoding/json
// decodes it. It reports false for a token that is not a string, and for
// one it leaves to encoding/json: with a \u escape of a UTF-16 surrogate
// (which encoding/json pairs, or replaces), or bytes that are not UTF-8
// (replaced by U+FFFD). Frames are checked to be UTF-8 before they are
// read, so neither path changes what a client sent. b must be a value of
// a valid JSON document, as memberIter and elemIter give.
func unquote(b []byte) (string, bool) {
	if len(b) < 2 || b[0] != '"' {
		return "", false
	}
	end, escaped := scanString(b, 0)
	if end != len(b) {
		return "", false
	}
	s := b[1 : len(b)-1]
	if !escaped {
		return string(s), true
	}
	var out strings.Builder
	out.Grow(len(s))
	for i := 0; i < len(s); {
		switch c := s[i]; {
		case c == '\\':
			if i+1 >= len(s) {
				return "", false
			}
			switch e := s[i+1]; e {
			case '"', '\\', '/':
				out.WriteByte(e)
			case 'b':
				out.WriteByte('\b')
			case 'f':
				out.WriteByte('\f')
			case 'n':
				out.WriteByte('\n')
			case 'r':
				out.WriteByte('\r')
			case 't':
				out.WriteByte('\t')
			case 'u':
				r, ok := hex4(s[i+2:])
				if !ok || utf16.IsSurrogate(r) {
					return "", false
				}
				out.WriteRune(r)
				i += 6
				continue
			default:
				return "", false
			}
			i += 2
		case c < ' ':
			return "", false // not JSON
		case c < utf8.RuneSelf:
			out.WriteByte(c)
			i++
		default:
			r, n := utf8.DecodeRune(s[i:])
			if r == utf8.RuneError && n == 1 {
				return "", false
			}
			out.Write(s[i : i+n])
			i += n
		}
	}
	return out.String(), true
}

// hex4 reads the four hex digits of a \u escape.
func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// unquoteOneOf is unquote for a string that is usually one of known (a
// method name, a part type): such a string is returned as known's, without
// allocating.
func unquoteOneOf(b []byte, known []string) (string, bool) {
	if len(b) >= 2 && b[0] == '"' {
		for _, k := range known {
			if len(b) == len(k)+2 && string(b[1:len(b)-1]) == k && b[len(b)-1] == '"' {
				return k, true
			}
		}
	}
	return unquote(b)
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// scanString returns the index after the string starting at b[i] == '"',
// and whether it needs encoding/json to read it: escapes, or bytes outside
// ASCII, which encoding/json checks as UTF-8.
func scanString(b []byte, i int) (end int, escaped bool) {
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '\\':
			escaped = true
			j++
		case c == '"':
			return j + 1, escaped
		case c >= 0x80:
			escaped = true
		}
	}
	return -1, false
}

// scanValue returns the index after the value starting at b[i].
func scanValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		end, _ := scanString(b, i)
		return end
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				end, _ := scanString(b, j)
				if end < 0 {
					return -1
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	}
	j := i
	for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && b[j] != ' ' && b[j] != '\t' && b[j] != '\n' && b[j] != '\r' {
		j++
	}
	if j == i {
		return -1
	}
	return j
}

// sessionOf returns a params object's "session" string, or "".
func sessionOf(params []byte) string {
	var s string
	topLevel(params, func(key string, val []byte) bool {
		if key != "session" {
			return true
		}
		if len(val) >= 2 && val[0] == '"' {
			if end, esc := scanString(val, 0); end == len(val) && !esc {
				s = string(val[1 : len(val)-1])
			} else {
				json.Unmarshal(val, &s)
			}
		}
		return false
	})
	return s
}

// depthAt returns how deeply arrays and objects nest just before b[off],
// reading b as JSON (brackets inside strings do not count). It is for
// error messages, after encoding/json has refused b at off.
func depthAt(b []byte, off int64) int {
	depth := 0
	for i := 0; i < len(b) && int64(i) < off; i++ {
		switch b[i] {
		case '"':
			end, _ := scanString(b, i)
			if end < 0 {
				return depth
			}
			i = end - 1
		case '{', '[':
			depth++
		case '}', ']':
			depth--
		}
	}
	return depth
}

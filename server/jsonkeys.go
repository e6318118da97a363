package server

import (
	"encoding/json"
	"errors"
)

// errNotObject is topLevel's answer to a document that is not a JSON object.
var errNotObject = errors.New("not a JSON object")

// topLevel calls fn with each key of a JSON object and the raw text of its
// value, without decoding the values or allocating. It is for the request
// hot path: finding "session" to route a request, and checking a step's
// keys against the accepted ones. The document must be valid JSON (callers
// have unmarshalled it already); topLevel only checks that it is an object.
// A key with escapes or non-ASCII bytes is read through encoding/json.
func topLevel(b []byte, fn func(key string, val []byte) bool) error {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return errNotObject
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return nil
	}
	for i < len(b) {
		if b[i] != '"' {
			return errNotObject
		}
		end, escaped := scanString(b, i)
		if end < 0 {
			return errNotObject
		}
		var key string
		if escaped {
			if err := json.Unmarshal(b[i:end], &key); err != nil {
				return err
			}
		} else {
			key = string(b[i+1 : end-1])
		}
		i = skipSpace(b, end)
		if i >= len(b) || b[i] != ':' {
			return errNotObject
		}
		i = skipSpace(b, i+1)
		vend := scanValue(b, i)
		if vend < 0 {
			return errNotObject
		}
		if !fn(key, b[i:vend]) {
			return nil
		}
		i = skipSpace(b, vend)
		if i >= len(b) {
			return errNotObject
		}
		if b[i] == '}' {
			return nil
		}
		if b[i] != ',' {
			return errNotObject
		}
		i = skipSpace(b, i+1)
	}
	return errNotObject
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

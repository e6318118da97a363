package telecom

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// tau2 keeps the telecom databases in TOML (db.toml, user_db.toml), read
// by Python's toml package into dicts in file order. tomlToJSON turns such
// a file into the same document as JSON, keys in file order, so that one
// reader (json, with tau2.EachMember for ordered dicts) serves the files
// and the JSON a task carries. It reads TOML 1.0 but for two things tau2's
// files never use and JSON cannot hold: inf and nan floats; dates and
// times without quotes become strings, which the models parse as they do
// quoted ones.

// tnode is a TOML value being built: a table (keys in order), an array, or
// a scalar already written as JSON.
type tnode struct {
	keys    []string
	vals    map[string]*tnode
	arr     []*tnode
	isArr   bool
	tableAr bool // an array of tables ([[x]])
	inline  bool // an inline table or a static array: closed to headers
	defined bool // a table opened by a header of its own
	raw     []byte
}

func newTable() *tnode { return &tnode{vals: map[string]*tnode{}} }

func (n *tnode) isTable() bool { return n.vals != nil }

func (n *tnode) set(k string, v *tnode) {
	if _, ok := n.vals[k]; !ok {
		n.keys = append(n.keys, k)
	}
	n.vals[k] = v
}

func (n *tnode) appendJSON(b []byte) []byte {
	switch {
	case n.isTable():
		b = append(b, '{')
		for i, k := range n.keys {
			if i > 0 {
				b = append(b, ',')
			}
			kb, _ := json.Marshal(k)
			b = append(append(b, kb...), ':')
			b = n.vals[k].appendJSON(b)
		}
		return append(b, '}')
	case n.isArr:
		b = append(b, '[')
		for i, e := range n.arr {
			if i > 0 {
				b = append(b, ',')
			}
			b = e.appendJSON(b)
		}
		return append(b, ']')
	}
	return append(b, n.raw...)
}

// tomlToJSON converts a TOML document to JSON (see above).
func tomlToJSON(src []byte) ([]byte, error) {
	p := &tparser{src: string(src), line: 1}
	root := newTable()
	cur := root
	for {
		p.skipBlank()
		if p.eof() {
			break
		}
		switch {
		case strings.HasPrefix(p.rest(), "[["):
			p.pos += 2
			keys, err := p.key()
			if err != nil {
				return nil, err
			}
			if !p.consume("]]") {
				return nil, p.errorf("want ]] after the array of tables' name")
			}
			if cur, err = p.arrayTable(root, keys); err != nil {
				return nil, err
			}
		case p.peek() == '[':
			p.pos++
			keys, err := p.key()
			if err != nil {
				return nil, err
			}
			if !p.consume("]") {
				return nil, p.errorf("want ] after the table's name")
			}
			if cur, err = p.table(root, keys); err != nil {
				return nil, err
			}
		default:
			if err := p.keyValue(cur); err != nil {
				return nil, err
			}
		}
		if !p.endOfLine() {
			return nil, p.errorf("want the end of the line")
		}
	}
	return root.appendJSON(nil), nil
}

type tparser struct {
	src  string
	pos  int
	line int
}

func (p *tparser) errorf(format string, args ...any) error {
	return fmt.Errorf("TOML line %d: %s", p.line, fmt.Sprintf(format, args...))
}

func (p *tparser) eof() bool    { return p.pos >= len(p.src) }
func (p *tparser) rest() string { return p.src[p.pos:] }
func (p *tparser) peek() byte {
	if p.eof() {
		return 0
	}
	return p.src[p.pos]
}

func (p *tparser) consume(s string) bool {
	if strings.HasPrefix(p.rest(), s) {
		p.pos += len(s)
		return true
	}
	return false
}

func (p *tparser) skipSpace() {
	for !p.eof() && (p.peek() == ' ' || p.peek() == '\t') {
		p.pos++
	}
}

func (p *tparser) skipComment() {
	if p.peek() == '#' {
		for !p.eof() && p.peek() != '\n' {
			p.pos++
		}
	}
}

// skipBlank skips spaces, comments and newlines.
func (p *tparser) skipBlank() {
	for {
		p.skipSpace()
		p.skipComment()
		switch {
		case p.consume("\r\n"), p.consume("\n"):
			p.line++
		default:
			return
		}
	}
}

// endOfLine consumes what may end a line: spaces, a comment, a newline.
func (p *tparser) endOfLine() bool {
	p.skipSpace()
	p.skipComment()
	if p.eof() {
		return true
	}
	if p.consume("\r\n") || p.consume("\n") {
		p.line++
		return true
	}
	return false
}

// key reads a dotted key: bare or quoted parts separated by dots.
func (p *tparser) key() ([]string, error) {
	var parts []string
	for {
		p.skipSpace()
		var part string
		switch c := p.peek(); {
		case c == '"':
			s, err := p.basicString()
			if err != nil {
				return nil, err
			}
			part = s
		case c == '\'':
			s, err := p.literalString()
			if err != nil {
				return nil, err
			}
			part = s
		default:
			start := p.pos
			for !p.eof() && isBare(p.peek()) {
				p.pos++
			}
			if p.pos == start {
				return nil, p.errorf("want a key")
			}
			part = p.src[start:p.pos]
		}
		parts = append(parts, part)
		p.skipSpace()
		if !p.consume(".") {
			return parts, nil
		}
	}
}

func isBare(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// descend walks from t to the table keys names, making tables on the way
// and entering the last element of an array of tables.
func (p *tparser) descend(t *tnode, keys []string) (*tnode, error) {
	for _, k := range keys {
		next, ok := t.vals[k]
		switch {
		case !ok:
			next = newTable()
			t.set(k, next)
		case next.tableAr:
			next = next.arr[len(next.arr)-1]
		case !next.isTable() || next.inline:
			return nil, p.errorf("key %q is already a value", k)
		}
		t = next
	}
	return t, nil
}

func (p *tparser) table(root *tnode, keys []string) (*tnode, error) {
	parent, err := p.descend(root, keys[:len(keys)-1])
	if err != nil {
		return nil, err
	}
	last := keys[len(keys)-1]
	t, ok := parent.vals[last]
	switch {
	case !ok:
		t = newTable()
		parent.set(last, t)
	case !t.isTable() || t.inline || t.defined:
		return nil, p.errorf("table [%s] is defined twice", strings.Join(keys, "."))
	}
	t.defined = true
	return t, nil
}

func (p *tparser) arrayTable(root *tnode, keys []string) (*tnode, error) {
	parent, err := p.descend(root, keys[:len(keys)-1])
	if err != nil {
		return nil, err
	}
	last := keys[len(keys)-1]
	a, ok := parent.vals[last]
	switch {
	case !ok:
		a = &tnode{isArr: true, tableAr: true}
		parent.set(last, a)
	case !a.tableAr:
		return nil, p.errorf("[[%s]] names a value that is not an array of tables", strings.Join(keys, "."))
	}
	t := newTable()
	a.arr = append(a.arr, t)
	return t, nil
}

func (p *tparser) keyValue(t *tnode) error {
	keys, err := p.key()
	if err != nil {
		return err
	}
	p.skipSpace()
	if !p.consume("=") {
		return p.errorf("want = after key %q", strings.Join(keys, "."))
	}
	p.skipSpace()
	v, err := p.value()
	if err != nil {
		return err
	}
	parent, err := p.descend(t, keys[:len(keys)-1])
	if err != nil {
		return err
	}
	last := keys[len(keys)-1]
	if _, dup := parent.vals[last]; dup {
		return p.errorf("key %q is defined twice", strings.Join(keys, "."))
	}
	parent.set(last, v)
	return nil
}

func (p *tparser) value() (*tnode, error) {
	switch c := p.peek(); {
	case c == '"' || c == '\'':
		var s string
		var err error
		if c == '"' {
			s, err = p.basicString()
		} else {
			s, err = p.literalString()
		}
		if err != nil {
			return nil, err
		}
		b, _ := json.Marshal(s)
		return &tnode{raw: b}, nil
	case c == '[':
		return p.array()
	case c == '{':
		return p.inlineTable()
	case p.consume("true"):
		return &tnode{raw: []byte("true")}, nil
	case p.consume("false"):
		return &tnode{raw: []byte("false")}, nil
	}
	start := p.pos
	for !p.eof() && strings.IndexByte(" \t\r\n,]}#", p.peek()) < 0 {
		p.pos++
	}
	// A date-time may hold one space between its date and its time.
	if p.pos-start == 10 && p.peek() == ' ' && p.pos+1 < len(p.src) && p.src[p.pos+1] >= '0' && p.src[p.pos+1] <= '9' {
		p.pos++
		for !p.eof() && strings.IndexByte(" \t\r\n,]}#", p.peek()) < 0 {
			p.pos++
		}
	}
	return p.scalar(p.src[start:p.pos])
}

// scalar converts a number or a date-time to JSON.
func (p *tparser) scalar(s string) (*tnode, error) {
	if s == "" {
		return nil, p.errorf("want a value")
	}
	if len(s) >= 8 && (s[4] == '-' || s[2] == ':') && !strings.ContainsAny(s[:1], "+-") {
		b, _ := json.Marshal(s)
		return &tnode{raw: b}, nil
	}
	t := strings.ReplaceAll(s, "_", "")
	neg := strings.HasPrefix(t, "-")
	u := strings.TrimLeft(t, "+-")
	if len(u) > 2 && u[0] == '0' && strings.ContainsRune("xob", rune(u[1])) {
		base := map[byte]int{'x': 16, 'o': 8, 'b': 2}[u[1]]
		n, err := strconv.ParseUint(u[2:], base, 64)
		if err != nil || len(t) != len(u) {
			return nil, p.errorf("bad integer %q", s)
		}
		return &tnode{raw: strconv.AppendUint(nil, n, 10)}, nil
	}
	if strings.Contains(u, "inf") || strings.Contains(u, "nan") {
		return nil, p.errorf("%s: inf and nan are not supported", s)
	}
	if !json.Valid([]byte(u)) || strings.HasPrefix(u, "0") && len(u) > 1 && u[1] != '.' && u[1] != 'e' && u[1] != 'E' {
		return nil, p.errorf("bad value %q", s)
	}
	if neg {
		u = "-" + u
	}
	return &tnode{raw: []byte(u)}, nil
}

func (p *tparser) array() (*tnode, error) {
	p.pos++ // [
	a := &tnode{isArr: true, inline: true}
	for {
		p.skipBlank()
		if p.consume("]") {
			return a, nil
		}
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		a.arr = append(a.arr, v)
		p.skipBlank()
		if p.consume("]") {
			return a, nil
		}
		if !p.consume(",") {
			return nil, p.errorf("want , or ] in an array")
		}
	}
}

func (p *tparser) inlineTable() (*tnode, error) {
	p.pos++ // {
	t := newTable()
	t.inline = true
	p.skipSpace()
	if p.consume("}") {
		return t, nil
	}
	for {
		if err := p.keyValue(t); err != nil {
			return nil, err
		}
		p.skipSpace()
		if p.consume("}") {
			return t, nil
		}
		if !p.consume(",") {
			return nil, p.errorf("want , or } in an inline table")
		}
		p.skipSpace()
	}
}

// basicString reads a "..." or """...""" string with its escapes.
func (p *tparser) basicString() (string, error) {
	multi := p.consume(`"""`)
	if !multi {
		p.pos++
	} else if !p.consume("\r\n") {
		p.consume("\n")
	}
	var b strings.Builder
	for {
		if p.eof() {
			return "", p.errorf("unterminated string")
		}
		c := p.peek()
		switch {
		case multi && p.consume(`"""`):
			// Up to two more quotes belong to the string.
			for i := 0; i < 2 && p.peek() == '"'; i++ {
				b.WriteByte('"')
				p.pos++
			}
			return b.String(), nil
		case !multi && c == '"':
			p.pos++
			return b.String(), nil
		case c == '\n' && !multi:
			return "", p.errorf("newline in a string")
		case c == '\\':
			p.pos++
			if err := p.escape(&b, multi); err != nil {
				return "", err
			}
		default:
			if c == '\n' {
				p.line++
			}
			r, n := utf8.DecodeRuneInString(p.rest())
			b.WriteRune(r)
			p.pos += n
		}
	}
}

func (p *tparser) escape(b *strings.Builder, multi bool) error {
	c := p.peek()
	p.pos++
	switch c {
	case 'b':
		b.WriteByte('\b')
	case 't':
		b.WriteByte('\t')
	case 'n':
		b.WriteByte('\n')
	case 'f':
		b.WriteByte('\f')
	case 'r':
		b.WriteByte('\r')
	case 'e':
		b.WriteByte(0x1b)
	case '"', '\\':
		b.WriteByte(c)
	case 'u', 'U':
		n := 4
		if c == 'U' {
			n = 8
		}
		if p.pos+n > len(p.src) {
			return p.errorf("short \\%c escape", c)
		}
		v, err := strconv.ParseUint(p.src[p.pos:p.pos+n], 16, 32)
		if err != nil || !utf8.ValidRune(rune(v)) {
			return p.errorf("bad \\%c escape", c)
		}
		b.WriteRune(rune(v))
		p.pos += n
	case ' ', '\t', '\r', '\n':
		if !multi {
			return p.errorf("bad escape")
		}
		// A line-ending backslash trims the whitespace that follows.
		p.pos--
		for !p.eof() && strings.IndexByte(" \t\r\n", p.peek()) >= 0 {
			if p.peek() == '\n' {
				p.line++
			}
			p.pos++
		}
	default:
		return p.errorf("bad escape \\%c", c)
	}
	return nil
}

// literalString reads a '...' or ”'...”' string, without escapes.
func (p *tparser) literalString() (string, error) {
	if p.consume("'''") {
		if !p.consume("\r\n") {
			p.consume("\n")
		}
		end := strings.Index(p.rest(), "'''")
		if end < 0 {
			return "", p.errorf("unterminated string")
		}
		for end+3 < len(p.rest()) && p.rest()[end+3] == '\'' && end < len(p.rest())-3 {
			end++
		}
		s := p.rest()[:end]
		p.line += strings.Count(s, "\n")
		p.pos += end + 3
		return s, nil
	}
	p.pos++
	end := strings.IndexAny(p.rest(), "'\n")
	if end < 0 || p.rest()[end] != '\'' {
		return "", p.errorf("unterminated string")
	}
	s := p.rest()[:end]
	p.pos += end + 1
	return s, nil
}

package multiturn

import (
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/nextstate-rl/nextstate/envs/internal/pyval"
)

// Call is one function call: a method name and its arguments, Python
// values (pyval's types).
type Call struct {
	Name   string
	Args   []any
	Kwargs *pyval.Dict
}

// String writes the call as Python source, as BFCL's ground truth does:
// name(arg, key=value) with values as their repr.
func (c Call) String() string {
	var parts []string
	for _, a := range c.Args {
		parts = append(parts, pyval.Repr(a))
	}
	if c.Kwargs != nil {
		for i, k := range c.Kwargs.Keys {
			parts = append(parts, k+"="+pyval.Repr(c.Kwargs.Vals[i]))
		}
	}
	return c.Name + "(" + strings.Join(parts, ", ") + ")"
}

// ParseCall reads a call written in Python, as BFCL's ground truth writes
// them: name(positional, ..., key=value, ...) whose values are literals
// (strings, numbers, True, False, None, lists, tuples as lists, dicts).
func ParseCall(src string) (Call, error) {
	p := &pyParser{s: src}
	p.space()
	name := p.ident()
	if name == "" {
		return Call{}, p.errorf("want a function name")
	}
	p.space()
	if !p.eat('(') {
		return Call{}, p.errorf("want ( after %s", name)
	}
	c := Call{Name: name, Kwargs: pyval.NewDict()}
	for {
		p.space()
		if p.eat(')') {
			break
		}
		save := p.i
		if k := p.ident(); k != "" {
			p.space()
			if p.eat('=') && !p.peek('=') {
				p.space()
				v, err := p.value(0)
				if err != nil {
					return Call{}, err
				}
				c.Kwargs.Set(k, v)
				goto next
			}
		}
		p.i = save
		if c.Kwargs.Len() > 0 {
			return Call{}, p.errorf("positional argument follows keyword argument")
		}
		if v, err := p.value(0); err != nil {
			return Call{}, err
		} else {
			c.Args = append(c.Args, v)
		}
	next:
		p.space()
		if p.eat(',') {
			continue
		}
		if p.eat(')') {
			break
		}
		return Call{}, p.errorf("want , or ) in the arguments of %s", name)
	}
	p.space()
	if p.i < len(p.s) {
		return Call{}, p.errorf("text after the call")
	}
	return c, nil
}

type pyParser struct {
	s string
	i int
}

func (p *pyParser) errorf(format string, args ...any) error {
	return fmt.Errorf("python call %q at offset %d: %s", p.s, p.i, fmt.Sprintf(format, args...))
}

func (p *pyParser) space() {
	for p.i < len(p.s) && strings.IndexByte(" \t\n\r", p.s[p.i]) >= 0 {
		p.i++
	}
}

func (p *pyParser) eat(c byte) bool {
	if p.i < len(p.s) && p.s[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *pyParser) peek(c byte) bool { return p.i < len(p.s) && p.s[p.i] == c }

func (p *pyParser) ident() string {
	start := p.i
	for p.i < len(p.s) {
		c := p.s[p.i]
		if c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || p.i > start && c >= '0' && c <= '9' {
			p.i++
			continue
		}
		break
	}
	return p.s[start:p.i]
}

func (p *pyParser) value(depth int) (any, error) {
	if depth > 100 {
		return nil, p.errorf("nested too deeply")
	}
	p.space()
	if p.i >= len(p.s) {
		return nil, p.errorf("want a value")
	}
	switch c := p.s[p.i]; {
	case c == '\'' || c == '"':
		return p.str()
	case c == '[' || c == '(':
		p.i++
		end := byte(']')
		if c == '(' {
			end = ')'
		}
		l := []any{}
		for {
			p.space()
			if p.eat(end) {
				return l, nil
			}
			v, err := p.value(depth + 1)
			if err != nil {
				return nil, err
			}
			l = append(l, v)
			p.space()
			if !p.eat(',') && !p.peek(end) {
				return nil, p.errorf("want , or %c", end)
			}
		}
	case c == '{':
		p.i++
		d := pyval.NewDict()
		for {
			p.space()
			if p.eat('}') {
				return d, nil
			}
			k, err := p.value(depth + 1)
			if err != nil {
				return nil, err
			}
			ks, ok := k.(string)
			if !ok {
				return nil, p.errorf("a dict key that is not a string")
			}
			p.space()
			if !p.eat(':') {
				return nil, p.errorf("want : after a dict key")
			}
			v, err := p.value(depth + 1)
			if err != nil {
				return nil, err
			}
			d.Set(ks, v)
			p.space()
			if !p.eat(',') && !p.peek('}') {
				return nil, p.errorf("want , or }")
			}
		}
	case c == '-' || c == '+' || c == '.' || c >= '0' && c <= '9':
		return p.number()
	}
	switch w := p.ident(); w {
	case "True":
		return true, nil
	case "False":
		return false, nil
	case "None":
		return nil, nil
	case "":
		return nil, p.errorf("want a value")
	default:
		return nil, p.errorf("%s is not a literal", w)
	}
}

func (p *pyParser) number() (any, error) {
	start := p.i
	if p.s[p.i] == '-' || p.s[p.i] == '+' {
		p.i++
	}
	float := false
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c >= '0' && c <= '9' || c == '_':
		case c == '.' || c == 'e' || c == 'E':
			float = true
		case (c == '-' || c == '+') && (p.s[p.i-1] == 'e' || p.s[p.i-1] == 'E'):
		default:
			goto done
		}
		p.i++
	}
done:
	text := strings.ReplaceAll(p.s[start:p.i], "_", "")
	if float {
		f, err := strconv.ParseFloat(text, 64)
		if err != nil {
			return nil, p.errorf("bad number %q", text)
		}
		return f, nil
	}
	if n, err := strconv.ParseInt(text, 10, 64); err == nil {
		return n, nil
	}
	if b, ok := new(big.Int).SetString(strings.TrimPrefix(text, "+"), 10); ok {
		return b, nil
	}
	return nil, p.errorf("bad number %q", text)
}

// str reads a Python string literal (one of ' or ", not triple-quoted),
// with its escapes.
func (p *pyParser) str() (string, error) {
	q := p.s[p.i]
	p.i++
	var b strings.Builder
	for p.i < len(p.s) {
		c := p.s[p.i]
		if c == q {
			p.i++
			return b.String(), nil
		}
		if c != '\\' {
			r, n := utf8.DecodeRuneInString(p.s[p.i:])
			b.WriteRune(r)
			p.i += n
			continue
		}
		if p.i+1 >= len(p.s) {
			break
		}
		e := p.s[p.i+1]
		p.i += 2
		switch e {
		case '\\', '\'', '"':
			b.WriteByte(e)
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case '0':
			b.WriteByte(0)
		case '\n':
		case 'x', 'u', 'U':
			n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
			if p.i+n > len(p.s) {
				return "", p.errorf("short \\%c escape", e)
			}
			v, err := strconv.ParseUint(p.s[p.i:p.i+n], 16, 32)
			if err != nil {
				return "", p.errorf("bad \\%c escape", e)
			}
			b.WriteRune(rune(v))
			p.i += n
		default:
			b.WriteByte('\\')
			b.WriteByte(e)
		}
	}
	return "", p.errorf("unterminated string")
}

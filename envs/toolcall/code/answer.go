package code

import (
	"errors"
	"fmt"
	"math/big"
	"regexp"
	"strings"
)

// ExtractBoxed returns the content of the last \boxed{...} (or \fbox{...})
// in s whose braces balance, and whether there is one.
func ExtractBoxed(s string) (string, bool) {
	best, bestAt := "", -1
	for _, macro := range []string{`\boxed`, `\fbox`} {
		for i := 0; ; {
			k := strings.Index(s[i:], macro)
			if k < 0 {
				break
			}
			at := i + k
			i = at + len(macro)
			j := i
			for j < len(s) && (s[j] == ' ' || s[j] == '\t' || s[j] == '\n') {
				j++
			}
			if j >= len(s) || s[j] != '{' {
				continue
			}
			content, end, ok := braced(s, j)
			if !ok {
				continue
			}
			if at > bestAt {
				best, bestAt = content, at
			}
			i = end
		}
	}
	return best, bestAt >= 0
}

// braced returns the content of the group that opens at s[open] == '{',
// and the index just past its closing brace.
func braced(s string, open int) (content string, end int, ok bool) {
	depth := 0
	for j := open; j < len(s); j++ {
		switch s[j] {
		case '\\':
			j++ // an escaped character (\{ \}) does not count
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				return s[open+1 : j], j + 1, true
			}
		}
	}
	return "", 0, false
}

// Answer is an answer after normalisation (see the package doc, Answers).
type Answer struct {
	Raw  string `json:"raw"`
	Text string `json:"text"` // normalised, without spaces
	// Value is the exact value of Text when it is a number or a simple
	// expression; nil otherwise, and Err says why.
	Value *big.Rat `json:"-"`
	Err   error    `json:"-"`
}

// String is the answer's canonical form: its value as "p/q" or "p" when
// it has one, its normalised text otherwise.
func (a Answer) String() string {
	if a.Value != nil {
		return a.Value.RatString()
	}
	return a.Text
}

// maxAnswerLen bounds what Normalize reads; a longer answer is compared as
// text.
const maxAnswerLen = 1000

var (
	// textMacros are unwrapped to their argument.
	textMacros = []string{`\text`, `\textrm`, `\textbf`, `\textit`, `\mathrm`, `\mathbf`, `\mbox`, `\operatorname`}
	// dropped are removed wherever they appear: spacing, sizing, degrees,
	// currency and percent signs.
	dropped = strings.NewReplacer(
		`\left`, "", `\right`, "", `\displaystyle`, "", `\!`, "", `\,`, " ", `\;`, " ", `\:`, " ",
		`\ `, " ", `\qquad`, " ", `\quad`, " ", "~", " ",
		`^{\circ}`, "", `^\circ`, "", `\circ`, "", "°", "", `\%`, "", "%", "", `\$`, "", "$", "",
	)
	// operators are written one way.
	operators = strings.NewReplacer(
		`\dfrac`, `\frac`, `\tfrac`, `\frac`, `\cdot`, "*", `\times`, "*", "×", "*", "·", "*", "∗", "*",
		`\div`, "/", "÷", "/", "−", "-", "–", "-", `{,}`, ",",
	)
	leadingName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]*\s*=\s*`)
	unitWords   = regexp.MustCompile(`^(.*[0-9)}\]!])\s+[A-Za-z]+(?:\s+[A-Za-z]+)*$`)
	thousands   = regexp.MustCompile(`^-?\d{1,3}(?:,\d{3})+(?:\.\d+)?$`)
	spacedThous = regexp.MustCompile(`^-?\d{1,3}(?: \d{3})+(?:\.\d+)?$`)
)

// Normalize reads an answer (the content of a \boxed{}, or a task's
// reference) as the package doc describes: it strips TeX dressing, a
// leading "x =", trailing unit words and thousands separators, and
// evaluates a number or a simple expression exactly.
func Normalize(raw string) Answer {
	a := Answer{Raw: raw}
	s := strings.TrimSpace(raw)
	if len(s) > maxAnswerLen {
		a.Text = strings.Join(strings.Fields(s), "")
		a.Err = fmt.Errorf("longer than %d bytes", maxAnswerLen)
		return a
	}
	s = stripDelimiters(s)
	s = unwrapMacros(s)
	s = dropped.Replace(s)
	s = operators.Replace(s)
	s = strings.TrimSpace(strings.TrimRight(strings.TrimSpace(s), "."))
	if strings.Count(s, "=") == 1 {
		s = leadingName.ReplaceAllString(s, "")
	}
	s = strings.Join(strings.Fields(s), " ")
	if m := unitWords.FindStringSubmatch(s); m != nil {
		if _, err := Eval(compact(m[1])); err == nil {
			s = m[1]
		}
	}
	s = strings.TrimSpace(s)
	if thousands.MatchString(s) {
		s = strings.ReplaceAll(s, ",", "")
	} else if spacedThous.MatchString(s) {
		s = strings.ReplaceAll(s, " ", "")
	}
	a.Text = compact(s)
	a.Value, a.Err = Eval(a.Text)
	return a
}

func compact(s string) string { return strings.Join(strings.Fields(s), "") }

// stripDelimiters removes math delimiters around the whole answer: $...$,
// $$...$$, \(...\), \[...\].
func stripDelimiters(s string) string {
	for {
		t := strings.TrimSpace(s)
		switch {
		case len(t) >= 2 && t[0] == '$' && t[len(t)-1] == '$':
			t = t[1 : len(t)-1]
		case strings.HasPrefix(t, `\(`) && strings.HasSuffix(t, `\)`), strings.HasPrefix(t, `\[`) && strings.HasSuffix(t, `\]`):
			t = t[2 : len(t)-2]
		}
		if t == s {
			return s
		}
		s = t
	}
}

// unwrapMacros replaces \text{...} and its kind by " ... ".
func unwrapMacros(s string) string {
	for _, m := range textMacros {
		for {
			i := strings.Index(s, m+"{")
			if i < 0 {
				break
			}
			content, end, ok := braced(s, i+len(m))
			if !ok {
				break
			}
			s = s[:i] + " " + content + " " + s[end:]
		}
	}
	return s
}

// Limits on what Eval computes, so that an answer such as 9^9^9 is
// refused rather than computed.
const (
	maxExprLen      = 500
	maxExponent     = 100000
	maxResultBits   = 1 << 16
	maxFactorial    = 2000
	maxBinomialTop  = 2000
	maxEvalNodes    = 2000
	errExprTooLarge = "the value is too large to compute exactly"
)

// Eval evaluates a number or a simple expression exactly: integers,
// decimals (1.5, .5, 1e-3), + - * / ^ (an integer exponent), unary minus,
// parentheses (also [] and {}), \frac{a}{b} (\frac12), \binom{n}{k} and
// n!. There is no implicit multiplication: 2\frac{1}{2} and 2(3) are
// errors. The input must hold no spaces (Normalize removes them).
func Eval(s string) (*big.Rat, error) {
	if s == "" {
		return nil, errors.New("empty")
	}
	if len(s) > maxExprLen {
		return nil, fmt.Errorf("longer than %d bytes", maxExprLen)
	}
	p := &parser{s: s}
	v, err := p.expr()
	if err != nil {
		return nil, err
	}
	if p.i < len(p.s) {
		return nil, p.errorf("unexpected %q", p.rest())
	}
	return v, nil
}

type parser struct {
	s     string
	i     int
	nodes int
}

func (p *parser) errorf(format string, args ...any) error {
	return fmt.Errorf("at %d: "+format, append([]any{p.i}, args...)...)
}

func (p *parser) rest() string {
	r := p.s[p.i:]
	if len(r) > 12 {
		r = r[:12] + "..."
	}
	return r
}

func (p *parser) peek() byte {
	if p.i < len(p.s) {
		return p.s[p.i]
	}
	return 0
}

func (p *parser) node() error {
	p.nodes++
	if p.nodes > maxEvalNodes {
		return errors.New("the expression is too long")
	}
	return nil
}

// expr := term { ("+" | "-") term }
func (p *parser) expr() (*big.Rat, error) {
	v, err := p.term()
	if err != nil {
		return nil, err
	}
	for c := p.peek(); c == '+' || c == '-'; c = p.peek() {
		p.i++
		w, err := p.term()
		if err != nil {
			return nil, err
		}
		if c == '+' {
			v.Add(v, w)
		} else {
			v.Sub(v, w)
		}
	}
	return v, nil
}

// term := unary { ("*" | "/") unary }
func (p *parser) term() (*big.Rat, error) {
	v, err := p.unary()
	if err != nil {
		return nil, err
	}
	for c := p.peek(); c == '*' || c == '/'; c = p.peek() {
		p.i++
		w, err := p.unary()
		if err != nil {
			return nil, err
		}
		if c == '*' {
			v.Mul(v, w)
		} else {
			if w.Sign() == 0 {
				return nil, p.errorf("division by zero")
			}
			v.Quo(v, w)
		}
		if bits(v) > maxResultBits {
			return nil, errors.New(errExprTooLarge)
		}
	}
	return v, nil
}

// unary := ("+" | "-") unary | power; so -2^2 is -(2^2).
func (p *parser) unary() (*big.Rat, error) {
	if err := p.node(); err != nil {
		return nil, err
	}
	switch p.peek() {
	case '-':
		p.i++
		v, err := p.unary()
		if err != nil {
			return nil, err
		}
		return v.Neg(v), nil
	case '+':
		p.i++
		return p.unary()
	}
	return p.power()
}

// power := postfix [ "^" unary ], right associative.
func (p *parser) power() (*big.Rat, error) {
	v, err := p.postfix()
	if err != nil {
		return nil, err
	}
	if p.peek() != '^' {
		return v, nil
	}
	p.i++
	e, err := p.unary()
	if err != nil {
		return nil, err
	}
	return pow(v, e)
}

func pow(v, e *big.Rat) (*big.Rat, error) {
	if !e.IsInt() {
		return nil, fmt.Errorf("the exponent %s is not an integer", e.RatString())
	}
	n := e.Num()
	if v.Sign() == 0 {
		if n.Sign() < 0 {
			return nil, errors.New("division by zero (0 to a negative power)")
		}
		if n.Sign() == 0 {
			return new(big.Rat).SetInt64(1), nil
		}
		return new(big.Rat), nil
	}
	one := v.Num().CmpAbs(big.NewInt(1)) == 0 && v.IsInt()
	if !one && (!n.IsInt64() || n.Int64() > maxExponent || n.Int64() < -maxExponent ||
		int64(bits(v))*abs64(n.Int64()) > maxResultBits) {
		return nil, errors.New(errExprTooLarge)
	}
	var k int64
	if one {
		k = int64(n.Bit(0)) // (±1)^n is (±1)^(n mod 2)
	} else {
		k = n.Int64()
	}
	num := new(big.Int).Exp(v.Num(), big.NewInt(abs64(k)), nil)
	den := new(big.Int).Exp(v.Denom(), big.NewInt(abs64(k)), nil)
	if k < 0 {
		num, den = den, num
	}
	return new(big.Rat).SetFrac(num, den), nil
}

func abs64(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

func bits(v *big.Rat) int { return v.Num().BitLen() + v.Denom().BitLen() }

// postfix := atom { "!" }
func (p *parser) postfix() (*big.Rat, error) {
	v, err := p.atom()
	if err != nil {
		return nil, err
	}
	for p.peek() == '!' {
		p.i++
		if !v.IsInt() || v.Sign() < 0 || v.Num().Cmp(big.NewInt(maxFactorial)) > 0 {
			return nil, fmt.Errorf("%s! is not a factorial of a whole number up to %d", v.RatString(), maxFactorial)
		}
		f := new(big.Int).MulRange(1, v.Num().Int64())
		v = new(big.Rat).SetInt(f)
	}
	return v, nil
}

// atom := number | "(" expr ")" | "[" expr "]" | "{" expr "}"
// | \frac arg arg | \binom arg arg
func (p *parser) atom() (*big.Rat, error) {
	c := p.peek()
	switch {
	case c == '(' || c == '[' || c == '{':
		closing := map[byte]byte{'(': ')', '[': ']', '{': '}'}[c]
		p.i++
		v, err := p.expr()
		if err != nil {
			return nil, err
		}
		if p.peek() != closing {
			return nil, p.errorf("want %q", closing)
		}
		p.i++
		return v, nil
	case c >= '0' && c <= '9' || c == '.':
		return p.number()
	case strings.HasPrefix(p.s[p.i:], `\frac`):
		p.i += len(`\frac`)
		a, b, err := p.args()
		if err != nil {
			return nil, err
		}
		if b.Sign() == 0 {
			return nil, p.errorf("division by zero")
		}
		return a.Quo(a, b), nil
	case strings.HasPrefix(p.s[p.i:], `\binom`):
		p.i += len(`\binom`)
		n, k, err := p.args()
		if err != nil {
			return nil, err
		}
		if !n.IsInt() || !k.IsInt() || n.Sign() < 0 || n.Num().Cmp(big.NewInt(maxBinomialTop)) > 0 {
			return nil, fmt.Errorf("\\binom{%s}{%s}: want whole numbers with n up to %d", n.RatString(), k.RatString(), maxBinomialTop)
		}
		if k.Sign() < 0 || k.Cmp(n) > 0 {
			return new(big.Rat), nil
		}
		return new(big.Rat).SetInt(new(big.Int).Binomial(n.Num().Int64(), k.Num().Int64())), nil
	case c == 0:
		return nil, p.errorf("unexpected end")
	}
	return nil, p.errorf("unexpected %q", p.rest())
}

// args reads two macro arguments: {expr} groups, or single digits as in
// \frac12.
func (p *parser) args() (*big.Rat, *big.Rat, error) {
	var out [2]*big.Rat
	for k := range out {
		switch c := p.peek(); {
		case c == '{':
			p.i++
			v, err := p.expr()
			if err != nil {
				return nil, nil, err
			}
			if p.peek() != '}' {
				return nil, nil, p.errorf("want '}'")
			}
			p.i++
			out[k] = v
		case c >= '0' && c <= '9':
			p.i++
			out[k] = new(big.Rat).SetInt64(int64(c - '0'))
		default:
			return nil, nil, p.errorf("want a {group} or a digit")
		}
	}
	return out[0], out[1], nil
}

// number := digits [ "." [digits] ] [ ("e"|"E") ["+"|"-"] digits ] | "." digits
func (p *parser) number() (*big.Rat, error) {
	start := p.i
	digits := func() int {
		n := 0
		for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
			p.i++
			n++
		}
		return n
	}
	n := digits()
	if p.peek() == '.' {
		p.i++
		n += digits()
	}
	if n == 0 {
		return nil, p.errorf("a number needs digits")
	}
	if c := p.peek(); c == 'e' || c == 'E' {
		save := p.i
		p.i++
		if c := p.peek(); c == '+' || c == '-' {
			p.i++
		}
		if digits() == 0 || p.i-save > 7 {
			p.i = save // not an exponent after all (or an absurd one)
		}
	}
	v, ok := new(big.Rat).SetString(p.s[start:p.i])
	if !ok {
		return nil, fmt.Errorf("bad number %q", p.s[start:p.i])
	}
	return v, nil
}

// Verdict is what Match found.
type Verdict struct {
	Match    bool   `json:"match"`
	Answer   string `json:"answer"`   // the answer as given
	Got      string `json:"got"`      // its canonical form (Answer.String)
	Expected string `json:"expected"` // the reference's canonical form
	Reason   string `json:"reason"`
}

// Match compares an answer with the reference after normalising both.
// When the reference has an exact value, the answer must have the same
// one (0.75 matches 3/4, 0.333 does not match 1/3); otherwise the
// normalised texts must be equal.
func Match(answer, reference string) Verdict {
	g, w := Normalize(answer), Normalize(reference)
	v := Verdict{Answer: answer, Got: g.String(), Expected: w.String()}
	switch {
	case w.Value != nil && g.Value != nil:
		v.Match = g.Value.Cmp(w.Value) == 0
		if v.Match {
			v.Reason = fmt.Sprintf("equal as exact numbers: %s = %s", g.Text, w.Text)
		} else {
			v.Reason = fmt.Sprintf("different numbers: %s ≠ %s", g.Value.RatString(), w.Value.RatString())
		}
	case w.Value != nil:
		v.Reason = fmt.Sprintf("the answer %q is not a number or a simple expression (%v); the reference is %s", g.Text, g.Err, w.Value.RatString())
	default:
		v.Match = strings.EqualFold(g.Text, w.Text)
		if v.Match {
			v.Reason = "equal as text (the reference is not a number)"
		} else {
			v.Reason = fmt.Sprintf("different text: %q ≠ %q (the reference is not a number)", g.Text, w.Text)
		}
	}
	return v
}

package retail

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
)

// The calculate tool evaluates its expression as tau2 does, with Python's
// eval restricted to the characters "0123456789+-*/(). ": Python's
// grammar (+ - * / // **, unary signs, parentheses; a parenthesised value
// followed by parentheses is a call, and "()" an empty tuple), exact
// integers and float64 floats with Python's arithmetic and error messages,
// then float() of the result. The messages of the common syntax errors are
// Python 3.11's.

// maxIntBits bounds an integer result; a larger one cannot become a float
// anyway (Python would compute it first, then fail the same way).
const maxIntBits = 1 << 22

const syntaxErr = "invalid syntax (<string>, line 1)"

type calcKind byte

const (
	kInt calcKind = iota
	kFloat
	kTuple   // the empty tuple, "()"
	kComplex // a negative number to a fractional power; only float() of it fails
)

func (k calcKind) String() string {
	return [...]string{"int", "float", "tuple", "complex"}[k]
}

type calcVal struct {
	kind calcKind
	i    *big.Int
	f    float64
}

func evalExpression(expr string) (float64, error) {
	for _, c := range expr {
		if !strings.ContainsRune("0123456789+-*/(). ", c) {
			return 0, errors.New("Invalid characters in expression")
		}
	}
	toks, depth, err := tokenize(expr)
	if err != nil {
		return 0, err
	}
	if len(toks) == 0 {
		return 0, errors.New("invalid syntax (<string>, line 0)")
	}
	p := &calcParser{toks: toks}
	n, err := p.expr()
	if err == nil && p.pos < len(p.toks) {
		p.expr() // Python tries the rest as a second expression
		err = errors.New(syntaxErr)
	}
	if err != nil {
		// Python blames an open parenthesis when its parser ran into the
		// end of the input looking for more.
		if p.hitEnd && depth > 0 {
			return 0, errors.New("'(' was never closed (<string>, line 1)")
		}
		return 0, err
	}
	v, err := n.eval()
	if err != nil {
		return 0, err
	}
	switch v.kind {
	case kFloat:
		return v.f, nil
	case kInt:
		return intToFloat(v.i)
	}
	return 0, fmt.Errorf("float() argument must be a string or a real number, not '%s'", v.kind)
}

type calcTok struct {
	op  string // "num" or the operator
	num calcVal
}

// tokenize splits the expression as Python's tokenizer does and reports
// its errors (an unmatched ")", a leading zero), which Python gives before
// any other syntax error; depth is how many "(" are left open at the end.
func tokenize(s string) (toks []calcTok, depth int, err error) {
	var out []calcTok
	digits := func(i int) int {
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		return i
	}
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ':
			i++
		case c >= '0' && c <= '9' || c == '.' && i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '9':
			j := digits(i)
			isFloat := j < len(s) && s[j] == '.'
			if isFloat {
				j = digits(j + 1)
			}
			lit := s[i:j]
			if isFloat {
				v, err := strconv.ParseFloat(lit, 64)
				if err != nil && !math.IsInf(v, 0) {
					return nil, 0, errors.New(syntaxErr)
				}
				out = append(out, calcTok{op: "num", num: calcVal{kind: kFloat, f: v}})
			} else {
				if len(lit) > 1 && lit[0] == '0' && strings.Trim(lit, "0") != "" {
					return nil, 0, errors.New("leading zeros in decimal integer literals are not permitted; use an 0o prefix for octal integers (<string>, line 1)")
				}
				n, _ := new(big.Int).SetString(lit, 10)
				out = append(out, calcTok{op: "num", num: calcVal{kind: kInt, i: n}})
			}
			i = j
		case strings.HasPrefix(s[i:], "**") || strings.HasPrefix(s[i:], "//"):
			out = append(out, calcTok{op: s[i : i+2]})
			i += 2
		default:
			switch c {
			case '(':
				depth++
			case ')':
				if depth == 0 {
					return nil, 0, errors.New("unmatched ')' (<string>, line 1)")
				}
				depth--
			}
			out = append(out, calcTok{op: string(c)})
			i++
		}
	}
	return out, depth, nil
}

type calcNode struct {
	op          string // "num", "tuple", "call", "neg", "pos", or a binary operator
	val         calcVal
	left, right *calcNode // call: left is the callee, right the argument (may be nil)
}

type calcParser struct {
	toks   []calcTok
	pos    int
	hitEnd bool // the parser looked past the last token
}

func (p *calcParser) peek() string {
	if p.pos < len(p.toks) {
		return p.toks[p.pos].op
	}
	p.hitEnd = true
	return ""
}

func (p *calcParser) binary(next func() (*calcNode, error), ops ...string) (*calcNode, error) {
	n, err := next()
	if err != nil {
		return nil, err
	}
	for {
		op := p.peek()
		found := false
		for _, o := range ops {
			found = found || op == o
		}
		if !found {
			return n, nil
		}
		p.pos++
		r, err := next()
		if err != nil {
			return nil, err
		}
		n = &calcNode{op: op, left: n, right: r}
	}
}

func (p *calcParser) expr() (*calcNode, error) { return p.binary(p.term, "+", "-") }
func (p *calcParser) term() (*calcNode, error) { return p.binary(p.factor, "*", "/", "//") }

func (p *calcParser) factor() (*calcNode, error) {
	switch p.peek() {
	case "+", "-":
		op := map[string]string{"+": "pos", "-": "neg"}[p.peek()]
		p.pos++
		n, err := p.factor()
		if err != nil {
			return nil, err
		}
		return &calcNode{op: op, left: n}, nil
	}
	base, err := p.primary()
	if err != nil {
		return nil, err
	}
	if p.peek() == "**" {
		p.pos++
		exp, err := p.factor()
		if err != nil {
			return nil, err
		}
		return &calcNode{op: "**", left: base, right: exp}, nil
	}
	return base, nil
}

func (p *calcParser) primary() (*calcNode, error) {
	n, err := p.atom()
	if err != nil {
		return nil, err
	}
	for p.peek() == "(" || p.peek() == "." {
		if p.peek() == "." { // an attribute: Python wants a name after it
			p.pos++
			p.peek()
			return nil, errors.New(syntaxErr)
		}
		arg, err := p.parenthesised()
		if err != nil {
			return nil, err
		}
		n = &calcNode{op: "call", left: n, right: arg}
	}
	return n, nil
}

func (p *calcParser) atom() (*calcNode, error) {
	switch p.peek() {
	case "num":
		p.pos++
		return &calcNode{op: "num", val: p.toks[p.pos-1].num}, nil
	case "(":
		n, err := p.parenthesised()
		if err != nil {
			return nil, err
		}
		if n == nil {
			return &calcNode{op: "tuple"}, nil
		}
		return n, nil
	}
	return nil, errors.New(syntaxErr)
}

// parenthesised reads "(" [expr] ")"; nil for "()".
func (p *calcParser) parenthesised() (*calcNode, error) {
	p.pos++ // "("
	if p.peek() == ")" {
		p.pos++
		return nil, nil
	}
	if op := p.peek(); op == "*" || op == "**" {
		// Python reads a starred operand (a call's *args, **kwargs)
		// before it gives up.
		p.pos++
		if _, err := p.factor(); err == nil && op == "*" && p.peek() == ")" {
			return nil, errors.New("cannot use starred expression here (<string>, line 1)")
		}
		return nil, errors.New(syntaxErr)
	}
	n, err := p.expr()
	if err != nil {
		return nil, err
	}
	if p.peek() != ")" {
		if p.peek() == "num" {
			// Python reads the second expression before it suggests the
			// comma: it may run into the end of the input.
			p.expr()
			return nil, errors.New("invalid syntax. Perhaps you forgot a comma? (<string>, line 1)")
		}
		return nil, errors.New(syntaxErr)
	}
	p.pos++
	return n, nil
}

func (n *calcNode) eval() (calcVal, error) {
	switch n.op {
	case "num":
		return n.val, nil
	case "tuple":
		return calcVal{kind: kTuple}, nil
	case "call":
		f, err := n.left.eval()
		if err != nil {
			return calcVal{}, err
		}
		if n.right != nil {
			if _, err := n.right.eval(); err != nil {
				return calcVal{}, err
			}
		}
		return calcVal{}, fmt.Errorf("'%s' object is not callable", f.kind)
	case "neg", "pos":
		v, err := n.left.eval()
		if err != nil {
			return calcVal{}, err
		}
		sign := map[string]string{"neg": "-", "pos": "+"}[n.op]
		switch v.kind {
		case kTuple:
			return calcVal{}, fmt.Errorf("bad operand type for unary %s: 'tuple'", sign)
		case kInt:
			if n.op == "neg" {
				return calcVal{kind: kInt, i: new(big.Int).Neg(v.i)}, nil
			}
		case kFloat:
			if n.op == "neg" {
				return calcVal{kind: kFloat, f: -v.f}, nil
			}
		}
		return v, nil
	}
	a, err := n.left.eval()
	if err != nil {
		return calcVal{}, err
	}
	b, err := n.right.eval()
	if err != nil {
		return calcVal{}, err
	}
	return binop(n.op, a, b)
}

func intToFloat(i *big.Int) (float64, error) {
	f, _ := new(big.Float).SetInt(i).Float64()
	if math.IsInf(f, 0) {
		return 0, errors.New("int too large to convert to float")
	}
	return f, nil
}

func binop(op string, a, b calcVal) (calcVal, error) {
	if a.kind == kTuple || b.kind == kTuple {
		return tupleOp(op, a, b)
	}
	if a.kind == kComplex || b.kind == kComplex {
		switch {
		case op == "**" && isZero(a):
			return calcVal{}, errors.New("0.0 to a negative or complex power")
		case op == "//":
			return calcVal{}, fmt.Errorf("unsupported operand type(s) for //: '%s' and '%s'", a.kind, b.kind)
		case op == "/" && isZero(b):
			return calcVal{}, errors.New("complex division by zero")
		}
		return calcVal{kind: kComplex}, nil
	}
	if a.kind == kInt && b.kind == kInt {
		return intOp(op, a.i, b.i)
	}
	x, y := a.f, b.f
	var err error
	if a.kind == kInt {
		if x, err = intToFloat(a.i); err != nil {
			return calcVal{}, err
		}
	}
	if b.kind == kInt {
		if y, err = intToFloat(b.i); err != nil {
			return calcVal{}, err
		}
	}
	return floatOp(op, x, y)
}

func isZero(v calcVal) bool {
	return v.kind == kInt && v.i.Sign() == 0 || v.kind == kFloat && v.f == 0
}

func tupleOp(op string, a, b calcVal) (calcVal, error) {
	switch {
	case op == "+" && a.kind == kTuple && b.kind == kTuple:
		return a, nil
	case op == "+" && a.kind == kTuple:
		return calcVal{}, fmt.Errorf(`can only concatenate tuple (not "%s") to tuple`, b.kind)
	case op == "*" && (a.kind == kInt || b.kind == kInt):
		return calcVal{kind: kTuple}, nil
	case op == "*":
		other := b
		if a.kind != kTuple {
			other = a
		}
		return calcVal{}, fmt.Errorf("can't multiply sequence by non-int of type '%s'", other.kind)
	case op == "**":
		return calcVal{}, fmt.Errorf("unsupported operand type(s) for ** or pow(): '%s' and '%s'", a.kind, b.kind)
	}
	return calcVal{}, fmt.Errorf("unsupported operand type(s) for %s: '%s' and '%s'", op, a.kind, b.kind)
}

func intOp(op string, a, b *big.Int) (calcVal, error) {
	r := new(big.Int)
	switch op {
	case "+":
		r.Add(a, b)
	case "-":
		r.Sub(a, b)
	case "*":
		if a.BitLen()+b.BitLen() > maxIntBits {
			return calcVal{}, errors.New("int too large to convert to float")
		}
		r.Mul(a, b)
	case "/":
		if b.Sign() == 0 {
			return calcVal{}, errors.New("division by zero")
		}
		f, _ := new(big.Rat).SetFrac(a, b).Float64()
		if a.Sign() == 0 && b.Sign() < 0 {
			f = math.Copysign(0, -1)
		}
		if math.IsInf(f, 0) {
			return calcVal{}, errors.New("integer division result too large for a float")
		}
		return calcVal{kind: kFloat, f: f}, nil
	case "//":
		if b.Sign() == 0 {
			return calcVal{}, errors.New("integer division or modulo by zero")
		}
		q, m := new(big.Int).QuoRem(a, b, new(big.Int))
		if m.Sign() != 0 && (m.Sign() < 0) != (b.Sign() < 0) {
			q.Sub(q, big.NewInt(1))
		}
		r = q
	case "**":
		if b.Sign() < 0 {
			x, err := intToFloat(a)
			if err != nil {
				return calcVal{}, err
			}
			y, err := intToFloat(b)
			if err != nil {
				return calcVal{}, err
			}
			return floatOp("**", x, y)
		}
		if a.BitLen() > 1 && (!b.IsInt64() || b.Int64()*int64(a.BitLen()) > maxIntBits) {
			return calcVal{}, errors.New("int too large to convert to float")
		}
		r.Exp(a, b, nil)
	}
	return calcVal{kind: kInt, i: r}, nil
}

// floatOp is CPython's float arithmetic, errors included.
func floatOp(op string, x, y float64) (calcVal, error) {
	f := func(v float64) (calcVal, error) { return calcVal{kind: kFloat, f: v}, nil }
	switch op {
	case "+":
		return f(x + y)
	case "-":
		return f(x - y)
	case "*":
		return f(x * y)
	case "/":
		if y == 0 {
			return calcVal{}, errors.New("float division by zero")
		}
		return f(x / y)
	case "//":
		if y == 0 {
			return calcVal{}, errors.New("float floor division by zero")
		}
		return f(floorDiv(x, y))
	}
	// "**"
	switch {
	case y == 0:
		return f(1)
	case x == 0 && y < 0:
		return calcVal{}, errors.New("0.0 cannot be raised to a negative power")
	case x < 0 && y != math.Floor(y) && !math.IsInf(y, 0):
		if math.IsInf(pow(-x, y), 0) {
			return calcVal{}, errors.New("complex exponentiation")
		}
		return calcVal{kind: kComplex}, nil
	}
	r := pow(x, y)
	if math.IsInf(r, 0) && !math.IsInf(x, 0) && !math.IsInf(y, 0) {
		return calcVal{}, errors.New("(34, 'Numerical result out of range')")
	}
	return f(r)
}

// floorDiv is CPython's float floor division (float_floor_div).
func floorDiv(vx, wx float64) float64 {
	mod := math.Mod(vx, wx)
	div := (vx - mod) / wx
	if mod != 0 {
		if (wx < 0) != (mod < 0) {
			div -= 1.0
		}
	}
	if div == 0 {
		return math.Copysign(0, vx/wx)
	}
	floordiv := math.Floor(div)
	if div-floordiv > 0.5 {
		floordiv += 1.0
	}
	return floordiv
}

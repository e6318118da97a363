package main

import (
	"fmt"
	"math/big"
	"strings"
)

// The algebra topics.

// linear formats c1*v1 + c2*v2 + ... with signs and unit coefficients
// written as people write them.
func linear(cs []int, vars []string) string {
	var b strings.Builder
	for i, c := range cs {
		switch {
		case i == 0 && c < 0:
			b.WriteString("-")
		case i > 0 && c < 0:
			b.WriteString(" - ")
		case i > 0:
			b.WriteString(" + ")
		}
		if a := abs(c); a != 1 {
			fmt.Fprint(&b, a)
		}
		b.WriteString(vars[i])
	}
	return b.String()
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// solve solves the square system a·x = b exactly (nil when singular).
func solve(a [][]int, b []int) []*big.Rat {
	n := len(a)
	m := make([][]*big.Rat, n)
	for i := range a {
		m[i] = make([]*big.Rat, n+1)
		for j := range a[i] {
			m[i][j] = rat(int64(a[i][j]), 1)
		}
		m[i][n] = rat(int64(b[i]), 1)
	}
	for c := 0; c < n; c++ {
		p := -1
		for i := c; i < n; i++ {
			if m[i][c].Sign() != 0 {
				p = i
				break
			}
		}
		if p < 0 {
			return nil
		}
		m[c], m[p] = m[p], m[c]
		for i := 0; i < n; i++ {
			if i == c || m[i][c].Sign() == 0 {
				continue
			}
			f := new(big.Rat).Quo(m[i][c], m[c][c])
			for j := c; j <= n; j++ {
				m[i][j].Sub(m[i][j], new(big.Rat).Mul(f, m[c][j]))
			}
		}
	}
	x := make([]*big.Rat, n)
	for i := range x {
		x[i] = new(big.Rat).Quo(m[i][n], m[i][i])
	}
	return x
}

// pySolve is a Python function that solves a system exactly by Gaussian
// elimination over Fractions.
const pySolve = `from fractions import Fraction as F

def solve(a, b):
    n = len(a)
    m = [[F(v) for v in row] + [F(r)] for row, r in zip(a, b)]
    for c in range(n):
        p = next(i for i in range(c, n) if m[i][c] != 0)
        m[c], m[p] = m[p], m[c]
        for i in range(n):
            if i != c and m[i][c] != 0:
                f = m[i][c] / m[c][c]
                m[i] = [u - f * w for u, w in zip(m[i], m[c])]
    return [m[i][n] / m[i][i] for i in range(n)]

`

func linearSystem(r *rng, n int) problem {
	vars := []string{"x", "y", "z"}[:n]
	for {
		a := make([][]int, n)
		b := make([]int, n)
		for i := range a {
			a[i] = make([]int, n)
			for j := range a[i] {
				a[i][j] = r.nonzero(-9, 9)
			}
			b[i] = r.between(-30, 30)
		}
		x := solve(a, b)
		if x == nil {
			continue
		}
		var eqs []string
		for i := range a {
			eqs = append(eqs, fmt.Sprintf("%s = %d", linear(a[i], vars), b[i]))
		}
		// Ask for one unknown, or their sum.
		k := r.between(0, n)
		ask, ans, py := "", new(big.Rat), ""
		if k < n {
			ask, ans, py = vars[k], x[k], fmt.Sprintf("print(x[%d])\n", k)
		} else {
			ask, py = strings.Join(vars, " + "), "print(sum(x))\n"
			for _, v := range x {
				ans.Add(ans, v)
			}
		}
		rows := make([]string, n)
		for i := range a {
			rows[i] = strings.ReplaceAll(fmt.Sprint(a[i]), " ", ", ")
		}
		return problem{
			text: fmt.Sprintf("Solve the system of equations %s. What is the value of %s? "+
				"Give it as an integer or a fraction in lowest terms.", joinAnd(eqs), ask),
			answer:   ans.RatString(),
			solution: pySolve + fmt.Sprintf("x = solve([%s], %s)\n", strings.Join(rows, ", "), strings.ReplaceAll(fmt.Sprint(b), " ", ", ")) + py,
		}
	}
}

func joinAnd(xs []string) string {
	if len(xs) <= 2 {
		return strings.Join(xs, " and ")
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " and " + xs[len(xs)-1]
}

func linearSystem2(r *rng) problem { return linearSystem(r, 2) }
func linearSystem3(r *rng) problem { return linearSystem(r, 3) }

func quadraticRoot(r *rng) problem {
	for {
		p1, q1, p2, q2 := r.between(-12, 12), r.between(1, 6), r.between(-12, 12), r.between(1, 6)
		r1, r2 := rat(int64(p1), int64(q1)), rat(int64(p2), int64(q2))
		if r1.Cmp(r2) == 0 {
			continue
		}
		// (q1 x - p1)(q2 x - p2), divided by the coefficients' gcd.
		a, b, c := q1*q2, -(q1*p2 + q2*p1), p1*p2
		g := gcd(gcd(abs(a), abs(b)), abs(c))
		a, b, c = a/g, b/g, c/g
		lo, hi := r1, r2
		if lo.Cmp(hi) > 0 {
			lo, hi = hi, lo
		}
		eq := poly2(a, b, c) + " = 0"
		py := fmt.Sprintf("from fractions import Fraction\nimport math\n"+
			"a, b, c = %d, %d, %d\nd = b * b - 4 * a * c\ns = math.isqrt(d)\nassert s * s == d\n"+
			"roots = sorted([Fraction(-b - s, 2 * a), Fraction(-b + s, 2 * a)])\n", a, b, c)
		switch r.between(0, 2) {
		case 0:
			return problem{text: fmt.Sprintf("What is the larger root of %s? Give it as an integer or a fraction in lowest terms.", eq),
				answer: hi.RatString(), solution: py + "print(roots[1])\n"}
		case 1:
			return problem{text: fmt.Sprintf("What is the smaller root of %s? Give it as an integer or a fraction in lowest terms.", eq),
				answer: lo.RatString(), solution: py + "print(roots[0])\n"}
		default:
			sq := new(big.Rat).Add(new(big.Rat).Mul(r1, r1), new(big.Rat).Mul(r2, r2))
			return problem{text: fmt.Sprintf("What is the sum of the squares of the two roots of %s? Give it as an integer or a fraction in lowest terms.", eq),
				answer: sq.RatString(), solution: py + "print(roots[0] ** 2 + roots[1] ** 2)\n"}
		}
	}
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// poly2 formats a x^2 + b x + c, dropping zero terms.
func poly2(a, b, c int) string {
	var cs []int
	var vs []string
	for i, v := range []int{a, b, c} {
		if v != 0 {
			cs = append(cs, v)
			vs = append(vs, []string{"x^2", "x", ""}[i])
		}
	}
	s := linear(cs, vs)
	if c == 1 || c == -1 { // linear drops a unit coefficient; a constant keeps it
		s += "1"
	}
	return s
}

func arithmeticSeries(r *rng) problem {
	a, d, n := r.between(-50, 50), r.nonzero(-9, 9), r.between(10, 400)
	sum := int64(n) * int64(2*a+(n-1)*d) / 2
	return problem{
		text: fmt.Sprintf("An arithmetic sequence has first term %d and common difference %d. "+
			"What is the sum of its first %d terms?", a, d, n),
		answer:   fmt.Sprint(sum),
		solution: fmt.Sprintf("a, d, n = %d, %d, %d\nprint(sum(a + k * d for k in range(n)))\n", a, d, n),
	}
}

func geometricSeries(r *rng) problem {
	for {
		p, q := r.nonzero(-5, 5), r.between(2, 7)
		if gcd(abs(p), q) != 1 {
			continue
		}
		a, n := r.nonzero(-20, 20), r.between(5, 14)
		ratio := rat(int64(p), int64(q))
		sum, term := new(big.Rat), rat(int64(a), 1)
		for range n {
			sum.Add(sum, term)
			term = new(big.Rat).Mul(term, ratio)
		}
		return problem{
			text: fmt.Sprintf("A geometric sequence has first term %d and common ratio %s. "+
				"What is the exact sum of its first %d terms? Give it as a fraction in lowest terms.", a, ratio.RatString(), n),
			answer: sum.RatString(),
			solution: fmt.Sprintf("from fractions import Fraction\na, r, n = %d, Fraction(%d, %d), %d\n"+
				"print(sum(a * r**k for k in range(n)))\n", a, p, q, n),
		}
	}
}

func polynomialSum(r *rng) problem {
	a, b, c, n := r.nonzero(-9, 9), r.between(-20, 20), r.between(-50, 50), r.between(20, 3000)
	sum := new(big.Int)
	for k := int64(1); k <= int64(n); k++ {
		sum.Add(sum, bi(int64(a)*k*k+int64(b)*k+int64(c)))
	}
	return problem{
		text:     fmt.Sprintf("Compute the sum of %s over k = 1, 2, ..., %d.", poly2k(a, b, c), n),
		answer:   sum.String(),
		solution: fmt.Sprintf("print(sum(%d * k * k + %d * k + %d for k in range(1, %d)))\n", a, b, c, n+1),
	}
}

func poly2k(a, b, c int) string {
	return strings.ReplaceAll(poly2(a, b, c), "x", "k")
}

func telescopingSum(r *rng) problem {
	s, d, n := r.between(0, 6), r.between(1, 4), r.between(10, 300)
	sum := new(big.Rat)
	for k := 1; k <= n; k++ {
		sum.Add(sum, rat(1, int64((k+s)*(k+s+d))))
	}
	term := fmt.Sprintf("1/((k + %d)(k + %d))", s, s+d)
	if s == 0 {
		term = fmt.Sprintf("1/(k(k + %d))", d)
	}
	return problem{
		text:     fmt.Sprintf("Compute the exact value of the sum of %s over k = 1, 2, ..., %d. Give it as a fraction in lowest terms.", term, n),
		answer:   sum.RatString(),
		solution: fmt.Sprintf("from fractions import Fraction\nprint(sum(Fraction(1, (k + %d) * (k + %d)) for k in range(1, %d)))\n", s, s+d, n+1),
	}
}

func mobiusComposition(r *rng) problem {
	for {
		a, b, c, d := r.nonzero(-9, 9), r.between(-9, 9), r.nonzero(-9, 9), r.between(-9, 9)
		if a*d-b*c == 0 {
			continue
		}
		x0 := rat(int64(r.between(-9, 9)), int64(r.between(1, 5)))
		f := func(x *big.Rat) *big.Rat {
			den := new(big.Rat).Add(new(big.Rat).Mul(rat(int64(c), 1), x), rat(int64(d), 1))
			if den.Sign() == 0 {
				return nil
			}
			num := new(big.Rat).Add(new(big.Rat).Mul(rat(int64(a), 1), x), rat(int64(b), 1))
			return num.Quo(num, den)
		}
		y := f(x0)
		if y == nil {
			continue
		}
		z := f(y)
		if z == nil {
			continue
		}
		return problem{
			text: fmt.Sprintf("Let f(x) = (%s)/(%s). Compute f(f(%s)) exactly, as an integer or a fraction in lowest terms.",
				linear1(a, b), linear1(c, d), x0.RatString()),
			answer: z.RatString(),
			solution: fmt.Sprintf("from fractions import Fraction\n"+
				"def f(x):\n    return (%d * x + %d) / (%d * x + %d)\nprint(f(f(Fraction(%s))))\n", a, b, c, d, pyFrac(x0)),
		}
	}
}

func linear1(a, b int) string {
	if b == 0 {
		return linear([]int{a}, []string{"x"})
	}
	s := linear([]int{a, b}, []string{"x", ""})
	if b == 1 || b == -1 {
		s += "1"
	}
	return s
}

func pyFrac(x *big.Rat) string { return fmt.Sprintf("%s, %s", x.Num(), x.Denom()) }

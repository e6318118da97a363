package main

import (
	"fmt"
	"math/big"
	"strings"
)

// The arithmetic topics.

func bigProduct(r *rng) problem {
	k := r.between(3, 4)
	xs := make([]string, k)
	prod := bi(1)
	for i := range xs {
		v := int64(r.between(1000, 999999))
		xs[i] = fmt.Sprint(v)
		prod.Mul(prod, bi(v))
	}
	return problem{
		text:     fmt.Sprintf("Compute the exact value of %s.", strings.Join(xs, " × ")),
		answer:   prod.String(),
		solution: fmt.Sprintf("import math\nprint(math.prod([%s]))\n", strings.Join(xs, ", ")),
	}
}

func modularPower(r *rng) problem {
	a, e, m := r.between(2, 999), r.between(100000, 999999999), r.between(1000, 99999)
	v := new(big.Int).Exp(bi(int64(a)), bi(int64(e)), bi(int64(m)))
	return problem{
		text:     fmt.Sprintf("What is the remainder when %d^%d is divided by %d?", a, e, m),
		answer:   v.String(),
		solution: fmt.Sprintf("print(pow(%d, %d, %d))\n", a, e, m),
	}
}

func fractionSum(r *rng) problem {
	k := r.between(3, 5)
	sum := new(big.Rat)
	var text, py strings.Builder
	for i := range k {
		p, q := int64(r.between(1, 40)), int64(r.between(2, 36))
		neg := i > 0 && r.between(0, 2) == 0
		switch {
		case i == 0:
			fmt.Fprintf(&text, "%d/%d", p, q)
			fmt.Fprintf(&py, "F(%d, %d)", p, q)
		case neg:
			fmt.Fprintf(&text, " - %d/%d", p, q)
			fmt.Fprintf(&py, " - F(%d, %d)", p, q)
		default:
			fmt.Fprintf(&text, " + %d/%d", p, q)
			fmt.Fprintf(&py, " + F(%d, %d)", p, q)
		}
		if neg {
			p = -p
		}
		sum.Add(sum, rat(p, q))
	}
	return problem{
		text:     fmt.Sprintf("Compute %s exactly. Give the result as a fraction in lowest terms (or an integer).", text.String()),
		answer:   sum.RatString(),
		solution: "from fractions import Fraction as F\nprint(" + py.String() + ")\n",
	}
}

func powerSum(r *rng) problem {
	p, n := r.between(1, 3), r.between(6, 16)
	sum := new(big.Rat)
	for k := 1; k <= n; k++ {
		d := new(big.Int).Exp(bi(int64(k)), bi(int64(p)), nil)
		sum.Add(sum, new(big.Rat).SetFrac(bi(1), d))
	}
	term := "1/k"
	if p > 1 {
		term = fmt.Sprintf("1/k^%d", p)
	}
	return problem{
		text: fmt.Sprintf("Compute the exact value of the sum of %s for k = 1, 2, ..., %d. "+
			"Give it as a fraction in lowest terms.", term, n),
		answer:   sum.RatString(),
		solution: fmt.Sprintf("from fractions import Fraction\nprint(sum(Fraction(1, k**%d) for k in range(1, %d)))\n", p, n+1),
	}
}

func digitSum(r *rng) problem {
	b, e := r.between(2, 99), r.between(50, 1500)
	v := new(big.Int).Exp(bi(int64(b)), bi(int64(e)), nil)
	s := 0
	for _, c := range v.String() {
		s += int(c - '0')
	}
	return problem{
		text:     fmt.Sprintf("What is the sum of the decimal digits of %d^%d?", b, e),
		answer:   fmt.Sprint(s),
		solution: fmt.Sprintf("print(sum(int(d) for d in str(%d**%d)))\n", b, e),
	}
}

func modularInverse(r *rng) problem {
	for {
		m := r.between(1000, 999999)
		a, b := r.between(2, m-1), r.between(1, m-1)
		if new(big.Int).GCD(nil, nil, bi(int64(a)), bi(int64(m))).Cmp(bi(1)) != 0 {
			continue
		}
		inv := new(big.Int).ModInverse(bi(int64(a)), bi(int64(m)))
		x := inv.Mul(inv, bi(int64(b)))
		x.Mod(x, bi(int64(m)))
		return problem{
			text:   fmt.Sprintf("Find the smallest positive integer x such that %d·x ≡ %d (mod %d).", a, b, m),
			answer: x.String(),
			solution: fmt.Sprintf("a, b, m = %d, %d, %d\n"+
				"x = next(x for x in range(1, m) if a * x %% m == b)\nprint(x)\n", a, b, m),
		}
	}
}

func lcmRange(r *rng) problem {
	lo, hi := r.between(1, 12), r.between(20, 60)
	l := bi(1)
	for k := lo; k <= hi; k++ {
		g := new(big.Int).GCD(nil, nil, l, bi(int64(k)))
		l.Mul(l, bi(int64(k)))
		l.Quo(l, g)
	}
	return problem{
		text:     fmt.Sprintf("What is the least common multiple of all the integers from %d to %d inclusive?", lo, hi),
		answer:   l.String(),
		solution: fmt.Sprintf("import math\nprint(math.lcm(*range(%d, %d)))\n", lo, hi+1),
	}
}

func factorialZeros(r *rng) problem {
	n := r.between(1000, 99999999)
	base := pick(r, []int{10, 2, 3, 5, 7})
	prime := base
	if base == 10 {
		prime = 5 // the zeros of n! in base 10 are its factors 5 (there are more 2s)
	}
	z := 0
	for p := prime; p <= n; p *= prime {
		z += n / p
	}
	text := fmt.Sprintf("How many trailing zeros does %d! have when written in base 10?", n)
	if base != 10 {
		text = fmt.Sprintf("What is the exponent of the prime %d in the prime factorization of %d!?", prime, n)
	}
	return problem{
		text:     text,
		answer:   fmt.Sprint(z),
		solution: fmt.Sprintf("n, p, z = %d, %d, 0\nq = p\nwhile q <= n:\n    z += n // q\n    q *= p\nprint(z)\n", n, prime),
	}
}

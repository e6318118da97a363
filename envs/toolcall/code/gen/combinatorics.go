package main

import (
	"fmt"
	"math/big"
	"strings"
)

// The combinatorics topics.

func binomial(r *rng) problem {
	n := r.between(20, 70)
	k := r.between(3, n-3)
	v := new(big.Int).Binomial(int64(n), int64(k))
	text := pick(r, []string{
		"In how many ways can a committee of %[2]d people be chosen from a group of %[1]d people?",
		"How many subsets with exactly %[2]d elements does a set of %[1]d elements have?",
		"How many %[2]d-element subsets does {1, 2, ..., %[1]d} have?",
	})
	return problem{
		text:     fmt.Sprintf(text, n, k),
		answer:   v.String(),
		solution: fmt.Sprintf("import math\nprint(math.comb(%d, %d))\n", n, k),
	}
}

func anagrams(r *rng) problem {
	letters := "ABCDEFGHIJKLMNOPRSTU"
	k := r.between(3, 6) // distinct letters
	var word []byte
	counts := map[byte]int{}
	for len(counts) < k {
		c := letters[r.between(0, len(letters)-1)]
		if counts[c] == 0 {
			counts[c] = r.between(1, 4)
		}
	}
	for i := 0; i < len(letters); i++ {
		for range counts[letters[i]] {
			word = append(word, letters[i])
		}
	}
	// Shuffle (Fisher–Yates).
	for i := len(word) - 1; i > 0; i-- {
		j := r.between(0, i)
		word[i], word[j] = word[j], word[i]
	}
	v := new(big.Int).MulRange(1, int64(len(word)))
	for _, n := range counts {
		v.Quo(v, new(big.Int).MulRange(1, int64(n)))
	}
	return problem{
		text:   fmt.Sprintf("How many distinct strings can be made by rearranging all the letters of %s?", word),
		answer: v.String(),
		solution: fmt.Sprintf("import math\nfrom collections import Counter\nw = %q\n"+
			"n = math.factorial(len(w))\nfor c in Counter(w).values():\n    n //= math.factorial(c)\nprint(n)\n", word),
	}
}

var names = []string{"Alice", "Bob", "Carol", "Dave", "Erin", "Frank", "Grace", "Heidi", "Ivan"}

func rowAdjacency(r *rng) problem {
	n := r.between(5, 8)
	fact := func(k int) *big.Int { return new(big.Int).MulRange(1, int64(k)) }
	py := fmt.Sprintf("from itertools import permutations\nn = %d\ncount = 0\nfor p in permutations(range(n)):\n", n)
	switch r.between(0, 2) {
	case 0:
		v := new(big.Int).Mul(bi(2), fact(n-1))
		return problem{
			text:     fmt.Sprintf("In how many ways can %d people stand in a row if %s and %s must stand next to each other?", n, names[0], names[1]),
			answer:   v.String(),
			solution: py + "    if abs(p.index(0) - p.index(1)) == 1:\n        count += 1\nprint(count)\n",
		}
	case 1:
		v := new(big.Int).Sub(fact(n), new(big.Int).Mul(bi(2), fact(n-1)))
		return problem{
			text:     fmt.Sprintf("In how many ways can %d people stand in a row if %s and %s must not stand next to each other?", n, names[0], names[1]),
			answer:   v.String(),
			solution: py + "    if abs(p.index(0) - p.index(1)) != 1:\n        count += 1\nprint(count)\n",
		}
	default:
		v := new(big.Int).Mul(bi(6), fact(n-2))
		return problem{
			text: fmt.Sprintf("In how many ways can %d people stand in a row if %s, %s and %s must stand together (in consecutive places, in any order)?",
				n, names[0], names[1], names[2]),
			answer:   v.String(),
			solution: py + "    pos = sorted(p.index(i) for i in range(3))\n    if pos[2] - pos[0] == 2:\n        count += 1\nprint(count)\n",
		}
	}
}

func forbiddenPositions(r *rng) problem {
	n := r.between(5, 8)
	m := r.between(2, n)
	// Inclusion–exclusion over the fixed points among 1..m.
	v := new(big.Int)
	for j := 0; j <= m; j++ {
		t := new(big.Int).Mul(new(big.Int).Binomial(int64(m), int64(j)), new(big.Int).MulRange(1, int64(n-j)))
		if j%2 == 1 {
			t.Neg(t)
		}
		v.Add(v, t)
	}
	return problem{
		text:   fmt.Sprintf("How many permutations (a_1, a_2, ..., a_%d) of the numbers 1, 2, ..., %d satisfy a_i ≠ i for every i = 1, 2, ..., %d?", n, n, m),
		answer: v.String(),
		solution: fmt.Sprintf("from itertools import permutations\nn, m = %d, %d\n"+
			"print(sum(all(p[i] != i + 1 for i in range(m)) for p in permutations(range(1, n + 1))))\n", n, m),
	}
}

func inclusionExclusion(r *rng) problem {
	N := r.between(1000, 300000)
	var ds []int
	for len(ds) < 3 {
		d := r.between(2, 30)
		dup := false
		for _, e := range ds {
			dup = dup || e == d
		}
		if !dup {
			ds = append(ds, d)
		}
	}
	lcm := func(a, b int) int { return a / gcd(a, b) * b }
	some := 0 // divisible by at least one
	for mask := 1; mask < 8; mask++ {
		l, bitsSet := 1, 0
		for i := range 3 {
			if mask&(1<<i) != 0 {
				l, bitsSet = lcm(l, ds[i]), bitsSet+1
			}
		}
		if bitsSet%2 == 1 {
			some += N / l
		} else {
			some -= N / l
		}
	}
	list := fmt.Sprintf("%d, %d or %d", ds[0], ds[1], ds[2])
	none := fmt.Sprintf("%d, %d and %d", ds[0], ds[1], ds[2])
	py := fmt.Sprintf("N, ds = %d, [%d, %d, %d]\n", N, ds[0], ds[1], ds[2])
	if r.between(0, 1) == 0 {
		return problem{
			text:     fmt.Sprintf("How many integers from 1 to %d inclusive are divisible by at least one of %s?", N, list),
			answer:   fmt.Sprint(some),
			solution: py + "print(sum(1 for k in range(1, N + 1) if any(k % d == 0 for d in ds)))\n",
		}
	}
	return problem{
		text:     fmt.Sprintf("How many integers from 1 to %d inclusive are divisible by none of %s?", N, none),
		answer:   fmt.Sprint(N - some),
		solution: py + "print(sum(1 for k in range(1, N + 1) if all(k % d for d in ds)))\n",
	}
}

func catalan(r *rng) problem {
	n := r.between(5, 25)
	v := new(big.Int).Binomial(int64(2*n), int64(n))
	v.Quo(v, bi(int64(n+1)))
	text := pick(r, []string{
		"How many strings of %[1]d pairs of parentheses are balanced (every prefix has at least as many '(' as ')', and the counts are equal at the end)?",
		"In how many ways can a convex polygon with %[2]d vertices be cut into triangles by non-crossing diagonals?",
		"How many lattice paths from (0, 0) to (%[1]d, %[1]d) using unit steps right (1, 0) and up (0, 1) never go above the line y = x?",
	})
	return problem{
		text:   fmt.Sprintf(text, n, n+2),
		answer: v.String(),
		solution: fmt.Sprintf("n = %d\n# count by dynamic programming over (steps right, steps up), staying on or below y = x\n"+
			"ways = [[0] * (n + 1) for _ in range(n + 1)]\nways[0][0] = 1\n"+
			"for i in range(n + 1):\n    for j in range(i + 1):\n        if i > 0 and j <= i - 1:\n            ways[i][j] += ways[i - 1][j]\n"+
			"        if j > 0:\n            ways[i][j] += ways[i][j - 1]\nprint(ways[n][n])\n", n),
	}
}

func derangements(r *rng) problem {
	n := r.between(5, 22)
	a, b := bi(1), bi(0) // D(0), D(1)
	for k := 2; k <= n; k++ {
		c := new(big.Int).Add(a, b)
		c.Mul(c, bi(int64(k-1)))
		a, b = b, c
	}
	text := pick(r, []string{
		"%[1]d letters are put into %[1]d addressed envelopes, one letter per envelope. In how many ways can this be done so that no letter is in its own envelope?",
		"%[1]d guests check their hats and get them back at random, one hat each. In how many ways can the hats be returned so that nobody gets their own hat?",
		"How many permutations of %[1]d elements have no fixed point?",
	})
	return problem{
		text:   fmt.Sprintf(text, n),
		answer: b.String(),
		solution: fmt.Sprintf("import math\nn = %d\n# inclusion-exclusion over the fixed points\n"+
			"print(sum((-1) ** j * math.comb(n, j) * math.factorial(n - j) for j in range(n + 1)))\n", n),
	}
}

func starsAndBars(r *rng) problem {
	k, n := r.between(3, 6), r.between(10, 40)
	lo := pick(r, []int{0, 1, 2})
	rest := n - lo*k
	if rest < 0 {
		lo, rest = 0, n
	}
	v := new(big.Int).Binomial(int64(rest+k-1), int64(k-1))
	vars := make([]string, k)
	for i := range vars {
		vars[i] = fmt.Sprintf("x_%d", i+1)
	}
	cond := map[int]string{0: "non-negative integers", 1: "positive integers", 2: "integers, each at least 2"}[lo]
	return problem{
		text:   fmt.Sprintf("How many solutions does %s = %d have in %s?", strings.Join(vars, " + "), n, cond),
		answer: v.String(),
		solution: fmt.Sprintf("from functools import lru_cache\n"+
			"@lru_cache(maxsize=None)\ndef ways(k, n):\n    # solutions of x_1 + ... + x_k = n with every x_i >= %d\n"+
			"    if k == 0:\n        return 1 if n == 0 else 0\n    return sum(ways(k - 1, n - x) for x in range(%d, n + 1))\n"+
			"print(ways(%d, %d))\n", lo, lo, k, n),
	}
}

func committee(r *rng) problem {
	m, w := r.between(4, 12), r.between(4, 12)
	k := r.between(3, 6)
	c := func(n, k int) *big.Int { return new(big.Int).Binomial(int64(n), int64(k)) }
	v := new(big.Int).Sub(c(m+w, k), c(m, k))
	v.Sub(v, c(w, k))
	return problem{
		text: fmt.Sprintf("A club has %d men and %d women. In how many ways can a committee of %d members be chosen "+
			"that includes at least one man and at least one woman?", m, w, k),
		answer: v.String(),
		solution: fmt.Sprintf("from itertools import combinations\nm, w, k = %d, %d, %d\n"+
			"people = ['M'] * m + ['W'] * w\n"+
			"print(sum(1 for c in combinations(range(m + w), k) if len({people[i] for i in c}) == 2))\n", m, w, k),
	}
}

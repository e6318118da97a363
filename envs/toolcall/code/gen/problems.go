package main

import "math/big"

// problem is one generated problem: its text, its exact answer ("p",
// "-p" or "p/q" in lowest terms, as big.Rat.RatString and Python's
// Fraction print them) and a Python program that computes and prints it.
type problem struct {
	text, answer, solution string
}

type topic struct {
	name string
	make func(r *rng) problem
}

type category struct {
	name   string
	topics []topic
}

var categories = []category{
	{"arithmetic", []topic{
		{"big-product", bigProduct},
		{"modular-power", modularPower},
		{"fraction-sum", fractionSum},
		{"power-sum", powerSum},
		{"digit-sum", digitSum},
		{"modular-inverse", modularInverse},
		{"lcm-range", lcmRange},
		{"factorial-zeros", factorialZeros},
	}},
	{"algebra", []topic{
		{"linear-system-2", linearSystem2},
		{"linear-system-3", linearSystem3},
		{"quadratic-root", quadraticRoot},
		{"arithmetic-series", arithmeticSeries},
		{"geometric-series", geometricSeries},
		{"polynomial-sum", polynomialSum},
		{"telescoping-sum", telescopingSum},
		{"mobius-composition", mobiusComposition},
	}},
	{"combinatorics", []topic{
		{"binomial", binomial},
		{"anagrams", anagrams},
		{"row-adjacency", rowAdjacency},
		{"forbidden-positions", forbiddenPositions},
		{"inclusion-exclusion", inclusionExclusion},
		{"catalan", catalan},
		{"derangements", derangements},
		{"stars-and-bars", starsAndBars},
		{"committee", committee},
	}},
}

func bi(x int64) *big.Int     { return big.NewInt(x) }
func rat(p, q int64) *big.Rat { return big.NewRat(p, q) }

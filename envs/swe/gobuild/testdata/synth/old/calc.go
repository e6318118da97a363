// Package calc is a synthetic module for the instance builder's tests.
package calc

// Abs returns the absolute value of x.
func Abs(x int) int {
	return x // bug: negatives come back negative
}

// Add returns a+b.
func Add(a, b int) int { return a + b }

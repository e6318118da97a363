// Package util helps calc.
package util

// Double returns 2x.
func Double(x int) int { return 2 * x }

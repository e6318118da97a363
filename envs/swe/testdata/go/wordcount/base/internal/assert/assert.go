// Package assert holds the tests' helpers.
package assert

import "testing"

// Equal fails t when got is not want.
func Equal[T comparable](t testing.TB, got, want T) {
	t.Helper()
	if got != want {
		t.Errorf("got %v, want %v", got, want)
	}
}

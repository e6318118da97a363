package assert

import "testing"

func TestEqual(t *testing.T) {
	Equal(t, 1+1, 2)
	Equal(t, "a"+"b", "ab")
}

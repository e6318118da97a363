package wordcount

import (
	"testing"

	"example.com/wordcount/internal/assert"
)

func TestCount(t *testing.T) {
	assert.Equal(t, Count("one two  three"), 3)
}

package split

import (
	"strings"
	"testing"

	"example.com/wordcount/internal/assert"
)

func TestWords(t *testing.T) {
	t.Run("spaces", func(t *testing.T) {
		assert.Equal(t, strings.Join(Words("  a bc   d "), ","), "a,bc,d")
	})
}

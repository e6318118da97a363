// Package wordcount counts the words of a text.
package wordcount

import "example.com/wordcount/internal/split"

// Count is the number of words in s.
func Count(s string) int { return len(split.Words(s)) }

package tokenizer

import "unicode"

// QwenPattern is the split pattern of Qwen2 and Qwen3's pre-tokenizer. Go's
// regexp has no look-ahead, so splitQwen implements it by hand, alternative by
// alternative, with the leftmost-first semantics of a backtracking engine.
const QwenPattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`

// Character classes as the pattern's engine sees them: \p{L}, \p{N}, and \s
// as Unicode White_Space (Go's unicode.IsSpace).
func isL(r rune) bool     { return unicode.IsLetter(r) }
func isN(r rune) bool     { return unicode.IsNumber(r) }
func isS(r rune) bool     { return unicode.IsSpace(r) }
func isCRLF(r rune) bool  { return r == '\r' || r == '\n' }
func isPunct(r rune) bool { return !isS(r) && !isL(r) && !isN(r) } // [^\s\p{L}\p{N}]

// foldLower folds the letters of the contractions case-insensitively
// (including U+017F LATIN SMALL LETTER LONG S, which folds to s).
func foldLower(r rune) rune {
	switch {
	case r == 'ſ':
		return 's'
	case r >= 'A' && r <= 'Z':
		return r + 'a' - 'A'
	}
	return r
}

// splitQwen cuts text into the pieces QwenPattern matches, in order; every
// rune belongs to exactly one piece ("Isolated" behaviour).
func splitQwen(text string, emit func(piece string)) {
	rs := []rune(text)
	// byte offsets of each rune, to emit substrings without re-encoding
	offs := make([]int, len(rs)+1)
	b := 0
	for i, r := range rs {
		offs[i] = b
		b += len(string(r))
	}
	offs[len(rs)] = b
	n := len(rs)
	for i := 0; i < n; {
		j := matchAt(rs, i)
		emit(text[offs[i]:offs[j]])
		i = j
	}
}

// matchAt returns the end of the pattern's match starting at i (always > i).
func matchAt(rs []rune, i int) int {
	n := len(rs)
	c := rs[i]
	// 1. (?i:'s|'t|'re|'ve|'m|'ll|'d)
	if c == '\'' && i+1 < n {
		a := foldLower(rs[i+1])
		switch a {
		case 's', 't', 'm', 'd':
			return i + 2
		}
		if i+2 < n {
			b := foldLower(rs[i+2])
			if (a == 'r' || a == 'v') && b == 'e' || a == 'l' && b == 'l' {
				return i + 3
			}
		}
	}
	// 2. [^\r\n\p{L}\p{N}]?\p{L}+
	if isL(c) {
		j := i + 1
		for j < n && isL(rs[j]) {
			j++
		}
		return j
	}
	if !isCRLF(c) && !isN(c) && i+1 < n && isL(rs[i+1]) {
		j := i + 2
		for j < n && isL(rs[j]) {
			j++
		}
		return j
	}
	// 3. \p{N}
	if isN(c) {
		return i + 1
	}
	// 4.  ?[^\s\p{L}\p{N}]+[\r\n]*
	j := -1
	if c == ' ' && i+1 < n && isPunct(rs[i+1]) {
		j = i + 1
	} else if isPunct(c) {
		j = i
	}
	if j >= 0 {
		for j < n && isPunct(rs[j]) {
			j++
		}
		for j < n && isCRLF(rs[j]) {
			j++
		}
		return j
	}
	// c is whitespace from here on: the run of whitespace is [i, e).
	e := i
	for e < n && isS(rs[e]) {
		e++
	}
	// 5. \s*[\r\n]+ : up to and including the run's last CR or LF.
	for p := e - 1; p >= i; p-- {
		if isCRLF(rs[p]) {
			return p + 1
		}
	}
	// 6. \s+(?!\S) : the run, less its last rune when a non-space follows.
	if e == n {
		return e
	}
	if e-1 > i {
		return e - 1
	}
	// 7. \s+
	return e
}

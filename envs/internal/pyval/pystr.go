package pyval

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Lower is Python's str.lower: Go's lower-casing but for the two cases
// where Python's full case mapping differs, 'İ' (to "i̇") and a final
// 'Σ' (to 'ς' at the end of a word).
func Lower(s string) string {
	special := false
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			special = strings.ContainsRune(s, 'İ') || strings.ContainsRune(s, 'Σ')
			break
		}
	}
	if !special {
		return strings.ToLower(s)
	}
	var b strings.Builder
	for i, r := range s {
		switch r {
		case 'İ':
			b.WriteString("i\u0307")
		case 'Σ':
			if finalSigma(s, i) {
				b.WriteRune('ς')
			} else {
				b.WriteRune('σ')
			}
		default:
			b.WriteRune(unicode.ToLower(r))
		}
	}
	return b.String()
}

// finalSigma is Unicode's Final_Sigma condition for the 'Σ' at s[i]: a
// cased letter before it and none after it, case-ignorable ones skipped.
func finalSigma(s string, i int) bool {
	before := false
	for j := i; j > 0; {
		r, n := utf8.DecodeLastRuneInString(s[:j])
		j -= n
		if caseIgnorable(r) {
			continue
		}
		before = cased(r)
		break
	}
	if !before {
		return false
	}
	for j := i + len("Σ"); j < len(s); {
		r, n := utf8.DecodeRuneInString(s[j:])
		j += n
		if caseIgnorable(r) {
			continue
		}
		return !cased(r)
	}
	return true
}

func cased(r rune) bool { return unicode.IsUpper(r) || unicode.IsLower(r) || unicode.IsTitle(r) }

func caseIgnorable(r rune) bool {
	return unicode.In(r, unicode.Mn, unicode.Me, unicode.Cf, unicode.Lm, unicode.Sk) || strings.ContainsRune("'.:·‘’․﹒＇．：", r)
}

// Quote is Python's repr of a str: single quotes unless the string holds a
// single quote and no double quote, backslash escapes for the quote, the
// backslash, \t \n \r and characters that are not printable.
func Quote(s string) string {
	q := byte('\'')
	if strings.IndexByte(s, '\'') >= 0 && strings.IndexByte(s, '"') < 0 {
		q = '"'
	}
	const hex = "0123456789abcdef"
	b := []byte{q}
	for _, r := range s {
		switch {
		case r == rune(q) || r == '\\':
			b = append(b, '\\', byte(r))
		case r == '\t':
			b = append(b, `\t`...)
		case r == '\n':
			b = append(b, `\n`...)
		case r == '\r':
			b = append(b, `\r`...)
		case r < 0x7f && r >= ' ' || r > 0x7f && unicode.IsPrint(r):
			b = utf8.AppendRune(b, r)
		case r < 0x100:
			b = append(b, '\\', 'x', hex[r>>4], hex[r&0xf])
		case r < 0x10000:
			b = append(b, '\\', 'u', hex[r>>12&0xf], hex[r>>8&0xf], hex[r>>4&0xf], hex[r&0xf])
		default:
			b = append(b, '\\', 'U')
			for k := 28; k >= 0; k -= 4 {
				b = append(b, hex[r>>uint(k)&0xf])
			}
		}
	}
	return string(append(b, q))
}

package tokenizer

// byteToRune is GPT-2's bytes_to_unicode: printable Latin-1 bytes map to
// themselves, the others to U+0100 onwards, so that every byte string is a
// printable string.
var byteToRune [256]rune

// runeToByte inverts byteToRune; -1 marks runes that are no byte.
var runeToByte = map[rune]byte{}

func init() {
	n := 0
	for b := range 256 {
		if b >= '!' && b <= '~' || b >= 0xA1 && b <= 0xAC || b >= 0xAE && b <= 0xFF {
			byteToRune[b] = rune(b)
		} else {
			byteToRune[b] = rune(256 + n)
			n++
		}
		runeToByte[byteToRune[b]] = byte(b)
	}
}

// byteLevel maps a piece's UTF-8 bytes to the byte-level alphabet.
func byteLevel(s string) []rune {
	out := make([]rune, len(s))
	for i := 0; i < len(s); i++ {
		out[i] = byteToRune[s[i]]
	}
	return out
}

// unByteLevel maps a token's byte-level string back to its bytes; runes that
// are not in the alphabet are kept as their UTF-8.
func unByteLevel(dst []byte, tok string) []byte {
	for _, r := range tok {
		if b, ok := runeToByte[r]; ok {
			dst = append(dst, b)
		} else {
			dst = append(dst, string(r)...)
		}
	}
	return dst
}

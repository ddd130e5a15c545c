// Package jsonstr writes JSON strings byte for byte as encoding/json does,
// eight bytes at a time where none needs escaping: the hub encodes every
// result, mirror record and answer through it (docs/mcp.md, "Per-call
// cost"). It imports no other
// package of the hub, so the executor and the store can both use it.
package jsonstr

import (
	"math/bits"
	"unicode/utf8"
)

// Append appends s as a JSON string exactly as encoding/json encodes a
// string: `"` and `\` escaped, \b \f \n \r \t by name, other control
// bytes as \u00XX, each invalid UTF-8 byte as \ufffd, U+2028 and U+2029 as
// \u2028 and \u2029, and, when escapeHTML is set (json.Marshal's default),
// <, > and & as \u003c, \u003e and \u0026; everything else as is.
func Append[T []byte | string](dst []byte, s T, escapeHTML bool) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start, words := 0, !escapeHTML // words: try eight bytes at a time
	for i := 0; i < len(s); {
		if words {
			// Eight bytes at a time while none of them needs a look of its
			// own (text between line ends is most of what is encoded), then
			// straight to the first that does. Tried at the start and after
			// each escape; not after a multi-byte rune (text of such runes
			// would fail most words).
			words = false
			for i+8 <= len(s) {
				m := special(uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
					uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56)
				if m != 0 {
					i += bits.TrailingZeros64(m) >> 3
					break
				}
				i += 8
			}
			if i == len(s) {
				break
			}
		}
		b := s[i]
		if b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' && (!escapeHTML || (b != '<' && b != '>' && b != '&')) {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xF])
			}
			i++
			start = i
			words = !escapeHTML
			continue
		}
		// At most utf8.UTFMax bytes are converted: the copy stays on the stack.
		c, size := utf8.DecodeRuneInString(string(s[i:min(len(s), i+utf8.UTFMax)]))
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// special marks, by the high bit of each of its bytes, the bytes of the
// little-endian word w that JSON does not write as they are with HTML
// escaping off: control bytes, `"`, `\` and bytes at or above 0x80 (the
// start or the rest of a multi-byte rune, or invalid UTF-8). The lowest
// mark is always exact: a byte below 0x20 is found by subtracting 0x20
// from every byte and looking for a high bit the byte did not have, a
// byte equal to a value by the same with 0x01 after an XOR with the value,
// and a subtraction's borrow, which can mark a later byte falsely, starts
// only at a byte truly marked. Zero when all eight are plain.
func special(w uint64) uint64 {
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	quote, backslash := w^(lo*'"'), w^(lo*'\\')
	return (w | (w-lo*0x20)&^w | (quote-lo)&^quote | (backslash-lo)&^backslash) & hi
}

package executor

import "unicode/utf8"

// JSONAppender is implemented by verb results that encode themselves, for
// results large or frequent enough that encoding/json's reflection shows in
// a profile. AppendJSON must append exactly the bytes encoding/json would
// produce for the value with HTML escaping off (the way Outcome.JSON
// encodes), without a trailing newline; implementations test that against
// AppendEncodingJSON.
type JSONAppender interface {
	AppendJSON(dst []byte) []byte
}

// AppendResultJSON appends r's fields as encoding/json writes them at the
// start of an object whose first fields are an embedded Result: the opening
// brace and `"succeeded":…`, then errorMessage and errorCode when set. The
// caller appends its own fields (each preceded by a comma) and the closing
// brace.
func AppendResultJSON(dst []byte, r *Result) []byte {
	if r.Succeeded {
		dst = append(dst, `{"succeeded":true`...)
	} else {
		dst = append(dst, `{"succeeded":false`...)
	}
	if r.ErrorMessage != "" {
		dst = append(dst, `,"errorMessage":`...)
		dst = AppendJSONString(dst, r.ErrorMessage)
	}
	if r.ErrorCode != "" {
		dst = append(dst, `,"errorCode":`...)
		dst = AppendJSONString(dst, string(r.ErrorCode))
	}
	return dst
}

// AppendJSONString appends s as a JSON string exactly as encoding/json
// encodes a string with HTML escaping off: `"` and `\` escaped, \b \f \n \r
// \t by name, other control bytes as \u00XX, each invalid UTF-8 byte as
// \ufffd, U+2028 and U+2029 as \u2028 and \u2029, everything else as is.
func AppendJSONString(dst []byte, s string) []byte { return appendString(dst, s, false) }

// appendString is encoding/json's string encoding, with or without its
// HTML escaping of <, > and &.
func appendString[T []byte | string](dst []byte, s T, escapeHTML bool) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start, words := 0, !escapeHTML // words: try eight bytes at a time
	for i := 0; i < len(s); {
		if words {
			// Eight bytes at a time while none of them needs a look of its
			// own: text between line ends is most of what is encoded. Tried
			// at the start and after each escape; not after a multi-byte
			// rune (text of such runes would fail every word).
			words = false
			for i+8 <= len(s) && plainWord(uint64(s[i])|uint64(s[i+1])<<8|uint64(s[i+2])<<16|uint64(s[i+3])<<24|
				uint64(s[i+4])<<32|uint64(s[i+5])<<40|uint64(s[i+6])<<48|uint64(s[i+7])<<56) {
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

// plainWord reports whether the eight bytes of w are all printable ASCII
// other than `"` and `\`: bytes JSON writes as they are, with HTML
// escaping off. (A byte below 0x20 is found by subtracting 0x20 from
// every byte and looking for a high bit the byte did not have; a byte
// equal to a value, by the same with 0x01 after an XOR with the value. A
// byte at or above 0x80 fails the word, so their false positives, which
// need such a byte, cost only the slower look.)
func plainWord(w uint64) bool {
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	quote, backslash := w^(lo*'"'), w^(lo*'\\')
	return (w|(w-lo*0x20)&^w|(quote-lo)&^quote|(backslash-lo)&^backslash)&hi == 0
}

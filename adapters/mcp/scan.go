package mcp

import (
	"bytes"
	"unicode/utf8"
)

// scanDirect reads a tools/call line of the one shape clients send
// (docs/mcp.md, "Per-call cost"): an object of "jsonrpc", "id", "method"
// and "params" once each, params an object of "name" and "arguments"
// once each, keys and the strings read here without escapes. It gives the
// same directRequest as decodeDirect for such a line, without reflection;
// false for any other line, which decodeDirect then reads (fuzzed against
// it: FuzzScanDirect). line is valid JSON: the caller checked it.
func scanDirect(line []byte) (directRequest, bool) {
	var r directRequest
	var p directParams
	var got [4]bool // jsonrpc, id, method, params
	end := scanObject(line, 0, func(key, val []byte) bool {
		switch string(key) {
		case "jsonrpc":
			return plainOnce(&r.Version, val, &got[0])
		case "id":
			r.ID = val
			return !seen(&got[1])
		case "method":
			return plainOnce(&r.Method, val, &got[2])
		case "params":
			var has [2]bool // name, arguments
			e := scanObject(val, 0, func(key, val []byte) bool {
				switch string(key) {
				case "name":
					return plainOnce(&p.Name, val, &has[0])
				case "arguments":
					p.Arguments = val
					return !seen(&has[1])
				}
				return false
			})
			return e == len(val) && has[0] && has[1] && !seen(&got[3])
		}
		return false
	})
	if end != len(line) || !got[0] || !got[1] || !got[2] || !got[3] {
		return directRequest{}, false
	}
	r.Params = &p
	return r, true
}

// seen reports whether a key was seen before, and marks it seen.
func seen(b *bool) bool {
	was := *b
	*b = true
	return was
}

// scanObject reads the object at b[i:] (after white space), giving each
// member's key (without quotes) and value (as written) to member, and
// returns where the object and the white space after it end; -1 when it
// is not an object, a key has an escape or member returns false.
func scanObject(b []byte, i int, member func(key, val []byte) bool) int {
	i = skipSpace(b, i)
	if i >= len(b) || b[i] != '{' {
		return -1
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return skipSpace(b, i+1)
	}
	for {
		k := skipValue(b, i)
		if k < 0 || b[i] != '"' {
			return -1
		}
		key, ok := plainString(b[i:k])
		if !ok {
			return -1
		}
		i = skipSpace(b, k)
		if i >= len(b) || b[i] != ':' {
			return -1
		}
		i = skipSpace(b, i+1)
		v := skipValue(b, i)
		if v < 0 || !member(key, b[i:v]) {
			return -1
		}
		i = skipSpace(b, v)
		switch {
		case i < len(b) && b[i] == ',':
			i = skipSpace(b, i+1)
		case i < len(b) && b[i] == '}':
			return skipSpace(b, i+1)
		default:
			return -1
		}
	}
}

// plainOnce sets dst to the text of v, a JSON string without escapes in
// valid UTF-8, and marks its key seen; false for any other value or a key
// seen before.
func plainOnce(dst *string, v []byte, key *bool) bool {
	s, ok := plainString(v)
	*dst = string(s)
	return ok && !seen(key)
}

// plainString is what is between the quotes of s, a JSON string, when it
// holds no escape and is valid UTF-8 (read as it is written).
func plainString(s []byte) ([]byte, bool) {
	if len(s) < 2 || s[0] != '"' || s[len(s)-1] != '"' {
		return nil, false
	}
	in := s[1 : len(s)-1]
	return in, bytes.IndexByte(in, '\\') < 0 && utf8.Valid(in)
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipValue returns where the JSON value at b[i] ends, -1 if none starts
// there. b is valid JSON, so only the value's end is looked for.
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i = skipString(b, i)
				if i < 0 {
					return -1
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return -1
	case ',', ':', '}', ']':
		return -1
	}
	// A number, true, false or null.
	j := i
	for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && b[j] != ' ' && b[j] != '\t' && b[j] != '\n' && b[j] != '\r' {
		j++
	}
	return j
}

// skipString returns where the string starting at b[i] ends (after its
// closing quote), -1 if it does not.
func skipString(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return -1
}

package executor

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"strconv"
	"sync"
)

// checkJSON validates that data is exactly one JSON value, nested no deeper
// than lim.MaxDepth, with no duplicate object keys. encoding/json alone would
// silently keep the last of two duplicate keys.
func checkJSON(data []byte, lim Limits) error {
	s, err := scanJSON(data, lim.MaxDepth)
	s.release()
	return err
}

// jsonMember is one member of an object: its key (unescaped) and the raw
// bytes of its value.
type jsonMember struct {
	key []byte
	val []byte
}

// is reports whether the member's key is k.
func (m jsonMember) is(k string) bool { return string(m.key) == k }

// scanJSON checks data as checkJSON does, in one pass and without
// allocating for the usual envelope, and returns the members of data when
// it is an object (s.top) in a pooled scanner, to release once they are no
// longer used. Keys holding escapes are
// unescaped as encoding/json would, so "a" and "\u0061" are the same key.
func scanJSON(data []byte, maxDepth int) (*jsonScanner, error) {
	s := scanners.Get().(*jsonScanner)
	*s = jsonScanner{data: data, maxDepth: maxDepth, keys: s.keys[:0], unesc: s.unesc[:0], top: s.top[:0]}
	s.skipSpace()
	if s.pos >= len(s.data) {
		return s, errors.New("not valid JSON: unexpected end of input")
	}
	if err := s.value(); err != nil {
		return s, err
	}
	s.skipSpace()
	if s.pos < len(s.data) {
		return s, fmt.Errorf("unexpected data after the JSON value at offset %d; send one envelope at a time", s.pos)
	}
	return s, nil
}

// ObjectMembers checks data as envelopes are checked (exactly one JSON
// value, nested no deeper than maxDepth, no key twice in one object), in
// one pass, and calls fn with each member of data, which must be an
// object, in order: its key, unescaped, valid only during the call, and
// the raw bytes of its value, a slice of data. It returns fn's first
// error. For a message of another program whose members are read one by
// one (a node's answer, in the hub) without a second pass over a large
// member, as encoding/json's check and then decoding would make.
func ObjectMembers(data []byte, maxDepth int, fn func(key, value []byte) error) error {
	s, err := scanJSON(data, maxDepth)
	defer s.release()
	if err != nil {
		return err
	}
	if bytes.TrimLeft(data, " \t\r\n")[0] != '{' {
		return errors.New("not a JSON object")
	}
	for _, m := range s.top {
		if err := fn(m.key, m.val); err != nil {
			return err
		}
	}
	return nil
}

// release returns s to the pool.
func (s *jsonScanner) release() {
	s.data = nil
	clear(s.top)
	s.top = s.top[:0]
	scanners.Put(s)
}

// jsonScanner is a strict recursive-descent JSON checker.
type jsonScanner struct {
	data     []byte
	pos      int
	maxDepth int
	depth    int
	// keys holds the keys of every object being scanned, innermost last,
	// as spans of data or, for keys with escapes, of unesc.
	keys  []keySpan
	unesc []byte
	top   []jsonMember
}

// keySpan locates a key: data[start:end], or unesc[start:end] when unesc.
type keySpan struct {
	start, end int
	unesc      bool
}

func (s *jsonScanner) key(k keySpan) []byte {
	if k.unesc {
		return s.unesc[k.start:k.end]
	}
	return s.data[k.start:k.end]
}

// scanners keeps scanners' key buffers between calls.
var scanners = sync.Pool{New: func() any {
	return &jsonScanner{keys: make([]keySpan, 0, 32), top: make([]jsonMember, 0, 8)}
}}

// maxLinearKeys is how many keys an object may have before duplicate keys
// are found with a map rather than by comparing each new key with the others.
const maxLinearKeys = 16

func (s *jsonScanner) skipSpace() {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

// syntax is the error for the byte at s.pos (or the end of input).
func (s *jsonScanner) syntax(context string) error {
	if s.pos >= len(s.data) {
		return errors.New("not valid JSON: unexpected end of input")
	}
	line, col := lineCol(s.data, int64(s.pos))
	return fmt.Errorf("not valid JSON at line %d, column %d: invalid character %s %s", line, col, quoteByte(s.data[s.pos]), context)
}

func quoteByte(c byte) string {
	if c == '\'' {
		return `'\''`
	}
	if c == '"' {
		return `'"'`
	}
	q := strconv.Quote(string(rune(c)))
	return "'" + q[1:len(q)-1] + "'"
}

func (s *jsonScanner) value() error {
	if s.pos >= len(s.data) {
		return s.syntax("")
	}
	switch c := s.data[s.pos]; {
	case c == '{':
		return s.object()
	case c == '[':
		return s.array()
	case c == '"':
		_, _, err := s.str()
		return err
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	case c == '-' || (c >= '0' && c <= '9'):
		return s.number()
	}
	return s.syntax("looking for beginning of value")
}

func (s *jsonScanner) literal(word string) error {
	for i := 0; i < len(word); i++ {
		if s.pos >= len(s.data) || s.data[s.pos] != word[i] {
			return s.syntax("in literal " + word + " (expecting " + quoteByte(word[i]) + ")")
		}
		s.pos++
	}
	return nil
}

func (s *jsonScanner) digits() int {
	n := 0
	for s.pos < len(s.data) && s.data[s.pos] >= '0' && s.data[s.pos] <= '9' {
		s.pos++
		n++
	}
	return n
}

func (s *jsonScanner) number() error {
	if s.data[s.pos] == '-' {
		s.pos++
	}
	switch {
	case s.pos < len(s.data) && s.data[s.pos] == '0':
		s.pos++
	case s.digits() == 0:
		return s.syntax("in numeric literal")
	}
	if s.pos < len(s.data) && s.data[s.pos] == '.' {
		s.pos++
		if s.digits() == 0 {
			return s.syntax("after decimal point in numeric literal")
		}
	}
	if s.pos < len(s.data) && (s.data[s.pos] == 'e' || s.data[s.pos] == 'E') {
		s.pos++
		if s.pos < len(s.data) && (s.data[s.pos] == '+' || s.data[s.pos] == '-') {
			s.pos++
		}
		if s.digits() == 0 {
			return s.syntax("in exponent of numeric literal")
		}
	}
	return nil
}

// str scans a string at s.pos and returns its raw content (between the
// quotes) and whether it holds escapes.
func (s *jsonScanner) str() (raw []byte, escaped bool, err error) {
	data, i := s.data, s.pos+1 // after the opening quote
	start := i
	for {
		// Eight bytes at a time to the first that ends the string or
		// needs a look of its own (most of a long text is neither).
		for i+8 <= len(data) {
			if m := stringStop(binary.LittleEndian.Uint64(data[i:])); m != 0 {
				i += bits.TrailingZeros64(m) >> 3
				break
			}
			i += 8
		}
		// Then a byte at a time, through escapes, to the end of the
		// string, or back to words after plainRun plain bytes.
		plain := 0
		for i < len(data) && plain < plainRun {
			c := data[i]
			if !stopsString[c] {
				i++
				plain++
				continue
			}
			if c != '\\' {
				break
			}
			escaped, plain = true, 0
			if i++; i >= len(data) {
				s.pos = i
				return nil, false, s.syntax("")
			}
			switch data[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i++
			case 'u':
				i++
				for range 4 {
					if i >= len(data) || !isHex(data[i]) {
						s.pos = i
						return nil, false, s.syntax("in \\u hexadecimal character escape")
					}
					i++
				}
			default:
				s.pos = i
				return nil, false, s.syntax("in string escape code")
			}
		}
		switch {
		case plain >= plainRun:
			continue
		case i >= len(data):
			s.pos = i
			return nil, false, s.syntax("")
		case data[i] == '"':
			s.pos = i + 1
			return data[start:i], escaped, nil
		default: // a control byte
			s.pos = i
			return nil, false, s.syntax("in string literal")
		}
	}
}

// stringStop marks, in the high bit of each, the bytes of w (eight bytes
// of a string, the first lowest) that end a string or start an escape or
// may not be in one: `"`, `\` and control bytes below 0x20; bytes at or
// above 0x80 are not marked (the scanner reads UTF-8 as encoding/json
// does, byte for byte). The lowest mark is exact: a byte below 0x20 is
// found by subtracting 0x20 from every byte and looking for a high bit
// the byte did not have, a byte equal to a value by the same with 0x01
// after an XOR with the value, and a subtraction's borrow, which can mark
// a later byte falsely, starts only at a byte truly marked (as
// internal/jsonstr's special). Zero when none of the eight is marked.
func stringStop(w uint64) uint64 {
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	quote, backslash := w^(lo*'"'), w^(lo*'\\')
	return ((w-lo*0x20)&^w | (quote-lo)&^quote | (backslash-lo)&^backslash) & hi
}

// plainRun is how many plain bytes in a row, read one at a time after a
// byte that needed a look, make the scanner go back to eight at a time:
// fewer, and a text dense with escapes (a line end every few bytes) pays
// for words that stop at once; more, and a text with a line end every 80
// bytes reads much of it a byte at a time.
const plainRun = 12

// stopsString marks the bytes stringStop marks, one at a time.
var stopsString = func() (t [256]bool) {
	for c := range 0x20 {
		t[c] = true
	}
	t['"'], t['\\'] = true, true
	return t
}()

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

func (s *jsonScanner) enter() error {
	if s.depth >= s.maxDepth {
		return fmt.Errorf("input nests more than %d levels deep", s.maxDepth)
	}
	s.depth++
	return nil
}

// separator reads what follows an element of an array or object: a comma
// (more follow), or closer, which ends it (done).
func (s *jsonScanner) separator(closer byte, context string) (done bool, err error) {
	s.skipSpace()
	switch {
	case s.pos >= len(s.data):
		return false, s.syntax("")
	case s.data[s.pos] == ',':
		s.pos++
		return false, nil
	case s.data[s.pos] == closer:
		s.pos++
		s.depth--
		return true, nil
	}
	return false, s.syntax(context)
}

func (s *jsonScanner) array() error {
	if err := s.enter(); err != nil {
		return err
	}
	s.pos++ // [
	s.skipSpace()
	if s.pos < len(s.data) && s.data[s.pos] == ']' {
		s.pos++
		s.depth--
		return nil
	}
	for {
		s.skipSpace()
		if err := s.value(); err != nil {
			return err
		}
		if done, err := s.separator(']', "after array element"); done || err != nil {
			return err
		}
	}
}

func (s *jsonScanner) object() error {
	if err := s.enter(); err != nil {
		return err
	}
	outer := s.depth == 1
	s.pos++ // {
	first := len(s.keys)
	defer func() { s.keys = s.keys[:first] }()
	var seen map[string]struct{}
	s.skipSpace()
	if s.pos < len(s.data) && s.data[s.pos] == '}' {
		s.pos++
		s.depth--
		return nil
	}
	for {
		s.skipSpace()
		if s.pos >= len(s.data) || s.data[s.pos] != '"' {
			return s.syntax("looking for beginning of object key string")
		}
		keyAt := s.pos
		key, escaped, err := s.str()
		if err != nil {
			return err
		}
		span := keySpan{start: keyAt + 1, end: s.pos - 1}
		if escaped {
			var k string
			if err := json.Unmarshal(s.data[keyAt:s.pos], &k); err != nil {
				return jsonSyntaxError(s.data, err)
			}
			span = keySpan{start: len(s.unesc), end: len(s.unesc) + len(k), unesc: true}
			s.unesc = append(s.unesc, k...)
			key = s.key(span)
		}
		if seen == nil && len(s.keys)-first >= maxLinearKeys {
			seen = make(map[string]struct{}, 2*maxLinearKeys)
			for _, k := range s.keys[first:] {
				seen[string(s.key(k))] = struct{}{}
			}
		}
		dup := false
		if seen != nil {
			_, dup = seen[string(key)]
			seen[string(key)] = struct{}{}
		} else {
			for _, k := range s.keys[first:] {
				if bytes.Equal(s.key(k), key) {
					dup = true
					break
				}
			}
		}
		if dup {
			return fmt.Errorf("key %q appears twice in one object (offset %d)", key, s.pos)
		}
		s.keys = append(s.keys, span)
		s.skipSpace()
		if s.pos >= len(s.data) || s.data[s.pos] != ':' {
			return s.syntax("after object key")
		}
		s.pos++
		s.skipSpace()
		valAt := s.pos
		if err := s.value(); err != nil {
			return err
		}
		if outer {
			s.top = append(s.top, jsonMember{key: key, val: s.data[valAt:s.pos]})
		}
		if done, err := s.separator('}', "after object key:value pair"); done || err != nil {
			return err
		}
	}
}

// jsonSyntaxError turns a decoder error into "line L, column C: …".
func jsonSyntaxError(data []byte, err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		line, col := lineCol(data, se.Offset)
		return fmt.Errorf("not valid JSON at line %d, column %d: %s", line, col, se.Error())
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("not valid JSON: unexpected end of input")
	}
	return fmt.Errorf("not valid JSON: %v", err)
}

func lineCol(data []byte, off int64) (int, int) {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	line, col := 1, 1
	for _, b := range data[:off] {
		if b == '\n' {
			line++
			col = 1
		} else {
			col++
		}
	}
	return line, col
}

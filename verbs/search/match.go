package search

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"regexp"
	"regexp/syntax"
	"strings"
	"unicode/utf8"
)

// Matcher finds the lines of a buffer that match a pattern. A match lies
// within one line: lines end at "\n", and a pattern never matches across
// one.
//
// It never runs the regular expression on a whole file when it can help
// it: the longest literal every match must hold (the pattern itself for a
// literal; for a regular expression, found in its syntax tree, such as
// ") Close(" in `func \(\w+ \*\w+\) Close\(`) is searched with
// bytes.Index, and the expression runs only on the lines that hold it.
// Case-insensitive literals are searched in an ASCII-lowered copy of the
// buffer, leaving out the letters k and s, which Unicode folds with
// non-ASCII letters (K, ſ).
type Matcher struct {
	lit     []byte         // every matching line holds it; nil: no literal
	fold    bool           // lit is lowered ASCII, searched in a lowered copy
	litOnly bool           // an occurrence of lit is a match: no expression to run
	line    *regexp.Regexp // the expression, run on one line
	any     *regexp.Regexp // the expression on a buffer (multi-line mode), when there is no literal
}

// minLiteral is the shortest literal worth searching for instead of
// running the expression on the whole buffer.
const minLiteral = 2

// Compile compiles pattern: a literal when fixed, else a regular
// expression in RE2 syntax; ignoreCase matches letters in either case.
func Compile(pattern string, fixed, ignoreCase bool) (*Matcher, error) {
	switch {
	case pattern == "":
		return nil, fmt.Errorf("the pattern is empty; give a regular expression, or a literal with fixedStrings: true")
	case strings.ContainsRune(pattern, '\n'):
		return nil, fmt.Errorf("the pattern holds a line break; matches lie within one line, search for one line at a time")
	case !utf8.ValidString(pattern):
		return nil, fmt.Errorf("the pattern is not valid UTF-8")
	}
	if fixed && !ignoreCase {
		return &Matcher{lit: []byte(pattern), litOnly: true}, nil
	}
	expr := pattern
	if fixed {
		expr = regexp.QuoteMeta(pattern)
	}
	flags := syntax.Perl
	if ignoreCase {
		flags |= syntax.FoldCase
	}
	tree, err := syntax.Parse(expr, flags)
	if err != nil {
		return nil, fmt.Errorf("the pattern is not a valid regular expression (RE2 syntax; set fixedStrings: true to search for it literally): %w", err)
	}
	prefix := ""
	if ignoreCase {
		prefix = "(?i)"
	}
	m := &Matcher{}
	if m.line, err = regexp.Compile(prefix + expr); err != nil {
		return nil, fmt.Errorf("the pattern is not a valid regular expression: %w", err)
	}
	lit, fold := required(tree.Simplify())
	if fold {
		lit = foldSafe(lit)
	}
	if len(lit) >= minLiteral {
		m.lit, m.fold = []byte(lit), fold
		return m, nil
	}
	if m.any, err = regexp.Compile("(?m)" + prefix + expr); err != nil {
		return nil, fmt.Errorf("the pattern is not a valid regular expression: %w", err)
	}
	return m, nil
}

// required returns the longest literal every match of re holds, and
// whether it is to be matched regardless of case.
func required(re *syntax.Regexp) (lit string, fold bool) {
	switch re.Op {
	case syntax.OpLiteral:
		return string(re.Rune), re.Flags&syntax.FoldCase != 0
	case syntax.OpCapture:
		return required(re.Sub[0])
	case syntax.OpPlus:
		return required(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return required(re.Sub[0])
		}
	case syntax.OpConcat:
		for _, sub := range re.Sub {
			if l, f := required(sub); len(l) > len(lit) {
				lit, fold = l, f
			}
		}
	}
	return lit, fold
}

// foldSafe returns the longest run of the folded literal lit that an
// ASCII-lowered copy of the text finds wherever the literal matches
// regardless of case: lowered, without non-ASCII runes and without k and
// s (K and ſ fold to them).
func foldSafe(lit string) string {
	best, cur := "", []byte{}
	for i := 0; i < len(lit); i++ {
		c := lit[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c >= utf8.RuneSelf || c == 'k' || c == 's' {
			cur = cur[:0]
			continue
		}
		cur = append(cur, c)
		if len(cur) > len(best) {
			best = string(cur)
		}
	}
	return best
}

// lower writes src lowered (ASCII letters only) into dst, which it grows
// as needed, and returns it. Eight bytes at a time: in each word, the
// bytes from 'A' to 'Z' (their high bit clear) get 0x20 added.
func lower(dst, src []byte) []byte {
	if cap(dst) < len(src) {
		dst = make([]byte, len(src), len(src)+len(src)/4)
	}
	dst = dst[:len(src)]
	const (
		ones = 0x0101010101010101
		high = 0x8080808080808080
	)
	i := 0
	for ; i+8 <= len(src); i += 8 {
		x := binary.LittleEndian.Uint64(src[i:])
		low7 := x &^ high
		geA := low7 + (0x80-'A')*ones   // high bit set where the byte is >= 'A'
		gtZ := low7 + (0x80-'Z'-1)*ones // high bit set where the byte is > 'Z'
		upper := geA &^ gtZ &^ x & high // and where it is ASCII
		binary.LittleEndian.PutUint64(dst[i:], x|upper>>2)
	}
	for ; i < len(src); i++ {
		c := src[i]
		if c-'A' < 26 {
			c += 'a' - 'A'
		}
		dst[i] = c
	}
	return dst
}

// next finds the first matching line of buf that starts at or after
// from, which is the start of a line: its start, its end (the index of its
// "\n", or len(buf)) and the byte offset of the match in it. low is buf
// lowered when the matcher folds case.
func (m *Matcher) next(buf, low []byte, from int) (start, end, col int, ok bool) {
	for from < len(buf) {
		var at int
		switch {
		case m.lit != nil:
			hay := buf
			if m.fold {
				hay = low
			}
			i := bytes.Index(hay[from:], m.lit)
			if i < 0 {
				return 0, 0, 0, false
			}
			at = from + i
		default:
			loc := m.any.FindIndex(buf[from:])
			if loc == nil {
				return 0, 0, 0, false
			}
			at = from + loc[0]
			if at == len(buf) && buf[at-1] == '\n' {
				return 0, 0, 0, false // no line starts after the last line's end
			}
		}
		start = bytes.LastIndexByte(buf[from:at], '\n') + 1 + from
		end = len(buf)
		if j := bytes.IndexByte(buf[at:], '\n'); j >= 0 {
			end = at + j
		}
		if m.litOnly {
			return start, end, at - start, true
		}
		if loc := m.line.FindIndex(buf[start:end]); loc != nil {
			return start, end, loc[0], true
		}
		from = end + 1
	}
	return 0, 0, 0, false
}

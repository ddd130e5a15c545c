package executor

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/a6afc2ce/hermes-hub/internal/jsonstr"
)

// yamlFast converts the YAML that envelopes and chat bodies actually use to
// JSON in one pass, without building yaml.v3's node tree: block mappings and
// block sequences of scalars, one-line flow collections, plain and
// one-line quoted scalars, comments. It reports false for anything it does
// not fully understand (anchors, aliases, tags, multi-line scalars, block
// scalars, documents, tabs, odd indentation, duplicate keys, anything over
// the limits, any input yaml.v3 would refuse), and YAMLToJSON then takes the
// yaml.v3 path, which also writes every error. When it reports true, its
// output is byte for byte what the yaml.v3 path writes (FuzzYAMLFast).
func yamlFast(data []byte, lim Limits) ([]byte, bool) {
	if !yamlFastText(data) {
		return nil, false
	}
	p := yamlParsers.Get().(*yamlFastParser)
	defer p.release()
	*p = yamlFastParser{data: data, lim: lim, nodes: 1, // 1: the document node
		keys: p.keys[:0], arena: p.arena[:0], scratch: p.scratch[:0]}
	p.out = make([]byte, 0, len(data)+len(data)/4+8)
	if !p.nextContent() {
		return nil, false // empty: the yaml.v3 path says so
	}
	if p.indent != 0 && p.data[p.pos] == '-' {
		return nil, false
	}
	var ok bool
	switch c := p.data[p.pos]; {
	case c == '[' || c == '{':
		ok = p.count(0) && p.flow(0) && p.endLine() && !p.nextContent()
	case p.seqStart():
		ok = p.blockSeq(p.indent, 0) && p.eof
	case p.isKeyLine():
		ok = p.blockMap(p.indent, 0) && p.eof
	default:
		ok = p.count(0) && p.scalar(false) && p.endLine() && !p.nextContent()
	}
	if !ok {
		return nil, false
	}
	return p.out, true
}

// yamlFastText reports whether data holds only what the fast path reads:
// printable text with no tabs, carriage returns or YAML line breaks other
// than \n, no byte order mark, and no line opening with a document marker.
func yamlFastText(data []byte) bool {
	lineStart := true
	for i := 0; i < len(data); {
		c := data[i]
		if lineStart && (c == '-' || c == '.' || c == '%') && (c == '%' || (i+2 < len(data) && data[i+1] == c && data[i+2] == c)) {
			return false
		}
		lineStart = c == '\n'
		if c < utf8.RuneSelf {
			if (c < 0x20 && c != '\n') || c == 0x7f {
				return false
			}
			i++
			continue
		}
		r, n := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && n <= 1 {
			return false
		}
		// yaml.v3 refuses C1 controls and non-characters, takes U+0085,
		// U+2028 and U+2029 as line breaks and U+FEFF as a byte order mark.
		if r < 0xa0 || r == 0xfeff || r == 0x2028 || r == 0x2029 || r == 0xfffe || r == 0xffff {
			return false
		}
		i += n
	}
	return true
}

// yamlFastParser is the state of one yamlFast call. pos is the read
// position; after nextContent it is the first non-space byte of a content
// line, whose indentation is indent, or eof is set.
type yamlFastParser struct {
	data   []byte
	pos    int
	indent int
	eof    bool
	lim    Limits
	nodes  int
	out    []byte
	// keys holds the keys of the mappings being read, as spans of arena
	// (quoted keys, unescaped) or of data (plain keys), innermost last.
	keys    []yamlKey
	arena   []byte
	scratch []byte
}

// yamlParsers keeps parsers' key and scratch buffers between calls.
var yamlParsers = sync.Pool{New: func() any { return new(yamlFastParser) }}

// release returns p to the pool, without its input and output, and without
// buffers a large document grew.
func (p *yamlFastParser) release() {
	p.data, p.out = nil, nil
	if cap(p.arena) > 4<<10 || cap(p.scratch) > 4<<10 || cap(p.keys) > 256 {
		return
	}
	yamlParsers.Put(p)
}

type yamlKey struct {
	start, end int
	inArena    bool
}

func (p *yamlFastParser) key(k yamlKey) []byte {
	if k.inArena {
		return p.arena[k.start:k.end]
	}
	return p.data[k.start:k.end]
}

// count counts one more value at depth, as the yaml.v3 path does, and
// reports whether it stays within the limits.
func (p *yamlFastParser) count(depth int) bool {
	p.nodes++
	return p.nodes <= p.lim.MaxNodes && depth <= p.lim.MaxDepth
}

// nextContent moves to the next line holding something other than spaces
// and a comment, from the start of a line or the end of the previous one,
// and reports whether there is one.
func (p *yamlFastParser) nextContent() bool {
	for p.pos < len(p.data) {
		if p.data[p.pos] == '\n' {
			p.pos++
		}
		start := p.pos
		for p.pos < len(p.data) && p.data[p.pos] == ' ' {
			p.pos++
		}
		if p.pos >= len(p.data) {
			break
		}
		switch p.data[p.pos] {
		case '\n':
			continue
		case '#':
			p.skipLine()
			continue
		}
		p.indent = p.pos - start
		return true
	}
	p.eof = true
	return false
}

func (p *yamlFastParser) skipLine() {
	for p.pos < len(p.data) && p.data[p.pos] != '\n' {
		p.pos++
	}
}

// endLine reads the rest of a line after a value: spaces, then a comment
// (after at least one space) or the end of the line.
func (p *yamlFastParser) endLine() bool {
	for p.pos < len(p.data) && p.data[p.pos] == ' ' {
		p.pos++
	}
	if p.pos >= len(p.data) || p.data[p.pos] == '\n' {
		return true
	}
	if p.data[p.pos] == '#' && p.data[p.pos-1] == ' ' {
		p.skipLine()
		return true
	}
	return false
}

func (p *yamlFastParser) at(i int) byte {
	if i < len(p.data) {
		return p.data[i]
	}
	return 0
}

// blankAt reports whether data[i] is a space, the end of a line or the end
// of the input.
func (p *yamlFastParser) blankAt(i int) bool {
	c := p.at(i)
	return c == ' ' || c == '\n' || c == 0
}

// seqStart reports whether the content at pos opens a block sequence entry.
func (p *yamlFastParser) seqStart() bool {
	return p.data[p.pos] == '-' && p.blankAt(p.pos+1)
}

// plainStart reports whether a plain scalar may start at pos. It is
// narrower than YAML: a leading '-' only before a letter, digit, '.' or '_'.
func (p *yamlFastParser) plainStart() bool {
	switch c := p.data[p.pos]; c {
	case '-':
		n := p.at(p.pos + 1)
		return n == '.' || n == '_' || (n >= '0' && n <= '9') || (n|0x20 >= 'a' && n|0x20 <= 'z')
	case '?', ':', ',', '[', ']', '{', '}', '#', '&', '*', '!', '|', '>', '\'', '"', '%', '@', '`', ' ', '\n':
		return false
	}
	return true
}

// isKeyLine reports, without moving, whether the line at pos is "key:".
func (p *yamlFastParser) isKeyLine() bool {
	save := p.pos
	defer func() { p.pos = save }()
	switch p.data[p.pos] {
	case '"', '\'':
		p.scratch = p.scratch[:0]
		var ok bool
		if p.scratch, ok = p.quoted(p.scratch); !ok {
			return false
		}
		return p.at(p.pos) == ':' && p.blankAt(p.pos+1)
	}
	if !p.plainStart() {
		return false
	}
	_, _, stop := p.plainBlock()
	return stop == ':'
}

// plainBlock scans a plain scalar in block context on the current line and
// returns its span (trailing spaces left out) and what ended it: ':' (a
// ": " or ":" at the end of the line, left unread), '#' (a comment) or '\n'
// (the end of the line or input).
func (p *yamlFastParser) plainBlock() (start, end int, stop byte) {
	start, end = p.pos, p.pos
	for p.pos < len(p.data) {
		switch c := p.data[p.pos]; c {
		case '\n':
			return start, end, '\n'
		case ' ':
			p.pos++
			if p.at(p.pos) == '#' {
				return start, end, '#'
			}
			continue
		case ':':
			if p.blankAt(p.pos + 1) {
				return start, end, ':'
			}
		}
		p.pos++
		end = p.pos
	}
	return start, end, '\n'
}

// blockMap reads a block mapping whose keys stand at column indent.
func (p *yamlFastParser) blockMap(indent, depth int) bool {
	if !p.count(depth) {
		return false
	}
	p.out = append(p.out, '{')
	first := len(p.keys)
	defer func() { p.keys = p.keys[:first] }()
	for {
		if p.seqStart() {
			return false
		}
		keyStart := p.pos
		var k yamlKey
		switch p.data[p.pos] {
		case '"', '\'':
			start := len(p.arena)
			var ok bool
			if p.arena, ok = p.quoted(p.arena); !ok {
				return false
			}
			k = yamlKey{start: start, end: len(p.arena), inArena: true}
		default:
			if !p.plainStart() {
				return false
			}
			s, e, stop := p.plainBlock()
			if stop != ':' || (e-s == 2 && p.data[s] == '<' && p.data[s+1] == '<') {
				return false // not a key, or a merge key
			}
			k = yamlKey{start: s, end: e}
		}
		if p.at(p.pos) != ':' || !p.blankAt(p.pos+1) || p.pos-keyStart > 1000 {
			return false // a key longer than yaml.v3's 1024 characters
		}
		p.pos++
		if !p.addKey(k, first) {
			return false
		}
		// The value: on this line, or below it, or nothing (null).
		for p.at(p.pos) == ' ' {
			p.pos++
		}
		if c := p.at(p.pos); c == '\n' || c == 0 || c == '#' {
			p.skipLine()
			more := p.nextContent()
			switch {
			case more && p.indent > indent:
				if p.seqStart() {
					if !p.blockSeq(p.indent, depth+1) {
						return false
					}
				} else if !p.isKeyLine() || !p.blockMap(p.indent, depth+1) {
					return false
				}
			case more && p.indent == indent && p.seqStart():
				if !p.blockSeq(indent, depth+1) {
					return false
				}
			default:
				if !p.count(depth + 1) {
					return false
				}
				p.out = append(p.out, "null"...)
			}
		} else {
			if !p.count(depth+1) || !p.inline(depth+1) || !p.endLine() {
				return false
			}
			p.nextContent()
		}
		switch {
		case p.eof || p.indent < indent:
			p.out = append(p.out, '}')
			return true
		case p.indent > indent:
			return false
		}
		p.out = append(p.out, ',')
	}
}

// addKey writes key k, refusing a key that the mapping (whose keys start
// at first) already holds.
func (p *yamlFastParser) addKey(k yamlKey, first int) bool {
	kb := p.key(k)
	for _, o := range p.keys[first:] {
		if string(p.key(o)) == string(kb) {
			return false
		}
	}
	p.keys = append(p.keys, k)
	p.out = appendJSONString(p.out, kb)
	p.out = append(p.out, ':')
	return true
}

// blockSeq reads a block sequence whose dashes stand at column indent; each
// entry is a scalar or flow collection on the dash's line.
func (p *yamlFastParser) blockSeq(indent, depth int) bool {
	if !p.count(depth) {
		return false
	}
	p.out = append(p.out, '[')
	for {
		p.pos++ // the dash
		for p.at(p.pos) == ' ' {
			p.pos++
		}
		if c := p.at(p.pos); c == '\n' || c == 0 || c == '#' {
			return false // an entry on the following lines
		}
		if !p.count(depth+1) || !p.inline(depth+1) || !p.endLine() {
			return false
		}
		p.nextContent()
		switch {
		case p.eof || p.indent < indent || (p.indent == indent && !p.seqStart()):
			p.out = append(p.out, ']')
			return true
		case p.indent > indent:
			return false
		}
		p.out = append(p.out, ',')
	}
}

// inline reads a value that starts on the current line in block context:
// a flow collection or a scalar. Its node is counted by the caller.
func (p *yamlFastParser) inline(depth int) bool {
	switch p.data[p.pos] {
	case '[', '{':
		return p.flow(depth)
	}
	return p.scalar(false)
}

// scalar reads a quoted or plain scalar, in flow context when flow is set,
// and writes its JSON.
func (p *yamlFastParser) scalar(flow bool) bool {
	switch p.data[p.pos] {
	case '"', '\'':
		p.scratch = p.scratch[:0]
		var ok bool
		if p.scratch, ok = p.quoted(p.scratch); !ok {
			return false
		}
		p.out = appendJSONString(p.out, p.scratch)
		return true
	}
	if !p.plainStart() {
		return false
	}
	var s, e int
	if flow {
		var stop byte
		s, e, stop = p.plainFlow()
		if stop != ',' && stop != ']' && stop != '}' {
			return false
		}
	} else {
		var stop byte
		s, e, stop = p.plainBlock()
		if stop == ':' {
			return false
		}
	}
	var ok bool
	p.out, ok = appendYAMLPlain(p.out, p.data[s:e])
	return ok
}

// plainFlow scans a plain scalar in flow context and returns its span and
// what ended it: one of ",[]{}?", ':' (a ": ") or '\n' (anything this path
// does not take: the end of the line, a comment, another ':').
func (p *yamlFastParser) plainFlow() (start, end int, stop byte) {
	start, end = p.pos, p.pos
	for p.pos < len(p.data) {
		switch c := p.data[p.pos]; c {
		case '\n':
			return start, end, '\n'
		case ',', '[', ']', '{', '}', '?':
			return start, end, c
		case ' ':
			p.pos++
			if p.at(p.pos) == '#' {
				return start, end, '\n'
			}
			continue
		case ':':
			if p.at(p.pos+1) == ' ' {
				return start, end, ':'
			}
			return start, end, '\n'
		}
		p.pos++
		end = p.pos
	}
	return start, end, '\n'
}

func (p *yamlFastParser) skipSpaces() {
	for p.at(p.pos) == ' ' {
		p.pos++
	}
}

// flow reads a flow collection that closes on the line it opens on. Its
// node is counted by the caller.
func (p *yamlFastParser) flow(depth int) bool {
	open := p.data[p.pos]
	closer := byte(']')
	if open == '{' {
		closer = '}'
	}
	p.pos++
	p.out = append(p.out, open)
	p.skipSpaces()
	if p.at(p.pos) == closer {
		p.pos++
		p.out = append(p.out, closer)
		return true
	}
	first := len(p.keys)
	defer func() { p.keys = p.keys[:first] }()
	for {
		if open == '{' {
			var k yamlKey
			keyStart := p.pos
			switch p.at(p.pos) {
			case '"', '\'':
				start := len(p.arena)
				var ok bool
				if p.arena, ok = p.quoted(p.arena); !ok {
					return false
				}
				k = yamlKey{start: start, end: len(p.arena), inArena: true}
				p.skipSpaces()
				if p.at(p.pos) != ':' {
					return false
				}
			case 0:
				return false
			default:
				if !p.plainStart() {
					return false
				}
				s, e, stop := p.plainFlow()
				if stop != ':' || (e-s == 2 && p.data[s] == '<' && p.data[s+1] == '<') {
					return false
				}
				k = yamlKey{start: s, end: e}
			}
			if p.pos-keyStart > 1000 {
				return false
			}
			p.pos++ // the ':'
			if !p.addKey(k, first) {
				return false
			}
			p.skipSpaces()
		}
		if !p.count(depth + 1) {
			return false
		}
		switch p.at(p.pos) {
		case '[', '{':
			if !p.flow(depth + 1) {
				return false
			}
		case 0, '\n':
			return false
		default:
			if !p.scalar(true) {
				return false
			}
		}
		p.skipSpaces()
		switch p.at(p.pos) {
		case closer:
			p.pos++
			p.out = append(p.out, closer)
			return true
		case ',':
			p.pos++
			p.skipSpaces()
			if c := p.at(p.pos); c == ']' || c == '}' {
				return false // a trailing comma
			}
			p.out = append(p.out, ',')
		default:
			return false
		}
	}
}

// quoted reads a single- or double-quoted scalar that closes on its line,
// appends its value to dst and leaves pos after the closing quote.
func (p *yamlFastParser) quoted(dst []byte) ([]byte, bool) {
	q := p.data[p.pos]
	p.pos++
	for {
		if p.pos >= len(p.data) {
			return dst, false
		}
		c := p.data[p.pos]
		switch {
		case c == '\n':
			return dst, false
		case c == q && q == '\'':
			if p.at(p.pos+1) == '\'' {
				dst = append(dst, '\'')
				p.pos += 2
				continue
			}
			p.pos++
			return dst, true
		case c == q:
			p.pos++
			return dst, true
		case c == '\\' && q == '"':
			var ok bool
			if dst, ok = p.escape(dst); !ok {
				return dst, false
			}
			continue
		}
		dst = append(dst, c)
		p.pos++
	}
}

// yamlEscapes are the one-character escapes of a double-quoted scalar and
// what each stands for; yamlHexEscapes the escapes followed by that many
// hex digits.
var (
	yamlEscapes = map[byte]string{
		'0': "\x00", 'a': "\a", 'b': "\b", 't': "\t", 'n': "\n", 'v': "\v", 'f': "\f", 'r': "\r",
		'e': "\x1b", ' ': " ", '"': `"`, '\'': "'", '\\': `\`,
		'N': "\u0085", '_': "\u00a0", 'L': "\u2028", 'P': "\u2029",
	}
	yamlHexEscapes = map[byte]int{'x': 2, 'u': 4, 'U': 8}
)

// escape reads one escape of a double-quoted scalar, as yaml.v3 does.
func (p *yamlFastParser) escape(dst []byte) ([]byte, bool) {
	c := p.at(p.pos + 1)
	n, hex := yamlHexEscapes[c]
	if !hex {
		rep, ok := yamlEscapes[c]
		if !ok {
			return dst, false
		}
		dst = append(dst, rep...)
	}
	p.pos += 2
	if n == 0 {
		return dst, true
	}
	v := 0
	for i := 0; i < n; i++ {
		c := p.at(p.pos + i)
		switch {
		case c >= '0' && c <= '9':
			v = v<<4 | int(c-'0')
		case c|0x20 >= 'a' && c|0x20 <= 'f':
			v = v<<4 | int(c|0x20-'a'+10)
		default:
			return dst, false
		}
	}
	if (v >= 0xd800 && v <= 0xdfff) || v > 0x10ffff {
		return dst, false
	}
	p.pos += n
	return utf8.AppendRune(dst, rune(v)), true
}

// appendYAMLPlain appends the JSON of plain scalar s as the yaml.v3 path
// writes it: yaml.v3's resolution of null, booleans, integers (decimal,
// 0x, 0o, 0b, legacy octal, underscores) and floats, anything else a
// string. It reports false for what that path refuses (.inf and .nan,
// merge keys).
func appendYAMLPlain(dst, s []byte) ([]byte, bool) {
	switch c := s[0]; {
	case c == '+' || c == '-' || (c >= '0' && c <= '9'):
		return appendYAMLNumber(dst, s)
	case c == '.':
		switch string(s) {
		case ".nan", ".NaN", ".NAN", ".inf", ".Inf", ".INF":
			return dst, false // not JSON numbers: the yaml.v3 path refuses them
		}
		if f, err := strconv.ParseFloat(string(s), 64); err == nil {
			return appendJSONFloat(dst, f)
		}
	case strings.IndexByte("yYnNtTfFoO~", c) >= 0:
		switch string(s) {
		case "true", "True", "TRUE":
			return append(dst, "true"...), true
		case "false", "False", "FALSE":
			return append(dst, "false"...), true
		case "~", "null", "Null", "NULL":
			return append(dst, "null"...), true
		}
	case c == '<' && string(s) == "<<":
		return dst, false // a merge key
	}
	return appendJSONString(dst, s), true
}

// appendYAMLNumber types a plain scalar starting with a sign or a digit as
// yaml.v3's resolver does.
func appendYAMLNumber(dst, s []byte) ([]byte, bool) {
	// The common case first: a short decimal integer without leading zero.
	if v, ok := smallDecimal(s); ok {
		return strconv.AppendInt(dst, v, 10), true
	}
	switch string(s) {
	case "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF":
		return dst, false // not JSON numbers: the yaml.v3 path refuses them
	}
	// A byte that no integer or float syntax holds makes it a string (or
	// a timestamp, which the yaml.v3 path also writes as its text).
	for _, c := range s {
		if !(c >= '0' && c <= '9') && !(c|0x20 >= 'a' && c|0x20 <= 'f') && strings.IndexByte("xXoO_+-.", c) < 0 {
			return appendJSONString(dst, s), true
		}
	}
	in := string(s)
	plain := strings.ReplaceAll(in, "_", "")
	if i, err := strconv.ParseInt(plain, 0, 64); err == nil {
		return strconv.AppendInt(dst, i, 10), true
	}
	if u, err := strconv.ParseUint(plain, 0, 64); err == nil {
		return strconv.AppendUint(dst, u, 10), true
	}
	if yamlStyleFloat(plain) {
		if f, err := strconv.ParseFloat(plain, 64); err == nil {
			return appendJSONFloat(dst, f)
		}
	}
	for _, p := range [...]struct {
		prefix string
		base   int
	}{{"0b", 2}, {"0o", 8}} {
		switch {
		case strings.HasPrefix(plain, p.prefix):
			if i, err := strconv.ParseInt(plain[2:], p.base, 64); err == nil {
				return strconv.AppendInt(dst, i, 10), true
			}
			if u, err := strconv.ParseUint(plain[2:], p.base, 64); err == nil {
				return strconv.AppendUint(dst, u, 10), true
			}
		case strings.HasPrefix(plain, "-"+p.prefix):
			if i, err := strconv.ParseInt("-"+plain[3:], p.base, 64); err == nil {
				return strconv.AppendInt(dst, i, 10), true
			}
		}
	}
	return appendJSONString(dst, s), true
}

// smallDecimal parses s when it is -?(0|[1-9][0-9]{0,17}), which every
// resolver reads as that decimal integer.
func smallDecimal(s []byte) (int64, bool) {
	neg := len(s) > 0 && s[0] == '-'
	d := s
	if neg {
		d = s[1:]
	}
	if len(d) == 0 || len(d) > 18 || (d[0] == '0' && len(d) > 1) {
		return 0, false
	}
	var v int64
	for _, c := range d {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	if neg {
		v = -v
	}
	return v, true
}

// yamlStyleFloat matches ^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$,
// yaml.v3's test for a float.
func yamlStyleFloat(s string) bool {
	i := 0
	if i < len(s) && (s[i] == '-' || s[i] == '+') {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
			n++
		}
		return n
	}
	if i < len(s) && s[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	} else {
		if digits() == 0 {
			return false
		}
		if i < len(s) && s[i] == '.' {
			i++
			digits()
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '-' || s[i] == '+') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(s)
}

// appendJSONFloat writes f as encoding/json does; infinities and NaN are
// refused, as the yaml.v3 path refuses them.
func appendJSONFloat(dst []byte, f float64) ([]byte, bool) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return dst, false
	}
	b, err := json.Marshal(f)
	if err != nil {
		return dst, false
	}
	return append(dst, b...), true
}

// appendJSONString writes s as a JSON string exactly as json.Marshal does:
// <, > and & escaped for HTML, U+2028 and U+2029 escaped, invalid UTF-8
// replaced by U+FFFD.
func appendJSONString(dst, s []byte) []byte { return jsonstr.Append(dst, s, true) }

package chat

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Limits of one message on each platform, in UTF-16 code units.
const (
	TelegramLimit = 4096
	DiscordLimit  = 2000
)

// DefaultMaxChunks is the overflow threshold used when ChunkOptions.MaxChunks
// is 0: text that needs more chunks is sent as its head plus an attachment.
const DefaultMaxChunks = 4

// MinChunkUnits is the smallest limit the chunker works with. A positive
// MaxUnits below it is raised to it, so that the fence lines and markers the
// chunker adds always leave room for text.
const MinChunkUnits = 32

// DefaultAttachmentName names the overflow attachment when
// ChunkOptions.AttachmentName is empty.
const DefaultAttachmentName = "output.txt"

// AttachmentMIME is the media type of the overflow attachment.
const AttachmentMIME = "text/plain; charset=utf-8"

// ChunkOptions says how SplitText cuts a text for one platform.
type ChunkOptions struct {
	// MaxUnits is the most UTF-16 code units in one chunk, everything the
	// chunker adds included. 0 or less means unlimited (the web panel); a
	// positive value below MinChunkUnits is raised to MinChunkUnits.
	MaxUnits int
	// MaxChunks is the overflow threshold: text that needs more chunks than
	// this is sent as its first chunk plus the whole text as an attachment.
	// 0 means DefaultMaxChunks; a negative value never overflows.
	MaxChunks int
	// Markers adds "(i/N)" to every chunk when there is more than one: after
	// a space at the end of the last line, or on a line of its own (see
	// SplitText). The room the marker needs is kept free inside MaxUnits.
	Markers bool
	// AttachmentName names the overflow attachment; empty means
	// DefaultAttachmentName.
	AttachmentName string
}

// ChunkOptionsFor returns the options for replies on platform p: its
// message limit (Spec.MaxUnits: Telegram 4096 units, Discord 2000), web
// unlimited; markers on chat platforms and an overflow threshold of
// DefaultMaxChunks. An unknown platform gets the strictest limit of the
// chat platforms.
func ChunkOptionsFor(p Platform) ChunkOptions {
	o := ChunkOptions{
		MaxUnits:       strictestLimit(),
		MaxChunks:      DefaultMaxChunks,
		Markers:        true,
		AttachmentName: DefaultAttachmentName,
	}
	if s, ok := SpecOf(p); ok {
		o.MaxUnits = s.MaxUnits
	} else if p == Web {
		o.MaxUnits = 0
		o.Markers = false
	}
	return o
}

// Attachment is a file sent along with a chunk: its bytes are either in
// Data (the overflow of a long text), or stored in the state under their
// SHA-256 (a file reply, docs/uploads.md), and then read with Open.
type Attachment struct {
	Name string
	MIME string
	Data []byte
	// SHA256 and Size describe a stored file; SHA256 is empty for bytes in
	// Data.
	SHA256 string
	Size   int64
	// Open reads a stored file, checking its SHA-256 as it goes; the outbox
	// sets it for the send. Nil for bytes in Data.
	Open func() (io.ReadCloser, error)
}

// Stored reports whether the attachment's bytes are a stored file rather
// than Data.
func (a *Attachment) Stored() bool { return a.SHA256 != "" }

// Len is the attachment's size in bytes.
func (a *Attachment) Len() int64 {
	if a.Stored() {
		return a.Size
	}
	return int64(len(a.Data))
}

// Reader opens the attachment's bytes: Data, or the stored file.
func (a *Attachment) Reader() (io.ReadCloser, error) {
	if !a.Stored() {
		return io.NopCloser(bytes.NewReader(a.Data)), nil
	}
	if a.Open == nil {
		return nil, fmt.Errorf("file %s (%s): no store to read it from", a.Name, a.SHA256)
	}
	return a.Open()
}

// Span is a byte range [Start, End) of the text given to SplitText.
type Span struct {
	Start, End int
}

// Split is the result of SplitText.
//
// Each chunk is laid out as
//
//	[marker "\n"] [reopened fence line "\n"] text[Span] [closing fence] [marker or note]
//
// where everything but text[Span] is added by the chunker. The spans are
// contiguous and, unless the overflow policy applied, cover the whole text,
// so the text is the concatenation of text[Spans[i].Start:Spans[i].End]:
// a newline or space at which the text was split stays, unchanged, at the end
// of the chunk before the split.
type Split struct {
	// Chunks are the messages to send, in order: at least one for non-empty
	// text, none for empty text.
	Chunks []string
	// Spans[i] is the part of the text that Chunks[i] carries.
	Spans []Span
	// Attachment holds the whole text when the overflow policy applied; then
	// Chunks has exactly one element, the head of the text with a note.
	Attachment *Attachment
}

// UTF16Len returns the length of s in UTF-16 code units, the measure of the
// platforms' limits: a rune from U+10000 on counts 2, any other rune 1, and
// each byte that is not valid UTF-8 counts 1.
func UTF16Len(s string) int {
	n := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			n++
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r >= 0x10000 {
			n += 2
		} else {
			n++
		}
		i += size
	}
	return n
}

// SplitText cuts text into chunks that each fit opts.MaxUnits UTF-16 units.
// Text within the limit is returned as one chunk, unchanged.
//
// A chunk ends after the last newline that fits, else after the last space
// or tab that fits, else at the last grapheme boundary that fits (a base
// character is never parted from its combining marks, variation selectors,
// skin-tone modifiers or zero-width-joiner sequence, nor a regional-indicator
// pair, nor "\r\n"); the newline or space stays at the end of the earlier
// chunk. Only a single cluster longer than the room is cut, at a rune
// boundary, so a split never falls inside a UTF-8 sequence or a surrogate
// pair. A chunk does not end right after a line that opens a fence, and the
// last chunk is not left blank when moving the split can avoid it.
//
// A chunk that ends inside a ``` code fence gets a closing fence line and the
// next chunk starts with the opening line again, language included (a bare
// run of backticks if that line would take more than a quarter of the room);
// every chunk but the last is balanced. A fence the author left open at the
// end stays open. Fences are read line by line as each chunk will be shown:
// 3 or more backticks at the start of a line and an info string without
// backticks open one, a line of at least as many backticks and trailing
// spaces closes it. Only a fence whose backtick run is too long to close and
// reopen within the limit is left unbalanced.
//
// With opts.Markers, a marker "(i/N)" is appended after any closing fence;
// the last chunk of a text that ends inside an open fence has its marker on
// its first line instead, so that it is not shown as code.
//
// Text that needs more than opts.MaxChunks chunks becomes its first chunk,
// with a note naming the attachment, plus the whole text as an Attachment.
// Invalid UTF-8 is kept byte for byte, each invalid byte counting one unit.
func SplitText(text string, opts ChunkOptions) Split {
	if text == "" {
		return Split{}
	}
	limit := opts.MaxUnits
	if limit > 0 && limit < MinChunkUnits {
		limit = MinChunkUnits
	}
	units := 0
	if limit > 0 {
		units = UTF16Len(text)
	}
	if limit <= 0 || units <= limit {
		return Split{Chunks: []string{text}, Spans: []Span{{0, len(text)}}}
	}
	maxChunks := opts.MaxChunks
	if maxChunks == 0 {
		maxChunks = DefaultMaxChunks
	}
	stop := 0
	if maxChunks > 0 {
		stop = maxChunks + 1
	}

	s := splitter{text: text, limit: limit, last: lastContent(text)}
	digits := 0
	if opts.Markers {
		// The number of chunks is unknown until the text is split: reserve
		// room for as many digits as the fewest chunks possible has, and
		// split again, once per extra digit, if there turned out to be more.
		digits = numDigits(units/limit + 1)
	}
	var pieces []piece
	for {
		s.reserve = markerUnits(digits)
		pieces = s.all(stop)
		if maxChunks > 0 && len(pieces) > maxChunks {
			return overflow(text, limit, opts.AttachmentName)
		}
		if !opts.Markers || numDigits(len(pieces)) <= digits {
			break
		}
		digits = numDigits(len(pieces))
	}

	out := Split{Chunks: make([]string, len(pieces)), Spans: make([]Span, len(pieces))}
	for i, p := range pieces {
		var b strings.Builder
		b.Grow(len(p.prefix) + p.end - p.start + len(p.closer) + markerUnits(digits))
		b.WriteString(p.prefix)
		b.WriteString(text[p.start:p.end])
		b.WriteString(p.closer)
		chunk := b.String()
		if opts.Markers {
			last := i == len(pieces)-1
			chunk = withMarker(chunk, i+1, len(pieces), last && p.state.ticks > 0)
		}
		out.Chunks[i] = chunk
		out.Spans[i] = Span{p.start, p.end}
	}
	return out
}

// overflow returns the head of text, with a note, and the whole text as an
// attachment.
func overflow(text string, limit int, name string) Split {
	if name == "" {
		name = DefaultAttachmentName
	}
	note := fmt.Sprintf("… (full output attached as %s, %d bytes)", name, len(text))
	for _, n := range []string{note, "… (full output attached)", "…"} {
		note = n
		if UTF16Len(n)+1 <= limit/2 {
			break
		}
	}
	s := splitter{text: text, limit: limit, reserve: UTF16Len(note) + 1, last: lastContent(text)}
	p := s.piece(0, fence{})
	head := text[:p.end] + p.closer
	if !strings.HasSuffix(head, "\n") {
		head += "\n"
	}
	return Split{
		Chunks:     []string{head + note},
		Spans:      []Span{{0, p.end}},
		Attachment: &Attachment{Name: name, MIME: AttachmentMIME, Data: []byte(text)},
	}
}

// markerUnits is the room a marker " (i/N)" needs when N has d digits.
func markerUnits(d int) int {
	if d == 0 {
		return 0
	}
	return 4 + 2*d
}

func numDigits(n int) int { return len(strconv.Itoa(n)) }

// withMarker adds "(i/n)" to chunk: right after a line break, space or tab
// the chunk ends with, on a line of its own after a fence line, else after a
// space; on the first line when front is set (the chunk ends inside a fence
// the author left open).
func withMarker(chunk string, i, n int, front bool) string {
	m := "(" + strconv.Itoa(i) + "/" + strconv.Itoa(n) + ")"
	switch {
	case front:
		return m + "\n" + chunk
	case strings.HasSuffix(chunk, "\n"):
		return chunk + m
	}
	last := chunk[strings.LastIndexByte(chunk, '\n')+1:]
	switch {
	case strings.HasPrefix(strings.TrimLeft(last, " \t"), "`"):
		// Text after a fence line would make it something else.
		return chunk + "\n" + m
	case strings.HasSuffix(chunk, " "), strings.HasSuffix(chunk, "\t"):
		return chunk + m
	}
	return chunk + " " + m
}

// fence is the code-fence state of a chunk as a renderer sees it.
type fence struct {
	ticks int    // backticks of the open fence; 0 outside any fence
	line  string // the line that opened it, without its line break
}

// next returns the state after one line (without its "\n"). A fence opens
// with a line of 3 or more backticks followed by an info string without
// backticks, and closes with a line of at least as many backticks followed
// by nothing but spaces.
func (f fence) next(line string) fence {
	if len(line) < 3 || line[0] != '`' {
		return f
	}
	line = strings.TrimSuffix(line, "\r")
	n := 0
	for n < len(line) && line[n] == '`' {
		n++
	}
	if f.ticks == 0 {
		if n >= 3 && strings.IndexByte(line[n:], '`') < 0 {
			return fence{ticks: n, line: line}
		}
		return f
	}
	if n >= f.ticks && strings.Trim(line[n:], " \t") == "" {
		return fence{}
	}
	return f
}

// scan returns the state after s, read as whole lines; a last line without a
// line break counts as a line, as it does at the end of a message.
func (f fence) scan(s string) fence {
	for len(s) > 0 {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			return f.next(s)
		}
		f = f.next(s[:i])
		s = s[i+1:]
	}
	return f
}

// piece is one chunk before markers: prefix + text[start:end] + closer.
type piece struct {
	start, end int
	prefix     string // the reopened fence line and "\n", or ""
	closer     string // the added closing fence line, or ""
	state      fence  // the fence state at end, before closer
	next       fence  // the state the next chunk starts in
}

// splitter cuts one text into pieces of at most limit-reserve units.
type splitter struct {
	text    string
	limit   int
	reserve int // units kept free in every chunk for a marker or note
	last    int // start of the last rune that is not white space, or -1
}

// lastContent returns the start of the last rune of s that is not white
// space, or -1.
func lastContent(s string) int {
	for i := len(s); i > 0; {
		r, size := utf8.DecodeLastRuneInString(s[:i])
		i -= size
		if !unicode.IsSpace(r) {
			return i
		}
	}
	return -1
}

// all splits the whole text, or only its first stop pieces when stop > 0.
func (s *splitter) all(stop int) []piece {
	var out []piece
	var st fence
	for a := 0; a < len(s.text); {
		if stop > 0 && len(out) == stop {
			break
		}
		p := s.piece(a, st)
		out = append(out, p)
		a, st = p.end, p.next
	}
	return out
}

// piece cuts the chunk that starts at byte a in fence state st.
func (s *splitter) piece(a int, st fence) piece {
	p := piece{start: a}
	avail := s.limit - s.reserve
	if st.ticks > 0 {
		p.prefix = reopen(st, avail)
		if p.prefix == "" {
			st = fence{}
		}
	}
	room := avail - UTF16Len(p.prefix)
	w := room
	for {
		b, units := s.cutContent(a, w, st)
		p.end, p.state = b, st.scan(s.text[a:b])
		if p.state.ticks == 0 || b == len(s.text) {
			return p
		}
		closer := strings.Repeat("`", p.state.ticks)
		if s.text[b-1] != '\n' {
			closer = "\n" + closer
		}
		if units+len(closer) <= room {
			p.closer, p.next = closer, p.state
			return p
		}
		if room-len(closer) < 2 {
			// Not even a surrogate pair fits beside a closing line this
			// long: the chunk stays unbalanced rather than exceed the limit.
			b, _ = s.cutContent(a, room, st)
			p.end, p.state = b, st.scan(s.text[a:b])
			return p
		}
		// A shorter window always makes progress: the next cut has fewer
		// units than this one had.
		w = room - len(closer)
	}
}

// reopen returns the line that reopens fence st at the start of a chunk with
// avail units: the original opening line if it takes at most a quarter of
// the room, else a bare run of backticks if that leaves room for a closing
// line and some text, else "" (the fence is not reopened).
func reopen(st fence, avail int) string {
	closer := st.ticks + 1
	if n := UTF16Len(st.line) + 1; n <= avail/4 && n+closer+2 <= avail {
		return st.line + "\n"
	}
	if st.ticks+1+closer+2 <= avail {
		return strings.Repeat("`", st.ticks) + "\n"
	}
	return ""
}

// cutContent is cut, except that it does not leave only white space for
// the last chunk when it can help it: platforms refuse a blank message.
// (A run of white space longer than a chunk makes blank chunks anyway.)
func (s *splitter) cutContent(a, w int, st fence) (int, int) {
	b, units := s.cut(a, w, st)
	if b < len(s.text) && b > s.last && s.last > a {
		b2, units2 := s.cut(a, UTF16Len(s.text[a:s.last]), st)
		if UTF16Len(s.text[b2:]) <= s.limit-s.reserve {
			return b2, units2
		}
	}
	return b, units
}

// cut returns the end b > a of the chunk that starts at a in fence state st
// and holds at most w units, and the units of text[a:b]: the whole rest if it
// fits, else after the last newline, else after the last space or tab, else
// the last grapheme boundary, else the last rune boundary. A chunk never ends
// right after the line that opens a fence (it would carry an empty code
// block), and an in-line cut never leaves a run of three backticks at the
// start of the next chunk, where it would read as a fence line.
func (s *splitter) cut(a, w int, st fence) (int, int) {
	t := s.text
	var (
		units            int
		prev             rune = -1
		ri               int  // regional indicators in a row, ending at prev
		opened           bool // the line before prev opened a fence
		line             = a  // start of the current line
		nl, sp, hard, gb int  // candidate ends; 0 = none
		nlU, spU, hdU    int
		gbU, rb, rbU     int
	)
	for i := a; i < len(t); {
		r, size := rune(t[i]), 1
		if r >= utf8.RuneSelf {
			r, size = utf8.DecodeRuneInString(t[i:])
		}
		if i > a {
			rb, rbU = i, units
			// Below U+0300 only "\r\n" and what follows ZWJ or a regional
			// indicator can join.
			if (r < 0x300 && prev < 0x300 && prev != '\r') || !joined(prev, r, ri) {
				gb, gbU = i, units
				switch {
				case prev == '\n':
					if !opened {
						nl, nlU = i, units
					}
				case r == '`' && strings.HasPrefix(t[i:], "```"):
				default:
					hard, hdU = i, units
					if prev == ' ' || prev == '\t' {
						sp, spU = i, units
					}
				}
			}
		}
		u := 1
		if r >= 0x10000 {
			u = 2
		}
		if units+u > w {
			break
		}
		units += u
		i += size
		if i == len(t) {
			return i, units
		}
		prev = r
		if r == '\n' {
			next := st.next(t[line : i-1])
			opened = st.ticks == 0 && next.ticks > 0
			st, line = next, i
		}
		if isRegionalIndicator(r) {
			ri++
		} else {
			ri = 0
		}
	}
	switch {
	case nl > 0:
		return nl, nlU
	case sp > 0:
		return sp, spU
	case hard > 0:
		return hard, hdU
	case gb > 0:
		return gb, gbU
	case rb > 0:
		return rb, rbU
	}
	// Not even one rune fits; the callers keep w >= 2, so this is
	// unreachable, but never return an empty chunk.
	_, size := utf8.DecodeRuneInString(t[a:])
	return a + size, UTF16Len(t[a : a+size])
}

const zwj = '\u200d'

// joined reports whether a split between prev and r would part a cluster;
// ri is the number of regional indicators in a row that end at prev.
func joined(prev, r rune, ri int) bool {
	switch {
	case prev == '\r' && r == '\n':
		return true
	case prev == zwj || r == zwj:
		return true
	case isRegionalIndicator(prev) && isRegionalIndicator(r):
		return ri%2 == 1
	}
	return isExtend(r)
}

// isExtend reports whether r attaches to the rune before it: a combining
// mark, a variation selector, a skin-tone modifier, an emoji tag or ZWNJ.
func isExtend(r rune) bool {
	switch {
	case r < 0x300:
		return false
	case r >= 0xFE00 && r <= 0xFE0F, r >= 0xE0100 && r <= 0xE01EF:
		return true
	case r >= 0x1F3FB && r <= 0x1F3FF, r >= 0xE0020 && r <= 0xE007F, r == 0x200C:
		return true
	}
	return unicode.In(r, unicode.Mn, unicode.Me, unicode.Mc)
}

func isRegionalIndicator(r rune) bool { return r >= 0x1F1E6 && r <= 0x1F1FF }

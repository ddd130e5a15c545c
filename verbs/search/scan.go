package search

import (
	"bytes"
	"cmp"
	"errors"
	"io"
	"slices"
	"sync/atomic"
	"unicode/utf8"

	"github.com/a6afc2ce/hermes-hub/verbs/confine"
)

// Limits of a content search.
const (
	// MaxLineBytes bounds the text of a matching line and of a context
	// line in a result; a longer matching line is cut around its match.
	MaxLineBytes = 500
	// bufSize is a worker's read buffer: a file is read in pieces of
	// about this size, and a line longer than it is searched in its first
	// bufSize bytes only.
	bufSize = 256 << 10
	// maxKeep bounds the bytes kept of a piece for the context lines
	// before a match in the next one.
	maxKeep = 32 << 10
	// binaryProbe is how much of a file too large to search is read to
	// tell whether it is binary.
	binaryProbe = 8 << 10
)

// SearchOptions configure a content search.
type SearchOptions struct {
	Matcher *Matcher
	// Context is how many lines before and after each match a result
	// carries.
	Context int
	// MaxFileBytes: larger files are not searched; the search counts them
	// and says it was cut by bytes.
	MaxFileBytes int64
	// Binary searches files holding a NUL byte too; without it a file
	// whose first piece holds one is skipped, and a file is searched up to
	// the piece that first holds one.
	Binary bool
	// MaxResults and MaxBytes bound the matches kept and their text
	// (lines and context); the search stops past either.
	MaxResults int
	MaxBytes   int64
	// Include, when set, searches only the files it matches.
	Include *Globs
}

// Match is a matching line.
type Match struct {
	Path   string // workspace-relative
	Line   int    // counting from 1
	Column int    // byte offset of the first match in the line, counting from 1
	Text   string // the line without its end, at most MaxLineBytes
	Cut    bool   // Text is a part of a longer line
	Before []string
	After  []string
}

// Search is one content search, shared by its workers' visitors.
type Search struct {
	opts  SearchOptions
	stop  *Stop
	count atomic.Int64
	bytes atomic.Int64
	// searched and skipped count files; large says a file over
	// MaxFileBytes was skipped.
	searched, skipped atomic.Int64
	large             atomic.Bool
	visitors          []*searcher
}

// NewSearch starts a search of workers visitors, stopped by stop.
func NewSearch(opts SearchOptions, stop *Stop, workers int) *Search {
	s := &Search{opts: opts, stop: stop}
	for range workers {
		s.visitors = append(s.visitors, &searcher{s: s})
	}
	return s
}

// Visitors are the search's visitors, one per worker, for Walk.
func (s *Search) Visitors() []Visitor {
	vs := make([]Visitor, len(s.visitors))
	for i, v := range s.visitors {
		vs[i] = v
	}
	return vs
}

// File searches one file outside a walk, as a visitor would.
func (s *Search) File(d *confine.Dir, name string) {
	s.visitors[0].File(Entry{Dir: d, Name: name})
}

// Results are the matches found, by path and line; how many files were
// searched and skipped (binary, unreadable, too large); and whether a
// file too large to search was skipped.
func (s *Search) Results() (matches []Match, searched, skipped int64, large bool) {
	for _, v := range s.visitors {
		matches = append(matches, v.matches...)
	}
	slices.SortFunc(matches, func(a, b Match) int {
		if c := cmp.Compare(a.Path, b.Path); c != 0 {
			return c
		}
		return cmp.Compare(a.Line, b.Line)
	})
	return matches, s.searched.Load(), s.skipped.Load(), s.large.Load()
}

// searcher is one worker's visitor: its buffers and its matches.
type searcher struct {
	s       *Search
	buf     []byte
	low     []byte
	matches []Match
	// pending are the matches (indexes) still waiting for lines after
	// them, with how many they wait for.
	pending []pendingAfter
}

type pendingAfter struct{ i, need int }

// Dir implements Visitor: a search has nothing to do with directories.
func (v *searcher) Dir(Entry) {}

// File implements Visitor: it searches one file.
func (v *searcher) File(e Entry) {
	s := v.s
	if s.opts.Include != nil && !s.opts.Include.Match(e.Rel()) {
		return
	}
	f, err := e.Dir.Open(e.Name)
	if err != nil {
		s.skipped.Add(1)
		return
	}
	defer f.Close()
	if v.buf == nil {
		v.buf = make([]byte, bufSize)
	}
	if f.Size > s.opts.MaxFileBytes {
		s.skipped.Add(1)
		if s.opts.Binary || !v.binary(f) {
			s.large.Store(true)
		}
		return
	}
	v.pending = v.pending[:0]
	if v.scan(f, e.Path()) {
		s.searched.Add(1)
	} else {
		s.skipped.Add(1)
	}
}

// binary reports whether the first bytes of f hold a NUL byte.
func (v *searcher) binary(f *confine.File) bool {
	n, _ := io.ReadFull(f, v.buf[:binaryProbe])
	return bytes.IndexByte(v.buf[:n], 0) >= 0
}

// fileScan is the state of one file's scan.
type fileScan struct {
	path  string
	start int // where the unscanned lines begin in buf
	end   int // where the data read ends in buf
	count int // where newlines are counted up to in buf
	line  int // the number of the line starting at count
	read  int64
	eof   bool
	long  bool // skipping the rest of a line longer than the buffer
}

// scan searches f piece by piece; false when it was not searched (binary,
// or unreadable from the start).
func (v *searcher) scan(f *confine.File, path string) bool {
	fs := &fileScan{path: path, line: 1}
	for first := true; !fs.eof; first = false {
		if v.s.stop.Stopped() {
			return true
		}
		n, err := v.fill(f, fs)
		if err != nil {
			return !first
		}
		if !v.s.opts.Binary && bytes.IndexByte(v.buf[fs.end:fs.end+n], 0) >= 0 {
			if first {
				return false
			}
			n, fs.eof = 0, true // searched up to the binary part
		}
		fs.end += n
		if fs.long && !v.skipLong(fs) {
			continue
		}
		to := fs.end
		if !fs.eof {
			j := bytes.LastIndexByte(v.buf[fs.start:fs.end], '\n')
			if j < 0 {
				if fs.end < len(v.buf) {
					continue // read more of the line
				}
				// A line longer than the buffer: search what is there,
				// then skip the rest of it.
				v.region(fs, fs.end)
				fs.long, fs.start, fs.end, fs.count = true, 0, 0, 0
				continue
			}
			to = fs.start + j + 1
		}
		v.region(fs, to)
		if !fs.eof {
			v.shift(fs, to)
		}
	}
	return true
}

// fill reads into the buffer after fs.end and returns how much it read;
// it sets fs.eof at the end of the file.
func (v *searcher) fill(f *confine.File, fs *fileScan) (int, error) {
	space := len(v.buf) - fs.end
	n, err := f.Read(v.buf[fs.end:])
	switch {
	case errors.Is(err, io.EOF):
		fs.eof = true
		return 0, nil
	case err != nil:
		return 0, err
	}
	fs.read += int64(n)
	// A regular file returns less than asked only at its end: no read
	// more is needed to tell.
	if n < space && fs.read >= f.Size {
		fs.eof = true
	}
	return n, nil
}

// skipLong drops the rest of a line longer than the buffer, up to its
// end; true when the end was found (the lines after it are in the buffer).
func (v *searcher) skipLong(fs *fileScan) bool {
	j := bytes.IndexByte(v.buf[:fs.end], '\n')
	if j < 0 {
		fs.end = 0
		return fs.eof
	}
	copy(v.buf, v.buf[j+1:fs.end])
	fs.end -= j + 1
	fs.long, fs.line = false, fs.line+1
	return true
}

// shift moves the unscanned data, and up to Context lines before it for
// the next piece's context, to the buffer's start.
func (v *searcher) shift(fs *fileScan, to int) {
	fs.line += bytes.Count(v.buf[fs.count:to], nl)
	keep := to
	for range v.s.opts.Context {
		if keep == 0 || to-keep >= maxKeep {
			break
		}
		keep = bytes.LastIndexByte(v.buf[:keep-1], '\n') + 1
	}
	copy(v.buf, v.buf[keep:fs.end])
	fs.start, fs.end, fs.count = to-keep, fs.end-keep, to-keep
}

var nl = []byte{'\n'}

// region searches the lines between fs.start and to (complete lines, but
// at the end of the file or of a buffer holding part of one line).
func (v *searcher) region(fs *fileScan, to int) {
	buf := v.buf[:to]
	v.feed(buf, fs.start)
	var low []byte
	if v.s.opts.Matcher.fold {
		v.low = lower(v.low, buf)
		low = v.low
	}
	for pos := fs.start; pos < len(buf); {
		ls, le, col, ok := v.s.opts.Matcher.next(buf, low, pos)
		if !ok || v.s.stop.Stopped() {
			return
		}
		fs.line += bytes.Count(buf[fs.count:ls], nl)
		fs.count = ls
		if !v.record(fs, buf, ls, le, col) {
			return
		}
		pos = le + 1
	}
}

// record keeps the match on the line buf[ls:le] (number fs.line), with
// its context; false when the search must stop.
func (v *searcher) record(fs *fileScan, buf []byte, ls, le, col int) bool {
	s := v.s
	if s.count.Add(1) > int64(s.opts.MaxResults) {
		s.stop.Set(ByCount)
		return false
	}
	text, cut := trimAround(buf[ls:le], col)
	m := Match{Path: fs.path, Line: fs.line, Column: col + 1, Text: text, Cut: cut}
	size := len(text)
	c := s.opts.Context
	if c > 0 {
		m.Before = before(buf, ls, c)
		after, missing := after(buf, le, c, fs.eof)
		m.After = after
		for _, l := range m.Before {
			size += len(l)
		}
		for _, l := range after {
			size += len(l)
		}
		if missing > 0 {
			v.pending = append(v.pending, pendingAfter{i: len(v.matches), need: missing})
		}
	}
	if s.bytes.Add(int64(size)) > s.opts.MaxBytes {
		s.stop.Set(ByBytes)
		return false
	}
	v.matches = append(v.matches, m)
	return true
}

// feed gives the lines from from on to the matches still waiting for
// lines after them.
func (v *searcher) feed(buf []byte, from int) {
	for len(v.pending) > 0 && from < len(buf) {
		end := len(buf)
		if j := bytes.IndexByte(buf[from:], '\n'); j >= 0 {
			end = from + j
		}
		text, _ := trimAround(buf[from:end], 0)
		kept := v.pending[:0]
		for _, p := range v.pending {
			m := &v.matches[p.i]
			m.After = append(m.After, text)
			if p.need--; p.need > 0 {
				kept = append(kept, p)
			}
		}
		v.pending = kept
		from = end + 1
	}
}

// before returns up to n lines before the line starting at ls.
func before(buf []byte, ls, n int) []string {
	var out []string
	for end := ls - 1; len(out) < n && end >= 0; {
		start := bytes.LastIndexByte(buf[:end], '\n') + 1
		text, _ := trimAround(buf[start:end], 0)
		out = append(out, text)
		end = start - 1
	}
	slices.Reverse(out)
	return out
}

// after returns up to n lines after the line ending at le, and how many
// more the buffer lacks (none at the end of the file).
func after(buf []byte, le, n int, eof bool) ([]string, int) {
	var out []string
	for start := le + 1; len(out) < n && start < len(buf); {
		end := len(buf)
		if j := bytes.IndexByte(buf[start:], '\n'); j >= 0 {
			end = start + j
		}
		text, _ := trimAround(buf[start:end], 0)
		out = append(out, text)
		start = end + 1
	}
	if eof {
		return out, 0
	}
	return out, n - len(out)
}

// trimAround returns line without its carriage return, cut to
// MaxLineBytes around col when longer (on rune boundaries), and whether it
// was cut.
func trimAround(line []byte, col int) (string, bool) {
	line = bytes.TrimSuffix(line, []byte{'\r'})
	if len(line) <= MaxLineBytes {
		return string(line), false
	}
	start := max(0, min(col-MaxLineBytes/4, len(line)-MaxLineBytes))
	for start > 0 && !utf8.RuneStart(line[start]) {
		start--
	}
	end := min(len(line), start+MaxLineBytes)
	for end < len(line) && end > start && !utf8.RuneStart(line[end]) {
		end--
	}
	return string(line[start:end]), true
}

package verbs

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/verbs/confine"
)

// Lines, as every verb counts them: a line ends at '\n' (a '\r' before it is
// part of the ending, not the text); a last line without '\n' still counts;
// an empty file has no lines. fs.lineCount, fs.readRange and fs.writeRange
// agree on this, and they all stream, so memory does not grow with the file.

const blockSize = 64 << 10

// ctxReader fails reads once ctx is done, so long scans stop when their
// caller gives up.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// Blocks of blockSize the line verbs read files through, and readers over
// them, kept between calls: allocated at each call, a block (zeroed, its
// pages given back to the system between calls and faulted in again) cost
// more than reading a range of fifty lines from it.
var (
	blocks       = executor.Pool[byte]{From: blockSize, Max: blockSize}
	blockReaders = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, blockSize) }}
)

// countLines counts the lines of r in blocks.
func countLines(r io.Reader) (int, error) {
	buf := blocks.Get(blockSize)[:blockSize]
	defer blocks.Put(buf)
	n := 0
	var last byte = '\n'
	for {
		k, err := r.Read(buf)
		if k > 0 {
			n += bytes.Count(buf[:k], []byte{'\n'})
			last = buf[k-1]
		}
		if err == io.EOF {
			if last != '\n' {
				n++
			}
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

// countLinesIndex is countLines that also records the sparse line index
// of a file of size bytes (see lineCache): the start of the first line
// after every markStride(size) bytes; none for a small file.
func countLinesIndex(r io.Reader, size int64) (int, []lineMark, error) {
	stride := markStride(size)
	if stride == 0 {
		n, err := countLines(r)
		return n, nil, err
	}
	marks := make([]lineMark, 0, size/stride+1)
	buf := blocks.Get(blockSize)[:blockSize]
	defer blocks.Put(buf)
	n := 0
	var pos int64 // offset of buf[0] in the file
	next := stride
	var last byte = '\n'
	for {
		k, err := r.Read(buf)
		if k > 0 {
			b := buf[:k]
			// stride is at least a block: at most one mark falls in it.
			if end := pos + int64(k); end > next {
				from := int(max(next-pos, 0)) // a long line may carry the mark past a block
				if j := bytes.IndexByte(b[from:], '\n'); j >= 0 {
					j += from
					marks = append(marks, lineMark{line: n + bytes.Count(b[:j+1], []byte{'\n'}) + 1, off: pos + int64(j) + 1})
					next = max(next+stride, pos+int64(j)+1+1)
				}
			}
			n += bytes.Count(b, []byte{'\n'})
			last = b[k-1]
			pos += int64(k)
		}
		if err == io.EOF {
			if last != '\n' {
				n++
			}
			// A mark at the very end starts no line.
			for len(marks) > 0 && marks[len(marks)-1].off >= pos {
				marks = marks[:len(marks)-1]
			}
			return n, marks, nil
		}
		if err != nil {
			return n, nil, err
		}
	}
}

// copyLines copies the next k lines of r, endings included, to w (which may
// be io.Discard). It returns how many lines there were, fewer than k only at
// the end of the input, and whether the last one copied lacked an ending.
func copyLines(r *bufio.Reader, w io.Writer, k int) (n int, unterminated bool, err error) {
	mid := false // some bytes of a line have been copied but not its '\n'
	for n < k {
		if r.Buffered() == 0 {
			if _, err := r.Peek(1); err != nil {
				if err == io.EOF {
					if mid {
						n++
					}
					return n, mid, nil
				}
				return n, false, err
			}
		}
		buf, _ := r.Peek(r.Buffered())
		need := k - n
		if c := bytes.Count(buf, []byte{'\n'}); c < need {
			if _, err := w.Write(buf); err != nil {
				return n, false, err
			}
			n += c
			mid = buf[len(buf)-1] != '\n'
			_, _ = r.Discard(len(buf))
			continue
		}
		pos := 0
		for range need {
			pos += bytes.IndexByte(buf[pos:], '\n') + 1
		}
		if _, err := w.Write(buf[:pos]); err != nil {
			return n, false, err
		}
		_, _ = r.Discard(pos)
		n += need
		mid = false
	}
	return n, false, nil
}

// readLine appends the next line of r, without its ending, to dst. It stops
// with errLineTooLong once dst would exceed limit bytes, and reports ok false
// at the end of the input.
func readLine(r *bufio.Reader, dst *bytes.Buffer, limit int) (ok bool, err error) {
	seen := false
	for {
		chunk, err := r.ReadSlice('\n')
		if len(chunk) > 0 {
			seen = true
		}
		body := chunk
		if err == nil {
			body = chunk[:len(chunk)-1]
			if len(body) > 0 && body[len(body)-1] == '\r' {
				body = body[:len(body)-1]
			} else if len(body) == 0 && dst.Len() > 0 && dst.Bytes()[dst.Len()-1] == '\r' {
				// "\r\n" split across two reads: drop the '\r' already copied.
				dst.Truncate(dst.Len() - 1)
			}
		}
		if dst.Len()+len(body) > limit {
			return true, errLineTooLong
		}
		dst.Write(body)
		switch err {
		case nil:
			return true, nil
		case bufio.ErrBufferFull:
			continue
		case io.EOF:
			return seen, nil
		default:
			return seen, err
		}
	}
}

var errLineTooLong = errors.New("line too long")

// ReadRange implements fs.readRange; the last lines (lastLines) are read
// by readLast. A range nearer the end of the file
// than its start is read backwards from the end when the file's line count
// is cached (see lineCache), so the last lines of a large file cost what
// the first ones do; a range nearer a mark of the file's cached line index
// is read from that mark; otherwise the file is read from the start.
func (s *Set) ReadRange(ctx context.Context, a FsReadRangeArgs) (FsReadRangeResult, error) {
	var res FsReadRangeResult
	if err := a.checkForm(); err != nil {
		return res, err
	}
	if a.LastLines != nil {
		return s.readLast(ctx, a)
	}
	o, err := s.openRead(ctx, a.Path)
	if err != nil {
		return res, err
	}
	defer o.Close()
	p, show, f, fi := o.p, o.show, o.f, o.fi
	src := ctxReader{ctx, f}
	if a.StartLine < 1 || a.EndLine < a.StartLine {
		n, err := s.countFile(ctx, f, fi)
		if err != nil {
			return res, confine.FSError(err, show, "read")
		}
		return res, invalidRange(a.StartLine, a.EndLine, n)
	}
	numbered := a.IncludeLineNumbers == nil || *a.IncludeLineNumbers
	entry, known := s.lines.lookup(fi)
	n := entry.count
	backward := known && a.EndLine <= n && n-a.EndLine < a.StartLine-1
	// from is where a forward read starts: the file's start, or the mark
	// of the line index nearest below the range when that is closer (in
	// lines) than reading backwards from the end.
	from := lineMark{line: 1}
	if known && len(entry.marks) > 0 && a.StartLine <= n {
		m := nearestMark(entry.marks, a.StartLine)
		if m.line > 1 && (!backward || a.StartLine-m.line < n-a.StartLine+1) && startsLine(f, m.off) {
			from, backward = m, false
		}
	}
	switch {
	case backward:
		off, err := lineStart(ctx, f, fi.Size(), n, a.StartLine)
		if err == nil {
			_, err = f.Seek(off, io.SeekStart)
		}
		if err != nil {
			return res, confine.FSError(err, show, "read")
		}
	case from.off > 0:
		if _, err := f.Seek(from.off, io.SeekStart); err != nil {
			return res, confine.FSError(err, show, "read")
		}
	}
	br := blockReaders.Get().(*bufio.Reader)
	br.Reset(src)
	defer func() { br.Reset(nil); blockReaders.Put(br) }()
	if !backward {
		skip := a.StartLine - from.line
		skipped, _, err := copyLines(br, io.Discard, skip)
		if err != nil {
			return res, confine.FSError(err, show, "read")
		}
		if skipped < skip {
			s.keepCount(f, fi, from.line-1+skipped)
			return res, invalidRange(a.StartLine, a.EndLine, from.line-1+skipped)
		}
	}
	limit := int(min(p.ws.opts.MaxReadBytes, int64(^uint(0)>>1)))
	var out, line bytes.Buffer
	for ln := a.StartLine; ln <= a.EndLine; ln++ {
		line.Reset()
		ok, err := readLine(br, &line, limit-out.Len())
		if errors.Is(err, errLineTooLong) {
			return res, executor.Errorf(executor.CodeTooLarge,
				"Lines %d-%d of %s are more than %d bytes, the most fs.readRange returns; read fewer lines", a.StartLine, ln, show, limit)
		}
		if err != nil {
			return res, confine.FSError(err, show, "read")
		}
		if !ok {
			if !backward {
				s.keepCount(f, fi, ln-1)
			}
			return res, invalidRange(a.StartLine, a.EndLine, ln-1)
		}
		if ln > a.StartLine {
			out.WriteByte('\n')
		}
		if numbered {
			out.WriteString(strconv.Itoa(ln))
			out.WriteString(": ")
		}
		out.Write(line.Bytes())
	}
	if !known {
		s.countRest(f, fi, br, a.EndLine)
	}
	res.Content = out.String()
	if !utf8.ValidString(res.Content) {
		res.Content = strings.ToValidUTF8(res.Content, "\uFFFD")
	}
	return res, nil
}

// restMax is how much of a file fs.readRange reads past the range it
// returns to learn the file's line count.
const restMax = 1 << 20

// countRest learns the line count of f, read through br up to and including
// line done, when little of it is left: a range read near the end of a file
// is then read backwards the next time.
func (s *Set) countRest(f *os.File, fi fs.FileInfo, br *bufio.Reader, done int) {
	pos, err := f.Seek(0, io.SeekCurrent)
	if err != nil || fi.Size()-(pos-int64(br.Buffered())) > restMax {
		return
	}
	rest, err := countLines(br)
	if err != nil {
		return
	}
	s.keepCount(f, fi, done+rest)
}

// countFile returns the line count of f, which fi describes and which is
// read from its start unless the count is cached.
func (s *Set) countFile(ctx context.Context, f *os.File, fi fs.FileInfo) (int, error) {
	if n, ok := s.lines.get(fi); ok {
		return n, nil
	}
	n, marks, err := countLinesIndex(ctxReader{ctx, f}, fi.Size())
	if err != nil {
		return 0, err
	}
	s.keepIndex(f, fi, n, marks)
	return n, nil
}

// keepCount caches n as the line count of f, described by fi when it was
// opened, if f has not changed since.
func (s *Set) keepCount(f *os.File, fi fs.FileInfo, n int) { s.keepIndex(f, fi, n, nil) }

// startsLine reports whether offset off of f starts a line (the byte
// before it ends one): a mark of the line index is used only then.
func startsLine(f io.ReaderAt, off int64) bool {
	var b [1]byte
	_, err := f.ReadAt(b[:], off-1)
	return err == nil && b[0] == '\n'
}

// keepIndex is keepCount with the file's sparse line index.
func (s *Set) keepIndex(f *os.File, fi fs.FileInfo, n int, marks []lineMark) {
	now, err := f.Stat()
	if err != nil {
		return
	}
	k1, ok1 := fileKeyOf(fi)
	k2, ok2 := fileKeyOf(now)
	if !ok1 || !ok2 || k1 != k2 {
		return
	}
	s.lines.putIndex(fi, n, marks, s.opts.Clock.Now())
}

var errShrunk = errors.New("the file changed while it was being read")

// lineStart returns the offset of line k of f, a file of size bytes and n
// lines (1 <= k <= n), found by counting line endings backwards from its
// end in blocks.
func lineStart(ctx context.Context, f io.ReaderAt, size int64, n, k int) (int64, error) {
	if k <= 1 {
		return 0, nil
	}
	var last [1]byte
	if _, err := f.ReadAt(last[:], size-1); err != nil {
		return 0, err
	}
	endings := n // line endings in the file
	if last[0] != '\n' {
		endings--
	}
	// Line k starts after the (k-1)th ending from the start, which is the
	// want-th from the end.
	want := endings - (k - 1) + 1
	buf := blocks.Get(blockSize)[:blockSize]
	defer blocks.Put(buf)
	for end := size; end > 0; {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		start := max(end-blockSize, 0)
		b := buf[:end-start]
		if _, err := f.ReadAt(b, start); err != nil {
			if err == io.EOF {
				err = errShrunk
			}
			return 0, err
		}
		if c := bytes.Count(b, []byte{'\n'}); c < want {
			want -= c
			end = start
			continue
		}
		for {
			i := bytes.LastIndexByte(b, '\n')
			if want--; want == 0 {
				return start + int64(i) + 1, nil
			}
			b = b[:i]
		}
	}
	return 0, errShrunk
}

// rangeError counts the rest of the file so the message can say how many
// lines it has; consumed lines were already read from r.
func rangeError(r io.Reader, start, end, consumed int, show string) error {
	n, err := countLines(r)
	if err != nil {
		return confine.FSError(err, show, "read")
	}
	return invalidRange(start, end, consumed+n)
}

func invalidRange(start, end, n int) error {
	return executor.Errorf(executor.CodeInvalidArguments,
		"Invalid line range: %d-%d (file has %d lines; lines count from 1 and endLine must be between startLine and %d)", start, end, n, n)
}

func invalidInsert(start, n int) error {
	return executor.Errorf(executor.CodeInvalidArguments,
		"Invalid line range: insert before line %d (file has %d lines; insert before lines 1 to %d, where %d appends)", start, n, n+1, n+1)
}

// LineCount implements fs.lineCount; the count of a file unchanged since
// it was last counted comes from the cache.
func (s *Set) LineCount(ctx context.Context, a FsLineCountArgs) (FsLineCountResult, error) {
	var res FsLineCountResult
	o, err := s.openRead(ctx, a.Path)
	if err != nil {
		return res, err
	}
	defer o.Close()
	show, f, fi := o.show, o.f, o.fi
	n, err := s.countFile(ctx, f, fi)
	if err != nil {
		return res, confine.FSError(err, show, "read")
	}
	res.LineCount = n
	return res, nil
}

// WriteRange implements fs.writeRange.
func (s *Set) WriteRange(ctx context.Context, a FsWriteRangeArgs) (FsWriteRangeResult, error) {
	var res FsWriteRangeResult
	p, l, release, err := s.usePath(ctx, true, a.Path, confine.FollowFinal)
	if err != nil {
		return res, err
	}
	defer release()
	show := l.Show()
	if err := p.ws.checkWriteSize(a.Content, "fs.writeRange"); err != nil {
		return res, err
	}
	f, fi, err := openRegular(l)
	if err != nil {
		return res, err
	}
	defer f.Close()
	src := ctxReader{ctx, f}
	if a.StartLine < 1 || a.EndLine != nil && *a.EndLine < a.StartLine {
		if a.EndLine == nil {
			n, err := countLines(src)
			if err != nil {
				return res, confine.FSError(err, show, "read")
			}
			return res, invalidInsert(a.StartLine, n)
		}
		return res, rangeError(src, a.StartLine, *a.EndLine, 0, show)
	}

	// The file's style: its first line ending, and whether it ends in one.
	eol, err := firstEnding(src)
	if err != nil {
		return res, confine.FSError(err, show, "read")
	}
	size := fi.Size()
	finalNewline := strings.HasSuffix(a.Content, "\n")
	if size > 0 {
		var last [1]byte
		if _, err := f.ReadAt(last[:], size-1); err != nil {
			return res, confine.FSError(err, show, "read")
		}
		finalNewline = last[0] == '\n'
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return res, confine.FSError(err, show, "read")
	}
	newLines := splitLines(a.Content)

	err = l.WriteAtomic(fi.Mode().Perm(), true, false, func(tmp *os.File) error {
		br := bufio.NewReaderSize(src, blockSize)
		bw := bufio.NewWriterSize(tmp, blockSize)
		cw := &tailWriter{w: bw}
		kept, unterminated, err := copyLines(br, cw, a.StartLine-1)
		if err != nil {
			return confine.FSError(err, show, "read")
		}
		if kept < a.StartLine-1 {
			if a.EndLine == nil {
				return invalidInsert(a.StartLine, kept)
			}
			return invalidRange(a.StartLine, *a.EndLine, kept)
		}
		if a.EndLine != nil {
			want := *a.EndLine - a.StartLine + 1
			skipped, _, err := copyLines(br, io.Discard, want)
			if err != nil {
				return confine.FSError(err, show, "read")
			}
			if skipped < want {
				return invalidRange(a.StartLine, *a.EndLine, kept+skipped)
			}
		}
		_, peekErr := br.Peek(1)
		suffixEmpty := peekErr == io.EOF
		if len(newLines) > 0 {
			if unterminated {
				bw.WriteString(eol)
			}
			for i, l := range newLines {
				bw.WriteString(l)
				if i < len(newLines)-1 || !suffixEmpty || finalNewline {
					bw.WriteString(eol)
				}
			}
		} else if suffixEmpty && !finalNewline && kept > 0 && cw.last[1] == '\n' {
			// The file's last lines were deleted: the line now last loses
			// its ending, as the old last line had none.
			if err := bw.Flush(); err != nil {
				return err
			}
			cut := int64(1)
			if cw.last[0] == '\r' {
				cut = 2
			}
			if err := tmp.Truncate(cw.n - cut); err != nil {
				return err
			}
			if _, err := tmp.Seek(0, io.SeekEnd); err != nil {
				return err
			}
		}
		if _, err := io.Copy(bw, br); err != nil {
			return confine.FSError(err, show, "read")
		}
		return bw.Flush()
	})
	if err != nil {
		return res, err
	}
	var newSize int64
	if nfi, err := l.Lstat(); err == nil {
		newSize = nfi.Size()
	}
	if p.sess == nil {
		res.File = vfsFile(show, EncodingUTF8, newSize, nil)
		return res, nil
	}
	m, err := p.sess.recordWrite(l.Name(), show, fi, "")
	if err != nil {
		return res, err
	}
	enc := EncodingUTF8
	if m.Encoding == string(EncodingBase64) {
		enc = EncodingBase64
	}
	res.File = vfsFile(show, enc, newSize, &m)
	return res, nil
}

// firstEnding returns "\r\n" when the first line of r ends that way, else "\n".
func firstEnding(r io.Reader) (string, error) {
	buf := make([]byte, 4<<10)
	var prev byte
	for {
		k, err := r.Read(buf)
		if i := bytes.IndexByte(buf[:k], '\n'); i >= 0 {
			if i > 0 && buf[i-1] == '\r' || i == 0 && prev == '\r' {
				return "\r\n", nil
			}
			return "\n", nil
		}
		if k > 0 {
			prev = buf[k-1]
		}
		if err == io.EOF {
			return "\n", nil
		}
		if err != nil {
			return "", err
		}
	}
}

// splitLines splits content into lines the way files are counted: on "\n"
// or "\r\n", with a final ending not starting another line.
func splitLines(content string) []string {
	if content == "" {
		return nil
	}
	content = strings.TrimSuffix(content, "\n")
	lines := strings.Split(content, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r")
	}
	return lines
}

// tailWriter counts what passes through it and remembers the last two bytes.
type tailWriter struct {
	w    io.Writer
	n    int64
	last [2]byte
}

func (t *tailWriter) Write(p []byte) (int, error) {
	k, err := t.w.Write(p)
	t.n += int64(k)
	switch {
	case k >= 2:
		t.last = [2]byte{p[k-2], p[k-1]}
	case k == 1:
		t.last = [2]byte{t.last[1], p[0]}
	}
	return k, err
}

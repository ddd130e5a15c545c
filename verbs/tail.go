package verbs

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/verbs/confine"
)

// fs.readRange with lastLines reads the last lines of a file backwards
// from its end, in blocks, until it has found their start: the time it
// takes grows with the lines returned, not with the file, and needs no
// line count (docs/files.md). The file is read up to the size it had when
// it was opened, so a log being appended to gives the lines it ended with
// then. The lines are numbered from the start when the count is known
// without counting (the line cache holds it for this state of the file, or
// the read reached the file's start), and from the end otherwise.

// tailFirstBlock is the first block read from the end; each further block
// is twice as large, up to blockSize.
const tailFirstBlock = 8 << 10

// errTailTooLarge: the lines asked for are more bytes than one call returns.
var errTailTooLarge = errors.New("the last lines are too large")

// checkForm checks that the arguments ask for a range or the last lines.
func (a *FsReadRangeArgs) checkForm() error {
	ranged := a.StartLine != 0 || a.EndLine != 0
	switch {
	case a.LastLines != nil && ranged:
		return executor.Errorf(executor.CodeInvalidArguments,
			"lastLines reads the end of the file: give it without startLine and endLine, or give those without lastLines")
	case a.LastLines != nil && *a.LastLines < 1:
		return executor.Errorf(executor.CodeInvalidArguments,
			"lastLines is %d; it is how many lines to read from the end of the file, at least 1", *a.LastLines)
	case a.LastLines == nil && !ranged:
		return executor.Errorf(executor.CodeInvalidArguments,
			"Give startLine and endLine (lines count from 1), or lastLines for the end of the file")
	}
	return nil
}

// readLast implements fs.readRange with lastLines.
func (s *Set) readLast(ctx context.Context, a FsReadRangeArgs) (FsReadRangeResult, error) {
	var res FsReadRangeResult
	o, err := s.openRead(ctx, a.Path)
	if err != nil {
		return res, err
	}
	defer o.Close()
	p, show, f, fi := o.p, o.show, o.f, o.fi
	limit := min(p.ws.opts.MaxReadBytes, int64(^uint(0)>>1))
	span, whole, err := tailSpan(ctx, f, fi.Size(), *a.LastLines, limit)
	switch {
	case errors.Is(err, errTailTooLarge):
		return res, executor.Errorf(executor.CodeTooLarge,
			"The last %d lines of %s are more than %d bytes, the most fs.readRange returns; ask for fewer lines", *a.LastLines, show, limit)
	case err != nil:
		return res, confine.FSError(err, show, "read")
	}
	lines := splitSpan(span)
	first := 0 // the number of the first line, when known
	switch count, known := s.lines.get(fi); {
	case whole:
		first = 1
		s.keepCount(f, fi, len(lines))
	case known:
		first = count - len(lines) + 1
	}
	res.Content = numberLines(lines, first, a.IncludeLineNumbers == nil || *a.IncludeLineNumbers)
	res.Lines = len(lines)
	if len(lines) > 0 {
		res.StartLine = first
	}
	return res, nil
}

// tailSpan returns the bytes of the last n lines of f, a file of size
// bytes (their endings included), read backwards in blocks, and whether
// they start at the file's start. It fails with errTailTooLarge once they
// would be more than limit bytes.
func tailSpan(ctx context.Context, f io.ReaderAt, size int64, n int, limit int64) ([]byte, bool, error) {
	var blocks [][]byte // read so far, the last block first
	pos := size         // blocks hold f[pos:size]
	chunk := int64(tailFirstBlock)
	for pos > 0 {
		if err := ctx.Err(); err != nil {
			return nil, false, err
		}
		start := max(pos-chunk, 0)
		b := make([]byte, pos-start)
		if _, err := f.ReadAt(b, start); err != nil {
			if err == io.EOF {
				err = errShrunk
			}
			return nil, false, err
		}
		// The newline that ends the file ends its last line; it starts none.
		scan := b
		if pos == size && b[len(b)-1] == '\n' {
			scan = b[:len(b)-1]
		}
		for {
			i := bytes.LastIndexByte(scan, '\n')
			if i < 0 {
				break
			}
			if n--; n == 0 {
				if size-(start+int64(i)+1) > limit {
					return nil, false, errTailTooLarge
				}
				return joinBlocks(b[i+1:], blocks), false, nil
			}
			scan = scan[:i]
		}
		if size-start > limit {
			return nil, false, errTailTooLarge
		}
		blocks = append(blocks, b)
		pos = start
		chunk = min(2*chunk, blockSize)
	}
	return joinBlocks(nil, blocks), true, nil
}

// joinBlocks is head followed by blocks in reverse order.
func joinBlocks(head []byte, blocks [][]byte) []byte {
	if len(blocks) == 0 {
		return head
	}
	n := len(head)
	for _, b := range blocks {
		n += len(b)
	}
	out := make([]byte, 0, n)
	out = append(out, head...)
	for i := len(blocks) - 1; i >= 0; i-- {
		out = append(out, blocks[i]...)
	}
	return out
}

// splitSpan splits whole lines into their texts, without their endings
// (a '\r' before '\n' is part of the ending), as readLine does.
func splitSpan(span []byte) []string {
	if len(span) == 0 {
		return nil
	}
	text := string(span)
	terminated := strings.HasSuffix(text, "\n")
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	for i := range lines {
		if i < len(lines)-1 || terminated {
			lines[i] = strings.TrimSuffix(lines[i], "\r")
		}
	}
	return lines
}

// numberLines joins lines with '\n', each prefixed with its number when
// numbered: first+i, or, when first is 0 (unknown), -k for the k-th line
// from the end. Invalid UTF-8 becomes U+FFFD, as in fs.readRange.
func numberLines(lines []string, first int, numbered bool) string {
	var b strings.Builder
	for i, l := range lines {
		if i > 0 {
			b.WriteByte('\n')
		}
		if numbered {
			if first > 0 {
				b.WriteString(strconv.Itoa(first + i))
			} else {
				b.WriteString(strconv.Itoa(i - len(lines)))
			}
			b.WriteString(": ")
		}
		b.WriteString(l)
	}
	out := b.String()
	if !utf8.ValidString(out) {
		out = strings.ToValidUTF8(out, "\uFFFD")
	}
	return out
}

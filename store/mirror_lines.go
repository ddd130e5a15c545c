package store

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"
)

// lineSource reads the lines of one direction of a run for a search, one
// at a time, without decoding them: each line's time is read from its
// start (the mirror writes "ts" first), so that lines outside the
// searched times cost no decoding, and a file whose last record is older
// than the search is not read at all. Only its reader's buffer and the
// current line are held.
type lineSource struct {
	flows *os.Root
	files []string
	// since and until bound the times looked for (zero: open); a file
	// whose last line is before since (less timeSlack) is skipped, and a
	// source past until (and timeSlack) stops.
	since, until time.Time
	onBad        func(string, int, error)

	i    int
	f    *os.File
	r    *bufio.Reader
	path string
	n    int    // line number in path
	buf  []byte // the current line, reused
	ts   time.Time
	head bool // buf holds a line not yet taken
	done bool
}

// timeSlack is how far out of order two records of one file may be in
// time: appends take their time before they queue for the file, so
// records are written in time order within a few milliseconds. A
// search skips by time only beyond it.
const timeSlack = time.Minute

// tsPrefix starts every mirror line (MirrorRecord's first field).
var tsPrefix = []byte(`{"ts":"`)

// lineTime reads the time a mirror line starts with, without decoding
// the rest; ok is false for a line that does not start so.
func lineTime(b []byte) (time.Time, bool) {
	rest, ok := bytes.CutPrefix(b, tsPrefix)
	if !ok {
		return time.Time{}, false
	}
	end := bytes.IndexByte(rest, '"')
	if end < 0 || end > 40 {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, string(rest[:end]))
	return t, err == nil
}

// peek makes the next line the head and returns its time; ok is false
// at the end.
func (s *lineSource) peek() (time.Time, bool, error) {
	for !s.head && !s.done {
		if err := s.advance(); err != nil {
			return time.Time{}, false, err
		}
	}
	return s.ts, s.head, nil
}

// take returns the head line (valid until the next peek) and where it is.
func (s *lineSource) take() (line []byte, path string, n int) {
	s.head = false
	return s.buf, s.path, s.n
}

// advance reads one more line into the head, opening the next file when
// one ends. A line whose time cannot be read is decoded for it, or
// reported and skipped.
func (s *lineSource) advance() error {
	if s.r == nil {
		return s.open()
	}
	if cap(s.buf) > 1<<20 {
		s.buf = nil // a long line's buffer is not kept
	}
	var err error
	s.buf, err = readLineInto(s.r, s.buf[:0])
	switch {
	case errors.Is(err, errLineTooLong):
		s.n++
		s.bad(err)
		return nil
	case errors.Is(err, io.EOF) && len(s.buf) == 0:
		s.close()
		return nil
	case err != nil && !errors.Is(err, io.EOF):
		path := s.path
		s.close()
		return fmt.Errorf("search the mirror: %w", flowsError("read", path, err))
	}
	s.n++
	if len(bytes.TrimSpace(s.buf)) == 0 {
		return nil
	}
	ts, ok := lineTime(s.buf)
	if !ok {
		rec, perr := parseRecord(s.buf)
		if perr != nil {
			s.bad(perr)
			return nil
		}
		ts = rec.TS
	}
	if !s.until.IsZero() && ts.After(s.until.Add(timeSlack)) {
		// Later files are later still: this source is done.
		s.close()
		s.done = true
		return nil
	}
	s.ts, s.head = ts, true
	return nil
}

// open opens the next file worth reading, or ends the source.
func (s *lineSource) open() error {
	for s.i < len(s.files) {
		path := s.files[s.i]
		s.i++
		f, err := s.flows.Open(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("search the mirror: %w", flowsError("open", path, err))
		}
		if !s.since.IsZero() && endsBefore(f, s.since.Add(-timeSlack)) {
			f.Close()
			continue
		}
		s.f, s.r, s.path, s.n = f, bufio.NewReaderSize(f, 64<<10), flowsName(path), 0
		return nil
	}
	s.done = true
	return nil
}

// endsBefore reports whether the last record of f is from before t (a
// file whose last line cannot be read is read whole).
func endsBefore(f *os.File, t time.Time) bool {
	fi, err := f.Stat()
	if err != nil || fi.Size() == 0 {
		return err == nil
	}
	const tail = 64 << 10
	off := max(fi.Size()-tail, 0)
	b := make([]byte, fi.Size()-off)
	if _, err := f.ReadAt(b, off); err != nil && !errors.Is(err, io.EOF) {
		return false
	}
	b = bytes.TrimRight(b, "\n")
	last := b[bytes.LastIndexByte(b, '\n')+1:]
	ts, ok := lineTime(last)
	return ok && ts.Before(t)
}

func (s *lineSource) bad(err error) {
	if s.onBad != nil {
		s.onBad(s.path, s.n, err)
	}
}

func (s *lineSource) close() {
	if s.f != nil {
		s.f.Close()
	}
	s.f, s.r = nil, nil
}

// readLineInto is readLine appending to buf, so a reader of many lines
// reuses one buffer.
func readLineInto(r *bufio.Reader, buf []byte) ([]byte, error) {
	tooLong := false
	for {
		chunk, err := r.ReadSlice('\n')
		if !tooLong && len(buf)+len(chunk) > maxMirrorLine {
			tooLong, buf = true, buf[:0]
		}
		if !tooLong {
			buf = append(buf, chunk...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if tooLong && (err == nil || errors.Is(err, io.EOF)) {
			return buf[:0], errLineTooLong
		}
		return buf, err
	}
}

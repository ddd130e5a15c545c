package store

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/a6afc2ce/hermes-hub/clock"
)

// FollowPollInterval is how often FollowMirror looks for new records.
const FollowPollInterval = 200 * time.Millisecond

// MirrorFilter selects mirror records to read.
type MirrorFilter struct {
	// RunID limits reading to one run; "" reads every run (FollowMirror:
	// the newest run, moving on when a newer one appears).
	RunID string
	// Direction is DirectionInbound, DirectionOutbound, or "" for both
	// (merged by timestamp).
	Direction string
	// OnBadLine is told about a line that is not a record, other than a
	// torn last line of a file, which is skipped silently, with the file's
	// name relative to the state directory. nil skips.
	OnBadLine func(path string, line int, err error)
	// Clock paces FollowMirror's polling; default the real clock.
	Clock clock.Clock
}

func (f MirrorFilter) directions() ([]string, error) {
	switch f.Direction {
	case "":
		return []string{DirectionInbound, DirectionOutbound}, nil
	case DirectionInbound, DirectionOutbound:
		return []string{f.Direction}, nil
	}
	return nil, fmt.Errorf("mirror direction %q is not %q, %q or empty for both", f.Direction, DirectionInbound, DirectionOutbound)
}

func (f MirrorFilter) runs(flows *os.Root) ([]string, error) {
	if f.RunID == "" {
		return ListRuns(flows), nil
	}
	if _, err := ParseRunID(f.RunID); err != nil {
		return nil, err
	}
	if fi, err := flows.Lstat(f.RunID); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("run %s not found under %s: %w", f.RunID, FlowsDir, fs.ErrNotExist)
	}
	return []string{f.RunID}, nil
}

// ReadMirror calls fn for every record in flows (the state directory's
// flows/, opened by the caller) that f selects: runs oldest first, and
// within a run the rotated files in order, then the active one. Blank lines
// are skipped. An error from fn stops the walk and is returned.
func ReadMirror(flows *os.Root, f MirrorFilter, fn func(MirrorRecord) error) error {
	dirs, err := f.directions()
	if err != nil {
		return err
	}
	runs, err := f.runs(flows)
	if err != nil {
		return err
	}
	for _, run := range runs {
		if err := readRun(flows, run, dirs, f.OnBadLine, fn); err != nil {
			return err
		}
	}
	return nil
}

// readRun reads one run's records, merging the directions by timestamp
// (inbound first on a tie).
func readRun(flows *os.Root, run string, dirs []string, onBad func(string, int, error), fn func(MirrorRecord) error) error {
	readers := make([]*recordReader, len(dirs))
	heads := make([]*MirrorRecord, len(dirs))
	for i, d := range dirs {
		readers[i] = &recordReader{flows: flows, files: mirrorFiles(flows, run, d), onBad: onBad}
		defer readers[i].close()
	}
	for {
		best := -1
		for i, r := range readers {
			if heads[i] == nil {
				rec, ok, err := r.next()
				if err != nil {
					return err
				}
				if ok {
					heads[i] = &rec
				}
			}
			if heads[i] != nil && (best < 0 || heads[i].TS.Before(heads[best].TS)) {
				best = i
			}
		}
		if best < 0 {
			return nil
		}
		rec := *heads[best]
		heads[best] = nil
		if err := fn(rec); err != nil {
			return err
		}
	}
}

// TailMirror returns the last n records that f selects, oldest first. It
// reads runs newest first and stops once it has n, holding at most n
// records in memory.
func TailMirror(flows *os.Root, f MirrorFilter, n int) ([]MirrorRecord, error) {
	if n <= 0 {
		return nil, nil
	}
	dirs, err := f.directions()
	if err != nil {
		return nil, err
	}
	runs, err := f.runs(flows)
	if err != nil {
		return nil, err
	}
	var out []MirrorRecord
	for i := len(runs) - 1; i >= 0 && len(out) < n; i-- {
		ring := newRing(n - len(out))
		if err := readRun(flows, runs[i], dirs, f.OnBadLine, func(r MirrorRecord) error {
			ring.push(r)
			return nil
		}); err != nil {
			return nil, err
		}
		out = append(ring.slice(), out...)
	}
	return out, nil
}

// ring keeps the last max records pushed. Its buffer grows with what is
// pushed, never to max up front: a huge n costs nothing until that many
// records exist.
type ring struct {
	buf  []MirrorRecord
	max  int
	next int
	full bool
}

func newRing(n int) *ring { return &ring{max: n} }

func (r *ring) push(rec MirrorRecord) {
	if len(r.buf) < r.max {
		r.buf = append(r.buf, rec)
		return
	}
	r.buf[r.next] = rec
	r.next = (r.next + 1) % len(r.buf)
	r.full = true
}

func (r *ring) slice() []MirrorRecord {
	if !r.full {
		return slices.Clone(r.buf)
	}
	return append(slices.Clone(r.buf[r.next:]), r.buf[:r.next]...)
}

// badLine is an unparseable line held back until the reader knows whether
// it was the last line of its file.
type badLine struct {
	path string
	line int
	err  error
}

// recordReader reads the records of a sequence of files of flows.
type recordReader struct {
	flows   *os.Root
	files   []string
	onBad   func(string, int, error)
	i       int
	f       *os.File
	r       *bufio.Reader
	path    string
	line    int
	pending *badLine
}

var errLineTooLong = fmt.Errorf("line longer than %d bytes", maxMirrorLine)

func (rr *recordReader) next() (MirrorRecord, bool, error) {
	for {
		if rr.r == nil {
			if rr.i >= len(rr.files) {
				return MirrorRecord{}, false, nil
			}
			path := rr.files[rr.i]
			rr.i++
			f, err := rr.flows.Open(path)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return MirrorRecord{}, false, fmt.Errorf("read mirror: %w", flowsError("open", path, err))
			}
			rr.f, rr.r, rr.path, rr.line, rr.pending = f, bufio.NewReaderSize(f, 64<<10), flowsName(path), 0, nil
		}
		b, err := readLine(rr.r)
		switch {
		case errors.Is(err, errLineTooLong):
			rr.line++
			rr.report()
			rr.pending = &badLine{rr.path, rr.line, err}
			continue
		case errors.Is(err, io.EOF) && len(b) == 0:
			// A bad line still pending was the file's last: a torn write.
			rr.close()
			continue
		case err != nil && !errors.Is(err, io.EOF):
			path := rr.path
			rr.close()
			return MirrorRecord{}, false, fmt.Errorf("read mirror: %w", flowsError("read", path, err))
		}
		rr.line++
		if len(bytes.TrimSpace(b)) == 0 {
			continue
		}
		rec, perr := parseRecord(b)
		if perr != nil {
			rr.report()
			rr.pending = &badLine{rr.path, rr.line, perr}
			continue
		}
		rr.report()
		return rec, true, nil
	}
}

// report passes a pending bad line, now known not to be the last, to onBad.
func (rr *recordReader) report() {
	if rr.pending != nil && rr.onBad != nil {
		rr.onBad(rr.pending.path, rr.pending.line, rr.pending.err)
	}
	rr.pending = nil
}

func (rr *recordReader) close() {
	if rr.f != nil {
		rr.f.Close()
	}
	rr.f, rr.r, rr.pending = nil, nil, nil
}

// readLine reads one line, newline included. A line longer than
// maxMirrorLine is consumed and reported as errLineTooLong.
func readLine(r *bufio.Reader) ([]byte, error) { return readLineInto(r, nil) }

// parseRecord decodes one mirror line.
func parseRecord(b []byte) (MirrorRecord, error) {
	var rec MirrorRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return MirrorRecord{}, fmt.Errorf("not JSON at byte %d: %v", se.Offset, se)
		}
		return MirrorRecord{}, fmt.Errorf("not a mirror record: %v", err)
	}
	if rec.Direction == "" {
		return MirrorRecord{}, errors.New(`not a mirror record: no "direction"`)
	}
	if rec.Meta == nil {
		rec.Meta = map[string]string{}
	}
	return rec, nil
}

// FollowMirror calls fn for each record appended in flows from now on
// until ctx ends (then it returns nil) or fn fails. It polls every
// FollowPollInterval, follows rotation, and, when f.RunID is "", moves on to
// a newer run as soon as one appears. Records already present when it
// starts are not delivered; use TailMirror first for those.
func FollowMirror(ctx context.Context, flows *os.Root, f MirrorFilter, fn func(MirrorRecord) error) error {
	dirs, err := f.directions()
	if err != nil {
		return err
	}
	if f.RunID != "" {
		if _, err := ParseRunID(f.RunID); err != nil {
			return err
		}
	}
	clk := f.Clock
	if clk == nil {
		clk = clock.Real{}
	}
	fw := &follower{flows: flows, filter: f, dirs: dirs}
	defer fw.closeAll()
	fw.pickRun(true)
	for {
		if err := fw.poll(fn); err != nil {
			return err
		}
		wake := make(chan struct{})
		t := clk.AfterFunc(FollowPollInterval, func() { close(wake) })
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-wake:
		}
	}
}

// follower is FollowMirror's state: the run it follows and one tail per
// direction.
type follower struct {
	flows  *os.Root
	filter MirrorFilter
	dirs   []string
	run    string
	tails  []*fileTail
}

// pickRun switches to the newest run (or the requested one) if it is not
// the current one. atEnd starts at the end of the files (the first run
// followed); a run that appears later is read from its beginning.
func (fw *follower) pickRun(atEnd bool) bool {
	want := fw.filter.RunID
	if want == "" {
		runs := ListRuns(fw.flows)
		if len(runs) == 0 {
			return false
		}
		want = runs[len(runs)-1]
	}
	if want == fw.run {
		return false
	}
	if _, err := fw.flows.Lstat(want); err != nil {
		return false
	}
	fw.closeAll()
	fw.run = want
	fw.tails = nil
	for _, d := range fw.dirs {
		dir := filepath.Join(want, "chat")
		t := &fileTail{flows: fw.flows, dir: dir, name: d, path: filepath.Join(dir, d+".jsonl"), onBad: fw.filter.OnBadLine}
		if atEnd {
			t.openAtEnd()
		}
		fw.tails = append(fw.tails, t)
	}
	return true
}

func (fw *follower) poll(fn func(MirrorRecord) error) error {
	if fw.run == "" {
		// No run existed when following began: this one is all new.
		if !fw.pickRun(false) {
			return nil
		}
	}
	recs, err := fw.drain()
	if err != nil {
		return err
	}
	if fw.filter.RunID == "" {
		if runs := ListRuns(fw.flows); len(runs) > 0 && runs[len(runs)-1] > fw.run {
			// Finish the old run (its writer may have added a last record)
			// before moving on.
			more, err := fw.drain()
			if err != nil {
				return err
			}
			recs = append(recs, more...)
			fw.pickRun(false)
			more, err = fw.drain()
			if err != nil {
				return err
			}
			recs = append(recs, more...)
		}
	}
	slices.SortStableFunc(recs, func(a, b MirrorRecord) int { return a.TS.Compare(b.TS) })
	for _, r := range recs {
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}

func (fw *follower) drain() ([]MirrorRecord, error) {
	var recs []MirrorRecord
	for _, t := range fw.tails {
		more, err := t.poll()
		if err != nil {
			return nil, err
		}
		recs = append(recs, more...)
	}
	return recs, nil
}

func (fw *follower) closeAll() {
	for _, t := range fw.tails {
		t.close()
	}
}

// fileTail follows one active mirror file across rotations. It keeps the
// file open, so data written just before a rotation is still read from the
// renamed file.
type fileTail struct {
	flows           *os.Root
	dir, name, path string // names in flows
	cur             string // the file f reads (path, or a rotated name)
	onBad           func(string, int, error)
	f               *os.File
	partial         []byte // an incomplete last line, waiting for its newline
	skipping        bool   // the current line is too long and is being skipped
	line            int
}

func (t *fileTail) openAtEnd() {
	f, err := t.flows.Open(t.path)
	if err != nil {
		return // not created yet: it will be read from the start
	}
	n, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		f.Close()
		return
	}
	t.f, t.cur = f, t.path
	// Count lines so that bad-line reports carry real line numbers.
	if c, err := countLines(f, n); err == nil {
		t.line = c
	}
}

// countLines counts the newlines in the first upTo bytes of f.
func countLines(f *os.File, upTo int64) (int, error) {
	n := 0
	buf := make([]byte, 64<<10)
	r := io.NewSectionReader(f, 0, upTo)
	for {
		k, err := r.Read(buf)
		n += bytes.Count(buf[:k], []byte{'\n'})
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

// poll returns the complete records appended since the last poll.
func (t *fileTail) poll() ([]MirrorRecord, error) {
	var recs []MirrorRecord
	if t.f == nil {
		if !t.reopen() {
			return nil, nil
		}
	}
	if err := t.readAvailable(&recs); err != nil {
		return nil, err
	}
	// Rotated? The path now names a different file.
	cur, err := t.flows.Stat(t.path)
	if err != nil {
		return recs, nil // mid-rotation; look again next time
	}
	mine, err := t.f.Stat()
	if err != nil {
		return nil, fmt.Errorf("follow: %w", flowsError("stat", t.path, err))
	}
	if os.SameFile(cur, mine) {
		return recs, nil
	}
	// Finish the file we hold, then any rotated after it (several
	// rotations can happen between two polls), then the new active file.
	if err := t.readAvailable(&recs); err != nil {
		return nil, err
	}
	held := -1
	rotated := rotatedFiles(t.flows, t.dir, t.name)
	for _, r := range rotated {
		if fi, err := t.flows.Stat(r.path); err == nil && os.SameFile(fi, mine) {
			held = r.n
		}
	}
	t.close() // a partial last line was torn: dropped
	if held >= 0 {
		for _, r := range rotated {
			if r.n <= held {
				continue
			}
			f, err := t.flows.Open(r.path)
			if err != nil {
				continue
			}
			t.f, t.cur, t.partial, t.skipping, t.line = f, r.path, nil, false, 0
			err = t.readAvailable(&recs)
			t.close()
			if err != nil {
				return nil, err
			}
		}
	}
	if t.reopen() {
		if err := t.readAvailable(&recs); err != nil {
			return nil, err
		}
	}
	return recs, nil
}

// reopen opens the active file from its start.
func (t *fileTail) reopen() bool {
	f, err := t.flows.Open(t.path)
	if err != nil {
		return false
	}
	t.f, t.cur, t.partial, t.skipping, t.line = f, t.path, nil, false, 0
	return true
}

func (t *fileTail) readAvailable(recs *[]MirrorRecord) error {
	buf := make([]byte, 64<<10)
	for {
		n, err := t.f.Read(buf)
		data := buf[:n]
		for len(data) > 0 {
			i := bytes.IndexByte(data, '\n')
			if i < 0 {
				if !t.skipping && len(t.partial)+len(data) > maxMirrorLine {
					t.skipping, t.partial = true, nil
				}
				if !t.skipping {
					t.partial = append(t.partial, data...)
				}
				break
			}
			line := append(t.partial, data[:i]...)
			skipped := t.skipping
			t.partial, t.skipping = nil, false
			data = data[i+1:]
			t.line++
			var perr error
			var rec MirrorRecord
			switch {
			case skipped:
				perr = errLineTooLong
			case len(bytes.TrimSpace(line)) == 0:
				continue
			default:
				rec, perr = parseRecord(line)
			}
			if perr != nil {
				if t.onBad != nil {
					t.onBad(flowsName(t.cur), t.line, perr)
				}
				continue
			}
			*recs = append(*recs, rec)
		}
		if err == io.EOF || n == 0 {
			return nil
		}
		if err != nil {
			return fmt.Errorf("follow: %w", flowsError("read", t.cur, err))
		}
	}
}

func (t *fileTail) close() {
	if t.f != nil {
		t.f.Close()
		t.f = nil
	}
}

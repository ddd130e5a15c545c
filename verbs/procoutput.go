package verbs

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/a6afc2ce/hermes-hub/clock"
	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/verbs/confine"
)

// The output of a proc.run call lives in proc/<outputId>/ of the state
// directory: stdout.txt, stderr.txt and owner.json, which records who ran
// the call (the caller's identity and session) and when; it is written
// before the program starts. Every file is created, read and removed
// through the state directory's os.Root (Options.State), and created
// afresh (never through a symbolic link left in its place). proc.output
// reads a page of lines of either stream, for the caller who ran the call
// only.
// Nothing is removed unless a sweeper runs (RunOutputSweeper, which the hub
// runs with verbs.proc.keep_output): it removes the output of calls that
// started longer ago than that.

const (
	// OutputPageLines is how many lines proc.output returns by default.
	OutputPageLines = 200
	// OutputPageBytes bounds a page of proc.output: it ends before the
	// line that would take it past this, and a single longer line is cut.
	OutputPageBytes = 32 << 10
	// DefaultKeepOutput is how long the hub keeps proc.run's output.
	DefaultKeepOutput = 168 * time.Hour

	ownerFile = "owner.json"
	// procDir is the directory of the output in the state directory.
	procDir = "proc"
)

// outputOwner is the content of owner.json.
type outputOwner struct {
	Identity string    `json:"identity"`
	Session  string    `json:"session,omitempty"`
	Started  time.Time `json:"started"`
}

// stateRoot is the state directory: Options.State, or StateDir opened once.
func (s *Set) stateRoot() (*os.Root, error) {
	if s.opts.State != nil {
		return s.opts.State, nil
	}
	s.stateMu.Lock()
	defer s.stateMu.Unlock()
	if s.state == nil {
		root, err := openState(s.opts.StateDir)
		if err != nil {
			return nil, &executor.Error{Code: executor.CodeIOError, Err: err, Message: "Cannot open the state directory: " + confine.Hostless(err)}
		}
		s.state = root
	}
	return s.state, nil
}

// openState creates the state directory dir, owner-only, when it is
// missing, and opens it.
func openState(dir string) (*os.Root, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	return os.OpenRoot(dir)
}

// outputDir creates the output directory of turn in the state directory
// root and records the caller of ctx as its owner; it returns the
// directory's name in root. A directory that another caller owns is
// refused: its output is not overwritten.
func (s *Set) outputDir(ctx context.Context, root *os.Root, turn string) (string, error) {
	outDir := filepath.Join(procDir, turn)
	if err := root.MkdirAll(procDir, 0o700); err != nil {
		return "", s.stateError("create", procDir, err)
	}
	if err := root.Mkdir(outDir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", s.stateError("create", outDir, err)
	}
	if fi, err := root.Lstat(outDir); err != nil || !fi.IsDir() {
		return "", s.stateError("create", outDir, cmp.Or(err, errors.New("something other than a directory is in its place")))
	}
	call := executor.CallFrom(ctx)
	name := filepath.Join(outDir, ownerFile)
	if data, err := root.ReadFile(name); err == nil {
		var prev outputOwner
		if json.Unmarshal(data, &prev) != nil || prev.Identity != call.Identity {
			return "", executor.Errorf(executor.CodeForbidden,
				"The output of turn %s belongs to another caller; the program was not run (retry with a new turn)", turn)
		}
	}
	data, err := json.Marshal(outputOwner{Identity: call.Identity, Session: call.Session, Started: s.opts.Clock.Now().UTC()})
	if err != nil {
		return "", executor.Errorf(executor.CodeInternal, "Cannot record the owner of turn %s: %v", turn, err)
	}
	f, err := createOutput(root, name)
	if err != nil {
		return "", s.stateError("create", name, err)
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", s.stateError("write", name, err)
	}
	return outDir, nil
}

// createOutput creates the file name of root afresh, owner-only: a file
// already there is removed first, and a symbolic link put in its place
// meanwhile is refused, never followed (O_EXCL).
func createOutput(root *os.Root, name string) (*os.File, error) {
	if err := root.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	return root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
}

// openProc opens the state directory's proc/ for reading; ok is false when
// there is none.
func (s *Set) openProc() (proc *os.Root, ok bool, err error) {
	state, err := s.stateRoot()
	if err != nil {
		return nil, false, err
	}
	proc, err = state.OpenRoot(procDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, s.stateError("open", procDir, err)
	}
	return proc, true, nil
}

// validOutputID checks an outputId the way turn ids are checked, with a
// message about outputId.
func validOutputID(id string) error {
	if validTurnID(id) != nil {
		return executor.Errorf(executor.CodeInvalidArguments,
			"outputId %q is not an output id (accepted: the outputId of a proc.run result: up to 200 letters, digits and . _ - + = @, without '..')", id)
	}
	return nil
}

func outputNotFound(id string) error {
	return executor.Errorf(executor.CodeNotFound,
		"No output %s: no proc.run call produced it, or it was removed after verbs.proc.keep_output", id)
}

// readOwner reads the owner record of the output id in root.
func readOwner(root *os.Root, id string) (outputOwner, error) {
	var o outputOwner
	f, err := root.Open(id + "/" + ownerFile)
	if err != nil {
		return o, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, 64<<10))
	if err != nil {
		return o, err
	}
	if err := json.Unmarshal(data, &o); err != nil {
		return o, fmt.Errorf("%s of %s: %w", ownerFile, id, err)
	}
	return o, nil
}

// ProcOutput implements proc.output: a page of lines of a call's stdout or
// stderr, for the caller who ran the call. Lines are counted as fs.readRange
// counts them, and a page near the end of a long output is found backwards
// from the end once the stream's line count is known (see lineCache).
func (s *Set) ProcOutput(ctx context.Context, a ProcOutputArgs) (ProcOutputResult, error) {
	var res ProcOutputResult
	if err := validOutputID(a.OutputID); err != nil {
		return res, err
	}
	stream := a.Stream
	if stream == "" {
		stream = StreamStdout
	}
	if stream != StreamStdout && stream != StreamStderr {
		return res, executor.Errorf(executor.CodeInvalidArguments, "stream %q is not a stream (accepted: stdout, stderr)", stream)
	}
	start := 1
	if a.StartLine != nil {
		start = *a.StartLine
	}
	if start < 1 {
		return res, executor.Errorf(executor.CodeInvalidArguments, "startLine is %d; lines count from 1", start)
	}
	end := start + OutputPageLines - 1
	if a.EndLine != nil {
		if end = *a.EndLine; end < start {
			return res, executor.Errorf(executor.CodeInvalidArguments, "endLine %d is before startLine %d; give an endLine of at least %d, or none for a page", end, start, start)
		}
	}
	caller := executor.CallFrom(ctx).Identity
	if caller == "" {
		return res, executor.Errorf(executor.CodeForbidden, "proc.output shows a call's output only to the caller who ran it, and this call has no caller identity")
	}

	root, ok, err := s.openProc()
	if err != nil {
		return res, err
	}
	if !ok {
		return res, outputNotFound(a.OutputID)
	}
	defer root.Close()
	owner, err := readOwner(root, a.OutputID)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return res, outputNotFound(a.OutputID)
	case err != nil:
		return res, executor.Errorf(executor.CodeIOError, "Cannot read the owner of output %s: %s", a.OutputID, confine.Hostless(err))
	case owner.Identity != caller:
		return res, executor.Errorf(executor.CodeForbidden,
			"Output %s belongs to another caller; proc.output shows a call's output only to the caller who ran it", a.OutputID)
	}
	show := a.OutputID + "/" + string(stream) + ".txt"
	f, err := root.Open(show)
	if errors.Is(err, fs.ErrNotExist) {
		return res, outputNotFound(a.OutputID)
	}
	if err != nil {
		return res, executor.Errorf(executor.CodeIOError, "Cannot open %s of output %s: %s", stream, a.OutputID, confine.Hostless(err))
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return res, executor.Errorf(executor.CodeIOError, "The %s of output %s is not a readable file", stream, a.OutputID)
	}
	readErr := func(err error) error {
		return executor.Errorf(executor.CodeIOError, "Cannot read the %s of output %s: %s", stream, a.OutputID, confine.Hostless(err))
	}

	n, err := s.countFile(ctx, f, fi)
	if err != nil {
		return res, readErr(err)
	}
	res = ProcOutputResult{OutputID: a.OutputID, Stream: stream, StartLine: start, EndLine: start - 1, TotalLines: n, TotalBytes: fi.Size()}
	if a.AsFile {
		return sendStream(ctx, res, f, fi.Size())
	}
	if n == 0 && start == 1 {
		return res, nil
	}
	if start > n {
		return res, executor.Errorf(executor.CodeInvalidArguments,
			"startLine %d is past the end: the %s of output %s has %d %s", start, stream, a.OutputID, n, plural(int64(n), "line", "lines"))
	}
	end = min(end, n)

	// Find line start: backwards from the end when it is nearer the end.
	var br *bufio.Reader
	if n-start < start-1 {
		off, err := lineStart(ctx, f, fi.Size(), n, start)
		if err == nil {
			_, err = f.Seek(off, io.SeekStart)
		}
		if err != nil {
			return res, readErr(err)
		}
		br = bufio.NewReaderSize(ctxReader{ctx, f}, blockSize)
	} else {
		if _, err := f.Seek(0, io.SeekStart); err != nil { // counting may have read it
			return res, readErr(err)
		}
		br = bufio.NewReaderSize(ctxReader{ctx, f}, blockSize)
		skipped, _, err := copyLines(br, io.Discard, start-1)
		if err != nil {
			return res, readErr(err)
		}
		if skipped < start-1 {
			return res, readErr(errShrunk)
		}
	}
	var out, line bytes.Buffer
	for ln := start; ln <= end; ln++ {
		sep := 0
		if ln > start {
			sep = 1
		}
		line.Reset()
		ok, cut, err := readLineCapped(br, &line, OutputPageBytes-out.Len()-sep)
		if err != nil {
			return res, readErr(err)
		}
		if !ok {
			break // the file is shorter than counted
		}
		if cut && ln > start {
			break // this line starts the next page
		}
		if sep > 0 {
			out.WriteByte('\n')
		}
		out.Write(line.Bytes())
		res.EndLine = ln
		if cut {
			res.LineCut = true
			break
		}
	}
	if res.EndLine < n {
		res.NextStartLine = res.EndLine + 1
	}
	res.Content = out.String()
	if !utf8.ValidString(res.Content) {
		res.Content = strings.ToValidUTF8(res.Content, "\uFFFD")
	}
	return res, nil
}

// sendStream sends a whole stream, size bytes of f, as a file (asFile).
func sendStream(ctx context.Context, res ProcOutputResult, f *os.File, size int64) (ProcOutputResult, error) {
	if _, ok := executor.FilesOffered(ctx); !ok {
		return res, executor.Errorf(executor.CodeInvalidArguments,
			"asFile sends the stream into a chat conversation; this surface takes no files: read it by pages without asFile")
	}
	name := res.OutputID + "." + string(res.Stream) + ".txt"
	sent, err := executor.SendFile(ctx, name, "text/plain; charset=utf-8", size, io.NewSectionReader(ctxReaderAt{ctx, f}, 0, size))
	if err != nil {
		return res, err
	}
	res.SentAs, res.SHA256, res.EndLine = name, sent.SHA256, res.TotalLines
	return res, nil
}

// readLineCapped appends the next line of r, without its ending, to dst,
// keeping at most limit bytes of dst and reading the rest of the line
// through (cut reports it). ok is false at the end of the input.
func readLineCapped(r *bufio.Reader, dst *bytes.Buffer, limit int) (ok, cut bool, err error) {
	seen := false
	for {
		chunk, err := r.ReadSlice('\n')
		if len(chunk) > 0 {
			seen = true
		}
		body := chunk
		if err == nil {
			body = chunk[:len(chunk)-1]
		}
		if room := max(limit-dst.Len(), 0); len(body) > room {
			body, cut = body[:room], true
		}
		dst.Write(body)
		switch err {
		case nil:
			if b := dst.Bytes(); !cut && len(b) > 0 && b[len(b)-1] == '\r' {
				dst.Truncate(len(b) - 1)
			}
			return true, cut, nil
		case bufio.ErrBufferFull:
			continue
		case io.EOF:
			return seen, cut, nil
		default:
			return seen, cut, err
		}
	}
}

// SweepOutput removes the output of calls that started more than keep
// before now (as the owner record says; by the directory's modification
// time for output written before owners were recorded) and returns how
// many it removed. keep is raised to MaxTimeout and a minute, so the output
// of a running call is never removed.
func (s *Set) SweepOutput(now time.Time, keep time.Duration) (int, error) {
	keep = max(keep, s.opts.MaxTimeout+time.Minute)
	root, ok, err := s.openProc()
	if err != nil || !ok {
		return 0, err
	}
	defer root.Close()
	entries, err := fs.ReadDir(root.FS(), ".")
	if err != nil {
		return 0, s.stateError("list", procDir, err)
	}
	removed := 0
	var errs []error
	for _, e := range entries {
		if !e.IsDir() || validTurnID(e.Name()) != nil {
			continue
		}
		var started time.Time
		if o, err := readOwner(root, e.Name()); err == nil {
			started = o.Started
		} else if fi, err := e.Info(); err == nil {
			started = fi.ModTime()
		} else {
			continue
		}
		if now.Sub(started) < keep {
			continue
		}
		if err := root.RemoveAll(e.Name()); err != nil {
			errs = append(errs, s.stateError("remove", filepath.Join(procDir, e.Name()), err))
			continue
		}
		removed++
	}
	return removed, errors.Join(errs...)
}

// RunOutputSweeper calls SweepOutput at once and then every interval of
// the Set's clock (0: a quarter of keep, between a minute and an hour)
// until ctx ends; failures are logged.
func (s *Set) RunOutputSweeper(ctx context.Context, keep, interval time.Duration) {
	if interval <= 0 {
		interval = min(max(keep/4, time.Minute), time.Hour)
	}
	for {
		n, err := s.SweepOutput(s.opts.Clock.Now(), keep)
		if err != nil {
			slog.Warn("proc.run output sweep", "err", err)
		} else if n > 0 {
			slog.Debug("proc.run output removed", "calls", n)
		}
		if !clock.Sleep(ctx, s.opts.Clock, interval) {
			return
		}
	}
}

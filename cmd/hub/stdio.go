package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/a6afc2ce/hermes-hub/executor"
)

// stdioReadAhead bounds the input `hub exec --stdio` reads ahead of the
// line it is running (lines queued, not yet answered). A client that writes
// many lines before reading any is served as long as what it writes ahead
// stays under this bound plus the pipe's own buffer.
const stdioReadAhead = 16 << 20

// stdioLine is one input line for serveStdio, the end of the input (err
// set, line empty), or the reader handed back (handBack).
type stdioLine struct {
	line     []byte
	tooLong  bool
	err      error
	handBack bool // the reader is handed back: the queue's last item
}

// serveStdio runs one JSON envelope per input line and writes one JSON result
// per line, with the envelope's "id" echoed first, in input order. A
// malformed line gets an error result and the loop goes on.
//
// Results are buffered and written when no further line is buffered in the
// input (before the loop would wait for input) or when 64 KiB are pending:
// a client that waits for an answer gets it before the server waits for
// more input, and a pipelined client gets its answers in large writes.
//
// A write that could wait for the client (stdout is a pipe that may not
// have room for it, see pipeRoom, or a kind of file whose room is not
// known) is never made while nothing reads the input: a goroutine reads
// lines ahead into a queue (at most stdioReadAhead bytes) while the write
// waits, and hands the input back after it, so a client that writes many
// lines before reading any never deadlocks against a full output pipe. A
// client that waits for each answer is served by one goroutine, without a
// hand-off per line.
func serveStdio(ctx context.Context, run func(context.Context, []byte) *executor.Outcome, r io.Reader, w io.Writer) error {
	limit := executor.DefaultLimits.MaxInputBytes
	br := bufio.NewReaderSize(r, 64<<10)
	fits := writeRoom(w)
	var out []byte
	var ahead *lineQueue // reading ahead; br is its own until it hands it back
	defer func() {
		if ahead != nil {
			ahead.close()
		}
	}()
	write := func() error {
		if len(out) == 0 {
			return nil
		}
		if !fits(len(out)) && ahead == nil {
			ahead = newLineQueue(stdioReadAhead)
			go ahead.fill(br, limit)
		}
		_, err := w.Write(out)
		out = out[:0]
		if ahead != nil {
			ahead.handBack()
		}
		if err != nil {
			return fmt.Errorf("write stdout: %w", err)
		}
		return nil
	}
	for {
		var in stdioLine
		if ahead != nil {
			l, ok := ahead.pop()
			if !ok {
				if err := write(); err != nil {
					return err
				}
				select {
				case <-ahead.ready:
					continue
				case <-ctx.Done():
					return nil
				}
			}
			if l.handBack {
				ahead = nil // br is ours again
				continue
			}
			in = l
		} else {
			if !lineBuffered(br) {
				// Reading may wait: the results so far go out first.
				if err := write(); err != nil {
					return err
				}
				if ahead != nil {
					continue
				}
			}
			// The line may be br's own buffer: it is run before br is read
			// again (or handed to a read-ahead goroutine).
			line, tooLong, err := readLine(br, limit, true)
			in = stdioLine{line: line, tooLong: tooLong, err: err}
		}
		if len(bytes.TrimSpace(in.line)) > 0 || in.tooLong {
			serveLine(ctx, run, in, limit, &out)
			if len(out) >= 64<<10 {
				if err := write(); err != nil {
					return err
				}
			}
		}
		if in.err != nil {
			if err := write(); err != nil {
				return err
			}
			if errors.Is(in.err, io.EOF) {
				return nil
			}
			return fmt.Errorf("read stdin: %w", in.err)
		}
		if ctx.Err() != nil {
			return write()
		}
	}
}

// serveLine runs one input line and appends its result line to out. run
// must not keep in.line past its return: it may be the reader's buffer.
func serveLine(ctx context.Context, run func(context.Context, []byte) *executor.Outcome, in stdioLine, limit int, out *[]byte) {
	var o *executor.Outcome
	if in.tooLong {
		o = &executor.Outcome{Err: executor.Errorf(executor.CodeTooLarge, "Line is over the %d-byte limit; it was discarded", limit)}
	} else {
		o = run(ctx, in.line)
	}
	*out = appendStdioResult(*out, o)
}

// lineBuffered reports whether a whole line is already in br's buffer, so
// reading it cannot wait.
func lineBuffered(br *bufio.Reader) bool {
	buf, _ := br.Peek(br.Buffered())
	return bytes.IndexByte(buf, '\n') >= 0
}

// lineQueue holds the input lines read ahead of the one being run: filled
// by one goroutine (fill), emptied by serveStdio (pop).
type lineQueue struct {
	bound int           // bytes queued above which fill waits
	ready chan struct{} // 1-buffered: a line was queued
	space chan struct{} // 1-buffered: the queue went under its bound
	stop  chan struct{} // closed when serveStdio returns
	back  atomic.Bool   // hand the reader back after the next line

	mu    sync.Mutex
	lines []stdioLine
	head  int
	bytes int
}

func newLineQueue(bound int) *lineQueue {
	return &lineQueue{bound: bound, ready: make(chan struct{}, 1), space: make(chan struct{}, 1), stop: make(chan struct{})}
}

func (q *lineQueue) close() { close(q.stop) }

// handBack asks fill to return after queueing its next line (or the end of
// the input), with a handBack item last.
func (q *lineQueue) handBack() { q.back.Store(true) }

func notify(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// push queues l and reports whether to go on: it waits while the queue is
// over its bound, and returns false once the queue is closed.
func (q *lineQueue) push(l stdioLine) bool {
	q.mu.Lock()
	q.lines = append(q.lines, l)
	q.bytes += len(l.line)
	over := q.bytes > q.bound
	q.mu.Unlock()
	notify(q.ready)
	if over {
		select {
		case <-q.space:
		case <-q.stop:
			return false
		}
	}
	select {
	case <-q.stop:
		return false
	default:
		return true
	}
}

// pop takes the oldest queued line, if any.
func (q *lineQueue) pop() (stdioLine, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.head == len(q.lines) {
		return stdioLine{}, false
	}
	l := q.lines[q.head]
	q.lines[q.head] = stdioLine{}
	q.head++
	if q.head == len(q.lines) {
		q.lines, q.head = q.lines[:0], 0
	}
	wasOver := q.bytes > q.bound
	q.bytes -= len(l.line)
	if wasOver && q.bytes <= q.bound {
		notify(q.space)
	}
	return l, true
}

// fill reads lines from br into the queue, leaving out blank ones, until
// the end of the input (queued as an item with err set) or, once handBack
// was called, until one more line is queued (then a handBack item). It
// returns then, or when the queue is closed.
func (q *lineQueue) fill(br *bufio.Reader, limit int) {
	for {
		line, tooLong, err := readLine(br, limit, false)
		if len(bytes.TrimSpace(line)) > 0 || tooLong {
			if !q.push(stdioLine{line: line, tooLong: tooLong}) {
				return
			}
		}
		if err != nil {
			q.push(stdioLine{err: err})
			return
		}
		if q.back.Load() {
			q.push(stdioLine{handBack: true})
			return
		}
	}
}

// appendStdioResult appends o's result line to out, the envelope's id first
// when it had one. The result is encoded in place, after the id: its
// opening brace is then taken out.
func appendStdioResult(out []byte, o *executor.Outcome) []byte {
	if len(o.ID) == 0 {
		return append(o.AppendJSON(out), '\n')
	}
	out = append(out, `{"id":`...)
	out = append(out, bytes.TrimSpace(o.ID)...)
	out = append(out, ',')
	res := len(out)
	out = o.AppendJSON(out) // an object: {…}
	out = append(out[:res], out[res+1:]...)
	return append(out, '\n')
}

// readLine reads one line of at most limit bytes. A longer line is consumed
// to its end and reported with tooLong, so one bad line never desynchronises
// the stream. With borrow, a line that was whole in br's buffer is returned
// as a slice of it, valid until br is read again; otherwise the line is a
// copy.
func readLine(br *bufio.Reader, limit int, borrow bool) (line []byte, tooLong bool, err error) {
	var buf []byte
	for first := true; ; first = false {
		chunk, isPrefix, err := br.ReadLine()
		if borrow && first && !isPrefix && len(chunk) <= limit {
			return chunk, false, err
		}
		if len(buf)+len(chunk) > limit {
			tooLong = true
		} else {
			buf = append(buf, chunk...)
		}
		if err != nil {
			return buf, tooLong, err
		}
		if !isPrefix {
			if tooLong {
				return nil, true, nil
			}
			return buf, false, nil
		}
	}
}

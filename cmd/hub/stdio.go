package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"

	"github.com/a6afc2ce/hermes-hub/executor"
)

// stdioReadAhead bounds the input `hub exec --stdio` reads ahead of the
// line it is running (lines queued, not yet answered). A client that writes
// many lines before reading any is served as long as what it writes ahead
// stays under this bound plus the pipe's own buffer.
const stdioReadAhead = 16 << 20

// stdioLine is one input line for serveStdio, or the end of the input
// (err set, line empty).
type stdioLine struct {
	line    []byte
	tooLong bool
	err     error
}

// serveStdio runs one JSON envelope per input line and writes one JSON result
// per line, with the envelope's "id" echoed first, in input order. A
// malformed line gets an error result and the loop goes on.
//
// Input is read by its own goroutine into a queue, ahead of the line being
// run (at most stdioReadAhead bytes), so a client that writes many lines
// before reading any never deadlocks against a full output pipe. Results
// are buffered and flushed whenever no further line is waiting: a client
// that waits for an answer gets it before the server waits for more input,
// and a pipelined client gets its answers in large writes.
func serveStdio(ctx context.Context, run func(context.Context, []byte) *executor.Outcome, r io.Reader, w io.Writer) error {
	limit := executor.DefaultLimits.MaxInputBytes
	q := newLineQueue(stdioReadAhead)
	defer q.close()
	go q.fill(r, limit)

	bw := bufio.NewWriterSize(w, 64<<10)
	flush := func() error {
		if err := bw.Flush(); err != nil {
			return fmt.Errorf("write stdout: %w", err)
		}
		return nil
	}
	for {
		in, ok := q.pop()
		if !ok {
			// Nothing more to run now: the results so far go out before
			// waiting for input.
			if err := flush(); err != nil {
				return err
			}
			select {
			case <-q.ready:
				continue
			case <-ctx.Done():
				return nil
			}
		}
		if in.err != nil {
			if err := flush(); err != nil {
				return err
			}
			if errors.Is(in.err, io.EOF) {
				return nil
			}
			return fmt.Errorf("read stdin: %w", in.err)
		}
		var res []byte
		var id json.RawMessage
		if in.tooLong {
			o := executor.Outcome{Err: executor.Errorf(executor.CodeTooLarge, "Line is over the %d-byte limit; it was discarded", limit)}
			res = o.JSON()
		} else {
			o := run(ctx, in.line)
			res, id = o.JSON(), o.ID
		}
		if err := writeStdioResult(bw, id, res); err != nil {
			return fmt.Errorf("write stdout: %w", err)
		}
		if ctx.Err() != nil {
			return flush()
		}
	}
}

// lineQueue holds the input lines read ahead of the one being run: filled
// by one goroutine (fill), emptied by serveStdio (pop).
type lineQueue struct {
	bound int           // bytes queued above which fill waits
	ready chan struct{} // 1-buffered: a line was queued
	space chan struct{} // 1-buffered: the queue went under its bound
	stop  chan struct{} // closed when serveStdio returns

	mu    sync.Mutex
	lines []stdioLine
	head  int
	bytes int
}

func newLineQueue(bound int) *lineQueue {
	return &lineQueue{bound: bound, ready: make(chan struct{}, 1), space: make(chan struct{}, 1), stop: make(chan struct{})}
}

func (q *lineQueue) close() { close(q.stop) }

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
	wasEmpty := q.head == len(q.lines)
	q.lines = append(q.lines, l)
	q.bytes += len(l.line)
	over := q.bytes > q.bound
	q.mu.Unlock()
	notify(q.ready)
	if wasEmpty {
		// The line runs next, most likely on this P: let it run now rather
		// than after this goroutine's next read has blocked in the kernel.
		runtime.Gosched()
	}
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

// fill reads lines from r into the queue, leaving out blank ones, then
// queues the end of the input (EOF or the read error). It returns then, or
// when the queue is closed.
func (q *lineQueue) fill(r io.Reader, limit int) {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, tooLong, err := readLine(br, limit)
		if len(bytes.TrimSpace(line)) > 0 || tooLong {
			if !q.push(stdioLine{line: line, tooLong: tooLong}) {
				return
			}
		}
		if err != nil {
			q.push(stdioLine{err: err})
			return
		}
	}
}

// writeStdioResult writes one result line into bw, the id first when the
// envelope had one. The caller flushes.
func writeStdioResult(bw *bufio.Writer, id json.RawMessage, res []byte) error {
	if len(id) > 0 {
		bw.WriteString(`{"id":`)
		bw.Write(bytes.TrimSpace(id))
		bw.WriteByte(',')
		bw.Write(res[1:])
	} else {
		bw.Write(res)
	}
	return bw.WriteByte('\n')
}

// readLine reads one line of at most limit bytes. A longer line is consumed
// to its end and reported with tooLong, so one bad line never desynchronises
// the stream.
func readLine(br *bufio.Reader, limit int) (line []byte, tooLong bool, err error) {
	var buf []byte
	for {
		chunk, isPrefix, err := br.ReadLine()
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

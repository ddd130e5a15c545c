package verbs

import (
	"context"
	"sync"
	"time"

	"github.com/a6afc2ce/hermes-hub/clock"
	"github.com/a6afc2ce/hermes-hub/executor"
)

// progressEvery is how often proc.run reports the last lines of a running
// program's output (only when it changed, and only when someone listens).
const progressEvery = time.Second

// progressBytes is how much of the most recent output (stdout and stderr
// interleaved as they arrive) proc.run keeps for its progress reports.
const progressBytes = 4 << 10

// progressLines and progressLineBytes bound a progress report's tail.
const (
	progressLines     = 10
	progressLineBytes = 200
)

// recentOutput keeps the last bytes a program wrote to either stream, in
// the order they arrived, as a terminal would show them.
type recentOutput struct {
	mu    sync.Mutex
	buf   []byte
	total int64
}

func (r *recentOutput) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.total += int64(len(p))
	r.buf = append(r.buf, p[max(0, len(p)-progressBytes):]...)
	if len(r.buf) > 2*progressBytes {
		r.buf = append(r.buf[:0], r.buf[len(r.buf)-progressBytes:]...)
	}
	return len(p), nil
}

// snapshot returns the kept bytes and how many were written in all.
func (r *recentOutput) snapshot() (string, int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return string(r.buf[max(0, len(r.buf)-progressBytes):]), r.total
}

// progressReporter reports a running program's elapsed time and last lines
// every progressEvery on the clock, until stop.
type progressReporter struct {
	ctx   context.Context
	clk   clock.Clock
	start time.Time
	out   *recentOutput

	mu      sync.Mutex
	timer   clock.Timer
	stopped bool
	running sync.WaitGroup
	seen    int64
}

// reportProgress starts reporting the progress of the call in ctx when
// someone listens; the returned stop ends it (see progressReporter.stop).
// out receives the program's output.
func reportProgress(ctx context.Context, clk clock.Clock, out *recentOutput) (stop func()) {
	if !executor.WantsProgress(ctx) {
		return func() {}
	}
	r := &progressReporter{ctx: ctx, clk: clk, start: clk.Now(), out: out, seen: -1}
	r.mu.Lock()
	r.timer = clk.AfterFunc(progressEvery, r.tick)
	r.mu.Unlock()
	return r.stop
}

func (r *progressReporter) tick() {
	r.mu.Lock()
	if r.stopped {
		r.mu.Unlock()
		return
	}
	r.running.Add(1)
	r.mu.Unlock()
	defer r.running.Done()
	text, total := r.out.snapshot()
	if total != r.seen {
		r.seen = total
		executor.ReportProgress(r.ctx, executor.Progress{
			Elapsed: r.clk.Now().Sub(r.start),
			Tail:    executor.LastLines(text, progressLines, progressLineBytes),
		})
	}
	r.mu.Lock()
	if !r.stopped {
		r.timer = r.clk.AfterFunc(progressEvery, r.tick)
	}
	r.mu.Unlock()
}

// stop ends the reports, waits for one under way and sends a last one
// when the output changed since, so the listener holds the final lines.
func (r *progressReporter) stop() {
	r.mu.Lock()
	r.stopped = true
	if r.timer != nil {
		r.timer.Stop()
	}
	r.mu.Unlock()
	r.running.Wait()
	if text, total := r.out.snapshot(); total != r.seen {
		r.seen = total
		executor.ReportProgress(r.ctx, executor.Progress{
			Elapsed: r.clk.Now().Sub(r.start),
			Tail:    executor.LastLines(text, progressLines, progressLineBytes),
		})
	}
}

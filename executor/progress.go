package executor

import (
	"context"
	"strings"
	"time"
)

// Progress is what a running verb reports about itself: how long it has
// run and the last lines of its output so far. The hub shows it where the
// call came from (an edited chat message, the panel, an MCP progress
// notification) once the call has run longer than a few seconds.
type Progress struct {
	Elapsed time.Duration
	// Tail is the last lines of the verb's output so far ("" when it has
	// none); a reporter replaces the previous tail, it does not append.
	Tail string
}

// ProgressFunc receives a call's progress. It is called from the verb's
// goroutines and must return quickly.
type ProgressFunc func(Progress)

type progressKey struct{}

// WithProgress returns a context whose verb calls report their progress to
// f, as well as to any reporter ctx already carries (the hub's own
// reporter and a surface's, such as an MCP progress token, both hear it).
func WithProgress(ctx context.Context, f ProgressFunc) context.Context {
	if prev, ok := ctx.Value(progressKey{}).(ProgressFunc); ok {
		next := f
		f = func(p Progress) {
			prev(p)
			next(p)
		}
	}
	return context.WithValue(ctx, progressKey{}, f)
}

// ReportProgress tells the reporters of ctx how the call is going; without
// one it does nothing.
func ReportProgress(ctx context.Context, p Progress) {
	if f, ok := ctx.Value(progressKey{}).(ProgressFunc); ok {
		f(p)
	}
}

// WantsProgress reports whether anyone listens to the progress of calls
// made with ctx, so a verb spends nothing on reports no one reads.
func WantsProgress(ctx context.Context) bool {
	_, ok := ctx.Value(progressKey{}).(ProgressFunc)
	return ok
}

// LastLines is the last n lines of s (without a trailing newline), each cut
// to maxLine bytes at a rune boundary, for progress displays.
func LastLines(s string, n, maxLine int) string {
	s = strings.TrimRight(s, "\n")
	if s == "" || n <= 0 {
		return ""
	}
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	for i, l := range lines {
		l = strings.TrimRight(l, "\r")
		if maxLine > 0 && len(l) > maxLine {
			cut := maxLine
			for cut > 0 && !runeStart(l[cut]) {
				cut--
			}
			l = l[:cut] + "…"
		}
		lines[i] = l
	}
	return strings.Join(lines, "\n")
}

func runeStart(b byte) bool { return b&0xC0 != 0x80 }

package search

import "sync/atomic"

// Reason says why a walk stopped before its end.
type Reason int32

// Reasons, the first one set wins.
const (
	NotStopped Reason = iota
	ByCount           // the result cap was reached
	ByTime            // the deadline came
	ByBytes           // the result's byte budget was spent
	ByCancel          // the caller went away
)

// String names the reason as results spell it.
func (r Reason) String() string {
	switch r {
	case ByCount:
		return "count"
	case ByTime:
		return "time"
	case ByBytes:
		return "bytes"
	case ByCancel:
		return "canceled"
	}
	return ""
}

// Stop is a walk's stop signal, shared by its workers: set once, by the
// first reason.
type Stop struct{ r atomic.Int32 }

// Set stops the walk for r, unless it stopped already.
func (s *Stop) Set(r Reason) { s.r.CompareAndSwap(int32(NotStopped), int32(r)) }

// Reason is why the walk stopped, NotStopped while it goes on.
func (s *Stop) Reason() Reason { return Reason(s.r.Load()) }

// Stopped reports whether the walk stopped.
func (s *Stop) Stopped() bool { return s.r.Load() != int32(NotStopped) }

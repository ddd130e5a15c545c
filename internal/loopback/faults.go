package loopback

import (
	"net/http"
	"strings"
	"sync"
	"time"
)

// Faults is the fault-injection core every fake platform shares: the
// schedule of faults of type F, matched against requests R (Schedule), and
// whether the platform is up (Down, Up), over the loopback server the fake
// serves on. A fake gives it its own API (a Bot API method to match, an
// HTTP method and path) and plays a taken fault's network part with Stall.
//
// Its methods are safe for concurrent use. It takes no lock of the fake's,
// so a fake may call Take under its own lock, to record a request together
// with the fault it is answered with.
type Faults[F, R any] struct {
	net *Server

	mu    sync.Mutex
	sched Schedule[F, R]
	mode  DownMode
}

// NewFaults returns the faults of a fake served on net: none scheduled, the
// platform up.
func NewFaults[F, R any](net *Server) *Faults[F, R] { return &Faults[F, R]{net: net} }

// Queue answers the next request that match accepts with f, before any
// rule (Schedule.Queue).
func (x *Faults[F, R]) Queue(f F, match func(R) bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.sched.Queue(f, match)
}

// AddRule answers every every-th request that match accepts with f, count
// times (0: until Clear) (Schedule.AddRule).
func (x *Faults[F, R]) AddRule(every, count int, f F, match func(R) bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.sched.AddRule(every, count, f, match)
}

// Clear removes every rule and queued fault.
func (x *Faults[F, R]) Clear() {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.sched.Clear()
}

// Done reports whether every rule with a count has fired that often.
func (x *Faults[F, R]) Done() bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.sched.Done()
}

// Take returns the fault for this request, if any (Schedule.Take).
func (x *Faults[F, R]) Take(req R) (F, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.sched.Take(req)
}

// Mode is how the platform is unavailable now (Running when it is up).
func (x *Faults[F, R]) Mode() DownMode {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.mode
}

// Down takes the platform away until Up: with Refused its port is closed
// and every open connection cut; with Unavailable the port stays open and
// the fake answers as an unavailable platform does (it reads Mode).
func (x *Faults[F, R]) Down(mode DownMode) {
	x.mu.Lock()
	x.mode = mode
	x.mu.Unlock()
	if mode == Refused {
		x.net.Down()
	}
}

// Up brings the platform back, on the same port.
func (x *Faults[F, R]) Up() error {
	x.mu.Lock()
	x.mode = Running
	x.mu.Unlock()
	return x.net.Up()
}

// Stall plays the network part of a taken fault (Server.Stall).
func (x *Faults[F, R]) Stall(w http.ResponseWriter, r *http.Request, delay time.Duration, hang, drop bool) bool {
	return x.net.Stall(w, r, delay, hang, drop)
}

// Describe names a fault for request records and logs, as every fake does:
// its delay, then how it ends (hang, drop, or answer, the fake's own
// description of the answer it gives, "" for none), or "none".
func Describe(delay time.Duration, hang, drop bool, answer string) string {
	var parts []string
	if delay > 0 {
		parts = append(parts, "delay "+delay.String())
	}
	switch {
	case hang:
		parts = append(parts, "hang")
	case drop:
		parts = append(parts, "drop")
	case answer != "":
		parts = append(parts, answer)
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// Schedule decides which requests a fake server answers with a fault of
// type F instead of its normal answer; R is what a fault is matched against
// (a Bot API method, an HTTP method and path). Faults queued for the next
// matching request come first, in the order queued; then rules, each firing
// on every Every-th request it matches, Count times.
//
// A Schedule is not safe for concurrent use: Faults guards it.
type Schedule[F, R any] struct {
	queue []pending[F, R]
	rules []*rule[F, R]
}

type pending[F, R any] struct {
	fault F
	match func(R) bool
}

type rule[F, R any] struct {
	every, count int
	seen, fired  int
	fault        F
	match        func(R) bool
}

// Queue answers the next request that match accepts with f.
func (s *Schedule[F, R]) Queue(f F, match func(R) bool) {
	s.queue = append(s.queue, pending[F, R]{f, match})
}

// AddRule answers every every-th request that match accepts (every below 1
// counts as 1), counted from now, with f, count times (0: until Clear).
func (s *Schedule[F, R]) AddRule(every, count int, f F, match func(R) bool) {
	s.rules = append(s.rules, &rule[F, R]{every: max(every, 1), count: count, fault: f, match: match})
}

// Clear removes every rule and queued fault.
func (s *Schedule[F, R]) Clear() {
	s.queue, s.rules = nil, nil
}

// Done reports whether every rule with a count has fired that often.
func (s *Schedule[F, R]) Done() bool {
	for _, r := range s.rules {
		if r.count > 0 && r.fired < r.count {
			return false
		}
	}
	return true
}

// Take returns the fault for this request, if any. Every rule that matches
// counts the request, even when an earlier one fires, so that each rule's
// schedule does not depend on the others.
func (s *Schedule[F, R]) Take(req R) (F, bool) {
	for i, p := range s.queue {
		if p.match(req) {
			s.queue = append(s.queue[:i:i], s.queue[i+1:]...)
			return p.fault, true
		}
	}
	var pick F
	picked := false
	for _, r := range s.rules {
		if (r.count > 0 && r.fired >= r.count) || !r.match(req) {
			continue
		}
		r.seen++
		if !picked && r.seen%r.every == 0 {
			r.fired++
			pick, picked = r.fault, true
		}
	}
	return pick, picked
}

// Stall plays the network part of a fault on a request: it waits delay
// first, then with hang holds the request until the client or the server
// gives up, and with drop closes the connection without an answer. It
// reports whether the request should still be answered: false when the
// wait was cut short or the request was hung or dropped.
func (l *Server) Stall(w http.ResponseWriter, r *http.Request, delay time.Duration, hang, drop bool) bool {
	if delay > 0 && !l.Hold(r.Context(), delay) {
		return false
	}
	switch {
	case hang:
		l.Hold(r.Context(), -1)
		return false
	case drop:
		if hj, ok := w.(http.Hijacker); ok {
			if c, _, err := hj.Hijack(); err == nil {
				c.Close()
			}
		}
		return false
	}
	return true
}

// Lose plays a request whose effect happens but whose answer is lost: the
// fake handles the request writing to the returned writer, which keeps
// nothing, and lost then closes the connection without an answer, as when
// the network (or the client's process) dies after the platform acted.
func (l *Server) Lose(w http.ResponseWriter) (answer http.ResponseWriter, lost func()) {
	return &discardWriter{h: http.Header{}}, func() {
		if hj, ok := w.(http.Hijacker); ok {
			if c, _, err := hj.Hijack(); err == nil {
				c.Close()
			}
		}
	}
}

// discardWriter is a ResponseWriter that keeps nothing.
type discardWriter struct{ h http.Header }

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (d *discardWriter) WriteHeader(int)             {}

// DownMode is how a fake platform is unavailable.
type DownMode int

// Down modes.
const (
	// Running: the platform answers.
	Running DownMode = iota
	// Refused: the port is closed; connections are refused and open ones
	// (long polls and websockets included) are cut.
	Refused
	// Unavailable: the port is open and every request gets a 503.
	Unavailable
)

func (m DownMode) String() string {
	switch m {
	case Refused:
		return "refused"
	case Unavailable:
		return "unavailable"
	}
	return "running"
}

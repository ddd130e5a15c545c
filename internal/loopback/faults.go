package loopback

import (
	"net/http"
	"time"
)

// Schedule decides which requests a fake server answers with a fault of
// type F instead of its normal answer; R is what a fault is matched against
// (a Bot API method, an HTTP method and path). Faults queued for the next
// matching request come first, in the order queued; then rules, each firing
// on every Every-th request it matches, Count times.
//
// A Schedule is not safe for concurrent use: the fake server's own lock
// guards it, together with the request record it writes.
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

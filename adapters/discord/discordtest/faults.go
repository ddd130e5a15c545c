package discordtest

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Fault answers a REST request that matches Method (any when empty) and
// PathPrefix (below /api/v10) instead of the normal answer.
//
//   - Status (with Body and Header): that answer, such as a 429 built by
//     RateLimit or a 500.
//   - Delay: the answer comes after Delay. With no Status the request then
//     succeeds normally (a slow answer); a caller that gives up first gets
//     nothing and the request has no effect.
//   - Hang: no answer until the caller gives up or the server closes; no
//     effect.
//   - Hijack: the connection is closed without an answer; no effect.
type Fault struct {
	Method, PathPrefix string
	Status             int
	Body               string
	Header             map[string]string
	Delay              time.Duration
	Hang               bool
	Hijack             bool
}

func (f Fault) matches(method, path string) bool {
	return (f.Method == "" || f.Method == method) && strings.HasPrefix(path, f.PathPrefix)
}

// String describes the fault for request records and logs.
func (f Fault) String() string {
	var parts []string
	if f.Delay > 0 {
		parts = append(parts, "delay "+f.Delay.String())
	}
	switch {
	case f.Hang:
		parts = append(parts, "hang")
	case f.Hijack:
		parts = append(parts, "drop")
	case f.Status != 0:
		parts = append(parts, strconv.Itoa(f.Status))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// RateLimit is a 429 fault with Discord's body and headers, asking to wait
// retryAfter seconds.
func RateLimit(method, prefix string, retryAfter float64) Fault {
	s := strconv.FormatFloat(retryAfter, 'f', -1, 64)
	return Fault{
		Method: method, PathPrefix: prefix, Status: http.StatusTooManyRequests,
		Body: fmt.Sprintf(`{"message": "You are being rate limited.", "retry_after": %s, "global": false}`, s),
		Header: map[string]string{
			"X-RateLimit-Limit": "5", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset-After": s,
			"X-RateLimit-Bucket": "fake-bucket", "Retry-After": strconv.Itoa(int(retryAfter + 0.999)),
		},
	}
}

// ServerError is a fault answering status (5xx) with Discord's error body.
func ServerError(method, prefix string, status int) Fault {
	return Fault{Method: method, PathPrefix: prefix, Status: status,
		Body: fmt.Sprintf(`{"message": "%d: %s", "code": 0}`, status, http.StatusText(status))}
}

// FailNext queues a fault for the next matching request; queued faults are
// used before any rule.
func (s *Server) FailNext(ft Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, ft)
}

// Rule answers the requests its Fault matches on a schedule: every
// Every-th matching request (1 or 0: every one), counted from when the rule
// was added, Count times (0: until ClearRules).
type Rule struct {
	Every int
	Count int
	Fault Fault
}

type ruleState struct {
	Rule
	seen, fired int
}

// AddRule adds a fault schedule.
func (s *Server) AddRule(r Rule) {
	if r.Every < 1 {
		r.Every = 1
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rules = append(s.rules, &ruleState{Rule: r})
}

// ClearRules removes every fault schedule and queued fault.
func (s *Server) ClearRules() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rules = nil
	s.faults = nil
}

// RulesDone reports whether every rule with a Count has fired that often.
func (s *Server) RulesDone() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.rules {
		if r.Count > 0 && r.fired < r.Count {
			return false
		}
	}
	return true
}

// takeFault picks the fault of this request, if any; s.mu is held.
func (s *Server) takeFault(method, path string) *Fault {
	for i, x := range s.faults {
		if x.matches(method, path) {
			s.faults = append(s.faults[:i:i], s.faults[i+1:]...)
			return &x
		}
	}
	var pick *Fault
	for _, r := range s.rules {
		if !r.Fault.matches(method, path) || (r.Count > 0 && r.fired >= r.Count) {
			continue
		}
		r.seen++
		if pick == nil && r.seen%r.Every == 0 {
			r.fired++
			ft := r.Fault
			pick = &ft
		}
	}
	return pick
}

// applyFault answers the request as ft says; it reports whether the normal
// answer should follow (a slow success).
func (s *Server) applyFault(w http.ResponseWriter, r *http.Request, ft Fault) bool {
	if ft.Delay > 0 && !s.net.Hold(r.Context(), ft.Delay) {
		return false
	}
	switch {
	case ft.Hang:
		s.net.Hold(r.Context(), -1)
		return false
	case ft.Hijack:
		if hj, ok := w.(http.Hijacker); ok {
			if c, _, err := hj.Hijack(); err == nil {
				c.Close()
			}
		}
		return false
	case ft.Status != 0:
		for k, v := range ft.Header {
			w.Header().Set(k, v)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(ft.Status)
		_, _ = io.WriteString(w, ft.Body)
		return false
	}
	return true
}

// DownMode is how Discord is unavailable.
type DownMode int

// Down modes.
const (
	// Running: REST and the gateway answer.
	Running DownMode = iota
	// Refused: the port is closed; connections are refused and open ones,
	// the gateway's included, are cut.
	Refused
	// Unavailable: REST answers 503 and the gateway refuses to upgrade.
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

// Down takes Discord away in the given mode until Up; the gateway
// connection is cut in either mode.
func (s *Server) Down(mode DownMode) {
	s.mu.Lock()
	s.down = mode
	s.mu.Unlock()
	s.DropConnection()
	if mode == Refused {
		s.net.Down()
	}
}

// Up brings Discord back on the same port.
func (s *Server) Up() error {
	s.mu.Lock()
	s.down = Running
	s.mu.Unlock()
	return s.net.Up()
}

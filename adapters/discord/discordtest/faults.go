package discordtest

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/a6afc2ce/hermes-hub/internal/loopback"
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
	// Lost: the request takes effect (a message is created), then the
	// connection is closed without its answer.
	Lost bool
}

// request is what a Fault is matched against.
type request struct{ method, path string }

func (f Fault) matches(r request) bool {
	return (f.Method == "" || f.Method == r.method) && strings.HasPrefix(r.path, f.PathPrefix)
}

// String describes the fault for request records and logs.
func (f Fault) String() string {
	answer := ""
	if f.Status != 0 {
		answer = strconv.Itoa(f.Status)
	}
	if f.Lost {
		answer = "answer lost"
	}
	return loopback.Describe(f.Delay, f.Hang, f.Hijack, answer)
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
func (s *Server) FailNext(ft Fault) { s.faults.Queue(ft, ft.matches) }

// Rule answers the requests its Fault matches on a schedule: every
// Every-th matching request (1 or 0: every one), counted from when the rule
// was added, Count times (0: until ClearRules).
type Rule struct {
	Every int
	Count int
	Fault Fault
}

// AddRule adds a fault schedule.
func (s *Server) AddRule(r Rule) { s.faults.AddRule(r.Every, r.Count, r.Fault, r.Fault.matches) }

// ClearRules removes every fault schedule and queued fault.
func (s *Server) ClearRules() { s.faults.Clear() }

// RulesDone reports whether every rule with a Count has fired that often.
func (s *Server) RulesDone() bool { return s.faults.Done() }

// applyFault answers the request as ft says; it reports whether the normal
// answer should follow (a slow success).
func (s *Server) applyFault(w http.ResponseWriter, r *http.Request, ft Fault) bool {
	if !s.faults.Stall(w, r, ft.Delay, ft.Hang, ft.Hijack) {
		return false
	}
	if ft.Status != 0 {
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

// DownMode is how the platform is unavailable: Running, Refused (the port
// is closed and open connections are cut) or Unavailable (REST answers 503 and the gateway refuses to upgrade).
type DownMode = loopback.DownMode

// Down modes.
const (
	Running     = loopback.Running
	Refused     = loopback.Refused
	Unavailable = loopback.Unavailable
)

// Down takes Discord away in the given mode until Up; the gateway
// connection is cut in either mode, once the port is closed (Refused), so
// the client cannot reconnect in between.
func (s *Server) Down(mode DownMode) {
	s.faults.Down(mode)
	s.DropConnection()
}

// Up brings Discord back on the same port.
func (s *Server) Up() error { return s.faults.Up() }

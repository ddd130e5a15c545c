package telegramtest

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/a6afc2ce/hermes-hub/internal/loopback"
)

// Fault is how one call is answered instead of (or before) the normal
// answer.
//
//   - Code (with Description, RetryAfter, MigrateTo): a Bot API error
//     answer with that error_code and HTTP status, such as 429 with
//     retry_after or 500.
//   - HTMLStatus: an HTML page with that HTTP status, as a proxy answers.
//   - Delay: the answer comes after Delay. With no error set the call then
//     succeeds normally (a slow answer); a caller that gives up first gets
//     nothing and the call has no effect.
//   - Hang: no answer at all until the caller gives up (its timeout or
//     context) or the server closes; the call has no effect.
//   - Drop: the connection is closed without an answer; no effect.
//   - Lost: the call takes effect (a message is sent), then the
//     connection is closed without its answer, as when the hub dies
//     between a send and its mark.
type Fault struct {
	Code        int
	Description string
	RetryAfter  int   // parameters.retry_after, seconds
	MigrateTo   int64 // parameters.migrate_to_chat_id
	HTMLStatus  int
	Delay       time.Duration
	Hang        bool
	Drop        bool
	Lost        bool
}

// String describes the fault for call records and logs.
func (f Fault) String() string {
	answer := ""
	switch {
	case f.HTMLStatus != 0:
		answer = fmt.Sprintf("HTML %d", f.HTMLStatus)
	case f.Code != 0:
		answer = fmt.Sprintf("%d %s", f.Code, f.Description)
		if f.RetryAfter > 0 {
			answer += fmt.Sprintf(" (retry_after %d)", f.RetryAfter)
		}
		answer = strings.TrimSpace(answer)
	}
	if f.Lost {
		answer = "answer lost"
	}
	return loopback.Describe(f.Delay, f.Hang, f.Drop, answer)
}

// TooManyRequests is Telegram's 429 answer asking to wait retryAfter
// seconds.
func TooManyRequests(retryAfter int) Fault {
	return Fault{Code: http.StatusTooManyRequests, Description: fmt.Sprintf("Too Many Requests: retry after %d", retryAfter), RetryAfter: retryAfter}
}

// ServerError is a Bot API error answer with a 5xx status.
func ServerError(status int) Fault {
	return Fault{Code: status, Description: http.StatusText(status)}
}

// Rule answers calls of Method with Fault on a schedule: every Every-th
// call (1 or 0: every call), counted from when the rule was added, Count
// times (0: until ClearRules). Method "" matches every method but
// getUpdates.
type Rule struct {
	Method string
	Every  int
	Count  int
	Fault  Fault
}

// Inject queues faults for the next calls of method, one per call, before
// any rule.
func (s *Server) Inject(method string, faults ...Fault) {
	for _, ft := range faults {
		s.faults.Queue(ft, func(m string) bool { return m == method })
	}
}

// AddRule adds a fault schedule.
func (s *Server) AddRule(r Rule) {
	s.faults.AddRule(r.Every, r.Count, r.Fault, func(m string) bool {
		return m == r.Method || (r.Method == "" && m != "getUpdates")
	})
}

// ClearRules removes every fault schedule and queued fault.
func (s *Server) ClearRules() { s.faults.Clear() }

// RulesDone reports whether every rule with a Count has fired that often.
func (s *Server) RulesDone() bool { return s.faults.Done() }

// applyFault answers the call as ft says; it reports whether the normal
// answer should follow (a slow success).
func (s *Server) applyFault(w http.ResponseWriter, r *http.Request, ft Fault) bool {
	if !s.faults.Stall(w, r, ft.Delay, ft.Hang, ft.Drop) {
		return false
	}
	switch {
	case ft.HTMLStatus != 0:
		writeHTML(w, ft.HTMLStatus)
		return false
	case ft.Code != 0:
		body := map[string]any{"ok": false, "error_code": ft.Code, "description": ft.Description}
		params := map[string]any{}
		if ft.RetryAfter > 0 {
			params["retry_after"] = ft.RetryAfter
		}
		if ft.MigrateTo != 0 {
			params["migrate_to_chat_id"] = ft.MigrateTo
		}
		if len(params) > 0 {
			body["parameters"] = params
		}
		writeAPI(w, ft.Code, body)
		return false
	}
	return true
}

// DownMode is how the platform is unavailable: Running, Refused (the port
// is closed and open connections are cut) or Unavailable (every call gets an HTML 503 page).
type DownMode = loopback.DownMode

// Down modes.
const (
	Running     = loopback.Running
	Refused     = loopback.Refused
	Unavailable = loopback.Unavailable
)

// Down takes the API away in the given mode until Up.
func (s *Server) Down(mode DownMode) { s.faults.Down(mode) }

// Up brings the API back on the same port.
func (s *Server) Up() error { return s.faults.Up() }

package metrics

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// Health answers the probes of load balancers and supervisors, without
// authentication and with nothing an attacker could use:
//
//   - /healthz: 200 "ok" while the process serves.
//   - /readyz: 200 "ready" when the runtime is open and every adapter on the
//     board is running or degraded (retrying); else 503 with a one-line
//     reason naming the adapters and their states only.
//
// open reports whether the runtime is open (hub.Runtime.Running); nil
// counts as open.
func Health(board Board, open func() bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Type", "text/plain; charset=utf-8")
		h.Set("Cache-Control", "no-store")
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			h.Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		switch r.URL.Path {
		case "/healthz":
			fmt.Fprintln(w, "ok")
		case "/readyz":
			if reason := notReady(board, open); reason != "" {
				w.WriteHeader(http.StatusServiceUnavailable)
				fmt.Fprintln(w, "not ready: "+reason)
				return
			}
			fmt.Fprintln(w, "ready")
		default:
			http.NotFound(w, r)
		}
	})
}

// notReady says why the hub is not ready, or "" when it is. The reason
// names adapters and states, never a detail (which may hold addresses or
// paths).
func notReady(board Board, open func() bool) string {
	if open != nil && !open() {
		return "the runtime is not open"
	}
	if board == nil {
		return ""
	}
	var bad []string
	for _, a := range board.All() {
		if !a.State.Ready() {
			bad = append(bad, a.Name+" "+string(a.State))
		}
	}
	if len(bad) == 0 {
		return ""
	}
	slices.Sort(bad)
	return "adapters not running: " + strings.Join(bad, ", ")
}

package web

import (
	"net/http"

	"github.com/a6afc2ce/hermes-hub/admin"
)

// Operators' endpoints: the probes, answered before login, and the metrics,
// behind the API's authentication. Both pass the Host allow-list, the body
// cap and the connection caps like every request.
const (
	HealthPath  = "/healthz"
	ReadyPath   = "/readyz"
	MetricsPath = "/metrics"
)

// ops serves r when it is for an operator's endpoint the server has a
// handler for, and reports whether it did.
func (s *Server) ops(w http.ResponseWriter, r *http.Request) bool {
	switch r.URL.Path {
	case HealthPath, ReadyPath:
		if s.health == nil {
			return false
		}
		s.health.ServeHTTP(w, r)
		return true
	case MetricsPath:
		if s.metrics == nil {
			return false
		}
		w.Header().Set("Cache-Control", "no-store")
		if s.auth.method(r) == authNone {
			if attempted(r) {
				if client, secs := s.WrongCredentials(r); secs > 0 {
					tooMany(w, client, secs)
					return true
				}
			}
			w.Header().Set("WWW-Authenticate", `Bearer realm="hub"`)
			admin.WriteError(w, http.StatusUnauthorized, "authentication required: send Authorization: Bearer <token>")
			return true
		}
		s.metrics.ServeHTTP(w, r)
		return true
	}
	return false
}

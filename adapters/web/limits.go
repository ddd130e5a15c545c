package web

import (
	"github.com/a6afc2ce/hermes-hub/config"
)

// withLimitDefaults fills the listener's limits a configuration left unset
// (one built in code rather than loaded).
func withLimitDefaults(c config.Web) config.Web {
	if c.MaxConnections <= 0 {
		c.MaxConnections = DefaultMaxConnections
	}
	if c.MaxConnectionsPerClient <= 0 || c.MaxConnectionsPerClient > c.MaxConnections {
		c.MaxConnectionsPerClient = min(DefaultMaxConnectionsPerClient, c.MaxConnections)
	}
	if c.HeaderTimeout <= 0 {
		c.HeaderTimeout = config.Duration(DefaultHeaderTimeout)
	}
	if c.BodyTimeout <= 0 {
		c.BodyTimeout = config.Duration(DefaultBodyTimeout)
	}
	if c.WriteTimeout <= 0 {
		c.WriteTimeout = config.Duration(DefaultWriteTimeout)
	}
	if c.IdleTimeout <= 0 {
		c.IdleTimeout = config.Duration(DefaultIdleTimeout)
	}
	return c
}

// logRefused logs connections refused over a cap: the first, the 10th,
// the 100th…, so a flood shows without flooding the log.
func (s *Server) logRefused(client, reason string, refused int64) {
	n := refused
	for n >= 10 && n%10 == 0 {
		n /= 10
	}
	if n == 1 {
		s.log.Warn("web: connection refused over a cap", "cap", "web."+reason, "client", client, "refused_so_far", refused)
	}
}

// connStats is the listener's part of the status: connections open and
// refused so far.
func (s *Server) connStats() map[string]any {
	ln := s.conns.Load()
	if ln == nil {
		return nil
	}
	return map[string]any{"open": ln.Open(), "refused": ln.Refused()}
}

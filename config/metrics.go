package config

import "net"

// Metrics configures where the Prometheus metrics (docs/metrics.md) are
// served.
type Metrics struct {
	// Listen is a separate host:port for GET /metrics, without
	// authentication; empty serves /metrics on the web listener behind the
	// web token instead.
	Listen string `yaml:"listen"`
}

func (m *Metrics) applyDefaults(*Config) {}

func (m *Metrics) validate(_ *Config, v *validator) {
	if m.Listen == "" {
		return
	}
	if _, _, err := net.SplitHostPort(m.Listen); err != nil {
		v.bad("metrics.listen", ": %q is not host:port (for example 127.0.0.1:9090)", m.Listen)
	}
}

package config

import (
	"fmt"
	"net"
	"net/netip"
	"strings"
	"time"
)

// Web configures the web panel and HTTP API.
type Web struct {
	Enabled *bool  `yaml:"enabled"`
	Listen  string `yaml:"listen"`
	// Token authenticates API clients and the panel login. Required when
	// Listen is not a loopback address; generated per start otherwise.
	Token Secret `yaml:"token"`
	// TokenFile names a file holding the token instead (see readTokenFiles).
	TokenFile string `yaml:"token_file"`
	// PublicURL is how the outside world reaches this listener (for the
	// Telegram webhook and printed login links).
	PublicURL    string   `yaml:"public_url"`
	TLSCert      string   `yaml:"tls_cert"`
	TLSKey       string   `yaml:"tls_key"`
	MaxBodyBytes Size     `yaml:"max_body_bytes"`
	History      int      `yaml:"history"`         // SSE events kept for replay
	AllowOrigins []string `yaml:"allowed_origins"` // extra origins for state-changing requests
	// TrustedProxies are the reverse proxies (CIDRs or addresses) whose
	// X-Forwarded-For names the client; from anyone else it is ignored.
	TrustedProxies []string `yaml:"trusted_proxies"`
	// AllowedHosts are extra Host header names the listener answers to,
	// besides loopback names, its own address and public_url's host.
	AllowedHosts []string `yaml:"allowed_hosts"`
	// MaxConnections caps the listener's open connections; one more is
	// closed as soon as it is accepted.
	MaxConnections int `yaml:"max_connections"`
	// MaxConnectionsPerClient caps the open connections of one client
	// address (behind a reverse proxy every client is the proxy's address).
	MaxConnectionsPerClient int `yaml:"max_connections_per_client"`
	// HeaderTimeout bounds reading a request's headers, BodyTimeout its
	// body, WriteTimeout writing a response (each write of a stream) and
	// IdleTimeout how long a kept-alive connection may wait for its next
	// request.
	HeaderTimeout Duration `yaml:"header_timeout"`
	BodyTimeout   Duration `yaml:"body_timeout"`
	WriteTimeout  Duration `yaml:"write_timeout"`
	IdleTimeout   Duration `yaml:"idle_timeout"`

	// ListenFrom says where Listen came from when not from the file or
	// the default: ListenEnv, or the command line's ListenFlag.
	ListenFrom string `yaml:"-"`
}

// Where web.listen may come from besides the file, strongest first: the
// command line of `hub serve`, then the environment (whatever the file
// says), then the file, then the default.
const (
	ListenFlag = "--listen"
	ListenEnv  = "HUB_WEB_LISTEN"
)

// Listen returns the Override that sets web.listen from the command line
// (ListenFlag); an empty addr changes nothing.
func Listen(addr string) Override {
	return func(c *Config) {
		if addr != "" {
			c.Web.Listen, c.Web.ListenFrom = addr, ListenFlag
		}
	}
}

// listenFromEnv applies ListenEnv when it is set and not empty.
func (w *Web) listenFromEnv(env Getenv) {
	if a, ok := env(ListenEnv); ok && a != "" {
		w.Listen, w.ListenFrom = a, ListenEnv
	}
}

// Bounds of the web limits.
const (
	MaxWebConnections = 1 << 20
	MaxWebHistory     = 100000
)

func (w *Web) applyDefaults(*Config) {
	defaultTrue(&w.Enabled)
	setDefault(&w.Listen, "127.0.0.1:8080")
	setDefault(&w.MaxBodyBytes, 1<<20)
	setDefault(&w.History, 1000)
	setDefault(&w.MaxConnections, 1024)
	setDefault(&w.MaxConnectionsPerClient, 64)
	setDefault(&w.HeaderTimeout, Duration(10*time.Second))
	setDefault(&w.BodyTimeout, Duration(60*time.Second))
	setDefault(&w.WriteTimeout, Duration(60*time.Second))
	setDefault(&w.IdleTimeout, Duration(120*time.Second))
}

// validate checks the listener, its token and its limits; nothing when
// the web listener is off.
func (w *Web) validate(_ *Config, v *validator) {
	if !*w.Enabled {
		if w.ListenFrom == ListenFlag {
			v.badFrom(ListenFlag, "web.listen", " moves the web panel, which is off (web.enabled: false): enable it, or drop %s", ListenFlag)
		}
		return
	}
	host, port, err := net.SplitHostPort(w.Listen)
	if err != nil || port == "" {
		v.badFrom(w.ListenFrom, "web.listen", ": %q is not host:port (for example 127.0.0.1:8080)", w.Listen)
	} else if !IsLoopback(host) && !w.Token.IsSet() {
		v.badFrom(w.ListenFrom, "web.listen", ": %s is not a loopback address, so web.token must be set (for example token: ${HUB_WEB_TOKEN}); without a token the panel only binds to 127.0.0.1", w.Listen)
	}
	if (w.TLSCert == "") != (w.TLSKey == "") {
		v.bad("web.tls_cert", " and web.tls_key must be set together")
	}
	if w.Token.IsSet() && len(w.Token.Reveal()) < 16 {
		v.bad("web.token", " is too short: use at least 16 characters (for example from `openssl rand -hex 24`)")
	}
	for i, p := range w.TrustedProxies {
		if _, err := ParseCIDR(p); err != nil {
			v.badAt(item("web.trusted_proxies", i), "web.trusted_proxies", ": %v", err)
		}
	}
	for i, h := range w.AllowedHosts {
		if h == "" || strings.ContainsAny(h, "/:@ \t") && net.ParseIP(strings.Trim(h, "[]")) == nil {
			v.badAt(item("web.allowed_hosts", i), "web.allowed_hosts", ": %q is not a host name such as hub.example.org (no scheme, port or path)", h)
		}
	}
	w.validateLimits(v)
}

// validateLimits checks the caps and timeouts of the listener.
func (w *Web) validateLimits(v *validator) {
	if n := w.MaxConnections; n < 1 || n > MaxWebConnections {
		v.bad("web.max_connections", ": %d is out of range (accepted: 1 to %d connections at once)", n, MaxWebConnections)
	}
	if n := w.MaxConnectionsPerClient; n < 1 || n > w.MaxConnections {
		v.bad("web.max_connections_per_client", ": %d is out of range (accepted: 1 to web.max_connections, %d)", n, w.MaxConnections)
	}
	if h := w.History; h < 1 || h > MaxWebHistory {
		v.bad("web.history", ": %d is out of range (accepted: 1 to %d events)", h, MaxWebHistory)
	}
	for _, t := range []struct {
		key string
		d   Duration
	}{{"web.header_timeout", w.HeaderTimeout}, {"web.body_timeout", w.BodyTimeout}, {"web.write_timeout", w.WriteTimeout}, {"web.idle_timeout", w.IdleTimeout}} {
		if t.d.D() < 100*time.Millisecond || t.d.D() > time.Hour {
			v.bad(t.key, ": %s is out of range (accepted: 100ms to 1h)", t.d)
		}
	}
}

func (w *Web) secretFiles() []secretFile {
	return []secretFile{
		{key: "web.token_file", path: w.TokenFile, tokenKey: "web.token", token: w.Token, setToken: func(s Secret) { w.Token = s }},
		{key: "web.tls_cert", path: w.TLSCert},
		{key: "web.tls_key", path: w.TLSKey},
	}
}

// operatorPanel reports whether the panel is the operator's own: served,
// on a loopback address, with the token generated at start (none
// configured). The defaults of an absent access section depend on it.
func (w *Web) operatorPanel() bool {
	host, _, err := net.SplitHostPort(w.Listen)
	return *w.Enabled && err == nil && IsLoopback(host) && !w.Token.IsSet()
}

// IsLoopback reports whether host (a name or an IP) is a loopback address.
func IsLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// ParseCIDR parses a network (10.0.0.0/8, fd00::/8) or a single address
// (taken as its own /32 or /128).
func ParseCIDR(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("%q is not a network such as 10.0.0.0/8 or an address such as 10.0.0.1", s)
		}
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("%q is not a network such as 10.0.0.0/8 or an address such as 10.0.0.1", s)
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), nil
}

package web

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/a6afc2ce/hermes-hub/admin"
	"github.com/a6afc2ce/hermes-hub/config"
)

// guards are the listener's defences in front of authentication: the Host
// allow-list (DNS rebinding) and the throttle of wrong credentials.
type guards struct {
	// hosts are the names the listener answers to, lower case.
	hosts map[string]bool
	// anyIP accepts every IP-literal Host (the listener is on an
	// unspecified address, so every address of the machine is its own).
	anyIP bool
	// trusted are the proxies whose X-Forwarded-For is believed.
	trusted []netip.Prefix
	// perClient and global count wrong credentials; see throttle.
	perClient *loginLimiter
	global    *loginLimiter
}

// MaxGlobalFailures is the global budget of wrong credentials in
// LoginWindow, from all clients together; past it, every request with wrong
// or missing-but-attempted credentials gets 429 until the window passes.
// Requests with the right token or a valid cookie are never refused.
const MaxGlobalFailures = 100

func newGuards(cfg config.Web, now func() time.Time) (*guards, error) {
	g := &guards{
		hosts:     map[string]bool{"localhost": true},
		perClient: newLoginLimiter(now),
		global:    newLimiter(now, MaxGlobalFailures),
	}
	if host, _, err := net.SplitHostPort(cfg.Listen); err == nil {
		ip, err := netip.ParseAddr(host)
		switch {
		case host == "" || err == nil && ip.IsUnspecified():
			g.anyIP = true
		case err != nil:
			g.hosts[strings.ToLower(host)] = true // a host name
		}
	}
	if cfg.PublicURL != "" {
		if u, err := url.Parse(cfg.PublicURL); err == nil && u.Hostname() != "" {
			g.hosts[strings.ToLower(u.Hostname())] = true
		}
	}
	for _, h := range cfg.AllowedHosts {
		g.hosts[strings.ToLower(strings.Trim(h, "[]"))] = true
	}
	for _, p := range cfg.TrustedProxies {
		pfx, err := config.ParseCIDR(p)
		if err != nil {
			return nil, fmt.Errorf("web: trusted_proxies: %w", err)
		}
		g.trusted = append(g.trusted, pfx)
	}
	return g, nil
}

// hostOK reports whether the Host header of r names this listener: a name
// of the allow-list, a loopback address, the listener's own address (any
// address when it listens on all of them). A DNS-rebinding page reaches the
// listener under its own name, which is refused.
func (s *Server) hostOK(r *http.Request) bool {
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.ToLower(strings.Trim(host, "[]"))
	if host == "" {
		return false
	}
	if s.guards.hosts[host] {
		return true
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return false
	}
	if ip.Unmap().IsLoopback() || s.guards.anyIP {
		return true
	}
	if l, _, err := net.SplitHostPort(s.cfg.Listen); err == nil && strings.EqualFold(strings.Trim(l, "[]"), host) {
		return true
	}
	if a, _, err := net.SplitHostPort(s.Addr()); err == nil && strings.EqualFold(strings.Trim(a, "[]"), host) {
		return true
	}
	return false
}

// refuseHost answers a request whose Host is not this listener's.
func refuseHost(w http.ResponseWriter, r *http.Request) {
	admin.WriteError(w, http.StatusMisdirectedRequest, "Host %q is not a name of this hub: use localhost, its address or web.public_url, or add the name to web.allowed_hosts", r.Host)
}

// clientAddr is the address the throttle counts r under: the peer, or, when
// the peer is a trusted proxy, the nearest address in X-Forwarded-For that
// is not itself a trusted proxy.
func (s *Server) clientAddr(r *http.Request) string {
	peer := remoteHost(r)
	if !s.trustedProxy(peer) {
		return peer
	}
	hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
	for i := len(hops) - 1; i >= 0; i-- {
		hop := strings.TrimSpace(hops[i])
		if hop == "" {
			continue
		}
		a, err := netip.ParseAddr(strings.Trim(hop, "[]"))
		if err != nil {
			return peer // a garbled chain: count it under the proxy
		}
		if !s.trustedProxy(a.Unmap().String()) {
			return a.Unmap().String()
		}
	}
	return peer
}

func (s *Server) trustedProxy(addr string) bool {
	a, err := netip.ParseAddr(addr)
	if err != nil {
		return false
	}
	a = a.Unmap()
	for _, p := range s.guards.trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// WrongCredentials counts a request that carries wrong credentials, and
// returns the client it counts under. When that client, or everyone
// together, has failed too often lately (its own backoff, or the global
// budget's), it counts nothing and returns the whole seconds the client
// must wait, at least 1: the caller answers 429 with that Retry-After.
// The API, the metrics and the handlers mounted on the listener (/mcp)
// share this one budget.
func (s *Server) WrongCredentials(r *http.Request) (client string, retryAfter int) {
	client = s.clientAddr(r)
	if d := max(s.guards.perClient.wait(client), s.guards.global.wait(globalKey)); d > 0 {
		return client, max(int(d.Round(time.Second)/time.Second), 1)
	}
	s.guards.perClient.fail(client)
	s.guards.global.fail(globalKey)
	return client, 0
}

const globalKey = "*"

// tooMany answers 429 with Retry-After.
func tooMany(w http.ResponseWriter, client string, secs int) {
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	admin.WriteError(w, http.StatusTooManyRequests, "too many wrong tokens or login cookies from %s (or from everyone): try again in %d s; the right token is always accepted", client, secs)
}

// attempted reports whether r carries credentials (a bearer token or a
// login cookie), right or wrong.
func attempted(r *http.Request) bool {
	if r.Header.Get("Authorization") != "" {
		return true
	}
	_, err := r.Cookie(CookieName)
	return err == nil
}

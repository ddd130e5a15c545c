package web

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// CookieName is the login cookie set by POST /api/login.
const CookieName = "hub_session"

// SessionTTL is how long a login cookie stays valid.
const SessionTTL = 30 * 24 * time.Hour

// authMethod is how a request proved it may use the API.
type authMethod int

const (
	authNone authMethod = iota
	authBearer
	authCookie
)

// SessionStore keeps login sessions revoked across restarts (the state's
// store.Sessions). Session ids are the cookies' nonces.
type SessionStore interface {
	// Revoke makes a session invalid until its cookie's expiry.
	Revoke(id string, until time.Time) error
	// Revoked reports whether a session was revoked.
	Revoked(id string) (bool, error)
	// Rotate records the current token's fingerprint and returns the time
	// before which every session is invalid (the last change of token).
	Rotate(fingerprint string, now time.Time) (notBefore time.Time, err error)
}

// authenticator checks the bearer token and issues and verifies login
// cookies. A cookie is an expiry and a random nonce signed with HMAC-SHA256
// under a key derived from the token: it cannot be forged without the
// token. With a SessionStore, logging out revokes the cookie's nonce and a
// change of token invalidates every cookie issued before it, across
// restarts (even if an old token comes back); without one, for the rest of
// the process.
type authenticator struct {
	tokenHash [32]byte
	key       []byte
	now       func() time.Time
	sessions  SessionStore // nil: revocations in memory only
	notBefore time.Time    // cookies issued before it are invalid

	mu      sync.Mutex
	revoked map[string]time.Time // nonce → expiry, without sessions
}

func newAuthenticator(token string, now func() time.Time) *authenticator {
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte("hermes-hub web session key v1"))
	return &authenticator{tokenHash: sha256.Sum256([]byte(token)), key: m.Sum(nil), now: now, revoked: map[string]time.Time{}}
}

// useSessions keeps revocations in st from now on and records the token's
// fingerprint there (a change of token invalidates older cookies).
func (a *authenticator) useSessions(st SessionStore) error {
	m := hmac.New(sha256.New, a.key)
	m.Write([]byte("hermes-hub web token fingerprint v1"))
	nb, err := st.Rotate(hex.EncodeToString(m.Sum(nil)), a.now())
	if err != nil {
		return err
	}
	a.sessions, a.notBefore = st, nb
	return nil
}

// generateToken returns 32 random bytes, hex encoded.
func generateToken() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
}

// checkToken compares in constant time (over hashes, so the length does not
// leak either).
func (a *authenticator) checkToken(s string) bool {
	h := sha256.Sum256([]byte(s))
	return subtle.ConstantTimeCompare(h[:], a.tokenHash[:]) == 1
}

const cookiePayloadLen = 8 + 16

// issue returns a new cookie value and its expiry.
func (a *authenticator) issue() (string, time.Time, error) {
	exp := a.now().Add(SessionTTL).Truncate(time.Second)
	var p [cookiePayloadLen]byte
	binary.BigEndian.PutUint64(p[:8], uint64(exp.Unix()))
	if _, err := rand.Read(p[8:]); err != nil {
		return "", time.Time{}, err
	}
	payload := base64.RawURLEncoding.EncodeToString(p[:])
	return payload + "." + a.sign(payload), exp, nil
}

func (a *authenticator) sign(payload string) string {
	m := hmac.New(sha256.New, a.key)
	m.Write([]byte("session." + payload))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

var errBadCookie = errors.New("login cookie is invalid or expired")

// verify checks a cookie value and returns its nonce.
func (a *authenticator) verify(value string) (string, time.Time, error) {
	payload, mac, ok := strings.Cut(value, ".")
	if !ok || len(payload) > 64 || len(mac) > 64 {
		return "", time.Time{}, errBadCookie
	}
	if !hmac.Equal([]byte(mac), []byte(a.sign(payload))) {
		return "", time.Time{}, errBadCookie
	}
	p, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil || len(p) != cookiePayloadLen {
		return "", time.Time{}, errBadCookie
	}
	exp := time.Unix(int64(binary.BigEndian.Uint64(p[:8])), 0)
	if !a.now().Before(exp) || exp.Add(-SessionTTL).Before(a.notBefore) {
		return "", time.Time{}, errBadCookie
	}
	nonce := hex.EncodeToString(p[8:])
	if a.sessions != nil {
		if gone, err := a.sessions.Revoked(nonce); err != nil || gone {
			return "", time.Time{}, errBadCookie // an unreadable list refuses
		}
		return nonce, exp, nil
	}
	a.mu.Lock()
	_, gone := a.revoked[nonce]
	a.mu.Unlock()
	if gone {
		return "", time.Time{}, errBadCookie
	}
	return nonce, exp, nil
}

// revoke makes a cookie value invalid: durably with a SessionStore, for the
// rest of the process without. An invalid value needs nothing.
func (a *authenticator) revoke(value string) error {
	nonce, exp, err := a.verify(value)
	if err != nil {
		return nil
	}
	if a.sessions != nil {
		return a.sessions.Revoke(nonce, exp)
	}
	now := a.now()
	a.mu.Lock()
	defer a.mu.Unlock()
	for n, e := range a.revoked {
		if !now.Before(e) {
			delete(a.revoked, n)
		}
	}
	a.revoked[nonce] = exp
	return nil
}

// method says how r authenticates. A present but wrong Authorization
// header is a failure even when a valid cookie comes along.
func (a *authenticator) method(r *http.Request) authMethod {
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, cred, ok := strings.Cut(h, " ")
		if ok && strings.EqualFold(scheme, "Bearer") && a.checkToken(strings.TrimSpace(cred)) {
			return authBearer
		}
		return authNone
	}
	if c, err := r.Cookie(CookieName); err == nil {
		if _, _, err := a.verify(c.Value); err == nil {
			return authCookie
		}
	}
	return authNone
}

// stateChanging reports whether a method changes state (and so needs the
// Origin check).
func stateChanging(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	return true
}

// normalOrigin returns scheme://host of a URL in lower case, or "" when s
// is not an absolute http(s) URL.
func normalOrigin(s string) string {
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return ""
	}
	return strings.ToLower(u.Scheme + "://" + u.Host)
}

// originOK reports whether the Origin header of r is the listener's own
// origin, the public URL's, or an allowed one. present is false when r has
// no Origin header.
func (s *Server) originOK(r *http.Request) (ok, present bool) {
	o := r.Header.Get("Origin")
	if o == "" {
		return false, false
	}
	o = strings.ToLower(strings.TrimRight(o, "/"))
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	if o == strings.ToLower(scheme+"://"+r.Host) {
		return true, true
	}
	if s.publicOrigin != "" && o == s.publicOrigin {
		return true, true
	}
	return s.allowOrigins[o], true
}

// Throttling of wrong credentials: after MaxLoginFailures wrong tokens or
// login cookies from one client within LoginWindow, that client's requests
// with wrong credentials answer 429 until the window passes (see guards for
// the global budget). The right token is never refused.
const (
	MaxLoginFailures = 10
	LoginWindow      = time.Minute
	maxTrackedAddrs  = 4096
)

// loginLimiter counts failures per key (a client address) in a sliding
// window of LoginWindow.
type loginLimiter struct {
	now func() time.Time
	max int

	mu    sync.Mutex
	fails map[string][]time.Time
}

func newLoginLimiter(now func() time.Time) *loginLimiter { return newLimiter(now, MaxLoginFailures) }

// newLimiter allows max failures per key in LoginWindow.
func newLimiter(now func() time.Time, max int) *loginLimiter {
	return &loginLimiter{now: now, max: max, fails: map[string][]time.Time{}}
}

// recent drops failures older than the window; call with mu held.
func (l *loginLimiter) recent(addr string, now time.Time) []time.Time {
	f := l.fails[addr]
	i := 0
	for i < len(f) && now.Sub(f[i]) >= LoginWindow {
		i++
	}
	f = f[i:]
	if len(f) == 0 {
		delete(l.fails, addr)
		return nil
	}
	l.fails[addr] = f
	return f
}

// wait returns how long addr must wait before it may try again; zero when
// it may try now.
func (l *loginLimiter) wait(addr string) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	f := l.recent(addr, now)
	if len(f) < l.max {
		return 0
	}
	return LoginWindow - now.Sub(f[len(f)-l.max])
}

// fail records a failure from addr.
func (l *loginLimiter) fail(addr string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if len(l.fails) >= maxTrackedAddrs {
		for a := range l.fails {
			l.recent(a, now)
		}
		if len(l.fails) >= maxTrackedAddrs {
			clear(l.fails) // a flood of addresses: start over rather than grow
		}
	}
	f := l.recent(addr, now)
	if len(f) >= l.max {
		f = f[1:]
	}
	l.fails[addr] = append(f, now)
}

// remoteHost is the address part of r.RemoteAddr.
func remoteHost(r *http.Request) string {
	if h, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return h
	}
	return r.RemoteAddr
}

package mcp

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/hub"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// withRequestID sets _meta[requestIDMeta] = id in the params of a
// tools/call.
func withRequestID(params json.RawMessage, id any) (json.RawMessage, bool) {
	var p map[string]json.RawMessage
	if err := json.Unmarshal(params, &p); err != nil || p == nil {
		return nil, false
	}
	meta := map[string]json.RawMessage{}
	if m, ok := p["_meta"]; ok {
		if err := json.Unmarshal(m, &meta); err != nil || meta == nil {
			meta = map[string]json.RawMessage{}
		}
	}
	idj, err := json.Marshal(fmt.Sprint(id))
	if err != nil {
		return nil, false
	}
	meta[requestIDMeta] = idj
	mj, err := json.Marshal(meta)
	if err != nil {
		return nil, false
	}
	p["_meta"] = mj
	out, err := json.Marshal(p)
	return out, err == nil
}

// Token is one bearer token of the HTTP endpoint and the identity it gives.
type Token struct {
	Identity string
	Secret   string
	// Refused, when set, is why this token, known to the hub, is not
	// accepted here: a request bearing it gets 401 with this reason, and
	// is not counted as a guess.
	Refused string
}

// Throttle is the web listener's throttle of wrong credentials, one budget
// for every endpoint it serves (adapters/web).
type Throttle interface {
	// WrongCredentials counts a request with wrong credentials and returns
	// its client; when the client, or everyone together, has failed too
	// often lately, it counts nothing and returns the seconds to wait.
	WrongCredentials(r *http.Request) (client string, retryAfter int)
}

// The bounds of the HTTP endpoint when HTTPOptions names none
// (docs/mcp.md).
const (
	DefaultSessionTimeout      = time.Hour
	DefaultMaxSessions         = 256
	DefaultMaxSessionsPerAgent = 32
	DefaultMaxStreamsPerAgent  = 64
	DefaultStreamIdleTimeout   = 5 * time.Minute
)

// HTTPOptions configure the streamable HTTP endpoint.
type HTTPOptions struct {
	// Tokens authenticate callers; at least one is required.
	Tokens []Token
	// Throttle counts wrong tokens; required.
	Throttle Throttle
	// PublicURL and AllowOrigins are the web listener's: a request with an
	// Origin header must come from the listener's own origin, the public
	// URL's or an allowed one (as for the API).
	PublicURL    string
	AllowOrigins []string
	// SessionTimeout closes sessions that received no request for this
	// long; default DefaultSessionTimeout.
	SessionTimeout time.Duration
	// MaxBodyBytes bounds a request body; zero means the SDK's 4 MiB.
	MaxBodyBytes int64
	// MaxSessions and MaxSessionsPerAgent cap the sessions open at once,
	// in all and per identity; MaxStreamsPerAgent caps the requests one
	// identity has open at once (standalone SSE streams, and POSTs whose
	// answers are still coming). Defaults: the Default constants.
	MaxSessions, MaxSessionsPerAgent, MaxStreamsPerAgent int
	// StreamIdleTimeout closes a standalone SSE stream (GET) on which
	// nothing was written for this long; default DefaultStreamIdleTimeout.
	StreamIdleTimeout time.Duration
}

// webTokenRefused is why /mcp refuses the web token without
// mcp.accept_web_token.
const webTokenRefused = "the web token is not accepted on /mcp: give the agent its own token under mcp.agents (docs/mcp.md), or set mcp.accept_web_token: true to let the web token in as the identity web"

// ConfigOptions are the endpoint's options as the configuration sets them
// (`hub serve` mounts /mcp with these): each agent's token as
// agent:<name>, the web token as the identity web if
// mcp.accept_web_token and refused otherwise, the caps and timeouts of the
// mcp section, and the web listener's body limit and origins.
func ConfigOptions(m config.MCP, w config.Web, webIdentity, webToken string, th Throttle) HTTPOptions {
	o := HTTPOptions{
		Throttle: th, PublicURL: w.PublicURL, AllowOrigins: w.AllowOrigins,
		SessionTimeout: m.SessionTimeout.D(), MaxBodyBytes: int64(w.MaxBodyBytes),
		MaxSessions: m.MaxSessions, MaxSessionsPerAgent: m.MaxSessionsPerAgent, MaxStreamsPerAgent: m.MaxStreamsPerAgent,
		StreamIdleTimeout: m.StreamIdleTimeout.D(),
	}
	webTok := Token{Identity: webIdentity, Secret: webToken}
	if !m.AcceptWebToken {
		webTok.Refused = webTokenRefused
	}
	o.Tokens = append(o.Tokens, webTok)
	for _, name := range slices.Sorted(maps.Keys(m.Agents)) {
		o.Tokens = append(o.Tokens, Token{Identity: "agent:" + name, Secret: m.Agents[name].Token.Reveal()})
	}
	return o
}

func (o HTTPOptions) withDefaults() HTTPOptions {
	def := func(p *int, v int) {
		if *p <= 0 {
			*p = v
		}
	}
	def(&o.MaxSessions, DefaultMaxSessions)
	def(&o.MaxSessionsPerAgent, DefaultMaxSessionsPerAgent)
	def(&o.MaxStreamsPerAgent, DefaultMaxStreamsPerAgent)
	if o.SessionTimeout <= 0 {
		o.SessionTimeout = DefaultSessionTimeout
	}
	if o.StreamIdleTimeout <= 0 {
		o.StreamIdleTimeout = DefaultStreamIdleTimeout
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = mcp.DefaultMaxRequestBodyBytes
	}
	return o
}

// Handler is the streamable HTTP endpoint (mount it at /mcp): the Origin
// check, bearer authentication (wrong tokens throttled with the listener's
// other endpoints; the token's identity is the caller's, and a session
// answers only the identity that opened it), the caps on sessions and
// open requests, then the SDK's streamable handler, which keeps sessions
// (Mcp-Session-Id), closes idle ones and refuses a non-loopback Host on a
// loopback connection (DNS rebinding).
func (s *Server) Handler(o HTTPOptions) (http.Handler, error) {
	if o.Throttle == nil {
		return nil, errors.New("mcp: the HTTP endpoint needs the listener's throttle of wrong tokens")
	}
	keys, err := tokenKeys(o.Tokens)
	if err != nil {
		return nil, err
	}
	o = o.withDefaults()
	origins := map[string]bool{}
	for _, u := range append([]string{o.PublicURL}, o.AllowOrigins...) {
		if n := normalOrigin(u); n != "" {
			origins[n] = true
		}
	}
	stream := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.srv }, &mcp.StreamableHTTPOptions{
		Logger: s.log, SessionTimeout: o.SessionTimeout, MaxRequestBodyBytes: o.MaxBodyBytes,
	})
	lim := newLimits(s.srv, s.opts.Clock, o)
	verify := func(_ context.Context, _ string, r *http.Request) (*auth.TokenInfo, error) {
		if id := identityOf(r.Context()); id != "" {
			return &auth.TokenInfo{UserID: id}, nil
		}
		return nil, auth.ErrInvalidToken
	}
	authed := auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(injectIDs(lim.wrap(stream), o.MaxBodyBytes))
	s.report(hub.StateRunning, "streamable HTTP")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if o := r.Header.Get("Origin"); o != "" && !originOK(r, o, origins) {
			writeError(w, http.StatusForbidden, nil, fmt.Sprintf("cross-origin request refused: Origin %q is not this hub's origin (add it to web.allowed_origins to allow it)", o))
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		id, ok := authenticate(w, r, keys, o.Throttle)
		if !ok {
			return
		}
		authed.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), identityKey{}, id)))
	}), nil
}

// identityKey carries the caller's identity from the bearer check to the
// SDK's (auth.RequireBearerToken) and the caps.
type identityKey struct{}

func identityOf(ctx context.Context) string {
	id, _ := ctx.Value(identityKey{}).(string)
	return id
}

// tokenKey is a token as the endpoint compares it: its hash.
type tokenKey struct {
	hash              [32]byte
	identity, refused string
}

func tokenKeys(tokens []Token) ([]tokenKey, error) {
	var keys []tokenKey
	for _, t := range tokens {
		if t.Secret == "" || t.Identity == "" {
			return nil, fmt.Errorf("mcp: token of %q is empty", t.Identity)
		}
		keys = append(keys, tokenKey{sha256.Sum256([]byte(t.Secret)), t.Identity, t.Refused})
	}
	if len(keys) == 0 {
		return nil, errors.New("mcp: the HTTP endpoint needs at least one token")
	}
	return keys, nil
}

// authenticate returns the identity of r's bearer token, or answers r: 401
// without a token or with a refused one, 401 with a wrong one (counted by
// the throttle), 429 with Retry-After once its client, or everyone, has
// sent too many wrong ones lately. A known token is never throttled.
//
// The challenge (WWW-Authenticate) is RFC 6750's for a server that takes
// bearer tokens and does no OAuth: "Bearer" with the realm, and for a
// token that was sent, error="invalid_token" with a description. It names
// no resource_metadata (RFC 9728): the hub has no authorization server,
// and OAuthPaths answer so.
func authenticate(w http.ResponseWriter, r *http.Request, keys []tokenKey, th Throttle) (string, bool) {
	unauthorized := func(message, problem string) (string, bool) {
		challenge := `Bearer realm="hub"`
		if problem != "" {
			challenge += `, error="invalid_token", error_description="` + problem + `"`
		}
		w.Header().Set("WWW-Authenticate", challenge)
		writeError(w, http.StatusUnauthorized, nil, message)
		return "", false
	}
	h := r.Header.Get("Authorization")
	if h == "" {
		return unauthorized("authentication required: send Authorization: Bearer <token>, the agent's token of mcp.agents", "")
	}
	if scheme, secret, ok := strings.Cut(h, " "); ok && strings.EqualFold(scheme, "Bearer") {
		if k := lookup(keys, strings.TrimSpace(secret)); k != nil && k.refused != "" {
			return unauthorized(k.refused, "this token is not accepted on /mcp")
		} else if k != nil {
			return k.identity, true
		}
	}
	if client, secs := th.WrongCredentials(r); secs > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(secs))
		writeError(w, http.StatusTooManyRequests, nil, fmt.Sprintf("too many wrong tokens from %s (or from everyone): try again in %d s; the right token is always accepted", client, secs))
		return "", false
	}
	return unauthorized("wrong token: send Authorization: Bearer <token> with the agent's token of mcp.agents", "the token is not an agent's token of mcp.agents")
}

// OAuthPaths are where an OAuth client looks for the authorization server
// of an MCP endpoint: the protected resource and authorization server
// metadata (RFC 9728, RFC 8414, OpenID discovery) and the endpoints a
// client falls back to without them (registration, authorization,
// token). The hub has no authorization server; NoOAuth answers them.
var OAuthPaths = []string{
	"/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/",
	"/.well-known/oauth-authorization-server", "/.well-known/oauth-authorization-server/",
	"/.well-known/openid-configuration", "/.well-known/openid-configuration/",
	"/register", "/authorize", "/token",
}

// noOAuth is what NoOAuth answers.
const noOAuth = "this hub has no OAuth authorization server: /mcp takes an agent's own bearer token (mcp.agents), sent as Authorization: Bearer <token> (docs/mcp.md)"

// NoOAuth answers OAuthPaths: 404 with an OAuth error object saying that
// the hub does no OAuth and what /mcp takes instead, so a client that
// tries OAuth after a refused token shows why it cannot.
func NoOAuth() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusNotFound)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": "invalid_request", "error_description": noOAuth})
	})
}

// lookup finds a token, comparing hashes in constant time.
func lookup(keys []tokenKey, secret string) *tokenKey {
	hash := sha256.Sum256([]byte(secret))
	var found *tokenKey
	for i := range keys {
		if subtle.ConstantTimeCompare(hash[:], keys[i].hash[:]) == 1 {
			found = &keys[i]
		}
	}
	return found
}

// writeError answers an HTTP request with status and a JSON-RPC error
// (code -32000, a server error), for the request id when known.
func writeError(w http.ResponseWriter, status int, id any, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(errorAnswer{Version: "2.0", ID: id, Error: jsonrpc.Error{Code: codeRefused, Message: message}})
}

// codeRefused is the JSON-RPC error code of a request the endpoint refuses
// before the protocol (authentication, caps).
const codeRefused = -32000

func originOK(r *http.Request, origin string, allowed map[string]bool) bool {
	o := strings.ToLower(strings.TrimRight(origin, "/"))
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return o == strings.ToLower(scheme+"://"+r.Host) || allowed[o]
}

// normalOrigin returns scheme://host of an http(s) URL in lower case, or "".
func normalOrigin(s string) string {
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return ""
	}
	return strings.ToLower(u.Scheme + "://" + u.Host)
}

// injectIDs hands each tools/call's JSON-RPC id to the handler, in the
// params' _meta, for POST bodies of one message or a batch.
func injectIDs(next http.Handler, maxBody int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Body == nil {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
		r.Body.Close()
		if err != nil {
			http.Error(w, "read the request body: "+err.Error(), http.StatusBadRequest)
			return
		}
		if int64(len(body)) <= maxBody {
			body = rewriteCalls(body)
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		next.ServeHTTP(w, r)
	})
}

func rewriteCalls(body []byte) []byte {
	one := func(raw json.RawMessage) json.RawMessage {
		var m map[string]json.RawMessage
		if json.Unmarshal(raw, &m) != nil {
			return raw
		}
		var method string
		var id any
		if json.Unmarshal(m["method"], &method) != nil || method != "tools/call" || json.Unmarshal(m["id"], &id) != nil || id == nil {
			return raw
		}
		if _, isNum := id.(float64); isNum {
			id = strings.TrimSpace(string(m["id"])) // 7, not 7e+00
		}
		p, ok := withRequestID(m["params"], id)
		if !ok {
			return raw
		}
		m["params"] = p
		out, err := json.Marshal(m)
		if err != nil {
			return raw
		}
		return out
	}
	t := bytes.TrimLeft(body, " \t\r\n")
	if len(t) > 0 && t[0] == '[' {
		var batch []json.RawMessage
		if json.Unmarshal(t, &batch) != nil {
			return body
		}
		for i := range batch {
			batch[i] = one(batch[i])
		}
		out, err := json.Marshal(batch)
		if err != nil {
			return body
		}
		return out
	}
	return one(body)
}

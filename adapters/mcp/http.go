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
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
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
}

// HTTPOptions configure the streamable HTTP endpoint.
type HTTPOptions struct {
	// Tokens authenticate callers; at least one is required.
	Tokens []Token
	// PublicURL and AllowOrigins are the web listener's: a request with an
	// Origin header must come from the listener's own origin, the public
	// URL's or an allowed one (as for the API).
	PublicURL    string
	AllowOrigins []string
	// SessionTimeout closes sessions idle this long; zero keeps them.
	SessionTimeout time.Duration
	// MaxBodyBytes bounds a request body; zero means the SDK's 4 MiB.
	MaxBodyBytes int64
}

// Handler is the streamable HTTP endpoint (mount it at /mcp): the Origin
// check, bearer authentication (the token's identity is the caller's, and
// a session answers only the identity that opened it), then the SDK's
// streamable handler, which keeps sessions (Mcp-Session-Id) and refuses a
// non-loopback Host on a loopback connection (DNS rebinding).
func (s *Server) Handler(o HTTPOptions) (http.Handler, error) {
	if len(o.Tokens) == 0 {
		return nil, errors.New("mcp: the HTTP endpoint needs at least one token")
	}
	type tok struct {
		hash     [32]byte
		identity string
	}
	var toks []tok
	for _, t := range o.Tokens {
		if t.Secret == "" || t.Identity == "" {
			return nil, fmt.Errorf("mcp: token of %q is empty", t.Identity)
		}
		toks = append(toks, tok{sha256.Sum256([]byte(t.Secret)), t.Identity})
	}
	verify := func(_ context.Context, secret string, _ *http.Request) (*auth.TokenInfo, error) {
		h := sha256.Sum256([]byte(secret))
		id := ""
		for _, t := range toks {
			if subtle.ConstantTimeCompare(h[:], t.hash[:]) == 1 {
				id = t.identity
			}
		}
		if id == "" {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: id}, nil
	}
	origins := map[string]bool{}
	for _, u := range append([]string{o.PublicURL}, o.AllowOrigins...) {
		if n := normalOrigin(u); n != "" {
			origins[n] = true
		}
	}
	maxBody := o.MaxBodyBytes
	if maxBody == 0 {
		maxBody = mcp.DefaultMaxRequestBodyBytes
	}
	stream := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.srv }, &mcp.StreamableHTTPOptions{
		Logger: s.log, SessionTimeout: o.SessionTimeout, MaxRequestBodyBytes: maxBody,
	})
	authed := auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(injectIDs(stream, maxBody))
	s.report("running", "streamable HTTP")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if o := r.Header.Get("Origin"); o != "" && !originOK(r, o, origins) {
			http.Error(w, fmt.Sprintf("cross-origin request refused: Origin %q is not this hub's origin (add it to web.allowed_origins to allow it)", o), http.StatusForbidden)
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		authed.ServeHTTP(w, r)
	}), nil
}

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

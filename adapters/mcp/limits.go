package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/a6afc2ce/hermes-hub/clock"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sessionIDHeader names a streamable HTTP session.
const sessionIDHeader = "Mcp-Session-Id"

// limits bounds what callers hold on the HTTP endpoint, so that no agent
// (whatever its roles) locks the others out: the sessions open at once, in
// all and per identity; the requests one identity has open at once (its
// standalone SSE streams, and POSTs whose answers are still coming); and
// how long a standalone stream stays open with nothing written. Idle
// sessions are the SDK's to close (SessionTimeout).
type limits struct {
	srv *mcp.Server
	clk clock.Clock
	o   HTTPOptions

	mu      sync.Mutex
	owners  map[string]string // session id → identity, for sessions opened here
	opening map[string]int    // identity → sessions being opened
	open    map[string]int    // identity → GET and POST requests being served
}

func newLimits(srv *mcp.Server, clk clock.Clock, o HTTPOptions) *limits {
	return &limits{srv: srv, clk: clk, o: o, owners: map[string]string{}, opening: map[string]int{}, open: map[string]int{}}
}

// wrap applies the limits in front of the SDK's handler. The caller's
// identity is in the request's context.
func (l *limits) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		id := identityOf(r.Context())
		if !l.enter(id) {
			writeError(w, http.StatusTooManyRequests, requestID(r), fmt.Sprintf("too many requests open at once: %s has %d (standalone streams and calls still running), the most mcp.max_streams_per_agent allows; wait for a call to end, or close a stream or a session (DELETE /mcp with its Mcp-Session-Id)", id, l.o.MaxStreamsPerAgent))
			return
		}
		defer l.leave(id)
		switch {
		case r.Method == http.MethodGet:
			l.serveStream(w, r, next)
		case r.Header.Get(sessionIDHeader) != "":
			next.ServeHTTP(w, r)
		default:
			if refusal := l.reserve(id); refusal != "" {
				writeError(w, http.StatusTooManyRequests, requestID(r), refusal)
				return
			}
			defer func() { l.opened(id, w.Header().Get(sessionIDHeader)) }()
			next.ServeHTTP(w, r)
		}
	})
}

// enter counts a request of id, unless id has MaxStreamsPerAgent open.
func (l *limits) enter(id string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[id] >= l.o.MaxStreamsPerAgent {
		return false
	}
	l.open[id]++
	return true
}

func (l *limits) leave(id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[id]--; l.open[id] <= 0 {
		delete(l.open, id)
	}
}

// reserve holds a place for a session id opens (a POST without a session
// id), or says why there is none.
func (l *limits) reserve(id string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.forgetClosed()
	mine, all := l.opening[id], 0
	for _, n := range l.opening {
		all += n
	}
	for _, owner := range l.owners {
		all++
		if owner == id {
			mine++
		}
	}
	switch {
	case mine >= l.o.MaxSessionsPerAgent:
		return fmt.Sprintf("too many MCP sessions: %s has %d open, the most mcp.max_sessions_per_agent allows; end one (DELETE /mcp with its Mcp-Session-Id) or let an idle one expire (mcp.session_timeout, %s)", id, mine, l.o.SessionTimeout)
	case all >= l.o.MaxSessions:
		return fmt.Sprintf("too many MCP sessions: the hub has %d open, the most mcp.max_sessions allows; try again once one ends or expires (mcp.session_timeout, %s)", all, l.o.SessionTimeout)
	}
	l.opening[id]++
	return ""
}

// opened turns id's reservation into the session the SDK opened, if any.
func (l *limits) opened(id, session string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.opening[id]--; l.opening[id] <= 0 {
		delete(l.opening, id)
	}
	if session != "" {
		l.owners[session] = id
	}
}

// forgetClosed drops the sessions the SDK has closed (ended by the client,
// expired, or never initialized); call with mu held.
func (l *limits) forgetClosed() {
	live := map[string]bool{}
	for ss := range l.srv.Sessions() {
		live[ss.ID()] = true
	}
	for id := range l.owners {
		if !live[id] {
			delete(l.owners, id)
		}
	}
}

// serveStream serves a GET (a standalone SSE stream) and ends it once
// nothing has been written on it for StreamIdleTimeout; the client may
// open another.
func (l *limits) serveStream(w http.ResponseWriter, r *http.Request, next http.Handler) {
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	aw := &activeWriter{ResponseWriter: w, now: l.clk.Now}
	aw.last.Store(l.clk.Now().UnixNano())
	var (
		mu      sync.Mutex
		stopped bool
		timer   clock.Timer
	)
	var check func()
	check = func() {
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			return
		}
		idle := l.clk.Now().Sub(time.Unix(0, aw.last.Load()))
		if idle >= l.o.StreamIdleTimeout {
			cancel()
			return
		}
		timer = l.clk.AfterFunc(l.o.StreamIdleTimeout-idle, check)
	}
	check()
	defer func() {
		mu.Lock()
		stopped = true
		timer.Stop()
		mu.Unlock()
	}()
	next.ServeHTTP(aw, r.WithContext(ctx))
}

// activeWriter records when a response was last written to.
type activeWriter struct {
	http.ResponseWriter
	now  func() time.Time
	last atomic.Int64 // Unix nanoseconds
}

func (a *activeWriter) Write(p []byte) (int, error) {
	a.last.Store(a.now().UnixNano())
	return a.ResponseWriter.Write(p)
}

// Flush and Unwrap keep the stream flushable (http.ResponseController).
func (a *activeWriter) Flush() { _ = http.NewResponseController(a.ResponseWriter).Flush() }

func (a *activeWriter) Unwrap() http.ResponseWriter { return a.ResponseWriter }

// requestID is the id of a POSTed JSON-RPC request (the body is in memory:
// injectIDs read it), or nil.
func requestID(r *http.Request) any {
	if r.Method != http.MethodPost || r.Body == nil {
		return nil
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return nil
	}
	var m struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(body, &m) != nil || len(m.ID) == 0 || m.ID[0] != '"' && m.ID[0] != '-' && (m.ID[0] < '0' || m.ID[0] > '9') {
		return nil
	}
	return m.ID
}

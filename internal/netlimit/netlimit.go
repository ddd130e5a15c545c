// Package netlimit bounds what the clients of an HTTP server can hold open:
// connections at once, overall and per client address (Listener), and how
// long a request's body and a response's writes may take (Handler). With the
// server's header and idle timeouts, a client that connects and then
// stalls, or opens connection after connection, is closed or refused
// rather than holding the process's file descriptors.
package netlimit

import (
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/a6afc2ce/hermes-hub/clock"
)

// Limits caps a Listener's connections.
type Limits struct {
	// MaxConns is the most connections open at once; required (> 0).
	MaxConns int
	// MaxPerClient is the most connections open at once from one client
	// address (the IP of a TCP peer; every peer of a unix socket is one
	// client); 0 means MaxConns.
	MaxPerClient int
	// OnRefuse is told of each connection closed because a cap was
	// reached, with the client's address, which cap, and how many
	// connections have been refused so far; nil tells no one.
	OnRefuse func(client, reason string, refused int64)
}

// Listener accepts connections within its Limits: one over a cap is closed
// as soon as it is accepted, and Accept goes on to the next.
type Listener struct {
	net.Listener
	max, perClient int
	onRefuse       func(string, string, int64)

	mu       sync.Mutex
	open     int
	byClient map[string]int
	refused  atomic.Int64
}

// NewListener wraps ln with the caps of l.
func NewListener(ln net.Listener, l Limits) *Listener {
	if l.MaxConns <= 0 {
		l.MaxConns = 1
	}
	if l.MaxPerClient <= 0 || l.MaxPerClient > l.MaxConns {
		l.MaxPerClient = l.MaxConns
	}
	return &Listener{Listener: ln, max: l.MaxConns, perClient: l.MaxPerClient, onRefuse: l.OnRefuse, byClient: map[string]int{}}
}

// Accept returns the next connection within the caps.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		client := ClientOf(c.RemoteAddr())
		reason := l.take(client)
		if reason == "" {
			return &conn{Conn: c, l: l, client: client}, nil
		}
		c.Close()
		n := l.refused.Add(1)
		if l.onRefuse != nil {
			l.onRefuse(client, reason, n)
		}
	}
}

// take counts a new connection of client in, or says which cap it is over.
func (l *Listener) take(client string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.open >= l.max:
		return "max_connections"
	case l.byClient[client] >= l.perClient:
		return "max_connections_per_client"
	}
	l.open++
	l.byClient[client]++
	return ""
}

func (l *Listener) release(client string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.open--
	if l.byClient[client]--; l.byClient[client] <= 0 {
		delete(l.byClient, client)
	}
}

// Open is how many accepted connections are open.
func (l *Listener) Open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open
}

// Refused is how many connections were closed over a cap.
func (l *Listener) Refused() int64 { return l.refused.Load() }

// ClientOf is the client a remote address counts against: the IP of a TCP
// peer, "local" for anything else (a unix socket's peers).
func ClientOf(a net.Addr) string {
	if ta, ok := a.(*net.TCPAddr); ok {
		return ta.IP.String()
	}
	if a != nil && a.Network() == "tcp" {
		if host, _, err := net.SplitHostPort(a.String()); err == nil {
			return host
		}
	}
	return "local"
}

// conn gives its slot back once, when it is closed.
type conn struct {
	net.Conn
	l      *Listener
	client string
	once   sync.Once
}

func (c *conn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.release(c.client) })
	return err
}

// Timeouts bound a request's body and a response's writes.
type Timeouts struct {
	// Body is how long a client may take to send a request's body, from
	// the end of its headers; 0: unbounded.
	Body time.Duration
	// Write is how long writing a response may take from its first write;
	// a stream that sets a deadline before each write (with
	// http.ResponseController) keeps its own. 0: unbounded.
	Write time.Duration
}

// Handler applies t to every request h serves. The body deadline holds
// only while the body is read: once it is read to its end, the connection
// has no read deadline, so a long handler (a verb running for minutes) or
// a stream is not cut when it passes. (http.Server.ReadTimeout would cut
// them: it cancels the request's context when it passes.)
func Handler(h http.Handler, t Timeouts) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		if t.Body > 0 && r.Body != nil && r.Body != http.NoBody && r.ContentLength != 0 {
			if rc.SetReadDeadline(now().Add(t.Body)) == nil {
				r.Body = &deadlineBody{ReadCloser: r.Body, rc: rc}
			}
		}
		if t.Write > 0 {
			// No deadline left by the connection's previous response
			// applies to this one before its first write.
			_ = rc.SetWriteDeadline(time.Time{})
			w = &deadlineWriter{ResponseWriter: w, rc: rc, d: t.Write}
		}
		h.ServeHTTP(w, r)
	})
}

// now is the network's time: deadlines are the kernel's, never a fake
// clock's.
func now() time.Time { return clock.Real{}.Now() }

// deadlineBody lifts the read deadline once the body is read to its end.
type deadlineBody struct {
	io.ReadCloser
	rc   *http.ResponseController
	done bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF && !b.done {
		b.done = true
		_ = b.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}

// deadlineWriter sets the write deadline at the response's first write.
type deadlineWriter struct {
	http.ResponseWriter
	rc      *http.ResponseController
	d       time.Duration
	started bool
}

func (w *deadlineWriter) start() {
	if !w.started {
		w.started = true
		_ = w.rc.SetWriteDeadline(now().Add(w.d))
	}
}

func (w *deadlineWriter) WriteHeader(code int) {
	w.start()
	w.ResponseWriter.WriteHeader(code)
}

func (w *deadlineWriter) Write(p []byte) (int, error) {
	w.start()
	return w.ResponseWriter.Write(p)
}

// Flush keeps http.Flusher working through the wrapper.
func (w *deadlineWriter) Flush() {
	w.start()
	_ = w.rc.Flush()
}

// Unwrap lets http.ResponseController reach the server's writer.
func (w *deadlineWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

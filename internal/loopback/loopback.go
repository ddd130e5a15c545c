// Package loopback serves an http.Handler on one 127.0.0.1 port that can be
// taken down (callers see connection refused) and brought back on the same
// port: the network side of the fake platform servers used by tests and the
// reliability lab.
package loopback

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"
)

// Server is one loopback port.
type Server struct {
	h    http.Handler
	addr string // host:port, fixed by the first listen

	mu      sync.Mutex
	srv     *http.Server
	ln      net.Listener
	closed  bool
	handles sync.WaitGroup // handlers in flight
	stopAll chan struct{}  // closed by Close: held requests give up
}

// New starts serving h on a free 127.0.0.1 port.
func New(h http.Handler) (*Server, error) {
	l := &Server{stopAll: make(chan struct{})}
	l.h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l.handles.Add(1)
		defer l.handles.Done()
		h.ServeHTTP(w, r)
	})
	if err := l.Up(); err != nil {
		return nil, err
	}
	return l, nil
}

// Addr is host:port.
func (l *Server) Addr() string { return l.addr }

// Up listens again, on the first port, if the server is down.
func (l *Server) Up() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return errors.New("loopback: server is closed")
	}
	if l.srv != nil {
		return nil
	}
	addr := l.addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	var ln net.Listener
	var err error
	// The port was ours a moment ago; a few tries ride out a slow release.
	for i := 0; i < 50; i++ {
		if ln, err = net.Listen("tcp", addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		return fmt.Errorf("loopback: listen on %s: %w", addr, err)
	}
	l.addr = ln.Addr().String()
	srv := &http.Server{Handler: l.h, ReadHeaderTimeout: 10 * time.Second}
	l.srv, l.ln = srv, ln
	go func() { _ = srv.Serve(ln) }()
	return nil
}

// Down closes the listener and every connection. The listener is closed
// here too, not only through the http.Server, which may not have started
// serving it yet: otherwise a connection could still be accepted by the
// kernel and then reset instead of refused.
func (l *Server) Down() {
	l.mu.Lock()
	srv, ln := l.srv, l.ln
	l.srv, l.ln = nil, nil
	l.mu.Unlock()
	if ln != nil {
		_ = ln.Close()
	}
	if srv != nil {
		_ = srv.Close()
	}
}

// Close takes the server down for good and waits (briefly) for handlers.
func (l *Server) Close() {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	l.closed = true
	close(l.stopAll)
	l.mu.Unlock()
	l.Down()
	done := make(chan struct{})
	go func() {
		l.handles.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
	}
}

// Closed is closed when Close is called: long-held requests give up.
func (l *Server) Closed() <-chan struct{} { return l.stopAll }

// Hold waits for d (forever when d < 0) unless the request or the server
// ends first; it reports whether the full wait elapsed.
func (l *Server) Hold(ctx context.Context, d time.Duration) bool {
	var after <-chan time.Time
	if d >= 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		after = t.C
	}
	select {
	case <-after:
		return true
	case <-ctx.Done():
		return false
	case <-l.stopAll:
		return false
	}
}

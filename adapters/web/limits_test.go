package web

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/internal/testkit"

	"github.com/a6afc2ce/hermes-hub/config"
)

// socketInodes returns the inodes of the sockets this process has open.
func socketInodes(t *testing.T) map[string]bool {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		testkit.Unavailable(t, "needs /proc/self/fd (Linux procfs) to count open descriptors, missing here: "+err.Error())
	}
	out := map[string]bool{}
	for _, e := range ents {
		l, err := os.Readlink("/proc/self/fd/" + e.Name())
		if err == nil && strings.HasPrefix(l, "socket:[") {
			out[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = true
		}
	}
	return out
}

// openFDs counts this process's open descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		testkit.Unavailable(t, "needs /proc/self/fd (Linux procfs) to count open descriptors, missing here: "+err.Error())
	}
	return len(ents)
}

// serverSockets counts the descriptors of this process that are the
// server's side of a connection to port (local port = port, not the
// listening socket): what the hub holds for its clients.
func serverSockets(t *testing.T, port int) int {
	t.Helper()
	mine := socketInodes(t)
	b, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		testkit.Unavailable(t, "needs /proc/net/tcp (Linux procfs) to read connection states, missing here: "+err.Error())
	}
	n := 0
	for _, line := range strings.Split(string(b), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) < 10 || f[3] == "0A" { // 0A: LISTEN
			continue
		}
		_, hexPort, ok := strings.Cut(f[1], ":")
		p, err := strconv.ParseUint(hexPort, 16, 16)
		if ok && err == nil && int(p) == port && mine[f[9]] {
			n++
		}
	}
	return n
}

// TestSlowClientsCannotExhaustTheListener: a client holding hundreds of
// connections that send half a body gets no more than its cap; another
// client's authenticated request and the webhook mounted on the listener
// still answer; the hub's descriptors stay bounded; and the server closes
// the slow connections once the body timeout passes. (All traffic stays on
// 127.0.0.x; the number of connections is bounded.)
func TestSlowClientsCannotExhaustTheListener(t *testing.T) {
	const (
		slow      = 300
		perClient = 50
		total     = 60 // room for perClient from 127.0.0.1 and a few others
	)
	e := newEnv(t, envConfig{noServer: true, mod: func(c *config.Config) {
		c.Web.MaxConnections = total
		c.Web.MaxConnectionsPerClient = perClient
		c.Web.BodyTimeout = config.Duration(3 * time.Second)
	}})
	e.srv.Mount("POST /telegram/webhook", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusOK)
	}))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.srv.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	waitUntil(t, "the listener", func() bool { return e.srv.Addr() != "" })
	addr := e.srv.Addr()
	_, portStr, _ := net.SplitHostPort(addr)
	port, _ := strconv.Atoi(portStr)
	ln := e.srv.conns.Load()
	fdsBefore := openFDs(t)

	// The slow client, 127.0.0.1: headers, then a few bytes of a 1000-byte
	// body, then nothing.
	head := fmt.Sprintf("POST /api/login HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"tok", addr)
	conns := make([]net.Conn, 0, slow)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range slow {
		c, err := net.DialTimeout("tcp", addr, testkit.Wait)
		if err != nil {
			t.Fatalf("dial %d: %v", len(conns), err)
		}
		conns = append(conns, c)
		_, _ = c.Write([]byte(head)) // a refused one may be reset already
	}
	waitUntil(t, "every slow connection accepted or refused", func() bool {
		return ln.Open()+int(ln.Refused()) == slow
	})
	if open, refused := ln.Open(), ln.Refused(); open != perClient || refused != slow-perClient {
		t.Fatalf("open %d, refused %d: want %d open (web.max_connections_per_client) and the rest refused", open, refused, perClient)
	}

	// (b) The hub holds a descriptor per accepted connection, no more:
	// counted, server side (this process is also the client).
	if n := serverSockets(t, port); n > perClient {
		t.Errorf("the server holds %d connections' descriptors, over the cap of %d", n, perClient)
	}
	if n := openFDs(t) - fdsBefore; n > slow+perClient+8 {
		t.Errorf("%d descriptors opened for %d client connections: the server holds more than its cap", n, slow)
	}

	// (a) Another client (127.0.0.2) is served, authenticated, while the
	// slow ones are held; so is the webhook (127.0.0.3).
	from := func(ip string) *http.Client {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: testkit.Wait}
		tr := &http.Transport{DialContext: d.DialContext}
		t.Cleanup(tr.CloseIdleConnections)
		return &http.Client{Transport: tr, Timeout: testkit.Wait}
	}
	r := doHTTP(t, from("127.0.0.2"), "http://"+addr, req{method: "GET", path: "/api/status", bearer: e.token})
	if r.status != http.StatusOK {
		t.Fatalf("an authenticated request from another client: %d %s", r.status, r.body)
	}
	r = doHTTP(t, from("127.0.0.3"), "http://"+addr, req{method: "POST", path: "/telegram/webhook", body: "{}", ctype: "application/json"})
	if r.status != http.StatusOK {
		t.Fatalf("the webhook from another client: %d %s", r.status, r.body)
	}
	if open := ln.Open(); open < perClient {
		t.Fatalf("only %d connections open after the other clients' requests: the slow ones were not held while they were served", open)
	}

	// (c) The server closes every slow connection: the refused ones at
	// once, the held ones when the body timeout passes, with a 4xx.
	var wg sync.WaitGroup
	var mu sync.Mutex
	answered, unclosed := 0, 0
	for _, c := range conns {
		wg.Add(1)
		go func(c net.Conn) {
			defer wg.Done()
			_ = c.SetReadDeadline(time.Now().Add(testkit.Wait))
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			_, err2 := c.Read(make([]byte, 1))
			mu.Lock()
			defer mu.Unlock()
			if err == nil && resp.StatusCode/100 == 4 {
				answered++
			}
			if ne, ok := err2.(net.Error); ok && ne.Timeout() {
				unclosed++
			}
		}(c)
	}
	wg.Wait()
	if unclosed > 0 {
		t.Errorf("%d slow connections still open after %s", unclosed, testkit.Wait)
	}
	if answered != perClient {
		t.Errorf("%d held connections answered 4xx at the body timeout, want %d", answered, perClient)
	}
	waitUntil(t, "the server to let go of the slow connections", func() bool { return ln.Open() <= 2 })
	if n := serverSockets(t, port); n > 2 {
		t.Errorf("the server still holds %d connections' descriptors", n)
	}
}

// TestIdleConnectionsAreReaped: a kept-alive connection that sends nothing
// more is closed after web.idle_timeout, and one that never sends its
// headers after web.header_timeout.
func TestIdleConnectionsAreReaped(t *testing.T) {
	e := newEnv(t, envConfig{noServer: true, mod: func(c *config.Config) {
		c.Web.IdleTimeout = config.Duration(300 * time.Millisecond)
		c.Web.HeaderTimeout = config.Duration(300 * time.Millisecond)
	}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.srv.Run(ctx) }()
	defer func() {
		cancel()
		<-done
	}()
	waitUntil(t, "the listener", func() bool { return e.srv.Addr() != "" })
	addr := e.srv.Addr()
	for _, tc := range []struct{ name, send string }{
		{"idle after a request", fmt.Sprintf("GET /api/status HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n\r\n", addr, e.token)},
		{"headers never finished", "GET / HTTP/1.1\r\nHost: "},
		{"nothing sent", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := net.DialTimeout("tcp", addr, testkit.Wait)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if _, err := c.Write([]byte(tc.send)); err != nil {
				t.Fatal(err)
			}
			_ = c.SetReadDeadline(time.Now().Add(testkit.Wait))
			_, err = io.Copy(io.Discard, c) // returns when the server closes
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatalf("the server did not close the connection within %s", testkit.Wait)
			}
		})
	}
	waitUntil(t, "no connection left open", func() bool { return e.srv.conns.Load().Open() == 0 })
}

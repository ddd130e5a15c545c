package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/a6afc2ce/hermes-hub/admin"
	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/hub"
	"github.com/a6afc2ce/hermes-hub/store"
)

// adminClient talks to the admin API: over the running hub's socket when
// there is one, otherwise to an in-process admin over the state directory,
// so every command behaves the same either way.
type adminClient struct {
	http    *http.Client
	running bool
	close   func() error
	cfg     *config.Config // the configuration the client was opened with
}

// openAdmin connects to a running hub's admin socket or opens the state.
func openAdmin(cfg *config.Config) (*adminClient, error) {
	if c, ok := dialAdmin(cfg); ok {
		return c, nil
	}
	// The admin API runs no verb: it needs the state, not the workspace,
	// so it works while the workspace or a mount root is missing.
	return openOffline(cfg, executor.New(executor.NewRegistry(), executor.Options{}))
}

// openAdminVerbs is openAdmin for a command whose answer depends on what
// the verbs are (whether a schedule's identity may run its verb): without
// a running hub, the in-process admin knows the verbs, none of which it
// runs.
func openAdminVerbs(cfg *config.Config) (*adminClient, error) {
	if c, ok := dialAdmin(cfg); ok {
		return c, nil
	}
	tc, err := registryOnly()
	if err != nil {
		return nil, err
	}
	c, err := openOffline(cfg, tc.exec)
	if err != nil {
		tc.Close()
		return nil, err
	}
	closeState := c.close
	c.close = func() error { return errors.Join(closeState(), tc.Close()) }
	return c, nil
}

// dialAdmin connects to the admin socket of the hub running on cfg's
// state, if one answers.
func dialAdmin(cfg *config.Config) (*adminClient, bool) {
	c, ok := dialSocket(filepath.Join(cfg.StateDir, store.SocketFile))
	if ok {
		c.cfg = cfg
	}
	return c, ok
}

// openOffline serves the admin API in process over the state directory,
// with the executor x, while no hub runs.
func openOffline(cfg *config.Config, x *executor.Executor) (*adminClient, error) {
	sock := filepath.Join(cfg.StateDir, store.SocketFile)
	st, err := store.Open(cfg.StateDir, store.Options{LockTimeout: 500 * time.Millisecond})
	if err != nil {
		if errors.Is(err, store.ErrLocked) {
			return nil, fmt.Errorf("%w; its admin socket %s does not answer", err, sock)
		}
		return nil, err
	}
	rt, err := hub.Open(cfg, st, x, hub.RuntimeOptions{Offline: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		st.Close()
		return nil, err
	}
	ln := newPipeListener()
	// The CLI's own user opened the state: the operator.
	api := admin.ForRuntime(rt)
	api.Version = hubVersion()
	srv := &http.Server{Handler: api.HandlerAs(admin.Operator), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	c := &adminClient{
		http: &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) { return ln.dial() }}},
		cfg:  cfg,
		close: func() error {
			srv.Close()
			return errors.Join(rt.Close(context.Background()), st.Close())
		},
	}
	return c, nil
}

func dialSocket(sock string) (*adminClient, bool) {
	if _, err := os.Stat(sock); err != nil {
		return nil, false
	}
	conn, err := net.DialTimeout("unix", sock, time.Second)
	if err != nil {
		return nil, false
	}
	conn.Close()
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}
	return &adminClient{http: &http.Client{Transport: tr}, running: true, close: func() error { tr.CloseIdleConnections(); return nil }}, true
}

func (c *adminClient) Close() error { return c.close() }

// do sends a request and decodes a JSON answer into out; an error answer
// becomes a Go error carrying the server's message.
func (c *adminClient) do(method, path string, query url.Values, body, out any) error {
	resp, err := c.stream(method, path, query, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("decode answer of %s %s: %w", method, path, err)
	}
	return nil
}

// stream sends a request and returns the open response of a 2xx answer.
func (c *adminClient) stream(method, path string, query url.Values, body any) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	u := "http://hub" + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	req, err := http.NewRequest(method, u, rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("admin API: %w", err)
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		var e admin.APIError
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		if json.Unmarshal(b, &e) == nil && e.Error != "" {
			return nil, errors.New(e.Error)
		}
		return nil, fmt.Errorf("admin API %s %s: %s", method, path, resp.Status)
	}
	return resp, nil
}

// pipeListener is an in-memory net.Listener: the CLI serves the admin
// handler to itself without opening a port or a socket.
type pipeListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *pipeListener) Addr() net.Addr { return pipeAddr{} }

func (l *pipeListener) dial() (net.Conn, error) {
	a, b := net.Pipe()
	select {
	case l.conns <- a:
		return b, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "in-process" }

// withAdmin parses the common flags, connects to the admin API and runs fn.
func withAdmin(env *cliEnv, name, usage string, args []string, setup func(f *flagSet), fn func(c *adminClient, pos []string) error) error {
	f := newFlags(env, name, usage)
	var cf commonFlags
	cf.register(f, false)
	if setup != nil {
		setup(f)
	}
	pos, err := f.parse(args)
	if err != nil {
		return err
	}
	cfg, err := loadConfig(cf)
	if err != nil {
		return err
	}
	c, err := openAdmin(cfg)
	if err != nil {
		return err
	}
	defer c.Close()
	return fn(c, pos)
}

func printJSON(w io.Writer, v any) {
	b, _ := json.MarshalIndent(v, "", "  ")
	fmt.Fprintf(w, "%s\n", b)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > max {
		return string(r[:max-1]) + "…"
	}
	return s
}

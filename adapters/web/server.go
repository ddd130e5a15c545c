package web

import (
	"context"
	"crypto/tls"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/a6afc2ce/hermes-hub/admin"
	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/clock"
	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/hub"
	"github.com/a6afc2ce/hermes-hub/internal/netlimit"
	"github.com/a6afc2ce/hermes-hub/outbox"
)

//go:embed panel
var panelFiles embed.FS

// Defaults of the server.
const (
	DefaultHeartbeat = 15 * time.Second
	DefaultMaxBody   = 1 << 20
	ShutdownTimeout  = 5 * time.Second
	sseWriteTimeout  = 10 * time.Second
	// The listener's defaults, for a config.Web without them (the
	// configuration's defaults are the same).
	DefaultMaxConnections          = 1024
	DefaultMaxConnectionsPerClient = 64
	DefaultHeaderTimeout           = 10 * time.Second
	DefaultBodyTimeout             = 60 * time.Second
	DefaultWriteTimeout            = 60 * time.Second
	DefaultIdleTimeout             = 120 * time.Second
	contentSecurityPol             = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
)

// Options configure a Server.
type Options struct {
	// Intake is the hub the server talks to; required.
	Intake Intake
	// Conversation is the web conversation's history and live feed: the
	// panel's view is built from it alone. Nil: no history, no live view.
	Conversation Conversation
	// Admin is the operator's admin API, served under /api/ behind this
	// server's authentication with its body limit and the panel's stats
	// added; nil serves no admin endpoints.
	Admin *admin.API
	// Sessions keeps logouts and token changes across restarts (the state's
	// store.Sessions); nil keeps them for the process only.
	Sessions SessionStore
	// Status receives the adapter's state; nil reports nowhere.
	Status StatusReporter
	Config config.Web
	Logger *slog.Logger
	// Clock paces the SSE heartbeats and dates cookies; default real.
	Clock clock.Clock
	// Heartbeat is the SSE keep-alive interval; default 15 s.
	Heartbeat time.Duration
	// ClientBuffer is how many events a slow SSE client may lag behind
	// before it is disconnected; default DefaultClientBuffer.
	ClientBuffer int
	// Health answers /healthz and /readyz without authentication; nil
	// serves neither.
	Health http.Handler
	// Metrics answers /metrics behind the API's authentication; nil
	// serves no metrics.
	Metrics http.Handler
	// Files opens the files the hub sent the web conversation, for their
	// download links (files.go); nil serves none. MaxUploadBytes is the
	// largest file a message may bring (uploads.max_bytes): a multipart
	// POST /api/messages may be that much over web.max_body_bytes.
	Files          FileOpener
	MaxUploadBytes int64
}

// Server is the web panel and HTTP API. It implements hub.Adapter.
type Server struct {
	hub          Intake
	reporter     StatusReporter
	adminAPI     *admin.API
	cfg          config.Web
	log          *slog.Logger
	clk          clock.Clock
	heartbeat    time.Duration
	maxBody      int64
	token        string
	auth         *authenticator
	guards       *guards
	events       *broker
	publicOrigin string
	secureCookie bool // always set Secure (the public URL is https)
	allowOrigins map[string]bool

	mounts  *http.ServeMux
	mounted atomic.Bool
	handler http.Handler

	adminOnce sync.Once
	admin     http.Handler

	health  http.Handler
	metrics http.Handler

	files     FileOpener
	maxUpload int64
	uploads   inflight // the files of the messages being handled

	addr     atomic.Value // string
	conns    atomic.Pointer[netlimit.Listener]
	bound    net.Listener // the listener Listen opened, which Run serves
	tlsConf  *tls.Config  // the certificate Listen loaded; nil without TLS
	running  atomic.Bool
	closing  chan struct{}
	closeMu  sync.Once
	stopFeed func() // stops following the conversation; nil when not following
}

var _ hub.Adapter = (*Server)(nil)

// Intake is the hub as the web panel and API use it.
type Intake interface {
	// Handle runs a chat turn from the panel.
	Handle(ctx context.Context, in *chat.Inbound) (*hub.TurnResult, error)
	// Execute runs one envelope for an API caller; an error means it was
	// refused without running (it could not be mirrored).
	Execute(ctx context.Context, req hub.APIRequest) (*executor.Outcome, error)
	// VerbsFor, Registry and Usage describe the verbs for the panel.
	VerbsFor(ids []string) []executor.Info
	Registry() *executor.Registry
	Usage(verb string) (string, bool)
	// Cancel stops running calls of the web conversation (POST
	// /api/cancel); WorkspacesFor says where it works and what it may
	// choose (GET /api/workspace).
	Cancel(req hub.CancelRequest) hub.CancelResult
	// Confirm decides a press on a held call's button (the panel's
	// dialog).
	Confirm(ctx context.Context, p hub.ConfirmPress) (hub.ConfirmResult, error)
	WorkspacesFor(key chat.Key, ids []string) hub.WorkspaceView
}

// Conversation is the web conversation as the hub recorded it: the last
// exchanges, and every new one as it is recorded.
type Conversation interface {
	Recent(n int) ([]hub.Exchange, error)
	Listen(f func(hub.Exchange)) (stop func())
}

// StatusReporter receives the adapter's state for the status page.
type StatusReporter interface {
	Report(state hub.State, detail string)
}

// New builds a Server: it picks the token (the configured one, or a
// generated one on a loopback listener) and seeds the event ring from the
// web records of the mirrors, so the conversation survives restarts.
func New(opts Options) (*Server, error) {
	if opts.Intake == nil {
		return nil, errors.New("web: Options.Intake is required")
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	if opts.Heartbeat <= 0 {
		opts.Heartbeat = DefaultHeartbeat
	}
	cfg := opts.Config
	s := &Server{
		hub: opts.Intake, reporter: opts.Status, adminAPI: opts.Admin, cfg: cfg, log: opts.Logger.With("adapter", "web"), clk: opts.Clock,
		heartbeat: opts.Heartbeat, maxBody: int64(cfg.MaxBodyBytes),
		events: newBroker(cfg.History, opts.ClientBuffer, opts.Clock), allowOrigins: map[string]bool{},
		mounts: http.NewServeMux(), closing: make(chan struct{}),
		health: opts.Health, metrics: opts.Metrics,
		files: opts.Files, maxUpload: max(opts.MaxUploadBytes, 0),
	}
	if s.maxBody <= 0 {
		s.maxBody = DefaultMaxBody
	}
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:8080"
		s.cfg.Listen = cfg.Listen
	}
	s.cfg = withLimitDefaults(s.cfg)
	host, _, err := net.SplitHostPort(cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("web: listen address %q is not host:port (for example 127.0.0.1:8080)", cfg.Listen)
	}
	switch {
	case cfg.Token.IsSet():
		s.token = cfg.Token.Reveal()
	case config.IsLoopback(host):
		if s.token, err = generateToken(); err != nil {
			return nil, fmt.Errorf("web: generate token: %w", err)
		}
	default:
		return nil, fmt.Errorf("web: %s is not a loopback address, so web.token must be set", cfg.Listen)
	}
	if (cfg.TLSCert == "") != (cfg.TLSKey == "") {
		return nil, errors.New("web: tls_cert and tls_key must be set together")
	}
	if cfg.PublicURL != "" {
		s.publicOrigin = normalOrigin(cfg.PublicURL)
		if s.publicOrigin == "" {
			return nil, fmt.Errorf("web: public_url %q is not an http(s) URL such as https://hub.example.org", cfg.PublicURL)
		}
		s.secureCookie = strings.HasPrefix(s.publicOrigin, "https://")
	}
	for _, o := range cfg.AllowOrigins {
		n := normalOrigin(o)
		if n == "" {
			return nil, fmt.Errorf("web: allowed_origins: %q is not an origin such as https://tools.example.org", o)
		}
		s.allowOrigins[n] = true
	}
	s.auth = newAuthenticator(s.token, s.clk.Now)
	if opts.Sessions != nil {
		if err := s.auth.useSessions(opts.Sessions); err != nil {
			return nil, fmt.Errorf("web: %w", err)
		}
	}
	if s.guards, err = newGuards(cfg, s.clk.Now); err != nil {
		return nil, err
	}
	if err := s.follow(opts.Conversation); err != nil {
		// History is a convenience: a damaged mirror must not stop the panel.
		s.log.Warn("could not read the web history back from the mirrors", "err", err)
	}
	s.handler = s.buildHandler()
	return s, nil
}

// Name is the adapter's name.
func (s *Server) Name() string { return string(chat.Web) }

// Sender returns the outbox.Sender of the "web" target.
func (s *Server) Sender() outbox.Sender { return sender{} }

// Platform is the panel as the runtime attaches it (hub.Runtime.Attach,
// before Start): the server, its Sender and its progress view.
func (s *Server) Platform() hub.Platform {
	return hub.Platform{Name: chat.Web, Adapter: s, Sender: s.Sender(), Progress: s.ProgressView(), Files: s}
}

// bodyLimit is the most a request's body may hold: web.max_body_bytes, and
// for a message with a file (multipart POST /api/messages) the file's
// uploads.max_bytes more.
func (s *Server) bodyLimit(r *http.Request) int64 {
	if r.Method == http.MethodPost && r.URL.Path == "/api/messages" && isMultipart(r) {
		return s.maxBody + s.maxUpload
	}
	return s.maxBody
}

func (s *Server) limitKeys(r *http.Request) string {
	if s.bodyLimit(r) != s.maxBody {
		return "web.max_body_bytes + uploads.max_bytes"
	}
	return "web.max_body_bytes"
}

// Token returns the token that authenticates API clients and logins.
func (s *Server) Token() string { return s.token }

// Handler returns the whole HTTP handler: panel, API and mounted handlers.
func (s *Server) Handler() http.Handler { return s.handler }

// Addr returns the address the server listens on once Listen (or Run)
// has opened the listener, and "" before.
func (s *Server) Addr() string {
	a, _ := s.addr.Load().(string)
	return a
}

// LoginURL is the panel's address with the token in the fragment, which
// browsers never send to servers, so it stays out of access logs. Print it
// once; never log it.
func (s *Server) LoginURL() string {
	return s.baseURL() + "/#token=" + url.QueryEscape(s.token)
}

func (s *Server) baseURL() string {
	if s.cfg.PublicURL != "" {
		return strings.TrimRight(s.cfg.PublicURL, "/")
	}
	scheme := "http"
	if s.cfg.TLSCert != "" {
		scheme = "https"
	}
	addr := s.Addr()
	if addr == "" {
		addr = s.cfg.Listen
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return scheme + "://" + addr
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return scheme + "://" + net.JoinHostPort(host, port)
}

// Mount serves h for pattern (an http.ServeMux pattern outside /api/) on the
// same listener, without the panel's authentication: the handler checks its
// own secret (the Telegram webhook). Call it before Run.
func (s *Server) Mount(pattern string, h http.Handler) {
	p := pattern
	if i := strings.IndexByte(p, ' '); i >= 0 {
		p = strings.TrimSpace(p[i+1:])
	}
	if !strings.HasPrefix(p, "/") || p == "/" || strings.HasPrefix(p, "/api/") || p == "/api" {
		s.log.Error("web: mount refused: the pattern must be a path outside / and /api/", "pattern", pattern)
		return
	}
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("web: mount refused", "pattern", pattern, "err", fmt.Sprint(r))
		}
	}()
	s.mounts.Handle(pattern, h)
	s.mounted.Store(true)
}

// Listen opens the listener on the configured address and loads the TLS
// certificate, without serving: Run serves what it opened. Calling it
// before anything is printed or started lets a taken port fail the start
// at once. An address in use is an error wrapping syscall.EADDRINUSE.
func (s *Server) Listen() error {
	if s.bound != nil {
		return nil
	}
	if s.cfg.TLSCert != "" {
		cert, err := tls.LoadX509KeyPair(s.cfg.TLSCert, s.cfg.TLSKey)
		if err != nil {
			return fmt.Errorf("load TLS certificate %s: %w", s.cfg.TLSCert, err)
		}
		s.tlsConf = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	tcp, err := net.Listen("tcp", s.cfg.Listen)
	if err != nil {
		return err
	}
	s.bound = tcp
	s.addr.Store(tcp.Addr().String())
	return nil
}

// Run serves on the listener Listen opened (opening it first when Listen
// was not called) until ctx is done, then shuts down gracefully, waiting
// at most ShutdownTimeout for requests in flight. SSE streams end at once.
func (s *Server) Run(ctx context.Context) error {
	if !s.running.CompareAndSwap(false, true) {
		return errors.New("web: Run called twice")
	}
	board := func(state hub.State, detail string) {
		if s.reporter != nil {
			s.reporter.Report(state, detail)
		}
	}
	if err := s.Listen(); err != nil {
		board(hub.StateStopped, err.Error())
		return fmt.Errorf("web: %w", err)
	}
	// No ReadTimeout or WriteTimeout: both would cut long turns and the
	// streams; netlimit bounds the body and the writes instead.
	srv := &http.Server{
		Handler:           netlimit.Handler(s.handler, netlimit.Timeouts{Body: s.cfg.BodyTimeout.D(), Write: s.cfg.WriteTimeout.D()}),
		ReadHeaderTimeout: s.cfg.HeaderTimeout.D(),
		IdleTimeout:       s.cfg.IdleTimeout.D(),
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		MaxHeaderBytes:    64 << 10,
		TLSConfig:         s.tlsConf,
	}
	tcp := s.bound
	ln := netlimit.NewListener(tcp, netlimit.Limits{
		MaxConns: s.cfg.MaxConnections, MaxPerClient: s.cfg.MaxConnectionsPerClient,
		OnRefuse: s.logRefused,
	})
	s.conns.Store(ln)
	s.addr.Store(ln.Addr().String())
	board(hub.StateRunning, "listening on "+ln.Addr().String())
	s.log.Info("web panel listening", "addr", ln.Addr().String(), "tls", srv.TLSConfig != nil)

	errc := make(chan error, 1)
	go func() {
		if srv.TLSConfig != nil {
			errc <- srv.ServeTLS(ln, "", "")
		} else {
			errc <- srv.Serve(ln)
		}
	}()
	select {
	case err := <-errc:
		s.stopStreams()
		board(hub.StateStopped, err.Error())
		return fmt.Errorf("web: serve: %w", err)
	case <-ctx.Done():
	}
	s.stopStreams()
	sctx, cancel := context.WithTimeout(context.Background(), ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		s.log.Warn("web: requests still running at shutdown were cut", "err", err)
		_ = srv.Close()
	}
	<-errc
	board(hub.StateStopped, "")
	return nil
}

// stopStreams ends every SSE stream (http.Server.Shutdown does not wait
// for them to end by themselves).
func (s *Server) stopStreams() {
	s.closeMu.Do(func() {
		close(s.closing)
		if s.stopFeed != nil {
			s.stopFeed()
		}
	})
}

// buildHandler assembles the top-level handler: security headers and the
// body cap for everything; mounted handlers; the API behind authentication
// and Origin checks; the static panel.
func (s *Server) buildHandler() http.Handler {
	api := s.apiHandler()
	sub, _ := fs.Sub(panelFiles, "panel")
	static := http.FileServerFS(sub)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", contentSecurityPol)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		if !s.hostOK(r) {
			refuseHost(w, r)
			return
		}
		limit := s.bodyLimit(r)
		if r.ContentLength > limit {
			admin.WriteError(w, http.StatusRequestEntityTooLarge, "request body of %d bytes is over the limit of %d bytes (%s)", r.ContentLength, limit, s.limitKeys(r))
			return
		}
		if r.Body != nil {
			r.Body = http.MaxBytesReader(w, r.Body, limit)
		}
		if strings.HasPrefix(r.URL.Path, "/api/") || r.URL.Path == "/api" {
			h.Set("Cache-Control", "no-store")
			// The admin API checks its permissions against this identity.
			api.ServeHTTP(w, r.WithContext(admin.WithIdentity(r.Context(), Identity)))
			return
		}
		if s.ops(w, r) {
			return
		}
		if s.mounted.Load() {
			if mh, pattern := s.mounts.Handler(r); pattern != "" {
				mh.ServeHTTP(w, r)
				return
			}
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			h.Set("Allow", "GET, HEAD")
			admin.WriteError(w, http.StatusMethodNotAllowed, "%s is not accepted here (accepted: GET, HEAD)", r.Method)
			return
		}
		h.Set("Cache-Control", "no-cache")
		static.ServeHTTP(w, r)
	})
}

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/a6afc2ce/hermes-hub/admin"
	"github.com/a6afc2ce/hermes-hub/clock"

	"github.com/a6afc2ce/hermes-hub/adapters/web"
	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/hub"
	"github.com/a6afc2ce/hermes-hub/internal/netlimit"
	"github.com/a6afc2ce/hermes-hub/metrics"
	"github.com/a6afc2ce/hermes-hub/store"
)

const serveUsage = `hub serve [--config FILE] [--state DIR] [--workspace DIR] [--listen ADDR]

Runs the hub: the web panel and API, every configured platform adapter, the
outbox dispatcher and the admin socket (<state>/hub.sock). With no
configuration it serves the panel on 127.0.0.1:8080 and prints a login URL.
The panel's address is --listen, else $HUB_WEB_LISTEN, else web.listen; an
address in use stops the start before anything is served.
SIGINT or SIGTERM stops it gracefully; a second signal stops it at once.
SIGHUP (or ` + "`hub reload`" + `) reads the configuration again (docs/access.md).`

// shutdownGrace bounds how long in-flight sends may take at shutdown.
const shutdownGrace = 10 * time.Second

func runServe(env *cliEnv, args []string) error {
	f := newFlags(env, "serve", serveUsage)
	var cf commonFlags
	cf.register(f, true)
	cf.registerListen(f)
	pos, err := f.parse(args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("unexpected argument %q", pos[0])
	}
	cfg, err := loadConfig(cf)
	if err != nil {
		return err
	}
	logger, level := newLiveLogger(cfg.Log, env.stderr)
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	live := liveConfig{load: func() (*config.Config, error) { return loadConfig(cf) }, level: level, hup: hup}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go func() {
		s := <-sigs
		logger.Info("stopping: intake closed, finishing in-flight sends (send the signal again to stop at once)", "signal", s.String())
		cancel()
		<-sigs
		logger.Warn("second signal: exiting now")
		os.Exit(exitFailed)
	}()
	return serve(ctx, cfg, logger, env.stdout, live)
}

// serve runs the hub until ctx is done, then shuts down in order.
func serve(ctx context.Context, cfg *config.Config, logger *slog.Logger, out io.Writer, live liveConfig) error {
	clk := clock.Real{}
	started := clk.Now()
	// The composition, in order: the state root, the verbs (whose session
	// metadata lives in it) and their executor, then the hub around them.
	sk, err := openStack(cfg, logger, 0)
	if err != nil {
		return err
	}
	defer sk.Close() // last: after the runtime and the sweeper
	st, tc := sk.st, sk.tc
	tc.runAs.log(logger)
	mx, err := metrics.New(metrics.Options{Clock: clk, Verbs: tc.exec.Registry()})
	if err != nil {
		return err
	}
	var remote hub.Remote
	var nodeList admin.NodeLister
	if cfg.NATS.Enabled() {
		// The remote nodes' transport: queues, results and liveness. The
		// remote destination of named workspaces calls it.
		nh, err := openNodes(ctx, cfg, st.Root(), clk, logger, nodeCallMetrics(mx))
		if err != nil {
			return err
		}
		defer nh.Close()
		remote = remoteNodes{nodes: nh, reg: tc.exec.Registry()}
		nodeList = nodeLister{nh}
	}
	sessions := hub.NewSessionSwitch(cfg.Sessions)
	rt, err := hub.Open(cfg, st, tc.exec, hub.RuntimeOptions{Logger: logger, SessionFor: sessions.For, Observer: mx, OutboxEvents: mx, Remote: remote})
	if err != nil {
		return err
	}
	if err := rt.Schedules.Check(cfg); err != nil {
		rt.Close(context.Background())
		return err
	}
	if err := mx.Watch(rt.Outbox, rt.Board); err != nil {
		return err
	}
	if rt.Mirror != nil {
		if err := mx.WatchMirror(rt.Mirror); err != nil {
			return err
		}
	}
	closeCtx := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.Background(), shutdownGrace)
	}
	defer func() {
		c, cancel := closeCtx()
		defer cancel()
		if err := rt.Close(c); err != nil {
			logger.Error("shutdown", "err", err)
		}
	}()

	sweepCtx, stopSweep := context.WithCancel(ctx)
	defer stopSweep() // before the database closes
	go tc.set.RunSweepers(sweepCtx, cfg.Sessions.SweepInterval.D())
	outputSwept := make(chan struct{})
	go func() {
		defer close(outputSwept)
		tc.verbs.RunOutputSweeper(sweepCtx, cfg.Verbs.Proc.KeepOutput.D(), 0)
	}()
	defer func() { stopSweep(); <-outputSwept }()

	api := admin.ForRuntime(rt)
	api.Version = hubVersion()
	api.Nodes = nodeList
	api.Workspaces = workspaceAdmin{set: tc.set, hub: rt.Hub}
	webSrv, err := attachPlatforms(cfg, rt, web.Options{
		Intake: rt.Hub, Conversation: rt.Conversations.For(chat.Web), Admin: api,
		Config: cfg.Web, Logger: logger, Sessions: st.Sessions(clk),
		Health: metrics.Health(rt.Board, rt.Running), Metrics: webMetrics(cfg, mx),
		Files: rt.Hub, MaxUploadBytes: int64(cfg.Uploads.MaxBytes),
	}, logger)
	if err != nil {
		return err
	}
	if webSrv != nil {
		// Before anything starts or is printed: a taken port stops here.
		if err := webSrv.Listen(); err != nil {
			return listenFailed(cfg.Web.Listen, err)
		}
	}
	if webSrv != nil && cfg.MCP.Enabled {
		closeMCP, err := mountMCP(cfg, rt, webSrv, logger)
		if err != nil {
			return err
		}
		defer closeMCP()
	}
	platforms := rt.Platforms()

	enableReload(ctx, rt, live, sessions, tc.set, logger)
	if err := rt.Start(ctx); err != nil {
		return err
	}
	sock, err := listenAdmin(rt.State.StateDir)
	if err != nil {
		return err
	}
	if cfg.Metrics.Listen != "" {
		stopMetrics, err := serveMetrics(ctx, cfg.Metrics.Listen, mx, logger)
		if err != nil {
			return err
		}
		defer stopMetrics()
	}
	adminSrv := adminServer(api)
	go adminSrv.Serve(netlimit.NewListener(sock, netlimit.Limits{MaxConns: adminMaxConns, OnRefuse: func(_, _ string, n int64) {
		if n == 1 {
			logger.Warn("admin socket: connections refused over the cap", "max", adminMaxConns)
		}
	}}))
	defer func() {
		adminSrv.Close()
		rt.State.Root().Remove(store.SocketFile)
	}()

	var wg sync.WaitGroup
	errs := make(chan error, len(platforms))
	actx, stopAdapters := context.WithCancel(ctx)
	defer stopAdapters()
	for _, p := range platforms {
		wg.Add(1)
		rt.Board.Set(p.Adapter.Name(), hub.StateStarting, "")
		go func() {
			defer wg.Done()
			if err := runAdapter(actx, p, rt.Board, logger); err != nil {
				errs <- err
			}
		}()
	}
	names := make([]string, len(platforms))
	for i, p := range platforms {
		names[i] = string(p.Name)
	}
	logger.Info("hub running", "run_id", rt.RunID, "state", rt.State.Dir(), "workspace", tc.set.Default().Dir(), "adapters", strings.Join(names, ","), "startup_ms", clk.Now().Sub(started).Milliseconds())
	if webSrv != nil {
		printPanel(out, cfg.Web, webSrv)
		fmt.Fprintln(out, panelAccess(cfg, rt.Hub.Access(), tc.exec.Registry()))
	}

	var runErr error
	select {
	case <-ctx.Done():
	case runErr = <-errs:
	}
	stopAdapters()
	wg.Wait() // intake is closed; no new turns
	logger.Info("adapters stopped; closing the outbox and the state")
	return runErr
}

// runAdapter runs one platform's adapter until ctx is done. An adapter
// that stops for good (a token its platform rejects, say) is reported
// stopped with its reason, for /readyz, GET /api/status and hub doctor,
// and the hub goes on serving the others. Only the panel's end stops the
// hub (its error, which names the adapter, is returned): its listener
// carries the probes, the API and the admin views.
func runAdapter(ctx context.Context, p hub.Platform, board *hub.StateBoard, logger *slog.Logger) error {
	a := p.Adapter
	err := a.Run(ctx)
	if err == nil || errors.Is(err, context.Canceled) {
		board.Set(a.Name(), hub.StateStopped, "")
		return nil
	}
	board.Set(a.Name(), hub.StateStopped, err.Error())
	if p.Name == chat.Web {
		return err
	}
	logger.Error("adapter stopped; the hub serves on without it until restarted", "adapter", a.Name(), "err", err)
	return nil
}

// printPanel prints where the panel is. A generated token (one per run, on
// a loopback listener) is printed once, in the login URL, to the operator
// who started the hub; a configured token never is, as stdout may be a
// journal or a container log.
func printPanel(out io.Writer, c config.Web, s *web.Server) {
	if !c.Token.IsSet() {
		fmt.Fprintf(out, "Hermes Hub is running. Open the panel: %s\n", s.LoginURL())
		return
	}
	from := "web.token in the configuration"
	if c.TokenFile != "" {
		from = "the file of web.token_file"
	}
	fmt.Fprintf(out, "Hermes Hub is running. Open the panel: %s and log in with the token of %s.\n", s.PanelURL(), from)
}

// The admin socket's limits: few connections (the CLI opens one per
// command), and timeouts as the web listener's defaults.
const (
	adminMaxConns      = 16
	adminHeaderTimeout = 10 * time.Second
	adminBodyTimeout   = 30 * time.Second
	adminWriteTimeout  = 60 * time.Second
	adminIdleTimeout   = 60 * time.Second
)

// adminServer serves the admin API on the socket to the operator, who may
// do everything: only the hub's own user reaches the socket.
func adminServer(api *admin.API) *http.Server {
	return &http.Server{
		Handler:           netlimit.Handler(api.HandlerAs(admin.Operator), netlimit.Timeouts{Body: adminBodyTimeout, Write: adminWriteTimeout}),
		ReadHeaderTimeout: adminHeaderTimeout,
		IdleTimeout:       adminIdleTimeout,
		MaxHeaderBytes:    64 << 10,
	}
}

// listenAdmin opens the admin socket hub.sock in the state directory,
// owner-only, through the directory opened at start (store.DirPath): never
// by a path a symbolic link or a renamed parent could redirect. A stale
// socket left by a hub that died is replaced; a live one means another hub
// runs, which the database lock has already ruled out. The caller removes
// the socket (through the state directory) when it is done.
func listenAdmin(state *store.StateDir) (net.Listener, error) {
	if err := peerCheckSupported(); err != nil {
		return nil, err
	}
	shown := state.Path(store.SocketFile)
	dir, release, err := store.DirPath(state.Root(), ".")
	if err != nil {
		return nil, fmt.Errorf("admin socket: %w", err)
	}
	defer release()
	path := filepath.Join(dir, store.SocketFile)
	if _, err := state.Root().Lstat(store.SocketFile); err == nil {
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			c.Close()
			return nil, fmt.Errorf("admin socket %s is answered by another process", shown)
		}
		if err := state.Root().Remove(store.SocketFile); err != nil {
			return nil, fmt.Errorf("remove stale admin socket: %w", err)
		}
	}
	// The state directory is 0700, so the socket is never reachable by
	// others, even before the chmod; peers are also checked by uid and
	// namespaces (peerTrusted).
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("admin socket %s: %w", shown, err)
	}
	// Closing the listener would remove the socket by the path it was
	// bound with, which names a descriptor released above.
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	if err := state.Root().Chmod(store.SocketFile, 0o600); err != nil {
		ln.Close()
		state.Root().Remove(store.SocketFile)
		return nil, fmt.Errorf("admin socket: %w", err)
	}
	return &ownerListener{Listener: ln, uid: os.Getuid()}, nil
}

// ownerListener accepts only connections from processes of the hub's own
// user (in its own mount and PID namespaces, where the system has them).
type ownerListener struct {
	net.Listener
	uid int
}

func (l *ownerListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if uc, ok := c.(*net.UnixConn); ok && peerTrusted(uc, l.uid) {
			return c, nil
		}
		c.Close()
	}
}

// newLogger builds the slog logger of the configuration.
func newLogger(c config.Log, w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(c.Level))
	opts := &slog.HandlerOptions{Level: level}
	if c.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// Package natstest runs real NATS servers for tests: the nats-server
// program of the version go.mod names, built from the module, as child
// processes, each with its own configuration, storage, log and monitoring
// port on loopback, so that a test can kill one for real (SIGKILL), stop
// it, start it again, and ask which server leads a stream.
//
// The configuration is the caller's (the hub writes it: nodes.ServerConfig,
// `hub nats config`); this package only chooses the names, ports and
// directories it fills in.
package natstest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/a6afc2ce/hermes-hub/internal/testkit"
)

// ClusterName is the name of every cluster this package runs.
const ClusterName = "hub"

// StartTimeout bounds the wait for a server to be ready.
const StartTimeout = 60 * time.Second

var build struct {
	once sync.Once
	path string
	err  error
}

// Binary returns the path of a nats-server program of the version go.mod
// names, built once (`go build` of the module's main package, from the
// module cache) into the system's temporary directory and reused by later
// runs of the same version.
func Binary() (string, error) {
	build.once.Do(func() { build.path, build.err = buildBinary() })
	return build.path, build.err
}

func buildBinary() (string, error) {
	path := filepath.Join(os.TempDir(), "hermes-hub-nats-server-"+server.VERSION)
	if fi, err := os.Stat(path); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o100 != 0 {
		return path, nil
	}
	tmp := fmt.Sprintf("%s.%d.tmp", path, os.Getpid())
	out, err := exec.Command("go", "build", "-o", tmp, "github.com/nats-io/nats-server/v2").CombinedOutput()
	if err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("build nats-server %s: %v: %s", server.VERSION, err, out)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("build nats-server: %w", err)
	}
	return path, nil
}

// Server is one nats-server process of a Cluster.
type Server struct {
	// Name is the server's name (s1, s2, ...).
	Name string
	// Port is the clients' port, ClusterPort the routes', HTTPPort the
	// monitoring port (all on 127.0.0.1).
	Port, ClusterPort, HTTPPort int
	// Dir holds the server's configuration (nats.conf), its log
	// (server.log) and, under store/, its JetStream storage.
	Dir string

	bin string
	mu  sync.Mutex
	cmd *exec.Cmd
	// exited is closed when the current process has been reaped.
	exited chan struct{}
	runs   int
}

// Cluster is a set of servers routed to each other on loopback.
type Cluster struct {
	Servers []*Server
}

// NewCluster chooses names, free ports and directories (under dir) for n
// servers; nothing runs until Start.
func NewCluster(dir string, n int) (*Cluster, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	c := &Cluster{}
	for i := 1; i <= n; i++ {
		s := &Server{Name: "s" + strconv.Itoa(i), Dir: filepath.Join(dir, "s"+strconv.Itoa(i)), bin: bin}
		for _, p := range []*int{&s.Port, &s.ClusterPort, &s.HTTPPort} {
			if *p, err = testkit.FreePort(); err != nil {
				return nil, err
			}
		}
		if err := os.MkdirAll(s.Dir, 0o700); err != nil {
			return nil, err
		}
		c.Servers = append(c.Servers, s)
	}
	return c, nil
}

// URLs are the clients' addresses of every server, comma-separated, with
// scheme (nats or tls).
func (c *Cluster) URLs(scheme string) string {
	urls := make([]string, 0, len(c.Servers))
	for _, s := range c.Servers {
		urls = append(urls, s.URL(scheme))
	}
	return strings.Join(urls, ",")
}

// Routes are the route addresses of every server but s.
func (c *Cluster) Routes(s *Server) []string {
	var out []string
	for _, o := range c.Servers {
		if o != s {
			out = append(out, fmt.Sprintf("nats://127.0.0.1:%d", o.ClusterPort))
		}
	}
	return out
}

// URL is s's clients' address with scheme.
func (s *Server) URL(scheme string) string { return fmt.Sprintf("%s://127.0.0.1:%d", scheme, s.Port) }

// Listen and ClusterListen are s's addresses for its configuration;
// StoreDir its JetStream storage.
func (s *Server) Listen() string        { return fmt.Sprintf("127.0.0.1:%d", s.Port) }
func (s *Server) ClusterListen() string { return fmt.Sprintf("127.0.0.1:%d", s.ClusterPort) }
func (s *Server) StoreDir() string      { return filepath.Join(s.Dir, "store") }

// ConfigFile and LogFile are where s's configuration and log are.
func (s *Server) ConfigFile() string { return filepath.Join(s.Dir, "nats.conf") }
func (s *Server) LogFile() string    { return filepath.Join(s.Dir, "server.log") }

// Configure writes s's configuration.
func (s *Server) Configure(conf string) error {
	return os.WriteFile(s.ConfigFile(), []byte(conf), 0o600)
}

// Start runs servers (none: every server of c) that are not running,
// all at once, and waits until each is ready (Ready): a server of a
// cluster whose others are down is not ready until enough of them run.
// It then waits until the JetStream meta group's leader counts every
// running server as a current peer: until then a stream with as many
// replicas as servers cannot be placed ("peer offline").
func (c *Cluster) Start(ctx context.Context, servers ...*Server) error {
	if len(servers) == 0 {
		servers = c.Servers
	}
	for _, s := range servers {
		if !s.Running() {
			if err := s.spawn(); err != nil {
				return err
			}
		}
	}
	for _, s := range servers {
		if err := s.Ready(ctx); err != nil {
			return err
		}
	}
	return c.peersCurrent(ctx)
}

// peersCurrent waits until the meta leader reports every other running
// server of c as a current, online peer.
func (c *Cluster) peersCurrent(ctx context.Context) error {
	if len(c.Servers) < 2 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, StartTimeout)
	defer cancel()
	var last error
	for {
		if last = c.metaComplete(ctx); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("nats cluster: the JetStream peers not current after %s: %v", StartTimeout, last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Server is the cluster's server named name, or nil.
func (c *Cluster) Server(name string) *Server {
	for _, s := range c.Servers {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// MetaLeader names the server leading the cluster's JetStream metadata
// (streams and consumers created, their leaders placed) as the first
// running server that knows it reports, or "" when none does.
func (c *Cluster) MetaLeader(ctx context.Context) string {
	for _, s := range c.Servers {
		var jsz struct {
			Meta *struct {
				Leader string `json:"leader"`
			} `json:"meta_cluster"`
		}
		if s.Running() && s.Monitor(ctx, "/jsz", &jsz) == nil && jsz.Meta != nil && jsz.Meta.Leader != "" {
			return jsz.Meta.Leader
		}
	}
	return ""
}

func (c *Cluster) metaComplete(ctx context.Context) error {
	type meta struct {
		Meta *struct {
			Leader   string `json:"leader"`
			Replicas []struct {
				Name    string `json:"name"`
				Current bool   `json:"current"`
				Offline bool   `json:"offline"`
			} `json:"replicas"`
		} `json:"meta_cluster"`
	}
	running := map[string]*Server{}
	for _, s := range c.Servers {
		if s.Running() {
			running[s.Name] = s
		}
	}
	leader := c.MetaLeader(ctx)
	ls := running[leader]
	if ls == nil {
		return fmt.Errorf("no running meta leader (%q)", leader)
	}
	var m meta
	if err := ls.Monitor(ctx, "/jsz", &m); err != nil {
		return err
	}
	if m.Meta == nil || m.Meta.Leader != ls.Name {
		return fmt.Errorf("%s no longer leads the meta group", ls.Name)
	}
	current := map[string]bool{ls.Name: true}
	for _, r := range m.Meta.Replicas {
		current[r.Name] = r.Current && !r.Offline
	}
	for name := range running {
		if !current[name] {
			return fmt.Errorf("meta leader %s: peer %s not current", ls.Name, name)
		}
	}
	return nil
}

// Start runs s (its configuration written before) and waits until it is
// ready.
func (s *Server) Start(ctx context.Context) error {
	if err := s.spawn(); err != nil {
		return err
	}
	return s.Ready(ctx)
}

func (s *Server) spawn() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return fmt.Errorf("nats server %s runs already", s.Name)
	}
	log, err := os.OpenFile(s.LogFile(), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	s.runs++
	fmt.Fprintf(log, "==== run %d\n", s.runs)
	cmd := exec.Command(s.bin, "-c", s.ConfigFile(), "-m", strconv.Itoa(s.HTTPPort))
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = procAttr()
	if err := cmd.Start(); err != nil {
		log.Close()
		return fmt.Errorf("start nats server %s: %w", s.Name, err)
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		log.Close()
		close(exited)
	}()
	s.cmd, s.exited = cmd, exited
	return nil
}

// Running reports whether s's process runs.
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cmd != nil
}

// Pid is the process id of s, 0 when it does not run.
func (s *Server) Pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// Ready waits until s answers its health check: it accepts clients and,
// with JetStream, its streams and consumers are current with the
// cluster's.
func (s *Server) Ready(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, StartTimeout)
	defer cancel()
	var last error
	for {
		s.mu.Lock()
		exited := s.exited
		s.mu.Unlock()
		if exited == nil {
			return fmt.Errorf("nats server %s does not run", s.Name)
		}
		select {
		case <-exited:
			return fmt.Errorf("nats server %s exited while starting:\n%s", s.Name, s.tail())
		default:
		}
		if last = s.healthy(ctx); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("nats server %s not ready after %s (%v):\n%s", s.Name, StartTimeout, last, s.tail())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (s *Server) healthy(ctx context.Context) error {
	var h struct {
		Status string `json:"status"`
		Error  string `json:"error"`
	}
	if err := s.Monitor(ctx, "/healthz", &h); err != nil {
		return err
	}
	if h.Status != "ok" {
		return fmt.Errorf("health %s: %s", h.Status, h.Error)
	}
	return nil
}

// Monitor reads path (with its query) from s's monitoring port into v.
func (s *Server) Monitor(ctx context.Context, path string, v any) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d%s", s.HTTPPort, path), nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%s: %s: %w", path, resp.Status, err)
	}
	return nil
}

// Kill ends s with SIGKILL and waits until it is gone.
func (s *Server) Kill() error { return s.end(syscall.SIGKILL) }

// Stop ends s with SIGTERM (a clean shutdown) and waits until it is gone.
func (s *Server) Stop() error { return s.end(syscall.SIGTERM) }

func (s *Server) end(sig syscall.Signal) error {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.mu.Unlock()
	if cmd == nil {
		return fmt.Errorf("nats server %s does not run", s.Name)
	}
	if err := cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("signal nats server %s: %w", s.Name, err)
	}
	select {
	case <-exited:
	case <-time.After(StartTimeout):
		cmd.Process.Kill()
		<-exited
	}
	s.mu.Lock()
	s.cmd, s.exited = nil, nil
	s.mu.Unlock()
	return nil
}

// Close kills every server still running.
func (c *Cluster) Close() {
	for _, s := range c.Servers {
		if s.Running() {
			_ = s.Kill()
		}
	}
}

// tail is the end of s's log.
func (s *Server) tail() string {
	data, _ := os.ReadFile(s.LogFile())
	if len(data) > 4000 {
		data = data[len(data)-4000:]
	}
	return string(data)
}

// StreamLeader returns the server that leads stream of account, as a
// running server's monitoring reports it.
func (c *Cluster) StreamLeader(ctx context.Context, account, stream string) (*Server, error) {
	var last error
	for _, s := range c.Servers {
		if !s.Running() {
			continue
		}
		var jsz struct {
			Accounts []struct {
				Name    string `json:"name"`
				Streams []struct {
					Name    string `json:"name"`
					Cluster struct {
						Leader string `json:"leader"`
					} `json:"cluster"`
				} `json:"stream_detail"`
			} `json:"account_details"`
		}
		if last = s.Monitor(ctx, "/jsz?acc="+account+"&streams=true", &jsz); last != nil {
			continue
		}
		for _, a := range jsz.Accounts {
			for _, st := range a.Streams {
				if a.Name != account || st.Name != stream || st.Cluster.Leader == "" {
					continue
				}
				if l := c.Server(st.Cluster.Leader); l != nil {
					return l, nil
				}
			}
		}
		last = fmt.Errorf("no leader of stream %s (account %s) known to %s", stream, account, s.Name)
	}
	if last == nil {
		last = errors.New("no server runs")
	}
	return nil, last
}

// Connection is one client connection as a server's monitoring reports it.
type Connection struct {
	// Server is the name of the server the client is connected to.
	Server   string `json:"-"`
	Name     string `json:"name"`
	InMsgs   int64  `json:"in_msgs"`
	OutMsgs  int64  `json:"out_msgs"`
	InBytes  int64  `json:"in_bytes"`
	OutBytes int64  `json:"out_bytes"`
}

// Connections lists the client connections of every running server.
func (c *Cluster) Connections(ctx context.Context) ([]Connection, error) {
	var out []Connection
	for _, s := range c.Servers {
		if !s.Running() {
			continue
		}
		var connz struct {
			Conns []Connection `json:"connections"`
		}
		if err := s.Monitor(ctx, "/connz?limit=100000", &connz); err != nil {
			return nil, err
		}
		for _, cn := range connz.Conns {
			cn.Server = s.Name
			out = append(out, cn)
		}
	}
	return out, nil
}

// Package docker runs a workspace's proc.run programs inside a Docker
// container: a verbs.Runner for workspaces whose destination is docker.
//
// # The container
//
// One container serves one workspace (one per session in session mode). It
// is created on first use and kept: across calls and across restarts of the
// hub, which finds it again by its labels (io.hermes-hub.hub,
// io.hermes-hub.workspace, io.hermes-hub.session and io.hermes-hub.config, a
// hash of every setting that shapes the container). A container whose
// settings hash differs (another image, limit, user, hidden path, seccomp
// profile, or a workspace directory that was replaced) is removed and
// created again; one removed from outside is created again; one that
// stopped is started again. Reset removes containers; the idle sweeper
// removes those unused for Config.IdleTimeout.
//
// The workspace directory is bind-mounted at /workspace, the root of
// working directories. The hub's state directory, when it lies at the top
// level of that directory, is covered by an empty read-only tmpfs, so the
// program cannot see it; a protected path anywhere else in it is refused
// (see protect.go). The container has no network unless configured, drops
// every capability, runs with no-new-privileges, never privileged, under
// Docker's default seccomp profile less the calls that make set-user-ID or
// set-group-ID files (see seccomp_linux.go), as Config.User, or else as the
// workspace directory's owner with 65534 in place of root (see
// containerUser), with the configured memory (and no swap beyond it), CPU
// and process limits, a read-only root filesystem and a 64 MiB tmpfs at
// /tmp. An image whose programs write outside /tmp and /workspace (a
// package manager writing to /var, a tool writing to a home directory under
// /root or /home) fails with "read-only file system" there: point such
// tools at /tmp (HOME=/tmp in the allow-listed environment) or bake what
// they need into the image.
//
// PID 1 is Docker's init (docker-init, tini), which reaps orphans, and its
// only child is a keeper (sleep) that holds the container up; the image
// must provide sleep. PID 1 has only the image's environment: nothing of the
// hub's environment (its tokens) reaches the container. Each call is an
// exec whose environment holds only the Config.EnvAllow variables copied
// from the hub's environment (over the image's own).
//
// # Killing what a call started
//
// Docker offers no per-exec process group or cgroup, and a program can
// leave every grouping an outside observer sees (setsid, double fork:
// reparented to PID 1). What is exact is the container itself: when its
// PID 1 dies the kernel kills every process in its PID namespace. So the
// runner counts the calls running in each container and:
//
//   - when a call ends (normal exit, timeout or cancellation) and no other
//     call is running in the container, it lists the container's processes
//     (see "Asking the host" below); anything besides PID 1 and the keeper
//     is left over from a call, and the container's PID 1 is killed, which
//     kills all of it. The container is started again on next use (same
//     container, same id).
//     Nothing a call started outlives it, whatever it did to detach.
//   - when a call times out or is cancelled while other calls run in the
//     same container, killing the container would kill theirs: the runner
//     kills the call's own process tree (the exec's process and its
//     descendants, by parent pid) with a kill run inside
//     the container. Descendants that detached (setsid plus double fork) are
//     no longer in that tree; they are killed when the last call running in
//     the container ends, as above. This mapping needs the hub on the
//     daemon's machine (it reads the exec's pid in the container from
//     /proc/PID/status) and a kill in the image (a shell's builtin or
//     busybox/coreutils); without them only the deferred kill applies.
//   - a call that ends normally while others run kills nothing: its detached
//     leftovers too are killed when the container is next quiet.
//
// A `docker exec` an operator runs into the container by hand is killed the
// same way when a call ends with nothing else running.
//
// # Asking the host
//
// A warm call costs the exec's three requests (create, start and attach,
// inspect for the exit code) and nothing more when the daemon runs on the
// hub's machine in its PID namespace: the runner then reads the container
// from the host. The container's PID 1 (as the daemon reports it) must be
// a process here whose cgroup names the container and whose cgroup.procs
// lists it; the runner keeps that pid (with its start time, so a reused
// pid is not mistaken for it) and the cgroup's files:
//
//   - while PID 1 runs, the container is known to be running with the
//     settings it was inspected with, and is not inspected again; when PID
//     1 has ended (the container stopped, killed, removed, or its daemon
//     restarted) the next call inspects it as usual;
//   - the container's processes come from its cgroup.procs and each
//     process's /proc/PID/stat (its parent), not from ContainerTop, which
//     runs ps on the daemon's machine;
//   - the out-of-memory count comes from the memory cgroup's
//     memory.oom_control (cgroup v1) or memory.events (v2), not from an
//     exec of cat.
//
// Anything the host cannot read falls back to the Docker API, and a daemon
// elsewhere (or in another PID namespace) is asked every time: one
// container inspect before and one ContainerTop after each call.
//
// # Exit codes
//
// Exit codes are those of a host process, with one difference: a program
// killed by a signal reports 128+n (137 for SIGKILL, 143 for SIGTERM), as a
// shell says it, where a host process reports -1. Docker's exec status
// (like containerd's) is already 128+n, and neither a wrapper a shell can
// write nor docker-init tells a death by signal n from exit(128+n), so the
// runner does not guess. A call the runner itself kills (its timeout or
// cancellation) reports -1 as locally.
//
// # Failures
//
// Each failure is an *executor.Error with one line naming the workspace and
// the fix: the daemon unreachable, the image missing, the container stopped
// or removed during a call, the program killed for running out of memory
// (the container is then replaced, so a later out-of-memory kill is told
// apart), the workspace directory missing.
//
// A container that dies during a call (docker kill, docker rm -f, its
// daemon stopping) SIGKILLs the call's program before the daemon records
// the container's end, and a daemon that is shutting down still answers on
// open connections. So a program that died of SIGKILL in a container the
// daemon still calls running is checked: with the host, by whether PID 1
// lives; without, by running the keeper's program for no time in the
// container. A dead container is the error above, never exit code 137.
package docker

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/a6afc2ce/hermes-hub/clock"
	"github.com/moby/moby/client"
)

// Labels on every container the runner creates.
const (
	LabelHub       = "io.hermes-hub.hub"
	LabelWorkspace = "io.hermes-hub.workspace"
	LabelSession   = "io.hermes-hub.session"
	LabelConfig    = "io.hermes-hub.config"
)

// DefaultIdleTimeout is how long an unused container is kept when
// Config.IdleTimeout is 0.
const DefaultIdleTimeout = 30 * time.Minute

// Config is one workspace's Docker destination.
type Config struct {
	Workspace   string        // the workspace name (labels, messages)
	Image       string        // the image, present on the daemon
	Network     string        // "none" (default), "host", or a named network
	Memory      int64         // bytes, 0 = no limit
	CPUs        float64       // 0 = no limit
	Pids        int64         // 0 = no limit
	User        string        // uid[:gid]; "" = the owner of the workspace directory (RunSpec.Dir), 65534 for root (see containerUser)
	EnvAllow    []string      // variables copied from the hub's environment into each exec
	IdleTimeout time.Duration // a container unused this long is removed (0 = 30m)
	HubID       string        // identifies this hub (a hash of its state dir); labels, so two hubs never share containers
	Host        string        // daemon address; "" = the environment's (DOCKER_HOST) or the default socket

	// Dir is the workspace directory (absolute host path); when set, New
	// refuses it if it holds a protected path where a container could
	// reach it (see protect.go). Every call checks its RunSpec.Dir again.
	Dir string
	// Protect lists absolute host paths no program in a container may
	// reach: the hub's state directory, and files such as the
	// configuration, token and key files. A directory must exist when New
	// runs to be protected as one (it is held open); see protect.go.
	Protect []string
}

// Options are the runner's collaborators.
type Options struct {
	Logger *slog.Logger // nil: slog.Default()
	Clock  clock.Clock  // nil: clock.Real
}

// Container is one of a workspace's containers, for display.
type Container struct {
	ID       string
	Session  string // "" for the workspace's own
	State    string // Docker's state: running, exited, …
	Created  time.Time
	LastUsed time.Time // zero when this hub has not used it since it started
}

// Runner runs programs in a workspace's containers. It is safe for
// concurrent use.
type Runner struct {
	cfg   Config
	log   *slog.Logger
	clock clock.Clock

	cliOnce sync.Once
	cli     *client.Client
	cliErr  error

	guards []*guarded // Config.Protect, opened

	mu    sync.Mutex
	boxes map[string]*box // by container name

	kick chan struct{}
	done chan struct{}
	wg   sync.WaitGroup
	once sync.Once
}

var (
	nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)
	userRE = regexp.MustCompile(`^[0-9]{1,10}(:[0-9]{1,10})?$`)
	envRE  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// New checks cfg and returns its runner. It does not contact the daemon
// (Check does); it starts the idle sweeper, which Close stops.
func New(cfg Config, opts Options) (*Runner, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("workspace %s: docker destination: "+format, append([]any{cfg.Workspace}, args...)...)
	}
	switch {
	case cfg.Workspace == "":
		return nil, fmt.Errorf("docker destination: the workspace name is empty")
	case strings.TrimSpace(cfg.Image) == "" || strings.ContainsAny(cfg.Image, " \t\n"):
		return nil, bad("image %q is not an image reference; name one such as debian:bookworm-slim", cfg.Image)
	case cfg.Network != "" && !nameRE.MatchString(cfg.Network):
		return nil, bad("network %q is not a network name; use none, host or a named network", cfg.Network)
	case cfg.Memory < 0 || (cfg.Memory > 0 && cfg.Memory < 6<<20):
		return nil, bad("memory %d bytes is below Docker's minimum of 6MiB; give 0 for no limit or at least 6MiB", cfg.Memory)
	case cfg.CPUs < 0:
		return nil, bad("cpus %v is negative; give 0 for no limit or a number of CPUs such as 1 or 0.5", cfg.CPUs)
	case cfg.Pids < 0:
		return nil, bad("pids %d is negative; give 0 for no limit or a number of processes such as 256", cfg.Pids)
	case cfg.User != "" && !userRE.MatchString(cfg.User):
		return nil, bad("user %q is not accepted; give uid[:gid] such as 1000:1000 (0 runs as root), or \"\" for the workspace directory's owner (65534 when root owns it)", cfg.User)
	case cfg.IdleTimeout < 0:
		return nil, bad("idle timeout %v is negative", cfg.IdleTimeout)
	case cfg.HubID == "":
		return nil, bad("the hub id is empty")
	}
	for _, k := range cfg.EnvAllow {
		if !envRE.MatchString(k) {
			return nil, bad("env_allow entry %q is not a variable name", k)
		}
	}
	if cfg.Network == "" {
		cfg.Network = "none"
	}
	if cfg.IdleTimeout == 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	guards, err := openGuarded(cfg.Protect)
	if err != nil {
		return nil, bad("%v", err)
	}
	r := &Runner{cfg: cfg, log: opts.Logger, clock: opts.Clock, boxes: map[string]*box{}, guards: guards,
		kick: make(chan struct{}, 1), done: make(chan struct{})}
	if cfg.Dir != "" {
		if _, err := r.masks(cfg.Dir, nil, true); err != nil {
			closeGuarded(guards)
			return nil, fmt.Errorf("docker destination: %w", err)
		}
	}
	if r.log == nil {
		r.log = slog.Default()
	}
	if r.clock == nil {
		r.clock = clock.Real{}
	}
	r.log = r.log.With("workspace", cfg.Workspace)
	r.wg.Add(1)
	go r.sweeper()
	return r, nil
}

// client returns the Docker client, made on first use.
func (r *Runner) client() (*client.Client, error) {
	r.cliOnce.Do(func() {
		opts := []client.Opt{client.FromEnv}
		if r.cfg.Host != "" {
			opts = append(opts, client.WithHost(r.cfg.Host))
		}
		r.cli, r.cliErr = client.New(opts...)
		if r.cliErr != nil {
			r.cliErr = r.errorf(codeIO, "the Docker client cannot be made for %s: %v; fix the workspace's destination host", r.daemonAddr(), r.cliErr)
		}
	})
	return r.cli, r.cliErr
}

// daemonAddr is the daemon's address for messages.
func (r *Runner) daemonAddr() string {
	if r.cli != nil {
		return r.cli.DaemonHost()
	}
	if r.cfg.Host != "" {
		return r.cfg.Host
	}
	return "the default Docker socket"
}

// Describe returns the destination in one line.
func (r *Runner) Describe() string {
	var b strings.Builder
	fmt.Fprintf(&b, "docker image=%s network=%s memory=%s cpus=%s pids=%s",
		r.cfg.Image, r.cfg.Network, sizeString(r.cfg.Memory), limitString(r.cfg.CPUs == 0, strconv.FormatFloat(r.cfg.CPUs, 'g', -1, 64)),
		limitString(r.cfg.Pids == 0, strconv.FormatInt(r.cfg.Pids, 10)))
	if r.cfg.User != "" {
		fmt.Fprintf(&b, " user=%s", r.cfg.User)
	}
	return b.String()
}

func limitString(none bool, s string) string {
	if none {
		return "unlimited"
	}
	return s
}

// sizeString writes n bytes in the largest binary unit that divides it.
func sizeString(n int64) string {
	if n == 0 {
		return "unlimited"
	}
	for _, u := range []struct {
		size int64
		name string
	}{{1 << 30, "GiB"}, {1 << 20, "MiB"}, {1 << 10, "KiB"}} {
		if n%u.size == 0 {
			return strconv.FormatInt(n/u.size, 10) + u.name
		}
	}
	return strconv.FormatInt(n, 10) + "B"
}

// Close stops the idle sweeper and closes the client. Containers keep
// running: a later runner (the hub restarted) finds them again.
func (r *Runner) Close() error {
	r.once.Do(func() {
		close(r.done)
		r.wg.Wait()
		closeGuarded(r.guards)
	})
	r.wg.Wait()
	r.cliOnce.Do(func() {}) // orders the read of r.cli after its making
	if r.cli != nil {
		return r.cli.Close()
	}
	return nil
}

// containerName is the stable name of the container of session in r's
// workspace: a second creation under the same name fails, so two callers
// never make two containers for one session.
func (r *Runner) containerName(session string) string {
	ws := strings.Map(func(c rune) rune {
		if c < 0x80 && (c == '-' || c == '_' || c == '.' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return c
		}
		return '_'
	}, r.cfg.Workspace)
	if len(ws) > 40 {
		ws = ws[:40]
	}
	h := sha256.Sum256([]byte(r.cfg.HubID + "\x00" + r.cfg.Workspace + "\x00" + session))
	return "hermes-hub-" + ws + "-" + hex.EncodeToString(h[:6])
}

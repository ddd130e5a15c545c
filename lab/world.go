package lab

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/a6afc2ce/hermes-hub/adapters/discord/discordtest"
	"github.com/a6afc2ce/hermes-hub/adapters/telegram/telegramtest"
	"github.com/a6afc2ce/hermes-hub/internal/loopback"
	"github.com/a6afc2ce/hermes-hub/internal/testkit"
	"github.com/a6afc2ce/hermes-hub/store"
)

// Mode says which version of a scenario runs.
type Mode int

// Modes.
const (
	// Short caps traffic with the scenario's short limits (go test).
	Short Mode = iota
	// Full runs the scenario as written.
	Full
	// Soak runs with the scenario's soak limits (make soak).
	Soak
)

func (m Mode) String() string {
	switch m {
	case Full:
		return "full"
	case Soak:
		return "soak"
	}
	return "short"
}

// Options run a scenario.
type Options struct {
	// HubBinary is the hub to run (BuildHub).
	HubBinary string
	// Dir is an empty directory for the workspace, state and logs.
	Dir  string
	Mode Mode
	// Seed drives every random choice; 0 takes the scenario's, else a
	// fresh one (logged).
	Seed int64
	// Logf receives progress lines; nil discards them.
	Logf func(format string, args ...any)
	// RSSEvery is how often the hub's RSS is sampled; default 1 s.
	RSSEvery time.Duration
	// SettleTimeout bounds the wait for the hub to settle at the end;
	// default 2 minutes.
	SettleTimeout time.Duration
	// Docker is the private Docker daemon of a scenario with hub.docker;
	// such a scenario fails without one.
	Docker *DockerDaemon
}

// DockerDaemon is a private Docker daemon the lab may stop and start
// (dockertest.StartDaemon in the tests), with the image box runs.
type DockerDaemon struct {
	Host  string // unix:///…/docker.sock
	Image string
	Stop  func()
	Start func()
}

// ErrNeedsRoot is returned for a scenario that mounts a tmpfs when the lab
// does not run as root.
var ErrNeedsRoot = errors.New("needs root to mount a small tmpfs")

// Report is the outcome of one scenario run.
type Report struct {
	Scenario   string
	Mode       Mode
	Seed       int64
	Violations []Violation
	Figures    Figures
	Runs       int // hub processes started
	Kills      int // SIGKILLs
	// RSS of the hub over every run that was sampled, KiB; and of the run
	// that lived longest.
	RSSMinKiB, RSSMaxKiB int64
	RSSSamples           int
	LongestRun           time.Duration
	LongestMinKiB        int64
	LongestMaxKiB        int64
	Elapsed              time.Duration
	// Logs are the hub runs' output files.
	Logs []string
	// Err is why the scenario could not be carried out, if it could not.
	Err string
	// Failovers are, for each nats step that stopped or killed a leader
	// or every server, how long until the first remote turn sent after it
	// was answered.
	Failovers []time.Duration
}

// Summary is the report in one line.
func (r *Report) Summary() string {
	status := "ok"
	if r.Err != "" {
		status = "ERROR"
	} else if len(r.Violations) > 0 {
		status = fmt.Sprintf("%d VIOLATIONS", len(r.Violations))
	}
	s := fmt.Sprintf("lab %s (%s, seed %d): %s in %s: runs=%d kills=%d %s", r.Scenario, r.Mode, r.Seed, status,
		r.Elapsed.Round(100*time.Millisecond), r.Runs, r.Kills, r.Figures.Summary())
	if len(r.Failovers) > 0 {
		fo := make([]string, len(r.Failovers))
		for i, d := range r.Failovers {
			fo[i] = d.Round(100 * time.Millisecond).String()
		}
		s += " nats_failovers=" + strings.Join(fo, ",")
	}
	if r.RSSSamples > 0 {
		s += fmt.Sprintf(" rss_min=%.1fMiB rss_max=%.1fMiB (longest run %s: %.1f-%.1fMiB)", float64(r.RSSMinKiB)/1024, float64(r.RSSMaxKiB)/1024,
			r.LongestRun.Round(time.Second), float64(r.LongestMinKiB)/1024, float64(r.LongestMaxKiB)/1024)
	}
	return s
}

// Identities of the lab's users.
const (
	telegramUser     = 1
	telegramStranger = 666
	discordUser      = "700000000000000001"
	discordStranger  = "700000000000000666"
	webToken         = "lab-web-token-0123456789abcdef"
	probeChat        = -2999
)

// world is one scenario run: the fakes, the hub, the turns sent.
type world struct {
	sc   *Scenario
	opt  Options
	logf func(string, ...any)
	seed int64

	rngMu sync.Mutex
	rng   *rand.Rand

	dir, ws, state, flows string
	tg                    *telegramtest.Server
	dc                    *discordtest.Server
	hub                   *hubProc
	admin                 *adminClient
	webBase               string
	web                   *webClient
	mounted               bool
	filler                string // the file filling the mirror tmpfs

	ctx    context.Context
	cancel context.CancelFunc

	mu           sync.Mutex
	turns        []*Turn
	byTurnID     map[string]*Turn
	byUpdate     map[int64]*Turn
	seq          int
	msgIDs       map[int64]int // telegram chat → last message id
	idSeq        int64         // discord ids
	kills        []time.Time
	stops        []time.Time // graceful stops
	cuts         map[string]int
	mirrorFaults []Window
	fillFrom     time.Time
	corrupted    map[string][]byte // state file → original content (nil: absent)
	logFiles     map[string]bool   // insert log files created
	boxCut       []boxCut          // box turns cut short by a daemon stop
	boxStarted   time.Time         // when the daemon last started (zero: never by a step)
	nodes        *labNodes         // the remote nodes (hub.nodes), nil without
	cluster      *labCluster       // the NATS cluster (hub.cluster), nil without
	port         int               // the web panel's
	schedulesOff bool              // the schedule was removed at the end (stopSchedules)
	confirms     []ConfirmCall     // the held calls of confirm steps

	traffic    sync.WaitGroup
	active     atomic.Int64 // background traffic steps and timers running
	gatewayUp  atomic.Bool  // a running hub has identified at the Discord gateway
	tgPush     sync.Mutex   // update ids are taken and queued in order
	trafficErr []error
	chats      int // chats allocated to traffic steps
	started    time.Time
}

// Run plays a scenario against a fresh hub and returns its report. An
// error means the scenario could not be carried out (setup failed, the hub
// did not start when it should have, a trigger never fired); invariants
// that do not hold are in the report.
func Run(ctx context.Context, sc *Scenario, opt Options) (*Report, error) {
	if opt.RSSEvery <= 0 {
		opt.RSSEvery = time.Second
	}
	if opt.SettleTimeout <= 0 {
		opt.SettleTimeout = 2 * time.Minute
	}
	w := &world{sc: sc, opt: opt, byTurnID: map[string]*Turn{}, byUpdate: map[int64]*Turn{},
		msgIDs: map[int64]int{}, idSeq: 930000000000000000, corrupted: map[string][]byte{}, logFiles: map[string]bool{}, cuts: map[string]int{}}
	begun := time.Now()
	w.logf = func(format string, args ...any) {
		if opt.Logf != nil {
			opt.Logf("%6.1fs "+format, append([]any{time.Since(begun).Seconds()}, args...)...)
		}
	}
	w.seed = opt.Seed
	if w.seed == 0 {
		w.seed = sc.Seed
	}
	if w.seed == 0 {
		w.seed = time.Now().UnixNano() % 1_000_000_007
	}
	w.rng = rand.New(rand.NewPCG(uint64(w.seed), uint64(w.seed)>>17|1))
	w.logf("scenario %s (%s), seed %d (LAB_SEED=%d repeats it)", sc.Name, opt.Mode, w.seed, w.seed)
	w.ctx, w.cancel = context.WithCancel(ctx)
	defer w.cancel()
	if err := w.setup(); err != nil {
		w.teardown()
		return nil, err
	}
	defer w.teardown()
	w.started = time.Now()
	rep := &Report{Scenario: sc.Name, Mode: opt.Mode, Seed: w.seed}
	fail := func(err error) (*Report, error) {
		rep.Err = err.Error()
		rep.Elapsed = time.Since(w.started)
		for _, r := range w.hub.allRuns() {
			rep.Runs++
			rep.Logs = append(rep.Logs, r.log)
		}
		return rep, fmt.Errorf("scenario %s: %w", sc.Name, err)
	}
	if err := w.steps(sc.Steps); err != nil {
		w.stopTraffic()
		return fail(err)
	}
	obs, err := w.finish()
	if err != nil {
		return fail(err)
	}
	rep.Violations, rep.Figures = Check(obs)
	rep.Violations = append(rep.Violations, w.checkDocker()...)
	rep.Violations = append(rep.Violations, w.checkNodes(obs)...)
	rep.Failovers = w.failovers()
	rep.Logs = append(rep.Logs, w.nodeLogs()...)
	for _, r := range w.hub.allRuns() {
		rep.Runs++
		rep.Logs = append(rep.Logs, r.log)
		mn, mx, n := r.rss()
		if n == 0 {
			continue
		}
		if life := r.lifetime(); life > rep.LongestRun {
			rep.LongestRun, rep.LongestMinKiB, rep.LongestMaxKiB = life, mn, mx
		}
		if rep.RSSSamples == 0 || mn < rep.RSSMinKiB {
			rep.RSSMinKiB = mn
		}
		rep.RSSMaxKiB = max(rep.RSSMaxKiB, mx)
		rep.RSSSamples += n
	}
	rep.Kills = len(w.kills)
	rep.Elapsed = time.Since(w.started)
	return rep, nil
}

func (w *world) setup() error {
	w.dir = w.opt.Dir
	w.ws = filepath.Join(w.dir, "ws")
	w.state = filepath.Join(w.dir, "state")
	w.flows = filepath.Join(w.state, store.FlowsDir)
	for _, d := range []string{w.ws, w.state, w.flows} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
	}
	if w.sc.Hub.Docker && w.opt.Docker == nil {
		return errors.New("the scenario needs a private Docker daemon (hub.docker): Options.Docker is nil")
	}
	files := map[string]string{"ran.log": "", "long.log": "", "box.log": "", tickFile: "", "big.txt": bigText(), "README.md": "# lab workspace\n", blobName: string(blobData())}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(w.ws, name), []byte(content), 0o644); err != nil {
			return err
		}
	}
	if w.sc.Hub.Docker {
		// box's container runs as the workspace's owner, or as nobody when
		// root owns it: it enters the workspace and appends to box.log.
		if err := os.Chmod(w.ws, 0o755); err != nil {
			return err
		}
		if err := os.Chmod(filepath.Join(w.ws, "box.log"), 0o666); err != nil {
			return err
		}
	}
	if size := w.sc.Hub.MirrorTmpfs; size > 0 {
		if os.Geteuid() != 0 {
			return ErrNeedsRoot
		}
		out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d,mode=0700", int64(size)), "tmpfs", w.flows).CombinedOutput()
		if err != nil {
			return fmt.Errorf("%w: mount a tmpfs at %s: %v: %s", ErrNeedsRoot, w.flows, err, strings.TrimSpace(string(out)))
		}
		w.mounted = true
	}
	w.tg = telegramtest.NewServer()
	w.dc = discordtest.NewServer()
	port, err := testkit.FreePort() // the same across restarts, below the ephemeral range
	if err != nil {
		return err
	}
	w.port = port
	w.webBase = "http://127.0.0.1:" + strconv.Itoa(port)
	if err := w.setupCluster(); err != nil {
		return err
	}
	if err := w.setupNodes(); err != nil {
		return err
	}
	if err := giveToProgramUser(w.ws); err != nil {
		return err
	}
	cfg := filepath.Join(w.dir, "hub.yml")
	if err := os.WriteFile(cfg, []byte(w.config(port)), 0o600); err != nil {
		return err
	}
	if err := w.startCluster(cfg); err != nil {
		return err
	}
	w.hub = &hubProc{bin: w.opt.HubBinary, config: cfg, logDir: w.dir, rssEvery: w.opt.RSSEvery}
	w.admin = newAdminClient(filepath.Join(w.state, store.SocketFile))
	w.web = newWebClient(w.webBase, webToken)
	go w.web.follow(w.ctx)
	return nil
}

func (w *world) teardown() {
	w.cancel()
	if w.hub != nil {
		if r := w.hub.current(); r != nil && !r.exited() {
			r.kill()
		}
	}
	if w.nodes != nil {
		for _, p := range w.nodes.procs {
			if r := p.current(); r != nil && !r.exited() {
				r.kill()
			}
		}
	}
	w.closeCluster()
	if w.web != nil {
		w.web.wait()
	}
	if w.tg != nil {
		w.tg.Close()
	}
	if w.dc != nil {
		w.dc.Close()
	}
	if w.mounted {
		if out, err := exec.Command("umount", w.flows).CombinedOutput(); err != nil {
			w.logf("umount %s: %v: %s", w.flows, err, out)
		}
	}
}

// programUser is the uid and gid a hub running as root runs proc.run's
// programs as when verbs.proc.user is not set.
const programUser = 65534

// giveToProgramUser makes dir and everything in it the programs' user's
// when the lab runs as root, as an operator gives the workspace to the
// user programs run as: the write actions append to its files. As another
// user, programs run as that user, who owns dir already.
func giveToProgramUser(dir string) error {
	if os.Geteuid() != 0 {
		return nil
	}
	return filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, programUser, programUser)
	})
}

// config is the hub's configuration for this world.
func (w *world) config(port int) string {
	h := w.sc.Hub
	attempts := h.MaxAttempts
	if attempts == 0 {
		attempts = 1000
	}
	return fmt.Sprintf(`workspace: %q
state_dir: %q
log:
  level: info
web:
  enabled: true
  listen: 127.0.0.1:%d
  token: %q
telegram:
  enabled: true
  token: %q
  api_endpoint: %q
  mode: polling
  poll_timeout: 2s
  rate:
    per_chat_per_second: 1000
    per_chat_burst: 1000
    per_group_per_minute: 100000
    global_per_second: 100000
  set_commands: true
discord:
  enabled: true
  token: %q
  application_id: %q
  api_base: %q
  cdn_base: %q
  command_guilds: [%q]
  prefix: "!"
  mention: true
access:
  roles:
    admin:
      verbs: ["*", "admin.*"]
      workspaces: %s
%s  grants:
    web: [admin]
    "telegram:%d": [admin]
    "discord:%s": [admin]
%sverbs:
  timeout: 2m
  # No progress messages: they are not outbox chunks, and the checks count
  # every message a chat receives (a loaded machine makes calls slow).
  progress_after: 10m
  proc:
    default_timeout: 60s
outbox:
  max_attempts: %d
  backoff_base: %s
  backoff_max: %s
  send_timeout: %s
mirror:
  keep_runs: 1000
%s%s%s%s`, w.ws, w.state, port, webToken, w.tg.Token(), w.tg.URL(), w.dc.Token(), w.dc.AppID, w.dc.APIBase(), w.dc.CDNBase(), w.dc.GuildID,
		w.adminWorkspaces(), w.confirmRole(), telegramUser, discordUser, w.scheduleGrant(), attempts,
		durationOr(h.BackoffBase, 100*time.Millisecond), durationOr(h.BackoffMax, 2*time.Second), durationOr(h.SendTimeout, 5*time.Second),
		w.workspacesConfig(), w.nodesConfig(), w.schedulesConfig(), w.commandsConfig())
}

// workspacesConfig is the named workspaces: box (hub.docker) and the
// remote ones (hub.nodes).
func (w *world) workspacesConfig() string {
	entries := w.dockerConfig() + w.remoteWorkspacesConfig()
	if entries == "" {
		return ""
	}
	return "workspaces:\n" + entries
}

// dockerConfig is the entry of the workspace box (hub.docker): the
// lab's workspace directory run in a container of the private daemon.
func (w *world) dockerConfig() string {
	if !w.sc.Hub.Docker || w.opt.Docker == nil {
		return ""
	}
	return fmt.Sprintf(`  box:
    path: %q
    destination:
      kind: docker
      image: %q
      docker_host: %q
      env_allow: [PATH]
`, w.ws, w.opt.Docker.Image, w.opt.Docker.Host)
}

// bigText is a file whose reading takes several chunks on Telegram (4096)
// and Discord (2000), but not so many that it becomes an attachment.
func bigText() string {
	var b strings.Builder
	for i := 1; b.Len() < 6500; i++ {
		fmt.Fprintf(&b, "line %04d of the big file, long enough to need a few chunks\n", i)
	}
	return b.String()
}

func (w *world) randFloat() float64 {
	w.rngMu.Lock()
	defer w.rngMu.Unlock()
	return w.rng.Float64()
}

func (w *world) randN(n int) int {
	w.rngMu.Lock()
	defer w.rngMu.Unlock()
	return w.rng.IntN(n)
}

func (w *world) randDuration(r Range) time.Duration {
	span := r.Max.D() - r.Min.D()
	if span <= 0 {
		return r.Min.D()
	}
	w.rngMu.Lock()
	defer w.rngMu.Unlock()
	return r.Min.D() + time.Duration(w.rng.Int64N(int64(span)))
}

// limits are the traffic caps of the mode.
func (w *world) limits() Limits {
	switch w.opt.Mode {
	case Short:
		return w.sc.Short
	case Soak:
		if w.sc.Soak != nil {
			return *w.sc.Soak
		}
	}
	return Limits{}
}

// receipts counts every chunk arrival at the fakes so far.
func (w *world) receipts() int {
	return len(w.tg.Messages()) + len(w.dc.Receipts()) + w.web.count()
}

// steps runs steps in order.
func (w *world) steps(steps []Step) error {
	for i, st := range steps {
		if err := w.ctx.Err(); err != nil {
			return err
		}
		kind, _ := st.kind()
		w.logf("step %d: %s", i+1, kind)
		if err := w.step(st); err != nil {
			return fmt.Errorf("step %d (%s): %w", i+1, kind, err)
		}
	}
	return nil
}

func (w *world) step(st Step) error {
	switch {
	case st.Start != nil:
		return w.start(*st.Start)
	case st.Restart != nil:
		return w.start(*st.Restart)
	case st.Stop != nil:
		r := w.hub.current()
		if r == nil || r.exited() {
			return errors.New("stop: the hub is not running")
		}
		w.gatewayUp.Store(false)
		w.mu.Lock()
		w.stops = append(w.stops, time.Now())
		w.mu.Unlock()
		if err := r.stop(20 * time.Second); err != nil {
			return fmt.Errorf("graceful stop: %v\n%s", err, tail(r.log, 30))
		}
		return nil
	case st.Kill != nil:
		return w.kill(*st.Kill)
	case st.Traffic != nil:
		t := st.Traffic.limited(w.limits())
		if t.Wait {
			return w.runTraffic(t)
		}
		w.traffic.Add(1)
		w.active.Add(1)
		go func() {
			defer w.traffic.Done()
			defer w.active.Add(-1)
			if err := w.runTraffic(t); err != nil {
				w.mu.Lock()
				w.trafficErr = append(w.trafficErr, err)
				w.mu.Unlock()
			}
		}()
		return nil
	case st.Fault != nil:
		return w.fault(*st.Fault)
	case st.Heal != nil:
		return w.heal(st.Heal.Platform)
	case st.Wait != nil:
		return w.wait(*st.Wait)
	case st.Corrupt != nil:
		return w.corrupt(*st.Corrupt)
	case st.Restore != nil:
		return w.restore()
	case st.Mirror != nil:
		if st.Mirror.Fill {
			return w.fillMirror()
		}
		return w.freeMirror()
	case st.Admin != nil:
		return w.adminCheck(*st.Admin)
	case st.Docker != nil:
		return w.docker(*st.Docker)
	case st.Node != nil:
		return w.node(*st.Node)
	case st.Confirm != nil:
		return w.confirm(*st.Confirm)
	case st.NATS != nil:
		return w.natsStep(*st.NATS)
	case st.Repeat != nil:
		times := st.Repeat.Times
		if l := w.limits().Rounds; l > 0 && times > l {
			times = l
		}
		for round := 1; ; round++ {
			if err := w.steps(st.Repeat.Steps); err != nil {
				return fmt.Errorf("round %d: %w", round, err)
			}
			if times > 0 && round >= times || times == 0 && w.trafficDone() {
				w.logf("repeat: %d rounds", round)
				return nil
			}
		}
	}
	return errors.New("empty step")
}

// start starts the hub; with ExpectFailure it checks the refusal instead.
func (w *world) start(s StartStep) error {
	before := map[string][]byte{}
	for _, f := range s.Untouched {
		data, err := os.ReadFile(filepath.Join(w.state, f))
		if err != nil {
			return fmt.Errorf("untouched file %s: %w", f, err)
		}
		before[f] = data
	}
	identifies := len(w.dc.Identifies())
	getMes := len(w.tg.CallsOf("getMe"))
	ctx, cancel := context.WithTimeout(w.ctx, 60*time.Second)
	defer cancel()
	r, err := w.hub.start(ctx)
	if len(s.ExpectFailure) > 0 {
		if err == nil {
			r.kill()
			return errors.New("the hub started, but it should have refused")
		}
		if !errors.Is(err, errNotReady) {
			return err
		}
		out := err.Error()
		for _, want := range s.ExpectFailure {
			if !strings.Contains(out, want) {
				return fmt.Errorf("the hub refused to start, but its error does not mention %q:\n%s", want, out)
			}
		}
		for _, bad := range []string{"panic:", "fatal error:", "goroutine "} {
			if strings.Contains(out, bad) {
				return fmt.Errorf("the hub crashed instead of refusing with a clear error:\n%s", out)
			}
		}
		if r.err == nil {
			return errors.New("the hub exited with status 0 instead of an error")
		}
		for f, data := range before {
			now, err := os.ReadFile(filepath.Join(w.state, f))
			if err != nil || string(now) != string(data) {
				return fmt.Errorf("the hub changed %s while refusing to start", f)
			}
		}
		w.logf("the hub refused to start, as expected: %s", refusal(out))
		return nil
	}
	if err != nil {
		return err
	}
	// Ready means the web panel serves; wait for both platforms too.
	if err := w.until(ctx, "telegram getMe and discord identify", func() bool {
		return len(w.tg.CallsOf("getMe")) > getMes && len(w.dc.Identifies()) > identifies && w.dc.Connected()
	}); err != nil {
		return fmt.Errorf("%w\n%s", err, tail(r.log, 30))
	}
	w.gatewayUp.Store(true)
	w.logf("hub run %d serving (pid %d)", r.n, r.pid())
	return nil
}

// refusal picks the hub's own error line out of a failed start's output.
func refusal(out string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "hub serve:") {
			return l
		}
	}
	return out
}

// until polls cond until it holds or ctx ends.
func (w *world) until(ctx context.Context, what string, cond func() bool) error {
	for !cond() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil
}

// kill waits for the step's trigger, then kills the hub.
func (w *world) kill(k KillStep) error {
	r := w.hub.current()
	if r == nil || r.exited() {
		return errors.New("kill: the hub is not running")
	}
	ctx, cancel := context.WithTimeout(w.ctx, 3*time.Minute)
	defer cancel()
	switch {
	case k.AfterReplies > 0:
		base := w.receipts()
		if err := w.until(ctx, fmt.Sprintf("%d more replies", k.AfterReplies), func() bool {
			return w.receipts() >= base+k.AfterReplies || r.exited()
		}); err != nil {
			return err
		}
	case k.During == "long":
		if err := w.until(ctx, "a long verb running", w.longRunning); err != nil {
			return err
		}
	case k.During == "remote":
		if err := w.until(ctx, "a remote-long call running on a node", w.remoteRunning); err != nil {
			return err
		}
	case k.After > 0:
		if !sleepCtx(ctx, k.After.D()) {
			return ctx.Err()
		}
	case k.Random != nil:
		d := w.randDuration(*k.Random)
		w.logf("random kill in %s", d)
		if !sleepCtx(ctx, d) {
			return ctx.Err()
		}
	case k.NearMinute != nil:
		if err := untilNearMinute(ctx, k.NearMinute.D()); err != nil {
			return err
		}
	}
	if r.exited() {
		return fmt.Errorf("the hub exited by itself before the kill:\n%s", tail(r.log, 30))
	}
	w.gatewayUp.Store(false)
	if k.Signal == "SIGTERM" {
		w.mu.Lock()
		w.stops = append(w.stops, time.Now())
		w.mu.Unlock()
		w.logf("stopping hub run %d with SIGTERM", r.n)
		return r.stop(20 * time.Second)
	}
	at := time.Now()
	r.kill()
	w.mu.Lock()
	w.kills = append(w.kills, at)
	w.mu.Unlock()
	w.logf("killed hub run %d with SIGKILL", r.n)
	return nil
}

// longRunning reports whether a long turn has started (its marker is in
// long.log) and has no answer yet.
func (w *world) longRunning() bool { return w.running("long", "long.log") != nil }

// running returns a turn of action that has started (its marker is in
// file) and has no answer yet, or nil.
func (w *world) running(action, file string) *Turn {
	data, _ := os.ReadFile(filepath.Join(w.ws, file))
	started := map[string]bool{}
	for _, l := range strings.Split(string(data), "\n") {
		started[strings.TrimSpace(l)] = true
	}
	w.mu.Lock()
	var cands []*Turn
	for _, t := range w.turns {
		if t.Action == action && started[t.Marker] {
			cands = append(cands, t)
		}
	}
	w.mu.Unlock()
	for _, t := range cands {
		if !w.answeredByFake(t) {
			return t
		}
	}
	return nil
}

// answeredByFake reports whether a platform received anything mentioning
// the turn's marker.
func (w *world) answeredByFake(t *Turn) bool {
	switch t.Platform {
	case "telegram":
		for _, m := range w.tg.Messages() {
			if strings.Contains(m.Text, t.Marker) {
				return true
			}
		}
	case "discord":
		for _, r := range w.dc.Receipts() {
			if strings.Contains(r.Content, t.Marker) {
				return true
			}
		}
	case "web":
		return w.web.sawText(t.Marker)
	}
	return false
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// fault applies a fault step to a fake.
func (w *world) fault(f FaultStep) error {
	if f.Platform == "telegram" {
		method := f.Method
		if method == "" {
			method = "sendMessage"
		}
		var ft telegramtest.Fault
		switch f.Kind {
		case "429":
			ft = telegramtest.TooManyRequests(int(f.RetryAfter + 0.999))
		case "5xx":
			ft = telegramtest.ServerError(statusOr(f.Status, 502))
		case "slow":
			ft = telegramtest.Fault{Delay: f.Delay.D()}
		case "hang":
			ft = telegramtest.Fault{Hang: true}
		case "drop":
			ft = telegramtest.Fault{Drop: true}
		case "down":
			return w.down(f, w.tg.Down)
		case "duplicate_updates":
			w.tg.DuplicateUpdates(f.Count)
			return nil
		}
		w.tg.AddRule(telegramtest.Rule{Method: method, Every: f.Every, Count: f.Count, Fault: ft})
		return nil
	}
	paths := []string{f.Path}
	if f.Path == "" {
		paths = []string{"/webhooks/", "/channels/"}
	}
	for _, p := range paths {
		var ft discordtest.Fault
		switch f.Kind {
		case "429":
			ft = discordtest.RateLimit("", p, f.RetryAfter)
		case "5xx":
			ft = discordtest.ServerError("", p, statusOr(f.Status, 502))
		case "slow":
			ft = discordtest.Fault{PathPrefix: p, Delay: f.Delay.D()}
		case "hang":
			ft = discordtest.Fault{PathPrefix: p, Hang: true}
		case "drop":
			ft = discordtest.Fault{PathPrefix: p, Hijack: true}
		case "down":
			return w.down(f, w.dc.Down)
		}
		w.dc.AddRule(discordtest.Rule{Every: f.Every, Count: f.Count, Fault: ft})
	}
	return nil
}

// down takes f.Platform away with takeDown in f.Mode (refused unless
// "unavailable"), counting the connections a refusal cuts, and brings it
// back after f.Duration.
func (w *world) down(f FaultStep, takeDown func(loopback.DownMode)) error {
	mode := loopback.Refused
	if f.Mode == "unavailable" {
		mode = loopback.Unavailable
	} else {
		w.mu.Lock()
		w.cuts[f.Platform]++
		w.mu.Unlock()
	}
	takeDown(mode)
	w.logf("%s down (%s)", f.Platform, mode)
	return w.healAfter(f)
}

// healAfter brings a platform back after the fault's duration, if it has
// one, in the background.
func (w *world) healAfter(f FaultStep) error {
	if f.Duration <= 0 {
		return nil
	}
	w.traffic.Add(1)
	w.active.Add(1)
	go func() {
		defer w.traffic.Done()
		defer w.active.Add(-1)
		if sleepCtx(w.ctx, f.Duration.D()) {
			if err := w.heal(f.Platform); err != nil {
				w.mu.Lock()
				w.trafficErr = append(w.trafficErr, err)
				w.mu.Unlock()
			}
		}
	}()
	return nil
}

func cmpOr(s, def string) string {
	if s != "" {
		return s
	}
	return def
}

func statusOr(s, def int) int {
	if s != 0 {
		return s
	}
	return def
}

// heal clears a platform's faults and brings it back up.
func (w *world) heal(platform string) error {
	if platform == "telegram" || platform == "all" {
		w.tg.ClearRules()
		if err := w.tg.Up(); err != nil {
			return err
		}
	}
	if platform == "discord" || platform == "all" {
		w.dc.ClearRules()
		if err := w.dc.Up(); err != nil {
			return err
		}
	}
	w.logf("healed %s", platform)
	return nil
}

func (w *world) wait(s WaitStep) error {
	switch {
	case s.For > 0:
		if !sleepCtx(w.ctx, s.For.D()) {
			return w.ctx.Err()
		}
		return nil
	case s.Replies > 0:
		ctx, cancel := context.WithTimeout(w.ctx, 3*time.Minute)
		defer cancel()
		base := w.receipts()
		return w.until(ctx, fmt.Sprintf("%d more replies", s.Replies), func() bool { return w.receipts() >= base+s.Replies })
	case s.Traffic:
		return w.waitTraffic(10 * time.Minute)
	default:
		return w.settle(s.Quiet.D(), 3*time.Minute, false)
	}
}

// trafficDone reports whether every traffic step has finished.
func (w *world) trafficDone() bool { return w.active.Load() == 0 }

func (w *world) waitTraffic(limit time.Duration) error {
	done := make(chan struct{})
	go func() {
		w.traffic.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(limit):
		return fmt.Errorf("the traffic did not finish within %s", limit)
	case <-w.ctx.Done():
		return w.ctx.Err()
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return errors.Join(w.trafficErr...)
}

// stopTraffic ends the background traffic after a failure.
func (w *world) stopTraffic() {
	w.cancel()
	done := make(chan struct{})
	go func() {
		w.traffic.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
	}
}

// corrupt damages a state file, keeping the original for restore.
func (w *world) corrupt(c CorruptStep) error {
	if w.hub.running() {
		return errors.New("corrupt: stop the hub first")
	}
	path := filepath.Join(w.state, c.File)
	orig, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	w.mu.Lock()
	if _, ok := w.corrupted[c.File]; !ok {
		w.corrupted[c.File] = orig
	}
	w.mu.Unlock()
	if c.Content != nil {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return err
		}
		return os.WriteFile(path, []byte(*c.Content), 0o600)
	}
	if err != nil {
		return fmt.Errorf("truncate %s: %w", c.File, err)
	}
	return os.Truncate(path, *c.Truncate)
}

// restore puts back every corrupted file.
func (w *world) restore() error {
	if w.hub.running() {
		return errors.New("restore: stop the hub first")
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for f, data := range w.corrupted {
		path := filepath.Join(w.state, f)
		var err error
		if data == nil {
			err = os.Remove(path)
		} else {
			err = os.WriteFile(path, data, 0o600)
		}
		if err != nil {
			return err
		}
		delete(w.corrupted, f)
	}
	return nil
}

// fillMirror fills the mirror tmpfs so that every append fails.
func (w *world) fillMirror() error {
	w.filler = filepath.Join(w.flows, "filler")
	f, err := os.OpenFile(w.filler, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for {
		if _, err := f.Write(buf); err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				break
			}
			return fmt.Errorf("fill the mirror tmpfs: %w", err)
		}
	}
	w.mu.Lock()
	w.fillFrom = time.Now()
	w.mu.Unlock()
	w.logf("mirror directory full")
	return nil
}

// freeMirror removes the filler.
func (w *world) freeMirror() error {
	if w.filler == "" {
		return nil
	}
	if err := os.Remove(w.filler); err != nil {
		return err
	}
	w.filler = ""
	w.mu.Lock()
	w.mirrorFaults = append(w.mirrorFaults, Window{From: w.fillFrom, To: time.Now()})
	w.mu.Unlock()
	w.logf("mirror directory freed")
	return nil
}

// adminCheck makes one admin request and checks its answer.
func (w *world) adminCheck(a AdminStep) error {
	method, path, _ := strings.Cut(a.Request, " ")
	ctx, cancel := context.WithTimeout(w.ctx, 30*time.Second)
	defer cancel()
	var body any
	if method == "POST" {
		body = json.RawMessage("{}")
		if a.Body != "" {
			body = json.RawMessage(a.Body)
		}
	}
	var status int
	var raw []byte
	var err error
	if a.Via == "web" {
		status, raw, err = w.web.do(ctx, method, path, body)
	} else {
		status, raw, err = w.admin.do(ctx, method, path, body, nil)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", a.Request, err)
	}
	if status != a.Status {
		return fmt.Errorf("%s answered %d, want %d: %s", a.Request, status, a.Status, raw)
	}
	for _, s := range a.Contains {
		if !strings.Contains(string(raw), s) {
			return fmt.Errorf("%s answered %s, which does not contain %q", a.Request, raw, s)
		}
	}
	w.logf("%s (%s) → %d", a.Request, cmpOr(a.Via, "socket"), status)
	return nil
}

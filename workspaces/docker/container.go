package docker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/a6afc2ce/hermes-hub/verbs"
	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"
)

// keeper is the container's long-running command: PID 1 (docker-init)
// keeps the container up while it runs.
var keeper = []string{"sleep", "2147483647"}

// apiTimeout bounds the Docker calls made after a call's context ended
// (killing, inspecting) and those of the sweeper.
const apiTimeout = 30 * time.Second

// box is the runner's record of one container.
type box struct {
	name    string
	session string

	mu       sync.Mutex // held while the container is made ready, quieted or killed
	id       string
	hash     string    // the settings hash of container id
	view     *hostView // the host's view of container id while it runs; nil when unknown or unavailable
	active   int       // calls running in it
	lastUsed time.Time // when a call last ended or started
	replace  bool      // remove it when quiet (it ran out of memory)
}

// hostView is b's host view, nil when unknown.
func (b *box) hostView() *hostView {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.view
}

// currentID is b's container id.
func (b *box) currentID() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.id
}

// want is the container a call needs.
type want struct {
	user   string
	dir    string
	mounts []mount.Mount
	hash   string
	masks  []string // the container paths mounted over to hide them
}

func (r *Runner) box(name, session string) *box {
	r.mu.Lock()
	defer r.mu.Unlock()
	b := r.boxes[name]
	if b == nil {
		b = &box{name: name, session: session, lastUsed: r.clock.Now()}
		r.boxes[name] = b
	}
	return b
}

// want works out the container spec needs from the workspace directory.
func (r *Runner) want(spec verbs.RunSpec) (want, error) {
	var w want
	fi, err := os.Stat(spec.Dir)
	if err != nil || !fi.IsDir() {
		return w, r.errorf(codeIO, "the workspace directory %s is missing (removed?); create it again or fix the workspace's path", spec.Dir)
	}
	masks, xerr := r.masks(spec.Dir, spec.Hide, false)
	if xerr != nil {
		return w, r.errorf(xerr.Code, "%s", xerr.Message)
	}
	st, haveOwner := ownerOf(fi)
	w.user = r.containerUser(st, haveOwner)
	if haveOwner && !canEnter(w.user, st, fi.Mode()) {
		return w, r.errorf(codeInvalid, "its container runs as %s, which cannot enter the workspace directory %s (owner %d:%d, mode %o); chown the directory to the user its programs should run as, or set the destination's user (0 for root, explicitly)",
			w.user, spec.Dir, st.uid, st.gid, fi.Mode().Perm())
	}
	w.dir = spec.Dir
	w.mounts = []mount.Mount{{Type: mount.TypeBind, Source: spec.Dir, Target: "/workspace",
		BindOptions: &mount.BindOptions{Propagation: mount.PropagationRPrivate}}}
	h := sha256.New()
	fmt.Fprintf(h, "v2\x00%s\x00%s\x00%d\x00%v\x00%d\x00%s\x00%s\x00%s\x00", r.cfg.Image, r.cfg.Network, r.cfg.Memory, r.cfg.CPUs, r.cfg.Pids, w.user, spec.Dir, profileHash())
	if haveOwner {
		// A directory removed and made again is another inode: the old
		// container still has the removed one mounted.
		fmt.Fprintf(h, "%d:%d\x00", st.dev, st.ino)
	}
	for _, m := range masks {
		w.masks = append(w.masks, m.target())
		if !m.dir {
			w.mounts = append(w.mounts, mount.Mount{Type: mount.TypeBind, Source: os.DevNull, Target: m.target(), ReadOnly: true})
			fmt.Fprintf(h, "file %s\x00", m.rel)
			continue
		}
		w.mounts = append(w.mounts, mount.Mount{Type: mount.TypeTmpfs, Target: m.target(), ReadOnly: true,
			TmpfsOptions: &mount.TmpfsOptions{SizeBytes: 4096, Mode: 0o500}})
		fmt.Fprintf(h, "dir %s\x00", m.rel)
	}
	w.hash = hex.EncodeToString(h.Sum(nil))[:32]
	return w, nil
}

// nobody is the uid and gid a container runs as instead of root's when
// the configuration does not name root.
const nobody = 65534

// canEnter tells whether user (uid[:gid]) may search a directory of
// owner and mode, as far as the host can tell (supplementary groups come
// from the image); root may.
func canEnter(user string, owner fileOwner, mode fs.FileMode) bool {
	u, g, _ := strings.Cut(user, ":")
	uid, err := strconv.ParseUint(u, 10, 32)
	if err != nil || uid == 0 {
		return true
	}
	switch {
	case uid == owner.uid:
		return mode&0o100 != 0
	case g == "":
		return true // the group comes from the image: the kernel decides
	case g == strconv.FormatUint(owner.gid, 10):
		return mode&0o010 != 0
	}
	return mode&0o001 != 0
}

// containerUser is the uid:gid a workspace's container runs as:
// Config.User when set (0 there is root, named explicitly), otherwise
// the workspace directory's owner, with nobody in place of root (uid or
// gid 0) and when the owner is unknown.
func (r *Runner) containerUser(owner fileOwner, known bool) string {
	if r.cfg.User != "" {
		return r.cfg.User
	}
	if !known {
		return fmt.Sprintf("%d:%d", nobody, nobody)
	}
	uid, gid := owner.uid, owner.gid
	if uid == 0 {
		uid = nobody
	}
	if gid == 0 {
		gid = nobody
	}
	return fmt.Sprintf("%d:%d", uid, gid)
}

// acquire makes the container of spec's session ready and counts the
// call in it; release must follow.
func (r *Runner) acquire(ctx context.Context, cli *client.Client, spec verbs.RunSpec) (*box, want, error) {
	w, err := r.want(spec)
	if err != nil {
		return nil, w, err
	}
	b := r.box(r.containerName(spec.Session), spec.Session)
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := r.ensure(ctx, cli, b, w); err != nil {
		return nil, w, err
	}
	if err := r.checkMasks(ctx, cli, b, w); err != nil {
		return nil, w, err
	}
	b.active++
	b.lastUsed = r.clock.Now()
	return b, w, nil
}

// ensure leaves b's container running with w's settings. b.mu is held.
//
// When the host sees the container (see hostView) and its PID 1 still runs
// since it was last inspected with these settings, the container is known
// to be running and is not inspected again.
func (r *Runner) ensure(ctx context.Context, cli *client.Client, b *box, w want) error {
	if b.id != "" && b.view != nil && b.hash == w.hash && !b.replace && b.view.alive() {
		return nil
	}
	b.view = nil
	ins, err := cli.ContainerInspect(ctx, b.name, client.ContainerInspectOptions{})
	switch {
	case cerrdefs.IsNotFound(err):
		return r.create(ctx, cli, b, w)
	case err != nil:
		return r.apiError("inspect the workspace's container", err)
	}
	c := ins.Container
	labels := map[string]string{}
	if c.Config != nil {
		labels = c.Config.Labels
	}
	if labels[LabelHub] != r.cfg.HubID || labels[LabelWorkspace] != r.cfg.Workspace {
		return r.errorf(codeIO, "a container named %s that this hub did not make is in the way; remove it (docker rm -f %s)", b.name, b.name)
	}
	if labels[LabelConfig] != w.hash || b.replace {
		r.log.Info("replacing the workspace's container", "container", short(c.ID), "session", b.session, "oom", b.replace)
		if err := r.remove(ctx, cli, c.ID); err != nil {
			return err
		}
		return r.create(ctx, cli, b, w)
	}
	b.id, b.hash = c.ID, labels[LabelConfig]
	if c.State != nil && c.State.Running {
		b.view = newHostView(c.ID, c.State.Pid)
		return nil
	}
	if _, err := cli.ContainerStart(ctx, c.ID, client.ContainerStartOptions{}); err != nil {
		r.log.Info("the workspace's container does not start again; creating a new one", "container", short(c.ID), "err", err)
		if err := r.remove(ctx, cli, c.ID); err != nil {
			return err
		}
		return r.create(ctx, cli, b, w)
	}
	r.started(ctx, cli, b)
	return nil
}

// started looks for the host's view of b's container, just started (so
// the next calls, and the check of its masks, read it from the host). b.mu
// is held.
func (r *Runner) started(ctx context.Context, cli *client.Client, b *box) {
	ins, err := cli.ContainerInspect(ctx, b.id, client.ContainerInspectOptions{})
	if err == nil && ins.Container.State != nil && ins.Container.State.Running {
		b.view = newHostView(b.id, ins.Container.State.Pid)
	}
}

func (r *Runner) labels(session, hash string) map[string]string {
	return map[string]string{LabelHub: r.cfg.HubID, LabelWorkspace: r.cfg.Workspace, LabelSession: session, LabelConfig: hash}
}

// containerSpec is the configuration of every container the runner makes.
func (r *Runner) containerSpec(user string, labels map[string]string, mounts []mount.Mount) (*container.Config, *container.HostConfig, error) {
	prof, err := seccompProfile()
	if err != nil {
		return nil, nil, r.errorf(codeIO, "cannot build the containers' seccomp profile: %v", err)
	}
	init := true
	cfg := &container.Config{
		Image: r.cfg.Image, Cmd: keeper, User: user, WorkingDir: "/workspace", Labels: labels,
	}
	hc := &container.HostConfig{
		NetworkMode:    container.NetworkMode(r.cfg.Network),
		Mounts:         mounts,
		Tmpfs:          map[string]string{"/tmp": "rw,nosuid,nodev,size=64m,mode=1777"},
		ReadonlyRootfs: true,
		CapDrop:        []string{"ALL"},
		SecurityOpt:    []string{"no-new-privileges"},
		IpcMode:        container.IPCModePrivate,
		Init:           &init,
	}
	hc.Memory = r.cfg.Memory
	if r.cfg.Memory > 0 {
		hc.MemorySwap = r.cfg.Memory // no swap beyond the limit
	}
	hc.NanoCPUs = int64(r.cfg.CPUs * 1e9)
	if r.cfg.Pids > 0 {
		p := r.cfg.Pids
		hc.PidsLimit = &p
	}
	if prof != "" {
		hc.SecurityOpt = append(hc.SecurityOpt, "seccomp="+prof)
	}
	return cfg, hc, nil
}

// create makes and starts b's container. b.mu is held.
func (r *Runner) create(ctx context.Context, cli *client.Client, b *box, w want) error {
	cfg, hc, err := r.containerSpec(w.user, r.labels(b.session, w.hash), w.mounts)
	if err != nil {
		return err
	}
	res, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{Name: b.name, Config: cfg, HostConfig: hc})
	if err != nil {
		return r.createError(err)
	}
	b.id, b.hash, b.replace, b.view = res.ID, w.hash, false, nil
	if _, err := cli.ContainerStart(ctx, res.ID, client.ContainerStartOptions{}); err != nil {
		_ = r.remove(context.WithoutCancel(ctx), cli, res.ID)
		b.id = ""
		return r.startError(err)
	}
	r.log.Info("created the workspace's container", "container", short(res.ID), "session", b.session, "image", r.cfg.Image)
	r.started(ctx, cli, b)
	return nil
}

func (r *Runner) createError(err error) error {
	if cerrdefs.IsNotFound(err) && strings.Contains(strings.ToLower(err.Error()), "image") {
		return r.errorf(codeIO, "the image %s is not on the Docker daemon at %s; make it present (docker pull %s, or docker import a root filesystem as %s) or change the workspace's image",
			r.cfg.Image, r.daemonAddr(), r.cfg.Image, r.cfg.Image)
	}
	if cerrdefs.IsConflict(err) {
		return r.errorf(codeIO, "its container is being created by another call or hub (%s); run the call again", oneLine(err))
	}
	return r.apiError("create the workspace's container", err)
}

func (r *Runner) startError(err error) error {
	if client.IsErrConnectionFailed(err) || isUnreachable(err) {
		return r.apiError("start the workspace's container", err)
	}
	return r.errorf(codeIO, "its container does not start: %s; check the image (it needs %s) and the limits with hub doctor", oneLine(err), keeper[0])
}

func (r *Runner) remove(ctx context.Context, cli *client.Client, id string) error {
	_, err := cli.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
	if err != nil && !cerrdefs.IsNotFound(err) {
		return r.apiError("remove the workspace's container", err)
	}
	return nil
}

// release ends a call's use of b. The last call out kills whatever calls
// left running (see the package comment).
func (r *Runner) release(cli *client.Client, b *box) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.active--
	b.lastUsed = r.clock.Now()
	if b.active > 0 || b.id == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), apiTimeout)
	defer cancel()
	if b.replace {
		if err := r.remove(ctx, cli, b.id); err != nil {
			r.log.Warn("cannot remove the workspace's container", "container", short(b.id), "err", err)
		}
		b.id = ""
		return
	}
	procs, err := r.processes(ctx, cli, b)
	if err != nil {
		if !cerrdefs.IsNotFound(err) && !cerrdefs.IsConflict(err) {
			r.log.Warn("cannot list the processes of the workspace's container", "container", short(b.id), "err", err)
		}
		return
	}
	// docker-init and the keeper; anything more was left by a call.
	if len(procs) <= 2 {
		return
	}
	r.log.Debug("killing what calls left running", "container", short(b.id), "processes", len(procs)-2)
	r.stop(ctx, cli, b)
}

// processes lists the processes of b's container with their parents (host
// pids): from the host when it sees the container, else from the daemon
// (ContainerTop, which runs ps on the daemon's machine). b.mu is held.
func (r *Runner) processes(ctx context.Context, cli *client.Client, b *box) ([]process, error) {
	if b.view != nil {
		if procs, err := b.view.processes(); err == nil && b.view.alive() {
			return procs, nil
		}
		b.view = nil
	}
	top, err := cli.ContainerTop(ctx, b.id, client.ContainerTopOptions{Arguments: []string{"-o", "pid,ppid"}})
	if err != nil {
		return nil, err
	}
	out := make([]process, 0, len(top.Processes))
	for _, p := range top.Processes {
		if len(p) < 2 {
			continue
		}
		pid, err1 := strconv.Atoi(p[0])
		ppid, err2 := strconv.Atoi(p[1])
		if err1 == nil && err2 == nil {
			out = append(out, process{pid: pid, ppid: ppid})
		}
	}
	return out, nil
}

// stop kills b's container (its PID 1, and so every process in it) and
// waits until it is down. b.mu is held.
func (r *Runner) stop(ctx context.Context, cli *client.Client, b *box) {
	b.view = nil
	wait := cli.ContainerWait(ctx, b.id, client.ContainerWaitOptions{Condition: container.WaitConditionNotRunning})
	if _, err := cli.ContainerKill(ctx, b.id, client.ContainerKillOptions{Signal: "KILL"}); err != nil {
		if !cerrdefs.IsNotFound(err) && !cerrdefs.IsConflict(err) {
			r.log.Warn("cannot kill the workspace's container", "container", short(b.id), "err", err)
		}
		return
	}
	select {
	case <-wait.Result:
	case err := <-wait.Error:
		r.log.Debug("waiting for the workspace's container", "container", short(b.id), "err", err)
	}
}

// killCall kills the processes of a call whose context ended while it ran.
func (r *Runner) killCall(cli *client.Client, b *box, execID, user string) {
	ctx, cancel := context.WithTimeout(context.Background(), apiTimeout)
	defer cancel()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.active <= 1 {
		r.stop(ctx, cli, b)
		return
	}
	// Other calls run here: kill this call's tree only.
	ins, err := cli.ExecInspect(ctx, execID, client.ExecInspectOptions{})
	if err != nil || ins.PID == 0 {
		return
	}
	procs, err := r.processes(ctx, cli, b)
	if err != nil {
		r.log.Warn("cannot list the processes of the workspace's container", "container", short(b.id), "err", err)
		return
	}
	children := map[int][]int{}
	for _, p := range procs {
		children[p.ppid] = append(children[p.ppid], p.pid)
	}
	var args []string
	for queue := []int{ins.PID}; len(queue) > 0; queue = queue[1:] {
		pid := queue[0]
		queue = append(queue, children[pid]...)
		if ns, ok := nsPid(pid); ok {
			args = append(args, strconv.Itoa(ns))
		}
	}
	if len(args) == 0 {
		r.log.Warn("cannot map the call's processes into the container; they are killed when the container is next quiet", "container", short(b.id))
		return
	}
	ex, err := cli.ExecCreate(ctx, b.id, client.ExecCreateOptions{User: user,
		Cmd: append([]string{"sh", "-c", `kill -KILL "$@"`, "kill"}, args...)})
	if err == nil {
		_, err = cli.ExecStart(ctx, ex.ID, client.ExecStartOptions{})
	}
	if err != nil {
		r.log.Warn("cannot kill the call's processes in the container", "container", short(b.id), "err", err)
	}
}

// nsPid reads the pid that host process pid has in its own (the
// container's) PID namespace.
func nsPid(pid int) (int, bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "NSpid:"); ok {
			f := strings.Fields(rest)
			if len(f) < 2 {
				return 0, false // not in a nested namespace
			}
			n, err := strconv.Atoi(f[len(f)-1])
			return n, err == nil
		}
	}
	return 0, false
}

func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

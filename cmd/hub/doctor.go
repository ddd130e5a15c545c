package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/outbox"
	"github.com/a6afc2ce/hermes-hub/store"
)

const doctorUsage = `hub doctor [--config FILE] [--state DIR] [--workspace DIR]

Checks the configuration, the state directory and its files, the database,
the workspace, the configuration and secret files (which workspaces hold
them, whether others may read them), the schedules (their next and last
runs, the roles of their identities), the listen address, each enabled
platform's token (its shape, then whom the platform's API says it belongs
to, within 5s; the values are never printed) and the MCP endpoint's
agents. Exits 1 when something needs fixing.`

type doctorReport struct {
	problems int
	warnings int
	env      *cliEnv
}

func (r *doctorReport) ok(what, detail string) {
	fmt.Fprintf(r.env.stdout, "ok    %-14s %s\n", what, detail)
}

func (r *doctorReport) warn(what, detail, fix string) {
	r.warnings++
	fmt.Fprintf(r.env.stdout, "warn  %-14s %s\n", what, detail)
	if fix != "" {
		fmt.Fprintf(r.env.stdout, "      %-14s fix: %s\n", "", fix)
	}
}

func (r *doctorReport) fail(what, detail, fix string) {
	r.problems++
	fmt.Fprintf(r.env.stdout, "FAIL  %-14s %s\n", what, detail)
	if fix != "" {
		fmt.Fprintf(r.env.stdout, "      %-14s fix: %s\n", "", fix)
	}
}

func runDoctor(env *cliEnv, args []string) error {
	f := newFlags(env, "doctor", doctorUsage)
	var cf commonFlags
	cf.register(f, true)
	pos, err := f.parse(args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("unexpected argument %q", pos[0])
	}
	r := &doctorReport{env: env}
	path := config.Discover(cf.config)
	cfg, err := loadConfig(cf)
	if err != nil {
		// One line per problem, the fix after the last.
		lines := strings.Split(err.Error(), "\n")
		for i, l := range lines {
			fix := ""
			if i == len(lines)-1 {
				fix = "correct the keys named above; config.example.yml documents every key"
			}
			r.fail("config", l, fix)
		}
		return r.finish()
	}
	if path == "" {
		r.ok("config", "no file: built-in defaults (web panel on "+cfg.Web.Listen+")")
	} else {
		r.ok("config", path)
	}
	doctorWorkspace(r, cfg)
	doctorProtected(r, cfg)
	doctorProcUser(r, cfg)
	doctorDestinations(r, cfg)
	running := doctorState(r, cfg)
	doctorTargets(r, cfg)
	doctorSchedules(r, cfg)
	doctorListen(r, cfg, running)
	doctorTokens(r, cfg)
	doctorMCP(r, cfg)
	return r.finish()
}

func (r *doctorReport) finish() error {
	switch {
	case r.problems > 0:
		fmt.Fprintf(r.env.stdout, "\n%d %s to fix", r.problems, plural(r.problems, "problem", "problems"))
		if r.warnings > 0 {
			fmt.Fprintf(r.env.stdout, ", %d %s", r.warnings, plural(r.warnings, "warning", "warnings"))
		}
		fmt.Fprintln(r.env.stdout, ".")
		return &exitError{code: exitFailed}
	case r.warnings > 0:
		fmt.Fprintf(r.env.stdout, "\nNo problems, %d %s.\n", r.warnings, plural(r.warnings, "warning", "warnings"))
	default:
		fmt.Fprintln(r.env.stdout, "\nNo problems found.")
	}
	return nil
}

func doctorWorkspace(r *doctorReport, cfg *config.Config) {
	abs, _ := filepath.Abs(cfg.Workspace)
	fi, err := os.Stat(abs)
	switch {
	case err != nil:
		r.fail("workspace", err.Error(), "create the directory or set workspace: in the configuration")
		return
	case !fi.IsDir():
		r.fail("workspace", abs+" is not a directory", "set workspace: to a directory")
		return
	}
	if _, err := os.ReadDir(abs); err != nil {
		r.fail("workspace", err.Error(), "give the hub's user read access to "+abs)
		return
	}
	home, _ := os.UserHomeDir()
	if abs == "/" || abs == home {
		r.warn("workspace", abs+" exposes a whole tree to the verbs", "point workspace: at the project directory the hub should act on")
		return
	}
	r.ok("workspace", abs)
}

// doctorProcUser says whom proc.run runs programs as and why, and whether
// that user may write the workspace.
func doctorProcUser(r *doctorReport, cfg *config.Config) {
	const what = "proc user"
	p, err := chooseProcUser(cfg)
	switch {
	case err != nil:
		r.fail(what, err.Error(), "name an existing user in verbs.proc.user, or remove it (docs/security.md)")
		return
	case p.root():
		r.warn(what, "programs run "+p.why, "set verbs.proc.user to an unprivileged user that owns the workspace, or remove it (programs then run as nobody)")
		return
	case p.user == nil:
		r.ok(what, "programs run "+p.why)
		return
	}
	abs, _ := filepath.Abs(cfg.Workspace)
	fi, err := os.Stat(abs)
	if err != nil {
		r.ok(what, "programs run "+p.why)
		return // doctorWorkspace reports it
	}
	if may, known := p.user.MayWriteDir(fi); known && !may {
		r.warn(what, "programs run "+p.why+"; that user cannot write the workspace "+abs+", so programs that write files there fail",
			"make the workspace the user's, or create a dedicated user that owns it and name it in verbs.proc.user")
		return
	}
	r.ok(what, "programs run "+p.why)
}

// doctorState checks the state directory, its database and JSON files. It
// reports whether a hub is running on it.
func doctorState(r *doctorReport, cfg *config.Config) (running bool) {
	abs, _ := filepath.Abs(cfg.StateDir)
	fi, err := os.Stat(abs)
	switch {
	case errors.Is(err, os.ErrNotExist):
		r.ok("state", abs+" (created on first start)")
		return false
	case err != nil:
		r.fail("state", err.Error(), "")
		return false
	case !fi.IsDir():
		r.fail("state", abs+" is not a directory", "set state_dir: to a directory")
		return false
	case fi.Mode().Perm()&0o077 != 0:
		r.warn("state", fmt.Sprintf("%s is readable by others (mode %v): it holds mirrors of every message", abs, fi.Mode().Perm()), "chmod 700 "+abs)
	default:
		r.ok("state", abs+" (owner-only)")
	}
	st, err := store.Open(abs, store.Options{LockTimeout: 300 * time.Millisecond})
	var locked *store.LockedError
	switch {
	case errors.As(err, &locked):
		sock := filepath.Join(abs, store.SocketFile)
		if c, err := net.DialTimeout("unix", sock, time.Second); err == nil {
			c.Close()
			r.ok("database", fmt.Sprintf("in use by the running hub (pid %d); admin socket answers", locked.PID))
			return true
		}
		r.fail("database", err.Error(), "stop the other process, or wait for the running hub to finish starting")
		return true
	case err != nil:
		r.fail("database", err.Error(), "move the damaged hub.db aside and start again (the outbox in it is lost)")
		return false
	}
	defer st.Close()
	if _, err := outbox.NewBoltStore(st.DB()); err != nil {
		r.fail("database", err.Error(), "run a newer hub binary, or move hub.db aside")
	} else if _, err := store.OpenLedger(st.DB()); err != nil {
		r.fail("database", err.Error(), "run a newer hub binary, or move hub.db aside")
	} else {
		r.ok("database", filepath.Join(abs, store.DBFile))
	}
	if d, err := store.OpenDirectory(st.Root(), store.ChannelDirectory, store.DirectoryOptions{}); err != nil {
		r.fail("channels", err.Error(), "run hub channels rebuild (the directory is rebuilt from the mirrors)")
	} else {
		d.Close()
		r.ok("channels", store.ChannelDirectory)
	}
	return false
}

// doctorTargets checks the delivery targets file (plain JSON, readable
// while a hub runs) and that every local: target stays where it may write:
// under the state directory's pma/ (never on a file the hub keeps there) or
// in a directory outbox.local_roots lists.
func doctorTargets(r *doctorReport, cfg *config.Config) {
	abs, _ := filepath.Abs(cfg.StateDir)
	root, err := os.OpenRoot(abs)
	if errors.Is(err, os.ErrNotExist) {
		return
	}
	if err != nil {
		r.fail("targets", err.Error(), "")
		return
	}
	defer root.Close()
	t, err := store.OpenTargets(root, store.DeliveryTargetsFile)
	if err != nil {
		r.fail("targets", err.Error(), "repair the file, or move it aside and add the targets again with hub targets add")
		return
	}
	bad := 0
	for _, k := range t.List() {
		if err := outbox.CheckLocalTarget(abs, cfg.Outbox.LocalRoots, k); err != nil {
			bad++
			r.fail("targets", err.Error(), fmt.Sprintf("hub targets rm %s, or list its directory in %s; its chunks are dead-lettered, never written", k, outbox.LocalRootsKey))
		}
	}
	if bad == 0 {
		r.ok("targets", store.DeliveryTargetsFile)
	}
}

func doctorListen(r *doctorReport, cfg *config.Config, running bool) {
	if !*cfg.Web.Enabled {
		r.ok("listen", "web panel disabled")
		return
	}
	host, _, _ := net.SplitHostPort(cfg.Web.Listen)
	exposure := "loopback only"
	if !config.IsLoopback(host) {
		exposure = "reachable from the network; the token is required"
	}
	if from := cfg.Web.ListenFrom; from != "" {
		exposure += "; from " + from + ", over web.listen"
	}
	if running {
		r.ok("listen", cfg.Web.Listen+" ("+exposure+"; used by the running hub)")
		return
	}
	ln, err := net.Listen("tcp", cfg.Web.Listen)
	switch {
	case errors.Is(err, syscall.EADDRINUSE):
		r.fail("listen", addrInUse(cfg.Web.Listen), listenFix)
		return
	case err != nil:
		r.fail("listen", err.Error(), "choose another address with `hub serve "+config.ListenFlag+" ADDR`, "+config.ListenEnv+"=ADDR or web.listen")
		return
	}
	ln.Close()
	r.ok("listen", cfg.Web.Listen+" is free ("+exposure+")")
}

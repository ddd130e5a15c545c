package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/store"
	"github.com/a6afc2ce/hermes-hub/verbs"
	"github.com/a6afc2ce/hermes-hub/verbs/boltmeta"
	"github.com/a6afc2ce/hermes-hub/workspaces"
)

// loadConfig loads the configuration with the command-line overrides applied.
func loadConfig(c commonFlags, overrides ...config.Override) (*config.Config, error) {
	cfg, err := config.Load(config.Discover(c.config), append([]config.Override{config.Listen(c.listen)}, overrides...)...)
	if err != nil {
		return nil, err
	}
	if c.state != "" {
		cfg.StateDir = c.state
	}
	if c.workspace != "" {
		cfg.Workspace = c.workspace
	}
	return cfg, nil
}

// toolchain is the executor with every verb registered over the named
// workspaces, and what to close.
type toolchain struct {
	exec    *executor.Executor
	set     *workspaces.Set
	verbs   *verbs.Set // the fs, proc and sys verbs, for the output sweeper
	runAs   procUser   // whom proc.run runs programs as
	cleanup []func() error
}

// procUser is whom proc.run runs programs as (nil user: the hub's own),
// and why, as verbs.ChooseProcUser decided from verbs.proc.user.
type procUser struct {
	user *verbs.ProcUser
	why  string
}

// chooseProcUser applies verbs.proc.user where the hub runs.
func chooseProcUser(cfg *config.Config) (procUser, error) {
	u, why, err := verbs.ChooseProcUser(cfg.Verbs.Proc.User)
	if err != nil {
		return procUser{}, fmt.Errorf("verbs.proc.user: %w", err)
	}
	return procUser{user: u, why: why}, nil
}

// root reports whether programs run as root.
func (p procUser) root() bool { return p.user == nil && os.Geteuid() == 0 }

// log says at start whom programs run as and why; as root, as a warning.
func (p procUser) log(logger *slog.Logger) {
	if p.root() {
		logger.Warn("proc.run runs programs " + p.why)
		return
	}
	logger.Info("proc.run runs programs " + p.why)
}

func (t *toolchain) Close() error {
	var errs []error
	if t.set != nil {
		errs = append(errs, t.set.Close())
	}
	for _, f := range t.cleanup {
		errs = append(errs, f())
	}
	return errors.Join(errs...)
}

// openWorkspaces opens the named workspaces with the state directory
// (created first: on a first run too), the configuration's files and
// protect protected, and their session workspaces under sessionsDir (nil:
// the configured places), with the configured mounts when withMounts.
func openWorkspaces(cfg *config.Config, meta verbs.FileMeta, sessionsDir func(string) string, withMounts bool, protect []config.ProtectedFile, logger *slog.Logger) (*workspaces.Set, error) {
	// The state directory is protected by its identity, so it must exist
	// before the workspace opens (on a first run too). Flags may have moved
	// it after the configuration was validated: check its place again.
	if err := config.CheckStateDir(cfg.Workspace, cfg.StateDir); err != nil {
		return nil, err
	}
	state, err := filepath.Abs(cfg.StateDir)
	if err != nil {
		return nil, fmt.Errorf("state directory: %w", err)
	}
	if err := os.MkdirAll(state, 0o700); err != nil {
		return nil, fmt.Errorf("state directory: %w", err)
	}
	return workspaces.Open(cfg, workspaces.Options{
		StateDir: state, ProtectFiles: protect, Meta: meta, SessionsDir: sessionsDir, Mounts: withMounts,
		Runners: runnerFactory(cfg, logger), Logger: logger,
	})
}

// newToolchain opens the named workspaces and registers every verb over
// them (the vfs verbs over their session workspaces). The verbs write in
// the state directory through state (the opened state root); when it is
// nil, the state directory is opened here and closed with the toolchain.
func newToolchain(cfg *config.Config, meta verbs.FileMeta, state *store.StateDir, sessionsDir func(string) string, withMounts bool, protect []config.ProtectedFile, logger *slog.Logger) (*toolchain, error) {
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	runAs, err := chooseProcUser(cfg)
	if err != nil {
		return nil, err
	}
	set, err := openWorkspaces(cfg, meta, sessionsDir, withMounts, protect, logger)
	if err != nil {
		return nil, err
	}
	tc := &toolchain{set: set}
	if state == nil {
		if state, err = store.OpenStateDir(cfg.StateDir); err != nil {
			set.Close()
			return nil, err
		}
		tc.cleanup = append(tc.cleanup, state.Close)
	}
	vopts := verbs.DefaultOptions(cfg.StateDir)
	vopts.User = runAs.user
	vopts.State = state.Root()
	vopts.EnvAllow = cfg.Verbs.Proc.EnvAllow
	vopts.DefaultTimeout = cfg.Verbs.Proc.DefaultTimeout.D()
	vopts.MaxTimeout = cfg.Verbs.Proc.MaxTimeout.D()
	vopts.MaxOutputBytes = int64(cfg.Verbs.Proc.MaxOutputBytes)
	vopts.MaxProcs = cfg.Verbs.Proc.MaxProcs
	vopts.MaxMemory = int64(cfg.Verbs.Proc.MaxMemory)
	vopts.MaxCPUSeconds = cfg.Verbs.Proc.MaxCPUSeconds
	vopts.UploadDir, vopts.MaxUploadBytes, vopts.UploadTimeout = cfg.Uploads.Dir, int64(cfg.Uploads.MaxBytes), cfg.Uploads.Timeout.D()
	reg := executor.NewRegistry()
	if tc.verbs, err = set.Register(reg, vopts); err != nil {
		tc.Close()
		return nil, err
	}
	tc.exec = executor.New(reg, executor.Options{Logger: logger})
	tc.runAs = runAs
	return tc, nil
}

// buildExecutor is the toolchain of the commands that run verbs without a
// hub (hub exec, hub node): the host workspace, and the vfs verbs over a
// throw-away session store (they answer that this is not a session
// workspace). protect are files protected besides the configuration's own
// (a node's).
func buildExecutor(cfg *config.Config, logger *slog.Logger, protect ...config.ProtectedFile) (*toolchain, error) {
	tmp, err := os.MkdirTemp("", "hub-sessions-")
	if err != nil {
		return nil, err
	}
	dirs := func(name string) string { return filepath.Join(tmp, "sessions-"+name) }
	tc, err := newToolchain(cfg, verbs.NewMemoryMeta(), nil, dirs, false, protect, logger)
	if err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	tc.cleanup = append(tc.cleanup, func() error { return os.RemoveAll(tmp) })
	return tc, nil
}

// registryOnly builds the verbs' registry for commands that only need
// schemas (verbs, schema), without touching the state.
func registryOnly() (*toolchain, error) {
	cfg, err := config.LoadWith("", func(string) (string, bool) { return "", false })
	if err != nil {
		return nil, err
	}
	state, err := os.MkdirTemp("", "hub-state-")
	if err != nil {
		return nil, err
	}
	cfg.StateDir = state
	tc, err := buildExecutor(cfg, nil)
	if err != nil {
		os.RemoveAll(state)
		return nil, err
	}
	tc.cleanup = append(tc.cleanup, func() error { return os.RemoveAll(state) })
	return tc, nil
}

// stack is the composition every command that runs a hub shares, built in
// order: the state root, then the verbs (whose session metadata lives in
// it) and their executor. The hub runtime is opened over it by the caller.
type stack struct {
	st *store.State
	tc *toolchain
}

// openStack opens the state root (waiting lockTimeout for its lock) and
// builds the verbs with the configured session workspaces and mounts.
func openStack(cfg *config.Config, logger *slog.Logger, lockTimeout time.Duration) (*stack, error) {
	st, err := store.Open(cfg.StateDir, store.Options{LockTimeout: lockTimeout})
	if err != nil {
		return nil, err
	}
	meta, err := boltmeta.Open(st.DB())
	if err != nil {
		st.Close()
		return nil, err
	}
	tc, err := newToolchain(cfg, meta, st.StateDir, nil, true, nil, logger)
	if err != nil {
		st.Close()
		return nil, err
	}
	return &stack{st: st, tc: tc}, nil
}

// Close closes the verbs, then the state root: after the runtime.
func (s *stack) Close() error { return errors.Join(s.tc.Close(), s.st.Close()) }

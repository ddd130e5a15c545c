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
)

// loadConfig loads the configuration with the command-line overrides applied.
func loadConfig(c commonFlags) (*config.Config, error) {
	cfg, err := config.Load(config.Discover(c.config))
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

// toolchain is the executor with every verb registered, and what to close.
type toolchain struct {
	exec     *executor.Executor
	ws       *verbs.Workspace
	sessions *verbs.SessionSource
	verbs    *verbs.Set // the fs, proc and sys verbs, for the output sweeper
	cleanup  []func() error
}

func (t *toolchain) Close() error {
	var errs []error
	if t.sessions != nil {
		errs = append(errs, t.sessions.Close())
	}
	errs = append(errs, t.ws.Close())
	for _, f := range t.cleanup {
		errs = append(errs, f())
	}
	return errors.Join(errs...)
}

// newToolchain opens the workspace and an empty registry; registerVerbs
// fills it once the file metadata store is known.
func newToolchain(cfg *config.Config, logger *slog.Logger) (*toolchain, error) {
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
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
	wopts := workspaceOptions(cfg)
	wopts.Protect = []string{state}
	ws, err := verbs.OpenWorkspace(cfg.Workspace, wopts)
	if err != nil {
		return nil, err
	}
	reg := executor.NewRegistry()
	return &toolchain{exec: executor.New(reg, executor.Options{Logger: logger}), ws: ws}, nil
}

func workspaceOptions(cfg *config.Config) verbs.WorkspaceOptions {
	return verbs.WorkspaceOptions{MaxWriteChars: cfg.Verbs.MaxWriteChars, MaxReadBytes: int64(cfg.Verbs.MaxReadBytes)}
}

// registerVerbs registers the fourteen verbs and the vfs verbs over a
// session source: session workspaces under sessionsRoot with their file
// metadata in meta, and the configured mounts when withMounts.
func (t *toolchain) registerVerbs(cfg *config.Config, meta verbs.FileMeta, sessionsRoot string, withMounts bool, logger *slog.Logger) error {
	sopts := verbs.SessionOptions{
		Root:         sessionsRoot,
		Workspace:    workspaceOptions(cfg),
		Meta:         meta,
		MountRoots:   cfg.Sessions.Allowed,
		IdleTTL:      cfg.Sessions.IdleTTL.D(),
		SnapshotTTL:  cfg.Sessions.SnapTTL.D(),
		MaxSnapshots: cfg.Sessions.MaxSnapshots,
		AllowProc:    cfg.Sessions.AllowProc,
		Logger:       logger,
	}
	if withMounts {
		for _, m := range cfg.Sessions.Mounts {
			sopts.Mounts = append(sopts.Mounts, verbs.Mount{
				HostPath: m.HostPath, MountPath: m.MountPath, Include: m.Include, Exclude: m.Exclude,
				MaxBytes: int64(m.MaxBytes), FollowSymlinks: m.FollowSymlinks,
			})
		}
	}
	src, err := verbs.OpenSessions(t.ws, sopts)
	if err != nil {
		return fmt.Errorf("session workspaces: %w", err)
	}
	t.sessions = src
	vopts := verbs.DefaultOptions(cfg.StateDir)
	vopts.EnvAllow = cfg.Verbs.Proc.EnvAllow
	vopts.DefaultTimeout = cfg.Verbs.Proc.DefaultTimeout.D()
	vopts.MaxTimeout = cfg.Verbs.Proc.MaxTimeout.D()
	vopts.MaxOutputBytes = int64(cfg.Verbs.Proc.MaxOutputBytes)
	vopts.MaxProcs = cfg.Verbs.Proc.MaxProcs
	vopts.MaxMemory = int64(cfg.Verbs.Proc.MaxMemory)
	vopts.MaxCPUSeconds = cfg.Verbs.Proc.MaxCPUSeconds
	set, err := verbs.NewSet(src, vopts)
	if err != nil {
		return err
	}
	t.verbs = set
	reg := t.exec.Registry()
	if err := set.Register(reg); err != nil {
		return err
	}
	return src.Register(reg)
}

// buildExecutor is the toolchain of the commands that run verbs without a
// hub (hub exec): the host workspace, and the vfs verbs over a throw-away
// session store (they answer that this is not a session workspace).
func buildExecutor(cfg *config.Config, logger *slog.Logger) (*toolchain, error) {
	tc, err := newToolchain(cfg, logger)
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "hub-sessions-")
	if err != nil {
		tc.Close()
		return nil, err
	}
	tc.cleanup = append(tc.cleanup, func() error { return os.RemoveAll(tmp) })
	if err := tc.registerVerbs(cfg, verbs.NewMemoryMeta(), filepath.Join(tmp, "sessions"), false, logger); err != nil {
		tc.Close()
		return nil, err
	}
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
	tc, err := newToolchain(cfg, logger)
	if err != nil {
		st.Close()
		return nil, err
	}
	if err := tc.registerVerbs(cfg, meta, cfg.SessionsDir(), true, logger); err != nil {
		tc.Close()
		st.Close()
		return nil, err
	}
	return &stack{st: st, tc: tc}, nil
}

// Close closes the verbs, then the state root: after the runtime.
func (s *stack) Close() error { return errors.Join(s.tc.Close(), s.st.Close()) }

// Package workspaces opens the named workspaces of the configuration
// (docs/workspaces.md): for each, its host directory as a verbs.Workspace
// (confined by package verbs/confine, the hub's state protected), its
// session workspaces and, for kind docker, the Runner its proc.run goes
// to. A Set hands the verbs the workspace a call names
// (executor.Call.Workspace), the vfs.* verbs its session source and
// proc.run its runner. Which workspace a call names is decided by the hub
// with package policy.
package workspaces

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/verbs"
	"github.com/a6afc2ce/hermes-hub/workspaces/policy"
)

// RunnerFactory builds the Runner of a workspace whose destination is not
// local (kind docker): name is the workspace, d its destination.
type RunnerFactory func(name string, d config.Destination) (verbs.Runner, error)

// Checker checks a destination is usable (the daemon reachable, the image
// present, the limits accepted), for hub doctor.
type Checker interface {
	Check(ctx context.Context) error
}

// Resetter removes a destination's sandboxes: session "" means all of the
// workspace's.
type Resetter interface {
	Reset(ctx context.Context, session string) error
}

// Describer says in one line where a destination runs programs.
type Describer interface {
	Describe() string
}

// ErrLocal is returned (wrapped) by Reset for a workspace that runs
// locally: it has no sandbox to remove.
var ErrLocal = errors.New("runs locally: there is no container to reset")

// Options configure a Set.
type Options struct {
	// StateDir is protected in every workspace; it must exist.
	StateDir string
	// ProtectFiles are protected in every workspace besides the
	// configuration's own files (config.Config.ProtectedFiles): a node's
	// configuration and seed.
	ProtectFiles []config.ProtectedFile
	// Meta stores session file metadata. Required.
	Meta verbs.FileMeta
	// SessionsDir is the directory of a workspace's sessions; nil means
	// config.WorkspaceSessionsDir.
	SessionsDir func(name string) string
	// Mounts copies the configured sessions.mounts into new sessions.
	Mounts bool
	// Runners builds the runners of kind docker; nil refuses kind docker
	// with a clear error.
	Runners RunnerFactory
	// Now tells the time to the session sweepers; nil is time.Now.
	Now    func() time.Time
	Logger *slog.Logger
}

// Set is the open named workspaces. It implements verbs.WorkspaceSource
// and verbs.SessionPicker by the call's workspace name, and
// verbs.RunnerSource by the workspace's.
type Set struct {
	cfg    *config.Config
	extra  []config.ProtectedFile // Options.ProtectFiles
	policy *policy.Policy
	names  []string
	ws     map[string]*entry
	once   sync.Once
	errc   error
}

var (
	_ verbs.WorkspaceSource = (*Set)(nil)
	_ verbs.SessionPicker   = (*Set)(nil)
	_ verbs.RunnerSource    = (*Set)(nil)
)

// entry is one open workspace.
type entry struct {
	name     string
	cfg      config.WorkspaceConfig
	host     *verbs.Workspace
	sessions *verbs.SessionSource
	runner   verbs.Runner // nil: local
}

// Open opens every configured workspace. A workspace whose directory is
// missing, or of kind docker without Runners, fails the whole Set: the
// error names the workspace and the fix.
func Open(cfg *config.Config, opts Options) (_ *Set, err error) {
	if opts.Meta == nil {
		return nil, errors.New("workspaces: Options.Meta is nil")
	}
	if opts.SessionsDir == nil {
		opts.SessionsDir = cfg.WorkspaceSessionsDir
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	state, err := filepath.Abs(opts.StateDir)
	if err != nil {
		return nil, fmt.Errorf("workspaces: state directory: %w", err)
	}
	s := &Set{cfg: cfg, extra: opts.ProtectFiles, policy: policy.New(cfg), names: cfg.WorkspaceNames(), ws: map[string]*entry{}}
	files := s.protectedFiles(cfg)
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	for _, name := range s.names {
		wc, _ := cfg.WorkspaceByName(name)
		if wc.IsRemote() {
			s.ws[name] = &entry{name: name, cfg: wc} // runs on its node: nothing opens here
			continue
		}
		if err := config.CheckStateDir(wc.Path, state); err != nil {
			return nil, fmt.Errorf("workspace %s: %w", name, err)
		}
		e := &entry{name: name, cfg: wc}
		if wc.Destination.Kind != config.DestinationLocal {
			if opts.Runners == nil {
				return nil, fmt.Errorf("workspace %s: destination kind %s is not available in this build of the hub (accepted here: %s)", name, wc.Destination.Kind, config.DestinationLocal)
			}
			if e.runner, err = opts.Runners(name, wc.Destination); err != nil {
				return nil, fmt.Errorf("workspace %s: %w", name, err)
			}
		}
		wopts := verbs.WorkspaceOptions{
			MaxWriteChars: cfg.Verbs.MaxWriteChars, MaxReadBytes: int64(cfg.Verbs.MaxReadBytes),
			Name: name,
		}
		s.ws[name] = e // closed with the Set from now on
		host := wopts
		host.Protect, host.ProtectFiles = []string{state}, files
		if e.host, err = verbs.OpenWorkspace(wc.Path, host); err != nil {
			if errors.Is(err, verbs.ErrCannotProtect) {
				return nil, fmt.Errorf("workspace %s: %w (fix the key named, or move the file out of the workspace and point the key at it)", name, err)
			}
			return nil, fmt.Errorf("workspace %s: %w (create the directory or fix workspaces.%s.path)", name, err, name)
		}
		sopts := verbs.SessionOptions{
			Root:         opts.SessionsDir(name),
			Workspace:    wopts,
			Meta:         opts.Meta,
			MountRoots:   cfg.Sessions.Allowed,
			IdleTTL:      cfg.Sessions.IdleTTL.D(),
			SnapshotTTL:  cfg.Sessions.SnapTTL.D(),
			MaxSnapshots: cfg.Sessions.MaxSnapshots,
			AllowProc:    cfg.Sessions.AllowProc,
			Now:          opts.Now,
			Logger:       opts.Logger.With("workspace", name),
		}
		if opts.Mounts {
			for _, m := range cfg.Sessions.Mounts {
				sopts.Mounts = append(sopts.Mounts, verbs.Mount{
					HostPath: m.HostPath, MountPath: m.MountPath, Include: m.Include, Exclude: m.Exclude,
					MaxBytes: int64(m.MaxBytes), FollowSymlinks: m.FollowSymlinks,
				})
			}
		}
		if e.sessions, err = verbs.OpenSessions(e.host, sopts); err != nil {
			return nil, fmt.Errorf("workspace %s: session workspaces: %w", name, err)
		}
	}
	return s, nil
}

// protectedFiles is what every workspace protects besides the state
// directory: cfg's files and Options.ProtectFiles.
func (s *Set) protectedFiles(cfg *config.Config) []verbs.ProtectedFile {
	return ProtectedFiles(append(cfg.ProtectedFiles(), s.extra...))
}

// ProtectedFiles is files as verbs.WorkspaceOptions.ProtectFiles takes them.
func ProtectedFiles(files []config.ProtectedFile) []verbs.ProtectedFile {
	out := make([]verbs.ProtectedFile, len(files))
	for i, f := range files {
		out[i] = verbs.ProtectedFile{Path: f.Path, What: f.What}
	}
	return out
}

// Reprotect resolves the protected files again, with those of cfg (a
// reloaded configuration), in every host workspace and so in their
// session workspaces: a configuration file an editor replaced is
// protected by its new identity too (verbs.Workspace.RefreshProtected).
func (s *Set) Reprotect(cfg *config.Config) error {
	files := s.protectedFiles(cfg)
	var errs []error
	for _, name := range s.names {
		if e := s.ws[name]; e != nil && e.host != nil {
			if err := e.host.RefreshProtected(files); err != nil {
				errs = append(errs, fmt.Errorf("workspace %s: %w", name, err))
			}
		}
	}
	return errors.Join(errs...)
}

// Policy is the resolution and access policy of the Set's configuration.
func (s *Set) Policy() *policy.Policy { return s.policy }

// Names lists the workspaces, default first.
func (s *Set) Names() []string { return append([]string(nil), s.names...) }

// Default is the default workspace's host workspace.
func (s *Set) Default() *verbs.Workspace { return s.ws[policy.Default].host }

// Host returns the host workspace of name.
func (s *Set) Host(name string) (*verbs.Workspace, bool) {
	e, ok := s.ws[name]
	if !ok || e.host == nil {
		return nil, false
	}
	return e.host, true
}

// Runner returns the runner of name's destination: nil for local. It
// implements verbs.RunnerSource.
func (s *Set) Runner(name string) (verbs.Runner, bool) {
	e, ok := s.ws[name]
	if !ok {
		return nil, false
	}
	return e.runner, true
}

// SessionSource returns the session source of name.
func (s *Set) SessionSource(name string) (*verbs.SessionSource, bool) {
	e, ok := s.ws[name]
	if !ok || e.sessions == nil {
		return nil, false
	}
	return e.sessions, true
}

// entryOf returns the workspace the call in ctx names ("" is default).
func (s *Set) entryOf(ctx context.Context) (*entry, error) {
	name := executor.CallFrom(ctx).Workspace
	if name == "" {
		name = policy.Default
	}
	e, ok := s.ws[name]
	if !ok {
		return nil, executor.Errorf(executor.CodeForbidden, "Workspace %q is not configured on this hub; send /use for the workspaces you may use", name)
	}
	if e.host == nil {
		return nil, remoteError(e)
	}
	return e, nil
}

// Place implements verbs.WorkspaceSource: the call's workspace, its
// session's in session mode.
func (s *Set) Place(ctx context.Context) (verbs.Place, error) {
	e, err := s.entryOf(ctx)
	if err != nil {
		return verbs.Place{}, err
	}
	return e.sessions.Place(ctx)
}

// Sessions implements verbs.SessionPicker: the call's workspace's session
// source.
func (s *Set) Sessions(ctx context.Context) (*verbs.SessionSource, error) {
	e, err := s.entryOf(ctx)
	if err != nil {
		return nil, err
	}
	return e.sessions, nil
}

// Register adds the fourteen verbs and the vfs.* verbs to reg, acting in
// the workspace each call names, proc.run with its runner.
func (s *Set) Register(reg *executor.Registry, opts verbs.Options) (*verbs.Set, error) {
	opts.Runners = s
	vs, err := verbs.NewSet(s, opts)
	if err != nil {
		return nil, err
	}
	if err := vs.Register(reg); err != nil {
		return nil, err
	}
	return vs, verbs.RegisterVfs(reg, s)
}

// Describe says where name runs its programs: its runner's own words when
// it has them, the configuration's otherwise.
func (s *Set) Describe(name string) string {
	if e, ok := s.ws[name]; ok {
		if d, ok := e.runner.(Describer); ok && e.runner != nil {
			return d.Describe()
		}
	}
	return s.policy.Destination(name)
}

// Check checks that name's destination is usable: for local, that its
// directory is still there; otherwise its runner's Check.
func (s *Set) Check(ctx context.Context, name string) error {
	e, ok := s.ws[name]
	if !ok {
		return s.policy.UnknownError(name)
	}
	if e.host == nil {
		return nil // a remote workspace: its node checks it (hub nodes list)
	}
	if e.runner == nil {
		fi, err := os.Stat(e.host.Dir())
		if err != nil {
			return fmt.Errorf("workspace %s: %w (create the directory or fix its path)", name, err)
		}
		if !fi.IsDir() {
			return fmt.Errorf("workspace %s: %s is not a directory", name, e.host.Dir())
		}
		return nil
	}
	c, ok := e.runner.(Checker)
	if !ok {
		return nil
	}
	if err := c.Check(ctx); err != nil {
		return fmt.Errorf("workspace %s: %w", name, err)
	}
	return nil
}

// Reset removes the sandboxes of name (of one session when session is not
// empty). A local workspace has none: the error wraps ErrLocal.
func (s *Set) Reset(ctx context.Context, name, session string) error {
	e, ok := s.ws[name]
	if !ok {
		return s.policy.UnknownError(name)
	}
	if e.host == nil {
		return remoteError(e)
	}
	r, ok := e.runner.(Resetter)
	if e.runner == nil || !ok {
		return fmt.Errorf("workspace %s %w (its programs are host processes that end with their call)", name, ErrLocal)
	}
	if err := r.Reset(ctx, session); err != nil {
		return fmt.Errorf("workspace %s: reset: %w", name, err)
	}
	return nil
}

// RunSweepers sweeps every workspace's expired sessions every interval
// until ctx ends.
func (s *Set) RunSweepers(ctx context.Context, interval time.Duration) {
	var wg sync.WaitGroup
	for _, e := range s.ws {
		if e.sessions == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			e.sessions.RunSweeper(ctx, interval)
		}()
	}
	wg.Wait()
}

// Close closes every workspace, its sessions and its runner (when it is an
// io.Closer).
func (s *Set) Close() error {
	s.once.Do(func() {
		var errs []error
		for _, e := range s.ws {
			if e.sessions != nil {
				errs = append(errs, e.sessions.Close())
			}
			if e.host != nil {
				errs = append(errs, e.host.Close())
			}
			if c, ok := e.runner.(io.Closer); ok {
				errs = append(errs, c.Close())
			}
		}
		s.errc = errors.Join(errs...)
	})
	return s.errc
}

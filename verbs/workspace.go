package verbs

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/a6afc2ce/hermes-hub/verbs/confine"
)

// Workspace limits used when WorkspaceOptions leaves a field zero.
const (
	DefaultMaxWriteChars = 48000
	DefaultMaxReadBytes  = 4 << 20
	DefaultMaxDepth      = confine.DefaultMaxDepth
	DefaultMaxSegment    = confine.DefaultMaxSegment
)

// ProtectedFile is a file no verb may reach (see confine.ProtectedFile).
type ProtectedFile = confine.ProtectedFile

// ErrCannotProtect is wrapped by the error of a protected file that
// cannot be protected (WorkspaceOptions.ProtectFiles,
// Workspace.RefreshProtected).
var ErrCannotProtect = confine.ErrCannotProtect

// WorkspaceOptions configure a Workspace. Zero fields take the defaults above.
type WorkspaceOptions struct {
	// Protect, Deny and ProtectFiles are what the workspace's confinement
	// keeps out of every verb's reach: the hub's state directory by its
	// identity, paths by their spelling, the configuration and secret
	// files by their identity and place. See confine.Options.
	Protect      []string
	Deny         []string
	ProtectFiles []ProtectedFile
	// MaxWriteChars caps the characters (runes) one write may carry.
	MaxWriteChars int
	// MaxReadBytes caps what fs.readFile returns and what one fs.readRange may return.
	MaxReadBytes int64
	// MaxDepth caps the number of segments in a path.
	MaxDepth int
	// MaxSegment caps the length of one path segment, in bytes.
	MaxSegment int
	// Name is the workspace's configured name ("default" when unnamed);
	// messages and runners use it.
	Name string
}

func (o WorkspaceOptions) withDefaults() (WorkspaceOptions, error) {
	if o.MaxWriteChars < 0 || o.MaxReadBytes < 0 || o.MaxDepth < 0 || o.MaxSegment < 0 {
		return o, errors.New("workspace limits must not be negative (zero means the default)")
	}
	if o.MaxWriteChars == 0 {
		o.MaxWriteChars = DefaultMaxWriteChars
	}
	if o.MaxReadBytes == 0 {
		o.MaxReadBytes = DefaultMaxReadBytes
	}
	if o.MaxDepth == 0 {
		o.MaxDepth = DefaultMaxDepth
	}
	if o.MaxSegment == 0 {
		o.MaxSegment = DefaultMaxSegment
	}
	return o, nil
}

// limits are the path guard's limits of o.
func (o WorkspaceOptions) limits() confine.Limits {
	return confine.Limits{MaxDepth: o.MaxDepth, MaxSegment: o.MaxSegment}
}

// Workspace is a directory tree the verbs act in: a confined root (package
// confine: every path is checked, opened by descriptors, and kept out of
// the hub's state, configuration and secrets), the verbs' limits and the
// workspace's name. A session workspace belongs to its session (see
// SessionSource); a Workspace knows nothing of sessions, caches or runners.
type Workspace struct {
	root *confine.Root
	opts WorkspaceOptions
	// id numbers the workspaces of the process, for what the verbs keep
	// of one (listings, see listCache).
	id uint64
	// stale holds, by owner, what drops the verbs' copies of what the
	// workspace showed (see onStale).
	mu    sync.Mutex
	stale map[any]func()
}

// workspaceIDs numbers the workspaces of the process.
var workspaceIDs atomic.Uint64

// OpenWorkspace opens dir as a workspace.
func OpenWorkspace(dir string, opts WorkspaceOptions) (*Workspace, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("open workspace %s: %w", dir, err)
	}
	root, err := confine.Open(dir, confine.Options{
		Protect: opts.Protect, Deny: opts.Deny, ProtectFiles: opts.ProtectFiles, Limits: opts.limits(),
	})
	if err != nil {
		return nil, fmt.Errorf("open workspace %s: %w", dir, err)
	}
	return newWorkspace(root, opts), nil
}

// openShared opens dir as a workspace protected by p, another workspace's
// protection: a session's (see confine.OpenShared).
func openShared(dir string, opts WorkspaceOptions, p *confine.Protection) (*Workspace, error) {
	root, err := confine.OpenShared(dir, opts.limits(), p)
	if err != nil {
		return nil, err
	}
	return newWorkspace(root, opts), nil
}

func newWorkspace(root *confine.Root, opts WorkspaceOptions) *Workspace {
	return &Workspace{root: root, opts: opts, id: workspaceIDs.Add(1)}
}

// RefreshProtected resolves files again and protects them besides what
// the workspace protected already (see WorkspaceOptions.ProtectFiles): a
// configuration file an editor replaced has its new identity recorded,
// and an old one that still has a name stays protected. Its session
// workspaces share the result; what the verbs kept of its listings is
// dropped.
func (w *Workspace) RefreshProtected(files []ProtectedFile) error {
	if err := w.root.Refresh(files); err != nil {
		return err
	}
	w.dropStale()
	return nil
}

// Close releases the workspace's directory handles and, for a host
// workspace, those of its protected directories.
func (w *Workspace) Close() error {
	w.dropStale()
	return w.root.Close()
}

// onStale registers drop, under owner (one per owner: a later call
// replaces it), to run once when what the verbs kept of the workspace may
// no longer hold: when its protected files are resolved again, and when it
// closes.
func (w *Workspace) onStale(owner any, drop func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stale == nil {
		w.stale = map[any]func(){}
	}
	w.stale[owner] = drop
}

func (w *Workspace) dropStale() {
	w.mu.Lock()
	stale := w.stale
	w.stale = nil
	w.mu.Unlock()
	for _, drop := range stale {
		drop()
	}
}

// Dir is the workspace's absolute directory on the host.
func (w *Workspace) Dir() string { return w.root.Dir() }

// Options returns the workspace's limits, defaults filled in.
func (w *Workspace) Options() WorkspaceOptions { return w.opts }

// Place implements WorkspaceSource: w, a host workspace, for every call.
func (w *Workspace) Place(context.Context) (Place, error) { return Place{ws: w}, nil }

// Place is where one call acts: a workspace and, when it is a session
// workspace, the session that owns it.
type Place struct {
	ws   *Workspace
	sess *session
}

// Workspace is the workspace the call acts in.
func (p Place) Workspace() *Workspace { return p.ws }

// WorkspaceSource hands a verb the place it acts in: *Workspace is a source
// that always returns itself; a per-conversation source (SessionSource)
// picks the call's session from ctx.
type WorkspaceSource interface {
	Place(ctx context.Context) (Place, error)
}

var _ WorkspaceSource = (*Workspace)(nil)

package verbs

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/internal/posix"
	"github.com/a6afc2ce/hermes-hub/verbs/confine"
)

// Session workspace defaults, used when SessionOptions leaves a field zero.
const (
	DefaultIdleTTL       = 24 * time.Hour
	DefaultSnapshotTTL   = 7 * 24 * time.Hour
	DefaultMaxSnapshots  = 20
	DefaultMountMaxBytes = 64 << 20
	// MaxSessionID is the longest session id accepted, in bytes.
	MaxSessionID = 128
	// maxInfoFiles caps the files vfs.info lists.
	maxInfoFiles = 200
)

// TimeFormat is how file and snapshot times appear in results: UTC with
// milliseconds.
const TimeFormat = "2006-01-02T15:04:05.000Z"

// Names inside a session's directory.
const (
	liveDir     = "live"      // the workspace the verbs act in
	snapsDir    = "snapshots" // one directory per snapshot
	tmpPrefix   = "tmp-"      // a workspace being built
	oldPrefix   = "old-"      // a workspace being replaced
	snapTree    = "tree"      // a snapshot's copy of the workspace
	snapInfo    = "info.json" // a snapshot's metadata
	snapPending = ".tmp-"     // a snapshot being written
)

// SessionOptions configure a SessionSource.
type SessionOptions struct {
	// Root holds one directory per session. It is created with owner-only
	// permissions; an existing one must be a real directory owned by this
	// user (it may sit in a shared temporary directory), and is made
	// owner-only.
	Root string
	// Workspace holds the limits and name of session workspaces. Protect,
	// Deny and ProtectFiles are ignored: session workspaces live inside the
	// hub's state (its sessions directory), so they share the host
	// workspace's protected identities instead, checked below their own
	// root only (confine.OpenShared). Nothing of the state lies inside a
	// session; its root confines every path.
	Workspace WorkspaceOptions
	// Meta stores the files' versions and timestamps. Required.
	Meta FileMeta
	// Mounts are copied into every new session and on vfs.reset, in order;
	// a later mount overwrites what an earlier one put at the same path.
	Mounts []Mount
	// MountRoots are the host directories mounts may come from.
	MountRoots []string
	// IdleTTL: a session unused for this long is removed by Sweep (its
	// snapshots stay until they expire themselves).
	IdleTTL time.Duration
	// SnapshotTTL: snapshots older than this are removed by Sweep.
	SnapshotTTL time.Duration
	// MaxSnapshots per session; taking one more removes the oldest.
	MaxSnapshots int
	// AllowProc lets proc.run run host processes in session workspaces. A
	// process is not confined to its working directory, so it is off by
	// default: session workspaces are for chats that must not reach the
	// host. A workspace whose programs run elsewhere (Options.Runners)
	// allows proc.run in its sessions regardless: each session's directory
	// is all its sandbox sees.
	AllowProc bool
	// Now tells the time (tests pass a fake); nil means time.Now.
	Now func() time.Time
	// Logger receives warnings (files a mount skipped, sweep failures).
	Logger *slog.Logger
}

// SessionSource is a WorkspaceSource that gives every conversation its own
// workspace. The session id comes from executor.CallFrom(ctx).Session: empty
// means the host workspace; otherwise the session's directory under Root,
// created on first use with the mounts copied in.
//
// On disk a session is Root/<name>/, where <name> is the session id with
// every character outside [A-Za-z0-9_-] replaced by '_' (at most 48 of them)
// plus '-' and 16 hex digits of its SHA-256, so no id can name a path
// outside Root or collide with another. Inside: live/ is the workspace,
// snapshots/<id>/ holds a snapshot (tree/ plus info.json), and tmp-*/old-*
// exist only while a workspace is replaced.
//
// A session owns its workspace: the verbs get both from Place, and lock the
// session around their work: reads share the lock, writes, snapshots,
// restores and resets hold it alone, so two turns of one session never
// interleave a write. Sessions are independent of each other.
type SessionSource struct {
	host   *Workspace
	opts   SessionOptions
	root   string
	roots  []string // mount roots, absolute, symbolic links resolved
	mounts []resolvedMount
	log    *slog.Logger

	mu        sync.Mutex
	sessions  map[string]*session  // by session id
	firstSeen map[string]time.Time // session directories found on disk but not in use, by name
	closed    bool
}

var _ WorkspaceSource = (*SessionSource)(nil)

// session is one conversation's workspace.
type session struct {
	src  *SessionSource
	id   string
	dir  string // Root/<name>
	name string

	// mu serialises the verbs of this session (see SessionSource); it also
	// guards ws, and ws's directory, which vfs.restore and vfs.reset swap.
	mu       sync.RWMutex
	ws       *Workspace // nil until opened
	dropped  bool       // removed by Sweep, or failed to open: callers start over
	lastSnap time.Time  // creation time of the newest snapshot, for ordering ids

	lastUsed atomic.Int64 // unix nanoseconds
}

// OpenSessions returns a SessionSource handing out host for calls without a
// session (host may be nil: such calls then fail) and session workspaces
// otherwise. The mounts are resolved and walked once here, so a mount
// outside the roots or over its byte budget fails now, not in a chat.
func OpenSessions(host *Workspace, opts SessionOptions) (*SessionSource, error) {
	if opts.Meta == nil {
		return nil, errors.New("sessions: SessionOptions.Meta is nil")
	}
	if opts.Root == "" {
		return nil, errors.New("sessions: SessionOptions.Root is empty")
	}
	if opts.IdleTTL < 0 || opts.SnapshotTTL < 0 || opts.MaxSnapshots < 0 {
		return nil, errors.New("sessions: times and counts must not be negative (zero means the default)")
	}
	if opts.IdleTTL == 0 {
		opts.IdleTTL = DefaultIdleTTL
	}
	if opts.SnapshotTTL == 0 {
		opts.SnapshotTTL = DefaultSnapshotTTL
	}
	if opts.MaxSnapshots == 0 {
		opts.MaxSnapshots = DefaultMaxSnapshots
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	opts.Workspace.Deny, opts.Workspace.Protect, opts.Workspace.ProtectFiles = nil, nil, nil
	wo, err := opts.Workspace.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("sessions: %w", err)
	}
	opts.Workspace = wo
	root, err := prepareRoot(opts.Root)
	if err != nil {
		return nil, err
	}
	s := &SessionSource{
		host: host, opts: opts, root: root, log: opts.Logger,
		sessions: map[string]*session{}, firstSeen: map[string]time.Time{},
	}
	if s.roots, err = resolveRoots(opts.MountRoots); err != nil {
		return nil, err
	}
	if s.mounts, err = resolveMounts(opts.Mounts, s.roots, wo, s.protection()); err != nil {
		return nil, err
	}
	p, err := s.plan()
	if err != nil {
		return nil, fmt.Errorf("sessions: %w", err)
	}
	for _, sk := range p.skipped {
		s.log.Warn("session mounts skip a file", "mount", sk.mount, "file", sk.file, "reason", sk.reason)
	}
	return s, nil
}

// prepareRoot creates the sessions root (owner-only) or checks an existing
// one: a directory, not a symbolic link, owned by this user. Its mode is
// tightened to 0700.
func prepareRoot(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("sessions root %s: %w", dir, err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return "", fmt.Errorf("sessions root: %w", err)
	}
	if err := os.Mkdir(abs, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("sessions root: %w", err)
	}
	fi, err := os.Lstat(abs)
	if err != nil {
		return "", fmt.Errorf("sessions root: %w", err)
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return "", fmt.Errorf("sessions root %s is a symbolic link; remove it or choose another directory", abs)
	case !fi.IsDir():
		return "", fmt.Errorf("sessions root %s is not a directory", abs)
	}
	if uid, _, ok := posix.Owner(fi); ok && uid != os.Getuid() {
		return "", fmt.Errorf("sessions root %s belongs to user id %d, not to this user (%d); remove it or choose another directory", abs, uid, os.Getuid())
	}
	if fi.Mode().Perm() != 0o700 {
		if err := os.Chmod(abs, 0o700); err != nil {
			return "", fmt.Errorf("sessions root: make %s owner-only: %w", abs, err)
		}
	}
	return abs, nil
}

// protection is the set of protected directories and files session
// workspaces share: the host workspace's (nil without one: none).
func (s *SessionSource) protection() *confine.Protection {
	if s.host == nil {
		return nil
	}
	return s.host.root.Protection()
}

// Root is the directory holding the sessions.
func (s *SessionSource) Root() string { return s.root }

// Close releases every session's directory handle. Nothing is removed: a
// new SessionSource on the same root finds the sessions again.
func (s *SessionSource) Close() error {
	s.mu.Lock()
	s.closed = true
	all := make([]*session, 0, len(s.sessions))
	for _, se := range s.sessions {
		all = append(all, se)
	}
	s.sessions = map[string]*session{}
	s.mu.Unlock()
	var errs []error
	for _, se := range all {
		se.mu.Lock()
		if se.ws != nil {
			errs = append(errs, se.ws.Close())
		}
		se.dropped = true
		se.mu.Unlock()
	}
	return errors.Join(errs...)
}

func (s *SessionSource) now() time.Time { return s.opts.Now().UTC().Truncate(time.Millisecond) }

// Place implements WorkspaceSource: the host workspace for calls without
// a session, the session and its workspace (created on first use)
// otherwise.
func (s *SessionSource) Place(ctx context.Context) (Place, error) {
	id := executor.CallFrom(ctx).Session
	if id == "" {
		if s.host == nil {
			return Place{}, executor.Errorf(executor.CodeForbidden, "This call has no session and the hub has no host workspace; name a session")
		}
		return Place{ws: s.host}, nil
	}
	se, err := s.session(ctx, id)
	if err != nil {
		return Place{}, err
	}
	return Place{ws: se.ws, sess: se}, nil
}

// ValidSessionID checks a session id: 1 to MaxSessionID printable ASCII
// characters without spaces, such as a chat key.
func ValidSessionID(id string) error {
	ok := id != "" && len(id) <= MaxSessionID
	for i := 0; ok && i < len(id); i++ {
		ok = id[i] > 0x20 && id[i] < 0x7f
	}
	if !ok {
		return executor.Errorf(executor.CodeInvalidArguments,
			"Session id %q is not accepted (1 to %d printable ASCII characters without spaces, like chat:telegram:-100:5 or agent-7)", id, MaxSessionID)
	}
	return nil
}

// SessionDirName is the name of a session's directory under the root: a
// readable, sanitised prefix of id and a hash of all of it.
func SessionDirName(id string) string {
	var b strings.Builder
	for i := 0; i < len(id) && b.Len() < 48; i++ {
		c := id[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' {
			b.WriteByte(c)
		} else {
			b.WriteByte('_')
		}
	}
	sum := sha256.Sum256([]byte(id))
	return b.String() + "-" + hex.EncodeToString(sum[:8])
}

// isSessionDirName reports whether name has SessionDirName's shape.
func isSessionDirName(name string) bool {
	i := strings.LastIndexByte(name, '-')
	if i < 0 || len(name)-i-1 != 16 || i > 48 {
		return false
	}
	for j := 0; j < len(name); j++ {
		c := name[j]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	_, err := hex.DecodeString(name[i+1:])
	return err == nil
}

// session returns the open session id, opening or creating it. A session
// whose workspace disappeared from disk while the hub ran (a temporary
// directory cleaner, an operator) is built again from the mounts, and the
// call in ctx gets a note saying so.
func (s *SessionSource) session(ctx context.Context, id string) (*session, error) {
	if err := ValidSessionID(id); err != nil {
		return nil, err
	}
	for range 3 {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return nil, executor.Errorf(executor.CodeIOError, "The hub is shutting down; session workspaces are closed")
		}
		se := s.sessions[id]
		if se == nil {
			name := SessionDirName(id)
			se = &session{src: s, id: id, name: name, dir: filepath.Join(s.root, name)}
			s.sessions[id] = se
			delete(s.firstSeen, name)
		}
		s.mu.Unlock()
		se.touch()
		se.mu.Lock()
		if se.dropped {
			se.mu.Unlock()
			continue // swept meanwhile: start over with a new one
		}
		note := ""
		if se.ws != nil {
			switch se.gone() {
			case liveMissing:
				note = "This session's workspace had disappeared from disk; it was created again from the mounts, so files written in it before are gone (snapshots that remain can be restored with vfs.restore)."
			case liveReplaced:
				note = "This session's workspace directory had been replaced on disk; the new one is used from now on."
			}
			if note != "" {
				s.log.Warn("session workspace changed on disk; opening it again", "session", id, "note", note)
				se.ws.Close()
				se.ws = nil
			}
		}
		if se.ws == nil {
			if err := se.open(); err != nil {
				se.dropped = true
				se.mu.Unlock()
				s.forget(se)
				return nil, err
			}
		}
		se.mu.Unlock()
		executor.Note(ctx, note)
		return se, nil
	}
	return nil, executor.Errorf(executor.CodeIOError, "Session %s was removed while it was being opened; try again", id)
}

// What became of an open session's live/ directory on disk.
const (
	liveKept     = iota
	liveMissing  // removed (with the session's directory, or the whole root)
	liveReplaced // another directory stands in its place
)

// gone says whether the open workspace's directory is still the session's
// live/ directory. The caller holds se.mu.
func (se *session) gone() int {
	fi, err := os.Lstat(se.live())
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return liveMissing
	case err != nil:
		return liveKept // unknown: the verb reports what it meets
	}
	if !se.ws.root.SameDir(fi) {
		return liveReplaced
	}
	return liveKept
}

// forget removes se from the map if it is still the session for its id.
func (s *SessionSource) forget(se *session) {
	s.mu.Lock()
	if s.sessions[se.id] == se {
		delete(s.sessions, se.id)
	}
	s.mu.Unlock()
}

func (se *session) touch() { se.lastUsed.Store(se.src.opts.Now().UnixNano()) }

func (se *session) live() string { return filepath.Join(se.dir, liveDir) }

// lock locks the session for reading or writing and returns the unlock.
func (se *session) lock(write bool) func() {
	if write {
		se.mu.Lock()
		return se.mu.Unlock
	}
	se.mu.RLock()
	return se.mu.RUnlock
}

// open opens the session's workspace, building it from the mounts when it
// does not exist yet. The caller holds se.mu.
func (se *session) open() error {
	err := os.Mkdir(se.dir, 0o700)
	if errors.Is(err, fs.ErrNotExist) {
		// The root itself went away (a temporary-directory cleaner): make
		// it again, with the same checks as at start.
		if _, err = prepareRoot(se.src.root); err == nil {
			err = os.Mkdir(se.dir, 0o700)
		}
	}
	if err != nil && !errors.Is(err, fs.ErrExist) {
		return sessionError(se.id, "create the session directory", err)
	}
	if err := se.recoverLive(); err != nil {
		return sessionError(se.id, "recover the session directory", err)
	}
	if _, err := os.Lstat(se.live()); errors.Is(err, fs.ErrNotExist) {
		tmp, err := se.tempDir()
		if err != nil {
			return err
		}
		metas, err := se.src.materialise(tmp)
		if err != nil {
			os.RemoveAll(tmp)
			return err
		}
		// The records go first: after a crash before the rename, the next
		// open builds the workspace (and its records) again.
		if err := se.src.opts.Meta.Replace(se.id, metas); err != nil {
			os.RemoveAll(tmp)
			return sessionError(se.id, "record file metadata", err)
		}
		if err := os.Rename(tmp, se.live()); err != nil {
			os.RemoveAll(tmp)
			return sessionError(se.id, "create the workspace", err)
		}
		syncPath(se.dir)
	} else if err != nil {
		return sessionError(se.id, "open the workspace", err)
	}
	ws, err := openShared(se.live(), se.src.opts.Workspace, se.src.protection())
	if err != nil {
		return sessionError(se.id, "open the workspace", err)
	}
	se.ws = ws
	return nil
}

// recoverLive finishes or undoes a replacement a crash interrupted: with no
// live/ an old-* directory becomes live again; tmp-* and any other old-*
// are removed.
func (se *session) recoverLive() error {
	des, err := os.ReadDir(se.dir)
	if err != nil {
		return err
	}
	_, lerr := os.Lstat(se.live())
	haveLive := lerr == nil
	for _, de := range des {
		name := de.Name()
		switch {
		case strings.HasPrefix(name, oldPrefix) && !haveLive:
			if err := os.Rename(filepath.Join(se.dir, name), se.live()); err != nil {
				return err
			}
			haveLive = true
		case strings.HasPrefix(name, oldPrefix), strings.HasPrefix(name, tmpPrefix):
			if err := os.RemoveAll(filepath.Join(se.dir, name)); err != nil {
				return err
			}
		}
	}
	return nil
}

// tempDir creates an empty owner-only directory in the session's directory.
func (se *session) tempDir() (string, error) {
	for range 10 {
		p := filepath.Join(se.dir, tmpPrefix+randHex(6))
		err := os.Mkdir(p, 0o700)
		if err == nil {
			return p, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return "", sessionError(se.id, "create a temporary directory", err)
		}
	}
	return "", sessionError(se.id, "create a temporary directory", fs.ErrExist)
}

// replaceLive builds a fresh workspace with build and swaps it in for the
// current one: the workspace's path stays the same, its directory is new.
// build returns the new workspace's file records. The caller holds se.mu
// for writing.
func (se *session) replaceLive(build func(tmp string) ([]Meta, error)) error {
	tmp, err := se.tempDir()
	if err != nil {
		return err
	}
	metas, err := build(tmp)
	if err != nil {
		os.RemoveAll(tmp)
		return err
	}
	old := filepath.Join(se.dir, oldPrefix+randHex(6))
	hadLive := true
	if err := os.Rename(se.live(), old); errors.Is(err, fs.ErrNotExist) {
		hadLive = false // removed behind the hub's back: nothing to keep
	} else if err != nil {
		os.RemoveAll(tmp)
		return sessionError(se.id, "replace the workspace", err)
	}
	if err := os.Rename(tmp, se.live()); err != nil {
		if !hadLive || os.Rename(old, se.live()) != nil {
			se.drop()
		}
		os.RemoveAll(tmp)
		return sessionError(se.id, "replace the workspace", err)
	}
	syncPath(se.dir)
	metaErr := se.src.opts.Meta.Replace(se.id, metas)
	if err := se.ws.root.Reopen(); err != nil {
		se.drop()
		os.RemoveAll(old)
		return sessionError(se.id, "open the new workspace", err)
	}
	if err := os.RemoveAll(old); err != nil {
		se.src.log.Warn("remove a replaced session workspace", "session", se.id, "err", err)
	}
	if metaErr != nil {
		return sessionError(se.id, "record file metadata", metaErr)
	}
	return nil
}

// drop closes the session's workspace and marks it dropped so the next call
// opens it afresh. The caller holds se.mu for writing.
func (se *session) drop() {
	if se.ws != nil {
		se.ws.Close()
	}
	se.dropped = true
	se.src.forget(se)
}

// sessionError is an io_error that names the session but no host path.
func sessionError(id, what string, err error) *executor.Error {
	var e *executor.Error
	if errors.As(err, &e) {
		return e
	}
	return &executor.Error{Code: executor.CodeIOError, Err: err, Message: fmt.Sprintf("Session %s: cannot %s: %s", id, what, confine.Hostless(err))}
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// syncPath fsyncs a directory so renames in it are durable; failures are
// ignored (some filesystems cannot).
func syncPath(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}

// copiedFile is one file copyTree copied.
type copiedFile struct {
	path    string
	size    int64
	modTime time.Time
}

// copyTree copies the directories and regular files of src into the empty
// directory dst (symbolic links and special files are left out), fsyncing
// every file, and returns the files in walk order.
func copyTree(src *os.Root, dst string) ([]copiedFile, error) {
	out, err := os.OpenRoot(dst)
	if err != nil {
		return nil, err
	}
	defer out.Close()
	var files []copiedFile
	err = fs.WalkDir(src.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == "." {
			return nil
		}
		switch {
		case d.IsDir():
			return out.Mkdir(p, 0o755)
		case !d.Type().IsRegular():
			return nil
		}
		in, err := src.OpenFile(p, os.O_RDONLY|oNoFollow|oNonblock, 0)
		if err != nil {
			return err
		}
		defer in.Close()
		fi, err := in.Stat()
		if err != nil {
			return err
		}
		if !fi.Mode().IsRegular() {
			return nil
		}
		n, err := writeNew(out, p, fi.Mode().Perm(), in)
		if err != nil {
			return err
		}
		files = append(files, copiedFile{path: p, size: n, modTime: fi.ModTime()})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return files, nil
}

// writeNew creates name in root (it must not exist) with the content of r,
// fsynced, and returns the bytes written.
func writeNew(root *os.Root, name string, perm fs.FileMode, r io.Reader) (int64, error) {
	f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm|0o600)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(f, r)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = root.Remove(name)
	}
	return n, err
}

// msUTC truncates t to milliseconds in UTC.
func msUTC(t time.Time) time.Time { return t.UTC().Truncate(time.Millisecond) }

// fmtTime formats a metadata time for results; the zero time is "".
func fmtTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(TimeFormat)
}

// metaOf returns the recorded metadata of file name in the session's
// workspace, or, for a file the hub did not write (proc.run made it),
// version 1 with its modification time. The caller holds the session lock.
func (se *session) metaOf(name string, fi fs.FileInfo) (Meta, error) {
	m, ok, err := se.src.opts.Meta.Get(se.id, name)
	if err != nil {
		return Meta{}, executor.Errorf(executor.CodeIOError, "Cannot read the metadata of %s: %v", name, err)
	}
	if !ok {
		t := msUTC(fi.ModTime())
		m = Meta{Path: name, Version: 1, CreatedAt: t, UpdatedAt: t}
	}
	return m, nil
}

// recordWrite records a write of file name in the session's workspace:
// version 1 for a new file (prev nil), otherwise one more than before,
// updatedAt now, createdAt kept. enc is the new encoding hint; "" keeps the
// old one. The caller holds the session lock for writing.
func (se *session) recordWrite(name, show string, prev fs.FileInfo, enc string) (Meta, error) {
	now := se.src.now()
	m := Meta{Path: name, Version: 1, CreatedAt: now}
	if prev != nil {
		old, err := se.metaOf(name, prev)
		if err != nil {
			return Meta{}, err
		}
		m.Version, m.CreatedAt, m.Encoding = old.Version+1, old.CreatedAt, old.Encoding
	}
	m.UpdatedAt = now
	if enc != "" {
		m.Encoding = enc
	}
	if err := se.src.opts.Meta.Put(se.id, m); err != nil {
		return Meta{}, executor.Errorf(executor.CodeIOError, "Wrote %s but could not record its new version: %v", show, err)
	}
	return m, nil
}

// metaDelete forgets the records of name (and, with dir, everything under
// it) after the file or directory was removed.
func (se *session) metaDelete(name, show string, dir bool) error {
	var err error
	if dir {
		_, err = se.src.opts.Meta.DeletePrefix(se.id, name)
	} else {
		err = se.src.opts.Meta.Delete(se.id, name)
	}
	if err != nil {
		return executor.Errorf(executor.CodeIOError, "Deleted %s but could not forget its metadata: %v", show, err)
	}
	return nil
}

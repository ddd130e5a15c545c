package verbs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/verbs/confine"
)

// Register adds the five vfs.* verbs to reg. They act on the caller's
// session (executor.CallFrom(ctx).Session) and fail for calls in the host
// workspace.
func (s *SessionSource) Register(reg *executor.Registry) error { return RegisterVfs(reg, s) }

// A SessionPicker hands the vfs.* verbs the session source of a call: a
// hub with several named workspaces picks the one the call acts in.
type SessionPicker interface {
	Sessions(ctx context.Context) (*SessionSource, error)
}

// Sessions implements SessionPicker by returning s.
func (s *SessionSource) Sessions(context.Context) (*SessionSource, error) { return s, nil }

var _ SessionPicker = (*SessionSource)(nil)

// RegisterVfs adds the five vfs.* verbs to reg, each acting on the session
// source p picks for the call.
func RegisterVfs(reg *executor.Registry, p SessionPicker) error {
	regs := []func() error{
		reg1(reg, "vfs.snapshot", "Snapshot this conversation's session workspace", false, picked(p, (*SessionSource).Snapshot)),
		reg1(reg, "vfs.restore", "Replace the session workspace with a copy of a snapshot", false, picked(p, (*SessionSource).Restore)),
		reg1(reg, "vfs.reset", "Start the session workspace afresh from the host mounts", false, picked(p, (*SessionSource).Reset)),
		reg1(reg, "vfs.info", "Describe the session workspace: root, files, sizes and versions", true, picked(p, (*SessionSource).Info)),
		reg1(reg, "vfs.list", "List this conversation's snapshots", true, picked(p, (*SessionSource).ListSnapshots)),
	}
	for _, r := range regs {
		if err := r(); err != nil {
			return err
		}
	}
	return nil
}

// picked binds a SessionSource method to the source p picks per call.
func picked[A, R any](p SessionPicker, f func(*SessionSource, context.Context, A) (R, error)) executor.VerbFunc[A, R] {
	return func(ctx context.Context, a A) (R, error) {
		s, err := p.Sessions(ctx)
		if err != nil {
			var zero R
			return zero, err
		}
		return f(s, ctx, a)
	}
}

// callSession returns the caller's open session, or a clear error in the
// host workspace.
func (s *SessionSource) callSession(ctx context.Context, verb string) (*session, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	id := executor.CallFrom(ctx).Session
	if id == "" {
		return nil, executor.Errorf(executor.CodeForbidden,
			"%s works in session workspaces; this conversation uses the host workspace", verb)
	}
	return s.session(ctx, id)
}

// locked runs f on the caller's session with the session locked, starting
// over if a sweep removed the session meanwhile.
func (s *SessionSource) locked(ctx context.Context, verb string, write bool, f func(se *session) error) error {
	for range 3 {
		se, err := s.callSession(ctx, verb)
		if err != nil {
			return err
		}
		unlock := se.lock(write)
		if se.dropped {
			unlock()
			continue
		}
		err = f(se)
		unlock()
		return err
	}
	return executor.Errorf(executor.CodeIOError, "The session workspace was removed while %s ran; try again", verb)
}

// snapshotIDPattern is the shape of snapshot ids: the creation time in UTC
// with milliseconds, then 4 random hex digits.
var snapshotIDPattern = regexp.MustCompile(`^[0-9]{8}T[0-9]{6}\.[0-9]{3}Z-[0-9a-f]{4}$`)

const snapshotIDTime = "20060102T150405.000Z"

// snapshotTime returns the creation time encoded in a snapshot id.
func snapshotTime(id string) (time.Time, bool) {
	if !snapshotIDPattern.MatchString(id) {
		return time.Time{}, false
	}
	t, err := time.Parse(snapshotIDTime, id[:len(snapshotIDTime)])
	return t, err == nil
}

// snapshotRecord is a snapshot's info.json.
type snapshotRecord struct {
	Version    int          `json:"version"`
	ID         string       `json:"id"`
	Session    string       `json:"session"`
	CreatedAt  time.Time    `json:"created_at"`
	TotalBytes int64        `json:"total_bytes"`
	Files      []snapshotFF `json:"files"`
}

// snapshotFF is one file in a snapshot's info.json.
type snapshotFF struct {
	Path      string    `json:"path"`
	SizeBytes int64     `json:"size_bytes"`
	Version   int64     `json:"version"`
	Encoding  string    `json:"encoding,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

func (s *SessionSource) snapshotInfo(r *snapshotRecord) SnapshotInfo {
	return SnapshotInfo{
		SnapshotID: r.ID, CreatedAt: fmtTime(r.CreatedAt), ExpiresAt: fmtTime(r.CreatedAt.Add(s.opts.SnapshotTTL)),
		FileCount: len(r.Files), TotalBytes: r.TotalBytes,
	}
}

// Snapshot implements vfs.snapshot: it copies the workspace and its file
// records into a new snapshot. When the session already keeps
// MaxSnapshots, the oldest is removed first.
func (s *SessionSource) Snapshot(ctx context.Context, _ VfsSnapshotArgs) (VfsSnapshotResult, error) {
	var res VfsSnapshotResult
	err := s.locked(ctx, "vfs.snapshot", true, func(se *session) error {
		rec, err := se.snapshot()
		if err != nil {
			return err
		}
		res.Snapshot = s.snapshotInfo(rec)
		return nil
	})
	return res, err
}

// snapshot takes a snapshot. The caller holds se.mu for writing.
func (se *session) snapshot() (*snapshotRecord, error) {
	dir := filepath.Join(se.dir, snapsDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, sessionError(se.id, "create the snapshots directory", err)
	}
	recs, err := se.listSnapshots()
	if err != nil {
		return nil, err
	}
	for len(recs) >= se.src.opts.MaxSnapshots {
		if err := os.RemoveAll(filepath.Join(dir, recs[0].ID)); err != nil {
			return nil, sessionError(se.id, "remove the oldest snapshot", err)
		}
		recs = recs[1:]
	}
	created := se.src.now()
	if n := len(recs); n > 0 && !recs[n-1].CreatedAt.Before(se.lastSnap) {
		se.lastSnap = recs[n-1].CreatedAt
	}
	if !created.After(se.lastSnap) {
		created = se.lastSnap.Add(time.Millisecond) // ids sort in creation order
	}
	var id string
	for try := 1; ; try++ {
		id = created.Format(snapshotIDTime) + "-" + randHex(2)
		_, err := os.Lstat(filepath.Join(dir, id))
		if errors.Is(err, fs.ErrNotExist) {
			break
		}
		if err == nil && try == 10 {
			err = fs.ErrExist
		}
		if err != nil {
			return nil, sessionError(se.id, "create a snapshot", err)
		}
	}
	pending := filepath.Join(dir, snapPending+id)
	if err := os.Mkdir(pending, 0o700); err != nil {
		return nil, sessionError(se.id, "create a snapshot", err)
	}
	done := false
	defer func() {
		if !done {
			os.RemoveAll(pending)
		}
	}()
	tree := filepath.Join(pending, snapTree)
	if err := os.Mkdir(tree, 0o700); err != nil {
		return nil, sessionError(se.id, "create a snapshot", err)
	}
	files, err := copyTree(se.ws.root.OS(), tree)
	if err != nil {
		return nil, sessionError(se.id, "copy the workspace into a snapshot", err)
	}
	metas, err := se.src.opts.Meta.List(se.id, ".")
	if err != nil {
		return nil, sessionError(se.id, "read file metadata", err)
	}
	byPath := make(map[string]Meta, len(metas))
	for _, m := range metas {
		byPath[m.Path] = m
	}
	rec := &snapshotRecord{Version: 1, ID: id, Session: se.id, CreatedAt: created}
	for _, f := range files {
		m, ok := byPath[f.path]
		if !ok {
			t := msUTC(f.modTime)
			m = Meta{Version: 1, CreatedAt: t, UpdatedAt: t}
		}
		rec.Files = append(rec.Files, snapshotFF{Path: f.path, SizeBytes: f.size, Version: m.Version, Encoding: m.Encoding, CreatedAt: m.CreatedAt, UpdatedAt: m.UpdatedAt})
		rec.TotalBytes += f.size
	}
	sort.Slice(rec.Files, func(i, j int) bool { return pathLess(rec.Files[i].Path, rec.Files[j].Path) })
	if err := writeJSONFile(filepath.Join(pending, snapInfo), rec); err != nil {
		return nil, sessionError(se.id, "write the snapshot's metadata", err)
	}
	if err := os.Rename(pending, filepath.Join(dir, id)); err != nil {
		return nil, sessionError(se.id, "store the snapshot", err)
	}
	done = true
	syncPath(dir)
	se.lastSnap = created
	return rec, nil
}

// writeJSONFile writes v as indented JSON to a new file, fsynced.
func writeJSONFile(p string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(append(data, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// readSnapshot reads a snapshot's info.json.
func readSnapshot(dir, id string) (*snapshotRecord, error) {
	data, err := os.ReadFile(filepath.Join(dir, id, snapInfo))
	if err != nil {
		return nil, err
	}
	var rec snapshotRecord
	if err := json.Unmarshal(data, &rec); err != nil {
		return nil, fmt.Errorf("snapshot %s: %s is corrupt: %w", id, snapInfo, err)
	}
	if rec.ID != id {
		return nil, fmt.Errorf("snapshot %s: %s names snapshot %q", id, snapInfo, rec.ID)
	}
	return &rec, nil
}

// listSnapshots returns the session's complete snapshots, oldest first.
// Unreadable ones are left out with a warning.
func (se *session) listSnapshots() ([]*snapshotRecord, error) {
	dir := filepath.Join(se.dir, snapsDir)
	des, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, sessionError(se.id, "list snapshots", err)
	}
	var out []*snapshotRecord
	for _, de := range des {
		if !de.IsDir() || !snapshotIDPattern.MatchString(de.Name()) {
			continue
		}
		rec, err := readSnapshot(dir, de.Name())
		if err != nil {
			se.src.log.Warn("unreadable snapshot left out", "session", se.id, "snapshot", de.Name(), "err", err)
			continue
		}
		out = append(out, rec)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// Restore implements vfs.restore: the workspace is replaced by a fresh
// directory holding a copy of the snapshot and its file records. The
// snapshot itself is never changed by later writes.
func (s *SessionSource) Restore(ctx context.Context, a VfsRestoreArgs) (VfsRestoreResult, error) {
	var res VfsRestoreResult
	if !snapshotIDPattern.MatchString(a.SnapshotID) {
		return res, executor.Errorf(executor.CodeInvalidArguments,
			"Snapshot id %q is not accepted (ids look like 20260102T030405.678Z-3f9a; vfs.list shows this conversation's snapshots)", a.SnapshotID)
	}
	err := s.locked(ctx, "vfs.restore", true, func(se *session) error {
		dir := filepath.Join(se.dir, snapsDir)
		rec, err := readSnapshot(dir, a.SnapshotID)
		if errors.Is(err, fs.ErrNotExist) {
			return executor.Errorf(executor.CodeNotFound, "Snapshot not found: %s (vfs.list shows this conversation's snapshots)", a.SnapshotID)
		}
		if err != nil {
			return sessionError(se.id, "read the snapshot", err)
		}
		return se.replaceLive(func(tmp string) ([]Meta, error) {
			src, err := os.OpenRoot(filepath.Join(dir, a.SnapshotID, snapTree))
			if err != nil {
				return nil, sessionError(se.id, "open the snapshot", err)
			}
			defer src.Close()
			files, err := copyTree(src, tmp)
			if err != nil {
				return nil, sessionError(se.id, "copy the snapshot", err)
			}
			recorded := make(map[string]snapshotFF, len(rec.Files))
			for _, f := range rec.Files {
				recorded[f.Path] = f
			}
			metas := make([]Meta, 0, len(files))
			res.FileCount, res.TotalBytes = 0, 0
			for _, f := range files {
				m := Meta{Path: f.path, Version: 1, CreatedAt: msUTC(f.modTime), UpdatedAt: msUTC(f.modTime)}
				if r, ok := recorded[f.path]; ok {
					m.Version, m.Encoding, m.CreatedAt, m.UpdatedAt = r.Version, r.Encoding, r.CreatedAt, r.UpdatedAt
				}
				metas = append(metas, m)
				res.FileCount++
				res.TotalBytes += f.size
			}
			return metas, nil
		})
	})
	return res, err
}

// Reset implements vfs.reset: a fresh directory with the mounts copied in
// again. Snapshots are kept.
func (s *SessionSource) Reset(ctx context.Context, _ VfsResetArgs) (VfsResetResult, error) {
	var res VfsResetResult
	err := s.locked(ctx, "vfs.reset", true, func(se *session) error {
		return se.replaceLive(func(tmp string) ([]Meta, error) {
			metas, err := s.materialise(tmp)
			if err != nil {
				return nil, err
			}
			res.FileCount = len(metas)
			for _, m := range metas {
				if fi, err := os.Stat(filepath.Join(tmp, filepath.FromSlash(m.Path))); err == nil {
					res.TotalBytes += fi.Size()
				}
			}
			return metas, nil
		})
	})
	return res, err
}

// Info implements vfs.info.
func (s *SessionSource) Info(ctx context.Context, _ VfsInfoArgs) (VfsInfoResult, error) {
	var res VfsInfoResult
	err := s.locked(ctx, "vfs.info", false, func(se *session) error {
		// The host path stays on the host: callers see the live directory
		// relative to the sessions root.
		res.Session, res.Root = se.id, path.Join(se.name, liveDir)
		metas, err := s.opts.Meta.List(se.id, ".")
		if err != nil {
			return sessionError(se.id, "read file metadata", err)
		}
		byPath := make(map[string]Meta, len(metas))
		for _, m := range metas {
			byPath[m.Path] = m
		}
		var files []VfsFile
		err = fs.WalkDir(se.ws.root.OS().FS(), ".", func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			if d.IsDir() || !d.Type().IsRegular() {
				return nil
			}
			fi, err := d.Info()
			if err != nil {
				return err
			}
			m, ok := byPath[p]
			if !ok {
				t := msUTC(fi.ModTime())
				m = Meta{Version: 1, CreatedAt: t, UpdatedAt: t}
			}
			enc := EncodingUTF8
			if m.Encoding == string(EncodingBase64) {
				enc = EncodingBase64
			}
			res.FileCount++
			res.TotalBytes += fi.Size()
			files = append(files, VfsFile{Path: p, Encoding: enc, SizeBytes: fi.Size(), Version: m.Version, CreatedAt: fmtTime(m.CreatedAt), UpdatedAt: fmtTime(m.UpdatedAt)})
			return nil
		})
		if err != nil {
			return confine.FSError(err, ".", "walk")
		}
		sort.Slice(files, func(i, j int) bool { return pathLess(files[i].Path, files[j].Path) })
		if len(files) > maxInfoFiles {
			files, res.FilesTruncated = files[:maxInfoFiles], true
		}
		res.Files = files
		if res.Files == nil {
			res.Files = []VfsFile{}
		}
		snaps, err := se.listSnapshots()
		if err != nil {
			return err
		}
		res.SnapshotCount = len(snaps)
		return nil
	})
	return res, err
}

// ListSnapshots implements vfs.list.
func (s *SessionSource) ListSnapshots(ctx context.Context, _ VfsListArgs) (VfsListResult, error) {
	res := VfsListResult{Snapshots: []SnapshotInfo{}}
	err := s.locked(ctx, "vfs.list", false, func(se *session) error {
		recs, err := se.listSnapshots()
		if err != nil {
			return err
		}
		for _, r := range recs {
			res.Snapshots = append(res.Snapshots, s.snapshotInfo(r))
		}
		return nil
	})
	return res, err
}

// SweepStats says what Sweep removed.
type SweepStats struct {
	Sessions  int // idle session workspaces removed
	Snapshots int // expired snapshots removed
	Orphans   int // sessions whose file records outlived their directory
}

// Sweep removes session workspaces idle for IdleTTL or longer and
// snapshots older than SnapshotTTL, as of now, and a session's directory
// once it holds neither. Sessions found on disk but not used since this
// SessionSource opened count as used when a sweep first sees them. Call it
// periodically (RunSweeper does); tests call it with a fake time.
func (s *SessionSource) Sweep(now time.Time) (SweepStats, error) {
	var st SweepStats
	var errs []error
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return st, nil
	}
	active := make([]*session, 0, len(s.sessions))
	for _, se := range s.sessions {
		active = append(active, se)
	}
	s.mu.Unlock()
	for _, se := range active {
		se.mu.Lock()
		if se.ws == nil { // still being opened: in use
			se.mu.Unlock()
			continue
		}
		if !se.dropped && now.Sub(time.Unix(0, se.lastUsed.Load())) >= s.opts.IdleTTL {
			if err := se.removeLive(); err != nil {
				errs = append(errs, err)
			} else {
				st.Sessions++
			}
		}
		n, err := s.sweepSnapshots(se.dir, now)
		st.Snapshots += n
		if err != nil {
			errs = append(errs, err)
		}
		// A dropped session's directory, once empty, goes below, where
		// s.mu keeps a new session for the same id from racing with it.
		se.mu.Unlock()
	}

	// Sessions on disk that no one uses in this process. Holding s.mu keeps
	// them from being opened while they are swept.
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return st, errors.Join(errs...)
	}
	inUse := make(map[string]bool, len(s.sessions))
	for _, se := range s.sessions {
		inUse[se.name] = true
	}
	des, err := os.ReadDir(s.root)
	if err != nil {
		errs = append(errs, fmt.Errorf("sweep sessions: %w", err))
	}
	onDisk := map[string]bool{}
	for _, de := range des {
		name := de.Name()
		if !de.IsDir() || !isSessionDirName(name) || inUse[name] {
			continue
		}
		onDisk[name] = true
		dir := filepath.Join(s.root, name)
		first, seen := s.firstSeen[name]
		if !seen {
			s.firstSeen[name], first = now, now
		}
		if now.Sub(first) >= s.opts.IdleTTL {
			if _, err := os.Lstat(filepath.Join(dir, liveDir)); err == nil {
				if err := removeLiveDir(dir); err != nil {
					errs = append(errs, fmt.Errorf("sweep session %s: %w", name, err))
				} else {
					st.Sessions++
				}
			}
		}
		n, err := s.sweepSnapshots(dir, now)
		st.Snapshots += n
		if err != nil {
			errs = append(errs, err)
		}
		if removeIfEmpty(dir) {
			delete(s.firstSeen, name)
		}
	}
	for name := range s.firstSeen {
		if !onDisk[name] {
			delete(s.firstSeen, name)
		}
	}
	// File records whose workspace is gone (removed above, or lost with a
	// temporary directory).
	ids, err := s.opts.Meta.Sessions()
	if err != nil {
		errs = append(errs, fmt.Errorf("sweep file metadata: %w", err))
	}
	for _, id := range ids {
		if _, ok := s.sessions[id]; ok {
			continue
		}
		if _, err := os.Lstat(filepath.Join(s.root, SessionDirName(id), liveDir)); errors.Is(err, fs.ErrNotExist) {
			if err := s.opts.Meta.Replace(id, nil); err != nil {
				errs = append(errs, fmt.Errorf("sweep file metadata of %s: %w", id, err))
			} else {
				st.Orphans++
			}
		}
	}
	return st, errors.Join(errs...)
}

// removeLive removes an open session's workspace and records and drops it.
// The caller holds se.mu for writing.
func (se *session) removeLive() error {
	se.drop()
	if err := removeLiveDir(se.dir); err != nil {
		return fmt.Errorf("sweep session %s: %w", se.id, err)
	}
	if err := se.src.opts.Meta.Replace(se.id, nil); err != nil {
		return fmt.Errorf("sweep session %s: file metadata: %w", se.id, err)
	}
	return nil
}

// removeLiveDir removes a session directory's workspace and leftovers.
func removeLiveDir(dir string) error {
	des, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, de := range des {
		n := de.Name()
		if n == liveDir || strings.HasPrefix(n, tmpPrefix) || strings.HasPrefix(n, oldPrefix) {
			if err := os.RemoveAll(filepath.Join(dir, n)); err != nil {
				return err
			}
		}
	}
	return nil
}

// sweepSnapshots removes the expired snapshots of the session directory dir
// and any snapshot a crash left half-written.
func (s *SessionSource) sweepSnapshots(dir string, now time.Time) (int, error) {
	sd := filepath.Join(dir, snapsDir)
	des, err := os.ReadDir(sd)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("sweep snapshots: %w", err)
	}
	n := 0
	var errs []error
	for _, de := range des {
		name := de.Name()
		remove := strings.HasPrefix(name, snapPending)
		if t, ok := snapshotTime(name); ok && now.Sub(t) >= s.opts.SnapshotTTL {
			remove = true
			n++
		}
		if remove {
			if err := os.RemoveAll(filepath.Join(sd, name)); err != nil {
				errs = append(errs, fmt.Errorf("sweep snapshot %s: %w", name, err))
			}
		}
	}
	removeIfEmpty(sd)
	return n, errors.Join(errs...)
}

// removeIfEmpty removes dir if it is an empty directory.
func removeIfEmpty(dir string) bool {
	if des, err := os.ReadDir(dir); err == nil && len(des) == 0 {
		return os.Remove(dir) == nil
	}
	return false
}

// RunSweeper calls Sweep every interval until ctx ends, logging failures.
func (s *SessionSource) RunSweeper(ctx context.Context, interval time.Duration) {
	if interval <= 0 {
		interval = 5 * time.Minute
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			st, err := s.Sweep(s.opts.Now())
			if err != nil {
				s.log.Error("sweep session workspaces", "err", err)
			}
			if st != (SweepStats{}) {
				s.log.Info("swept session workspaces", "sessions", st.Sessions, "snapshots", st.Snapshots, "orphans", st.Orphans)
			}
		}
	}
}

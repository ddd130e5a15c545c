package docker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/internal/posix"
	"github.com/moby/moby/client"
)

// Protected paths (Config.Protect) are host paths no program in a
// container may reach: the hub's state directory, and files such as the
// configuration, token and key files. Whether one lies in the directory a
// container sees (the workspace's, or a session's) is decided by identity:
// each directory on the way up from it is compared with the device and
// inode of that directory, so a spelling, a symbolic link or a bind mount
// on the host changes nothing.
//
//   - A protected directory at the top level of that directory
//     (<workspace>/.hub) is covered in the container by an empty read-only
//     tmpfs at /workspace/.hub. No program in the container can move it:
//     the tmpfs is a mount point there, and so is /workspace (rename and
//     unlink fail with EBUSY). Before every call the runner checks that
//     <workspace>/.hub is still that directory (its device and inode) and
//     that the container still has the tmpfs mounted there (see
//     checkMasks); otherwise the call is refused.
//   - A protected directory deeper in it is refused: a tmpfs at
//     /workspace/a/.hub moves with a directory above it that a program
//     renames (a is no mount point), and a container created afterwards
//     would cover the old path and show the state.
//   - A protected file anywhere in it is refused: a mount over a file is
//     detached, in every mount namespace, when the host replaces the file
//     (an editor saving it renames a new file over it), and the running
//     container would see the new one.

// maxLevels bounds how far up from a protected path the runner looks for
// the directory a container sees.
const maxLevels = 512

// fileID is a file's identity on the host.
type fileID struct{ dev, ino uint64 }

func idOf(st *posix.Stat_t) fileID { return fileID{dev: uint64(st.Dev), ino: uint64(st.Ino)} } //nolint:unconvert // Dev is 32 bits on some systems

// statID is the identity of the file at p, following links.
func statID(p string) (fileID, error) {
	var st posix.Stat_t
	if err := posix.Fstatat(posix.AT_FDCWD, p, &st, 0); err != nil {
		return fileID{}, err
	}
	return idOf(&st), nil
}

// guarded is one protected path.
type guarded struct {
	path string   // as configured, absolute (messages)
	name string   // a directory's last element when the runner was made
	dir  *os.File // a protected directory, held open: where it is now, whatever renamed it; nil for a file
	id   fileID   // dir's identity
	// parent is a file's directory, held open: where the file's directory
	// is now, whatever moved it; nil for a directory, or a path whose
	// directory did not exist.
	parent *os.File
	// missing: nothing was at path when the runner was made.
	missing bool
}

// openGuarded opens the protected paths. A directory is held open; any
// other path (a file, or nothing yet) is checked by its path, and by its
// directory held open, at each call.
func openGuarded(paths []string) ([]*guarded, error) {
	var out []*guarded
	fail := func(err error) ([]*guarded, error) {
		closeGuarded(out)
		return nil, err
	}
	for _, p := range paths {
		if !filepath.IsAbs(p) {
			return fail(fmt.Errorf("protected path %q is not an absolute path", p))
		}
		g := &guarded{path: filepath.Clean(p)}
		fi, err := os.Stat(g.path)
		switch {
		case err == nil && !fi.IsDir(), errors.Is(err, fs.ErrNotExist):
			g.missing = err != nil
			if g.parent, err = os.Open(filepath.Dir(g.path)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fail(fmt.Errorf("protected path %s: %w", g.path, err))
			}
		case err != nil:
			return fail(fmt.Errorf("protected path %s: %w", g.path, err))
		default:
			real, err := filepath.EvalSymlinks(g.path)
			if err != nil {
				return fail(fmt.Errorf("protected path %s: %w", g.path, err))
			}
			if g.dir, err = os.Open(real); err != nil {
				return fail(fmt.Errorf("protected path %s: %w", g.path, err))
			}
			var st posix.Stat_t
			if err := posix.Fstat(int(g.dir.Fd()), &st); err != nil {
				g.dir.Close()
				return fail(fmt.Errorf("protected path %s: %w", g.path, err))
			}
			g.id, g.name = idOf(&st), filepath.Base(real)
		}
		out = append(out, g)
	}
	return out, nil
}

func closeGuarded(gs []*guarded) {
	for _, g := range gs {
		for _, f := range []*os.File{g.dir, g.parent} {
			if f != nil {
				f.Close()
			}
		}
	}
}

// levelsBelow tells how many levels below the directory with identity top
// the directory open as fd lies: 0 when it is top, -1 when top is not
// above it. It climbs by "..", from the descriptor.
func levelsBelow(fd int, top fileID) (int, error) {
	var prev fileID
	rel := "."
	for level := 0; level <= maxLevels; level++ {
		var st posix.Stat_t
		if err := posix.Fstatat(fd, rel, &st, 0); err != nil {
			return -1, err
		}
		id := idOf(&st)
		if id == top {
			return level, nil
		}
		if level > 0 && id == prev { // "/" is its own parent
			return -1, nil
		}
		prev = id
		if level == 0 {
			rel = ".."
		} else {
			rel += "/.."
		}
	}
	return -1, fmt.Errorf("more than %d directories deep", maxLevels)
}

// levelOf tells how deep below the directory with identity top the path
// p lies (1: an entry of top), -1 when not below it, by the identity of
// p's parent directory. A missing parent is not below top.
func levelOf(p string, top fileID) (int, error) {
	parent, err := os.Open(filepath.Dir(p))
	if errors.Is(err, fs.ErrNotExist) {
		return -1, nil
	}
	if err != nil {
		return -1, err
	}
	defer parent.Close()
	n, err := levelsBelow(int(parent.Fd()), top)
	if n < 0 || err != nil {
		return -1, err
	}
	return n + 1, nil
}

// mask is a path a container must not see: a directory at the top level
// of what it sees, covered by an empty tmpfs, or a file, covered by
// /dev/null.
type mask struct {
	rel string // slash-separated, relative to the workspace
	dir bool
}

func (m mask) target() string { return "/workspace/" + m.rel }

// masks works out what the container of host directory dir must not see:
// the protected paths of the runner (refused unless a directory at dir's
// top level) and hide, the workspace's own list (relative paths). Its
// error is the refusal, naming the path and the fix (without the
// workspace's name, which the caller adds).
//
// At start (New) a protected path that did not exist when the runner was
// made is passed over (the hub's state directory is made later on a first
// run); every call checks it.
func (r *Runner) masks(dir string, hide []string, start bool) ([]mask, *executor.Error) {
	top, err := statID(dir)
	if err != nil {
		return nil, executor.Errorf(codeIO, "the workspace directory %s is missing (removed?); create it again or fix the workspace's path", dir)
	}
	var out []mask
	seen := map[string]bool{}
	for _, g := range r.guards {
		if start && g.missing {
			continue
		}
		m, ok, err := g.mask(dir, top)
		if err != nil {
			return nil, err
		}
		if ok && !seen[m.rel] {
			seen[m.rel] = true
			out = append(out, m)
		}
	}
	for _, h := range hide {
		rel := strings.TrimPrefix(path.Clean("/"+h), "/")
		if rel == "" || seen[rel] {
			continue
		}
		if strings.Contains(rel, "/") {
			return nil, executor.Errorf(codeInvalid, "its directory %s holds %s, which the container must not see, below its top level, where a program could move what hides it; move it to the top level of the workspace or out of it", dir, rel)
		}
		fi, err := os.Lstat(filepath.Join(dir, rel))
		if errors.Is(err, fs.ErrNotExist) {
			continue // nothing to hide; one made later changes the settings hash
		}
		seen[rel] = true
		out = append(out, mask{rel: rel, dir: err != nil || fi.IsDir()})
	}
	return out, nil
}

// mask places protected path g in the host directory dir (identity
// top): nothing to mask when it lies outside, a mask when it is a
// directory at dir's top level, and an error otherwise.
func (g *guarded) mask(dir string, top fileID) (mask, bool, *executor.Error) {
	if g.dir == nil {
		return mask{}, false, g.fileIn(dir, top)
	}
	level, err := levelsBelow(int(g.dir.Fd()), top)
	switch {
	case err != nil:
		return mask{}, false, executor.Errorf(codeIO, "cannot tell where the protected directory %s lies: %v", g.path, err)
	case level < 0:
		return mask{}, false, nil
	case level == 0:
		return mask{}, false, executor.Errorf(codeInvalid, "its directory %s is the protected directory %s; point the workspace at another directory", dir, g.path)
	case level > 1:
		return mask{}, false, executor.Errorf(codeInvalid, "its directory %s holds the protected directory %s below its top level, where a program in the container could rename a directory above it and so move what hides it; move it out of the workspace or to its top level (%s), or point the workspace at a directory that does not hold it",
			dir, g.path, filepath.Join(dir, filepath.Base(g.path)))
	}
	at := filepath.Join(dir, g.name)
	if id, err := lstatID(at); err != nil || id != g.id {
		return mask{}, false, executor.Errorf(codeInvalid, "%s is no longer the protected directory %s (it was renamed or replaced on the host), so the container could see it under another name; put it back and restart the hub", at, g.path)
	}
	return mask{rel: g.name, dir: true}, true, nil
}

// fileIn refuses a protected file (or a protected path that is not a
// directory) that lies in dir, whether it exists or not, under its own
// name or behind a symbolic link: a program could read it, or write it
// for the hub to read.
func (g *guarded) fileIn(dir string, top fileID) *executor.Error {
	places := []string{g.path}
	if real, err := filepath.EvalSymlinks(g.path); err == nil && real != g.path {
		places = append(places, real)
	}
	for _, p := range places {
		level, err := levelOf(p, top)
		if err != nil {
			return executor.Errorf(codeIO, "cannot tell where the protected file %s lies: %v", p, err)
		}
		if level > 0 {
			return executor.Errorf(codeInvalid, "its directory %s holds the protected file %s (the configuration, a token or a key), which a program in the container could read or rewrite; move the file out of the workspace directory, or point the workspace at a directory that does not hold it", dir, p)
		}
	}
	if g.parent == nil {
		return nil
	}
	level, err := levelsBelow(int(g.parent.Fd()), top)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return executor.Errorf(codeIO, "cannot tell where the directory of the protected file %s lies: %v", g.path, err)
	}
	if err == nil && level >= 0 {
		return executor.Errorf(codeInvalid, "its directory %s now holds the directory the protected file %s was in (it was moved there on the host), so a program in the container could read or rewrite it; move that directory back out of the workspace", dir, g.path)
	}
	return nil
}

// lstatID is the identity of p itself (a link is not followed).
func lstatID(p string) (fileID, error) {
	var st posix.Stat_t
	if err := posix.Fstatat(posix.AT_FDCWD, p, &st, posix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fileID{}, err
	}
	if st.Mode&posix.S_IFMT != posix.S_IFDIR {
		return fileID{}, errors.New("not a directory")
	}
	return idOf(&st), nil
}

// checkMasks makes sure b's container still has a mount at each path w
// hides (the host can detach one: see above). When one is missing, or the
// mount table cannot be read, the container is removed and the call
// refused. b.mu is held.
func (r *Runner) checkMasks(ctx context.Context, cli *client.Client, b *box, w want) error {
	if len(w.masks) == 0 {
		return nil
	}
	info, err := r.mountTable(ctx, cli, b, w.user)
	missing := ""
	if err == nil {
		points := mountPoints(info)
		for _, t := range append([]string{"/workspace"}, w.masks...) {
			if !points[t] {
				missing = t
				break
			}
		}
		if missing == "" {
			return nil
		}
	}
	if err != nil {
		r.log.Warn("removing the workspace's container: its mount table cannot be read", "container", short(b.id), "err", err)
	} else {
		r.log.Warn("removing the workspace's container: a mask is missing", "container", short(b.id), "missing", missing)
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), apiTimeout)
	defer cancel()
	if rerr := r.remove(rctx, cli, b.id); rerr == nil {
		b.id, b.view = "", nil
	}
	if err != nil {
		return r.errorf(codeIO, "cannot read its container's mount table to check that %s is hidden (%v); the container was removed: run the call again, and give the image cat when the hub does not run beside its Docker daemon", strings.Join(w.masks, ", "), err)
	}
	return r.errorf(codeIO, "its container no longer hides %s (replaced on the host?); the container was removed: run the call again", missing)
}

// mountTable reads the mount table of b's container: from the host
// (/proc/PID/mountinfo of its PID 1) when it sees the container, else from
// an exec of cat in it. b.mu is held.
func (r *Runner) mountTable(ctx context.Context, cli *client.Client, b *box, user string) ([]byte, error) {
	if v := b.view; v != nil {
		data, err := os.ReadFile("/proc/" + strconv.Itoa(v.pid) + "/mountinfo")
		if err == nil && v.alive() {
			return data, nil
		}
	}
	var out bytes.Buffer
	code, err := r.execOutput(ctx, cli, b.id, user, &out, "cat", "/proc/self/mountinfo")
	if err == nil && code != 0 {
		err = fmt.Errorf("cat /proc/self/mountinfo in the container exited with %d", code)
	}
	return out.Bytes(), err
}

// mountPoints lists the mount points of a mountinfo table (the fifth
// field, its octal escapes undone).
func mountPoints(info []byte) map[string]bool {
	out := map[string]bool{}
	for _, line := range strings.Split(string(info), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		out[unescapeMount(f[4])] = true
	}
	return out
}

// unescapeMount undoes the kernel's \ooo escapes of a mountinfo field.
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

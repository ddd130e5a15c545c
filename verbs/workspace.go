package verbs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/a6afc2ce/hermes-hub/executor"
)

// Workspace limits used when WorkspaceOptions leaves a field zero.
const (
	DefaultMaxWriteChars = 48000
	DefaultMaxReadBytes  = 4 << 20
	DefaultMaxDepth      = 16
	DefaultMaxSegment    = 80
)

// maxSymlinks bounds how many symbolic links one path may traverse, matching
// os.Root's own limit.
const maxSymlinks = 8

// WorkspaceOptions configure a Workspace. Zero fields take the defaults above.
type WorkspaceOptions struct {
	// Deny lists workspace-relative prefixes no verb may touch, such as ".hub"
	// when the hub's state directory lives inside the workspace.
	Deny []string
	// MaxWriteChars caps the characters (runes) one write may carry.
	MaxWriteChars int
	// MaxReadBytes caps what fs.readFile returns and what one fs.readRange may return.
	MaxReadBytes int64
	// MaxDepth caps the number of segments in a path.
	MaxDepth int
	// MaxSegment caps the length of one path segment, in bytes.
	MaxSegment int
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

// WorkspaceSource hands a verb the workspace it acts in. *Workspace returns
// itself; a per-conversation source can pick a workspace from the call in ctx.
type WorkspaceSource interface {
	Workspace(ctx context.Context) (*Workspace, error)
}

var _ WorkspaceSource = (*Workspace)(nil)

// Workspace is a directory tree the fs verbs and proc.run are confined to.
// Every path is checked by the guard (CleanPath plus the deny list), its
// symbolic links are resolved inside the root, and the operation itself goes
// through an os.Root, so nothing outside the directory is reachable.
type Workspace struct {
	dir  string
	root *os.Root // swapped by vfs.restore and vfs.reset under sess.mu
	opts WorkspaceOptions
	deny []string
	// sess is the session a session workspace belongs to; nil for the host
	// workspace. Verbs lock it around their work and record file metadata.
	sess *session
}

// OpenWorkspace opens dir as a workspace.
func OpenWorkspace(dir string, opts WorkspaceOptions) (*Workspace, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("open workspace %s: %w", dir, err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("open workspace %s: %w", dir, err)
	}
	w := &Workspace{dir: abs, opts: opts}
	for _, d := range opts.Deny {
		clean, err := CleanPath(d, opts)
		if err != nil {
			return nil, fmt.Errorf("open workspace %s: deny entry: %w", dir, err)
		}
		if clean == "." {
			return nil, fmt.Errorf("open workspace %s: deny entry %q would deny the whole workspace", dir, d)
		}
		w.deny = append(w.deny, clean)
	}
	root, err := os.OpenRoot(abs)
	if err != nil {
		return nil, fmt.Errorf("open workspace: %w", err)
	}
	w.root = root
	return w, nil
}

// Close releases the workspace's directory handle.
func (w *Workspace) Close() error { return w.root.Close() }

// Dir is the workspace's absolute directory on the host.
func (w *Workspace) Dir() string { return w.dir }

// Options returns the workspace's limits, defaults filled in.
func (w *Workspace) Options() WorkspaceOptions { return w.opts }

// Workspace implements WorkspaceSource by returning w.
func (w *Workspace) Workspace(context.Context) (*Workspace, error) { return w, nil }

// CleanPath is the lexical half of the path guard. It returns p as a clean
// workspace-relative name ("a//b/" becomes "a/b", "." is the root) or an
// *executor.Error with code forbidden_path saying why p is refused: empty,
// absolute, backslashes, NUL or control characters, non-ASCII, "." or ".."
// segments, too many segments or a segment too long (limits from opts, zero
// meaning the default).
func CleanPath(p string, opts WorkspaceOptions) (string, error) {
	if opts.MaxDepth <= 0 {
		opts.MaxDepth = DefaultMaxDepth
	}
	if opts.MaxSegment <= 0 {
		opts.MaxSegment = DefaultMaxSegment
	}
	switch {
	case p == "":
		return "", forbidden("Path is empty; give a path relative to the workspace root, like docs/readme.md (\".\" is the root)")
	case strings.IndexByte(p, 0) >= 0:
		return "", forbidden("Path %q contains a NUL byte", p)
	case strings.IndexByte(p, '\\') >= 0:
		return "", forbidden("Path %q contains a backslash; only POSIX '/' separators are accepted", p)
	case p[0] == '/':
		return "", forbidden("Path %q is absolute; give a path relative to the workspace root", p)
	}
	segs := make([]string, 0, 8)
	for seg := range strings.SplitSeq(p, "/") {
		if seg != "" {
			segs = append(segs, seg)
		}
	}
	if len(segs) == 1 && segs[0] == "." {
		return ".", nil
	}
	if len(segs) > opts.MaxDepth {
		return "", forbidden("Path %q has %d segments; at most %d are accepted", p, len(segs), opts.MaxDepth)
	}
	for _, seg := range segs {
		switch seg {
		case "..":
			return "", forbidden("Path %q contains '..'; paths stay inside the workspace and may not use '..' segments", p)
		case ".":
			return "", forbidden("Path %q contains a '.' segment; write the path without it", p)
		}
		if len(seg) > opts.MaxSegment {
			return "", forbidden("Path %q has a segment of %d characters; at most %d are accepted", p, len(seg), opts.MaxSegment)
		}
		for i := 0; i < len(seg); i++ {
			if c := seg[i]; c < 0x20 || c >= 0x7f {
				return "", forbidden("Path %q contains a non-ASCII or control character; only printable ASCII is accepted in paths", p)
			}
		}
	}
	return strings.Join(segs, "/"), nil
}

func forbidden(format string, args ...any) *executor.Error {
	return executor.Errorf(executor.CodeForbiddenPath, format, args...)
}

// denied reports the deny-list entry covering rel, if any.
func (w *Workspace) denied(rel string) (string, bool) {
	for _, d := range w.deny {
		if rel == d || strings.HasPrefix(rel, d+"/") {
			return d, true
		}
	}
	return "", false
}

// deniedBelow reports a deny-list entry inside directory rel (or equal to it).
func (w *Workspace) deniedBelow(rel string) (string, bool) {
	for _, d := range w.deny {
		if rel == "." || d == rel || strings.HasPrefix(d, rel+"/") {
			return d, true
		}
	}
	return "", false
}

// pathMode says how guard treats the last path element.
type pathMode int

const (
	// followFinal resolves a symbolic link in the last element too: the verb
	// acts on the link's target (reads, writes, listings).
	followFinal pathMode = 1 << iota
	// allowRoot accepts "." (the workspace root) as the path.
	allowRoot
)

// guard is the single gate every verb path goes through. It applies
// CleanPath and the deny list, then resolves symbolic links inside the root
// (the last element only with followFinal) and applies the deny list again to
// the result. It returns the resolved root-relative name to operate on and
// the clean name as given, for messages. Any refusal is an *executor.Error
// with code forbidden_path. Even when the last element is not followed, a
// link there that leads outside the root or into the deny list is refused.
func (w *Workspace) guard(p string, mode pathMode) (name, show string, err error) {
	show, err = CleanPath(p, w.opts)
	if err != nil {
		return "", "", err
	}
	if show == "." {
		if mode&allowRoot == 0 {
			return "", "", forbidden("Path %q is the workspace root; name something inside it", p)
		}
		return show, show, nil
	}
	if _, ok := w.denied(show); ok {
		return "", "", forbidden("Path %s is reserved for the hub's state and cannot be accessed", show)
	}
	full, err := w.resolve(show)
	if err != nil {
		return "", "", w.mapResolveErr(err, show)
	}
	if _, ok := w.denied(full); ok {
		return "", "", forbidden("Path %s leads to %s, which is reserved for the hub's state and cannot be accessed", show, full)
	}
	if mode&followFinal != 0 {
		return full, show, nil
	}
	// Resolve the parent only, keeping the last element itself.
	dir, base := path.Split(show)
	if dir == "" {
		return base, show, nil
	}
	pdir, err := w.resolve(strings.TrimSuffix(dir, "/"))
	if err != nil {
		return "", "", w.mapResolveErr(err, show)
	}
	name = base
	if pdir != "." {
		name = pdir + "/" + base
	}
	if _, ok := w.denied(name); ok {
		return "", "", forbidden("Path %s leads to %s, which is reserved for the hub's state and cannot be accessed", show, name)
	}
	return name, show, nil
}

// errEscapes marks a symbolic link that leaves the root.
var errEscapes = errors.New("path escapes from the workspace")

func (w *Workspace) mapResolveErr(err error, rel string) error {
	if errors.Is(err, errEscapes) || isEscape(err) {
		return forbidden("Path %s resolves outside the workspace", rel)
	}
	if errors.Is(err, syscall.ELOOP) {
		return forbidden("Path %s has too many levels of symbolic links (at most %d)", rel, maxSymlinks)
	}
	return fsError(err, rel, "resolve")
}

// resolve follows symbolic links in the clean relative path rel, staying
// inside the root, and returns the root-relative path with no links left in
// it (errEscapes when one leads outside). Elements from the first one that
// does not exist on are kept as they are.
func (w *Workspace) resolve(rel string) (string, error) {
	if rel == "." {
		return ".", nil
	}
	todo := strings.Split(rel, "/")
	var done []string
	links := 0
	missing := false
	for len(todo) > 0 {
		seg := todo[0]
		todo = todo[1:]
		switch seg {
		case "", ".":
			continue
		case "..":
			if len(done) == 0 {
				return "", errEscapes
			}
			done = done[:len(done)-1]
			continue
		}
		if missing {
			done = append(done, seg)
			continue
		}
		cand := seg
		if len(done) > 0 {
			cand = strings.Join(done, "/") + "/" + seg
		}
		fi, err := w.root.Lstat(cand)
		switch {
		case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
			missing = true
			done = append(done, seg)
			continue
		case err != nil:
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			done = append(done, seg)
			continue
		}
		links++
		if links > maxSymlinks {
			return "", syscall.ELOOP
		}
		target, err := w.root.Readlink(cand)
		if err != nil {
			return "", err
		}
		if target == "" || target[0] == '/' {
			return "", errEscapes
		}
		todo = append(strings.Split(target, "/"), todo...)
	}
	if len(done) == 0 {
		return ".", nil
	}
	return strings.Join(done, "/"), nil
}

// isEscape reports os.Root's refusal of a path that leaves the root. The os
// package does not export that error, so it is matched by its text.
func isEscape(err error) bool {
	for err != nil {
		if err.Error() == "path escapes from parent" {
			return true
		}
		err = errors.Unwrap(err)
	}
	return false
}

// fsError turns an error from the os package into an *executor.Error whose
// message names the workspace-relative path rel and never a host path.
func fsError(err error, rel, op string) error {
	var e *executor.Error
	if errors.As(err, &e) {
		return e
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	switch {
	case isEscape(err):
		return fail(executor.CodeForbiddenPath, err, "Path %s resolves outside the workspace", rel)
	case errors.Is(err, syscall.ELOOP):
		return fail(executor.CodeForbiddenPath, err, "Path %s has too many levels of symbolic links", rel)
	case errors.Is(err, fs.ErrNotExist):
		return fail(executor.CodeNotFound, err, "File not found: %s", rel)
	case errors.Is(err, syscall.ENOTDIR):
		return fail(executor.CodeNotADirectory, err, "A parent of %s is a file, not a directory", rel)
	case errors.Is(err, syscall.EISDIR):
		return fail(executor.CodeIsADirectory, err, "Path is a directory: %s", rel)
	case errors.Is(err, fs.ErrPermission):
		return fail(executor.CodeIOError, err, "Permission denied: %s", rel)
	case errors.Is(err, syscall.ENOSPC):
		return fail(executor.CodeIOError, err, "No space left on the device holding %s", rel)
	}
	return fail(executor.CodeIOError, err, "%s %s: %s", op, rel, hostless(err))
}

// hostless is err's message without the host path that *fs.PathError and
// *os.LinkError carry: what a caller may see of an I/O failure.
func hostless(err error) string {
	var pe *fs.PathError
	var le *os.LinkError
	switch {
	case errors.As(err, &pe):
		return pe.Err.Error()
	case errors.As(err, &le):
		return le.Err.Error()
	}
	return err.Error()
}

// fail returns an *executor.Error with a formatted message and cause.
func fail(code executor.ErrorCode, cause error, format string, args ...any) *executor.Error {
	return &executor.Error{Code: code, Message: fmt.Sprintf(format, args...), Err: cause}
}

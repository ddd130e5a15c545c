package verbs

import (
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/a6afc2ce/hermes-hub/executor"
)

// workspace returns the workspace for the call in ctx.
func (s *Set) workspace(ctx context.Context) (*Workspace, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return s.src.Workspace(ctx)
}

// use returns the workspace for the call in ctx, locked for reading or
// writing when it is a session workspace, and the function that unlocks it.
// A session removed by a sweep meanwhile is opened afresh.
func (s *Set) use(ctx context.Context, write bool) (*Workspace, func(), error) {
	for range 3 {
		w, err := s.workspace(ctx)
		if err != nil {
			return nil, nil, err
		}
		if w.sess == nil {
			return w, func() {}, nil
		}
		unlock := w.sess.lock(write)
		if !w.sess.dropped {
			return w, unlock, nil
		}
		unlock()
	}
	return nil, nil, executor.Errorf(executor.CodeIOError, "The session workspace was removed while the verb started; try again")
}

// usePath is use followed by the path guard, the prologue of every verb
// that takes one path: the workspace, the guarded name to operate on, the
// clean name for messages, and the release of the session lock.
func (s *Set) usePath(ctx context.Context, write bool, p string, mode pathMode) (w *Workspace, name, show string, release func(), err error) {
	w, release, err = s.use(ctx, write)
	if err != nil {
		return nil, "", "", nil, err
	}
	name, show, err = w.guard(p, mode)
	if err != nil {
		release()
		return nil, "", "", nil, err
	}
	return w, name, show, release, nil
}

// session reports whether w is a session workspace (file versions kept).
func (w *Workspace) session() bool { return w.sess != nil }

// isText reports whether data can be returned as UTF-8 text.
func isText(data []byte) bool {
	return bytes.IndexByte(data, 0) < 0 && utf8.Valid(data)
}

// vfsFile describes file name (shown as show) with size and, in a session
// workspace, its recorded metadata m.
func (w *Workspace) vfsFile(show string, enc FileEncoding, size int64, m *Meta) *VfsFile {
	f := &VfsFile{Path: show, Encoding: enc, SizeBytes: size}
	if m != nil {
		f.Version, f.CreatedAt, f.UpdatedAt = m.Version, fmtTime(m.CreatedAt), fmtTime(m.UpdatedAt)
	}
	return f
}

// openRegular opens name for reading, refusing directories and special files
// (a named pipe would block the hub).
func (w *Workspace) openRegular(name, show string) (*os.File, fs.FileInfo, error) {
	fi, err := w.root.Stat(name)
	if err != nil {
		return nil, nil, fsError(err, show, "stat")
	}
	if err := needRegular(fi, show); err != nil {
		return nil, nil, err
	}
	f, err := w.root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, fsError(err, show, "open")
	}
	if fi, err = f.Stat(); err != nil {
		f.Close()
		return nil, nil, fsError(err, show, "stat")
	}
	if err := needRegular(fi, show); err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

func needRegular(fi fs.FileInfo, show string) error {
	switch {
	case fi.IsDir():
		return executor.Errorf(executor.CodeIsADirectory, "Path is a directory: %s (use fs.listDir to see what it holds)", show)
	case !fi.Mode().IsRegular():
		return executor.Errorf(executor.CodeInvalidArguments, "Path %s is not a regular file (it is a %s); only files can be read or written", show, fileKind(fi.Mode()))
	}
	return nil
}

func fileKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "named pipe"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeDevice != 0:
		return "device"
	case m&fs.ModeSymlink != 0:
		return "symbolic link"
	case m.IsDir():
		return "directory"
	}
	return "special file"
}

func (w *Workspace) checkWriteSize(content, verb string) error {
	if len(content) <= w.opts.MaxWriteChars {
		return nil // a rune is at least one byte
	}
	if n := utf8.RuneCountInString(content); n > w.opts.MaxWriteChars {
		return executor.Errorf(executor.CodeTooLarge,
			"Content is %d characters; %s writes at most %d per call (write a large file in parts: fs.writeFile, then fs.writeRange appending at line count + 1)",
			n, verb, w.opts.MaxWriteChars)
	}
	return nil
}

// mkdirParents creates the directories above name.
func (w *Workspace) mkdirParents(name, show string) error {
	dir := path.Dir(name)
	if dir == "." {
		return nil
	}
	if err := w.root.MkdirAll(dir, 0o755); err != nil {
		return w.mkdirError(err, dir, show)
	}
	return nil
}

// mkdirError explains a failed MkdirAll of dir, naming the file in the way.
func (w *Workspace) mkdirError(err error, dir, show string) error {
	if errors.Is(err, syscall.ENOTDIR) || errors.Is(err, fs.ErrExist) {
		segs := strings.Split(dir, "/")
		for i := range segs {
			p := strings.Join(segs[:i+1], "/")
			if fi, serr := w.root.Stat(p); serr == nil && !fi.IsDir() {
				return executor.Errorf(executor.CodeNotADirectory, "Cannot create directory for %s: %s is a file, not a directory", show, p)
			}
		}
	}
	return fsError(err, show, "create directory for")
}

// atomicWrite writes name through a temporary file in the same directory:
// fill writes the content, the file is synced, then renamed over name (or,
// with noReplace, linked to name, failing if name exists). Nothing is left
// behind on failure. With keepPerm, perm is applied exactly; otherwise the
// file is created with perm less the umask.
func (w *Workspace) atomicWrite(name, show string, perm fs.FileMode, keepPerm, noReplace bool, fill func(*os.File) error) (err error) {
	dir, base := path.Split(name)
	var tmp string
	var f *os.File
	for range 10 {
		tmp = dir + "." + base + ".tmp-" + randHex(6)
		f, err = w.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
		if !errors.Is(err, fs.ErrExist) {
			break
		}
	}
	if err != nil {
		return fsError(err, show, "create temporary file for")
	}
	committed := false
	defer func() {
		if !committed {
			f.Close()
			_ = w.root.Remove(tmp)
		}
	}()
	if err := fill(f); err != nil {
		if _, ok := err.(*executor.Error); ok {
			return err
		}
		return fsError(err, show, "write")
	}
	if keepPerm {
		if err := f.Chmod(perm); err != nil {
			return fsError(err, show, "chmod")
		}
	}
	if err := f.Sync(); err != nil {
		return fsError(err, show, "sync")
	}
	if err := f.Close(); err != nil {
		return fsError(err, show, "close")
	}
	if noReplace {
		err = w.root.Link(tmp, name)
		switch {
		case errors.Is(err, fs.ErrExist):
			return executor.Errorf(executor.CodeAlreadyExists, "File already exists: %s (it is never overwritten)", show)
		case err != nil:
			// Filesystems without hard links: check, then rename.
			if _, lerr := w.root.Lstat(name); lerr == nil {
				return executor.Errorf(executor.CodeAlreadyExists, "File already exists: %s (it is never overwritten)", show)
			}
			if err := w.root.Rename(tmp, name); err != nil {
				return fsError(err, show, "rename")
			}
		default:
			_ = w.root.Remove(tmp)
		}
	} else if err := w.root.Rename(tmp, name); err != nil {
		return fsError(err, show, "rename")
	}
	committed = true
	w.syncDir(dir)
	return nil
}

// syncDir makes a rename in dir durable. Some filesystems cannot sync a
// directory; the rename has happened either way, so failures are ignored.
func (w *Workspace) syncDir(dir string) {
	if dir == "" {
		dir = "."
	}
	d, err := w.root.Open(strings.TrimSuffix(dir, "/"))
	if err != nil {
		return
	}
	_ = d.Sync()
	d.Close()
}

// Exists implements fs.exists.
func (s *Set) Exists(ctx context.Context, a FsExistsArgs) (FsExistsResult, error) {
	var res FsExistsResult
	w, name, show, release, err := s.usePath(ctx, false, a.Path, followFinal|allowRoot)
	if err != nil {
		return res, err
	}
	defer release()
	_, err = w.root.Stat(name)
	switch {
	case err == nil:
		res.Exists = true
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
	default:
		return res, fsError(err, show, "stat")
	}
	return res, nil
}

// ReadFile implements fs.readFile. Text comes back as it is; content that
// is not UTF-8 text (a NUL byte or invalid UTF-8), or that was written with
// encoding base64 in a session workspace, comes back base64-encoded with
// file.encoding saying so, in either kind of workspace, so whatever
// fs.writeFile can write can be read back.
func (s *Set) ReadFile(ctx context.Context, a FsReadFileArgs) (FsReadFileResult, error) {
	var res FsReadFileResult
	w, name, show, release, err := s.usePath(ctx, false, a.Path, followFinal)
	if err != nil {
		return res, err
	}
	defer release()
	f, fi, err := w.openRegular(name, show)
	if err != nil {
		return res, err
	}
	defer f.Close()
	limit := w.opts.MaxReadBytes
	tooLarge := func(size int64) error {
		return executor.Errorf(executor.CodeTooLarge,
			"File %s is %d bytes; fs.readFile returns at most %d (use fs.lineCount and fs.readRange to read part of it)", show, size, limit)
	}
	if fi.Size() > limit {
		return res, tooLarge(fi.Size())
	}
	data, err := io.ReadAll(io.LimitReader(ctxReader{ctx, f}, limit+1))
	if err != nil {
		return res, fsError(err, show, "read")
	}
	if int64(len(data)) > limit {
		return res, tooLarge(int64(len(data)))
	}
	enc := EncodingUTF8
	if !isText(data) {
		enc = EncodingBase64
	}
	var m *Meta
	if w.session() {
		meta, err := w.metaOf(name, fi)
		if err != nil {
			return res, err
		}
		if meta.Encoding == string(EncodingBase64) {
			enc = EncodingBase64
		}
		m = &meta
	}
	if enc == EncodingBase64 {
		res.Content = base64.StdEncoding.EncodeToString(data)
	} else {
		res.Content = string(data)
	}
	res.File = w.vfsFile(show, enc, int64(len(data)), m)
	return res, nil
}

// WriteFile implements fs.writeFile. Without a mode it creates the file or
// replaces it (the behaviour before modes existed); mode create fails if the
// file exists, overwrite and append fail if it does not. Every mode writes a
// temporary file and renames it over the old one (append copies the old
// content first), so a reader or a crash never sees a half-written file. In
// a session workspace every write, appends included, increments the file's
// version.
func (s *Set) WriteFile(ctx context.Context, a FsWriteFileArgs) (FsWriteFileResult, error) {
	var res FsWriteFileResult
	switch a.Mode {
	case "", ModeCreate, ModeOverwrite, ModeAppend:
	default:
		return res, executor.Errorf(executor.CodeInvalidArguments,
			"Mode %q is not accepted (accepted: create, overwrite, append; leave it out to create or replace the file)", a.Mode)
	}
	content := []byte(a.Content)
	switch a.Encoding {
	case "", EncodingUTF8:
	case EncodingBase64:
		var err error
		if content, err = decodeBase64(a.Content); err != nil {
			return res, err
		}
	default:
		return res, executor.Errorf(executor.CodeInvalidArguments,
			"Encoding %q is not accepted (accepted: utf-8, base64)", a.Encoding)
	}
	w, name, show, release, err := s.usePath(ctx, true, a.Path, followFinal)
	if err != nil {
		return res, err
	}
	defer release()
	if a.Encoding == EncodingBase64 {
		if len(content) > w.opts.MaxWriteChars {
			return res, executor.Errorf(executor.CodeTooLarge,
				"Content is %d bytes once decoded from base64; fs.writeFile writes at most %d per call (write a large file in parts with mode append)",
				len(content), w.opts.MaxWriteChars)
		}
	} else if err := w.checkWriteSize(a.Content, "fs.writeFile"); err != nil {
		return res, err
	}
	perm, keep := fs.FileMode(0o666), false
	var prev fs.FileInfo
	switch fi, err := w.root.Stat(name); {
	case err == nil:
		if err := needRegular(fi, show); err != nil {
			return res, err
		}
		if a.Mode == ModeCreate {
			return res, executor.Errorf(executor.CodeAlreadyExists, "File already exists: %s (mode create never replaces a file; use mode overwrite or append)", show)
		}
		perm, keep, prev = fi.Mode().Perm(), true, fi
	case errors.Is(err, fs.ErrNotExist):
		if a.Mode == ModeOverwrite || a.Mode == ModeAppend {
			return res, executor.Errorf(executor.CodeNotFound, "File not found: %s (mode %s needs an existing file; use mode create)", show, a.Mode)
		}
	case errors.Is(err, syscall.ENOTDIR) && (a.Mode == ModeOverwrite || a.Mode == ModeAppend):
		return res, executor.Errorf(executor.CodeNotFound, "File not found: %s (mode %s needs an existing file; use mode create)", show, a.Mode)
	default:
		return res, fsError(err, show, "stat")
	}
	if err := w.mkdirParents(name, show); err != nil {
		return res, err
	}
	var old *os.File
	if a.Mode == ModeAppend {
		if old, _, err = w.openRegular(name, show); err != nil {
			return res, err
		}
		defer old.Close()
	}
	err = w.atomicWrite(name, show, perm, keep, a.Mode == ModeCreate, func(f *os.File) error {
		if old != nil {
			if _, err := io.Copy(f, ctxReader{ctx, old}); err != nil {
				return fsError(err, show, "read")
			}
		}
		_, err := f.Write(content)
		return err
	})
	if err != nil {
		return res, err
	}
	size := int64(len(content))
	if fi, err := w.root.Stat(name); err == nil {
		size = fi.Size()
	}
	enc := EncodingUTF8
	if a.Encoding == EncodingBase64 {
		enc = EncodingBase64
	}
	if !w.session() {
		res.File = w.vfsFile(show, enc, size, nil)
		return res, nil
	}
	// The encoding hint follows the write; an append keeps the file's own
	// hint unless it adds binary content.
	hint := string(enc)
	if a.Mode == ModeAppend && enc != EncodingBase64 {
		hint = ""
	}
	m, err := w.recordWrite(name, show, prev, hint)
	if err != nil {
		return res, err
	}
	if m.Encoding == string(EncodingBase64) {
		enc = EncodingBase64
	}
	res.File = w.vfsFile(show, enc, size, &m)
	return res, nil
}

// decodeBase64 decodes standard base64, padded or not, ignoring line
// breaks and spaces.
func decodeBase64(s string) ([]byte, error) {
	clean := strings.Map(func(r rune) rune {
		switch r {
		case ' ', '\t', '\r', '\n':
			return -1
		}
		return r
	}, s)
	data, err := base64.StdEncoding.DecodeString(clean)
	if err != nil {
		var err2 error
		if data, err2 = base64.RawStdEncoding.DecodeString(clean); err2 == nil {
			return data, nil
		}
		return nil, executor.Errorf(executor.CodeInvalidArguments,
			"Content is not valid base64 (%v); encode binary content with the standard alphabet (A-Z a-z 0-9 + /)", err)
	}
	return data, nil
}

// DeleteFile implements fs.deleteFile. A symbolic link is removed itself,
// not its target.
func (s *Set) DeleteFile(ctx context.Context, a FsDeleteFileArgs) (FsDeleteFileResult, error) {
	var res FsDeleteFileResult
	w, name, show, release, err := s.usePath(ctx, true, a.Path, 0)
	if err != nil {
		return res, err
	}
	defer release()
	fi, err := w.root.Lstat(name)
	if err != nil {
		return res, fsError(err, show, "stat")
	}
	if fi.IsDir() {
		return res, executor.Errorf(executor.CodeIsADirectory, "Path is a directory: %s (use fs.deleteDirectory)", show)
	}
	if err := w.root.Remove(name); err != nil {
		return res, fsError(err, show, "delete")
	}
	if w.session() {
		return res, w.metaDelete(name, show, false)
	}
	return res, nil
}

// MoveFile implements fs.moveFile. It never replaces an existing destination.
func (s *Set) MoveFile(ctx context.Context, a FsMoveFileArgs) (FsMoveFileResult, error) {
	var res FsMoveFileResult
	w, src, srcShow, release, err := s.usePath(ctx, true, a.SourcePath, 0)
	if err != nil {
		return res, err
	}
	defer release()
	dst, dstShow, err := w.guard(a.DestinationPath, 0)
	if err != nil {
		return res, err
	}
	fi, err := w.root.Lstat(src)
	if err != nil {
		return res, fsError(err, srcShow, "stat")
	}
	if fi.IsDir() {
		return res, executor.Errorf(executor.CodeIsADirectory, "Path is a directory: %s (fs.moveFile moves files only)", srcShow)
	}
	if err := w.checkFree(dst, dstShow); err != nil {
		return res, err
	}
	if err := w.mkdirParents(dst, dstShow); err != nil {
		return res, err
	}
	// A hard link fails if the destination appeared meanwhile, which a
	// rename would silently replace.
	switch err := w.root.Link(src, dst); {
	case err == nil:
		if err := w.root.Remove(src); err != nil {
			return res, fsError(err, srcShow, "remove moved")
		}
	case errors.Is(err, fs.ErrExist):
		return res, executor.Errorf(executor.CodeAlreadyExists, "File already exists: %s (it is never overwritten)", dstShow)
	default:
		if err := w.checkFree(dst, dstShow); err != nil {
			return res, err
		}
		if err := w.root.Rename(src, dst); err != nil {
			return res, fsError(err, srcShow, "move")
		}
	}
	w.syncDir(path.Dir(dst))
	if path.Dir(src) != path.Dir(dst) {
		w.syncDir(path.Dir(src))
	}
	if w.session() {
		// The file keeps its version and times under its new name.
		if err := w.sess.src.opts.Meta.Rename(w.sess.id, src, dst); err != nil {
			return res, executor.Errorf(executor.CodeIOError, "Moved %s to %s but could not move its metadata: %v", srcShow, dstShow, err)
		}
	}
	return res, nil
}

// checkFree fails with already_exists when something is at name.
func (w *Workspace) checkFree(name, show string) error {
	_, err := w.root.Lstat(name)
	switch {
	case err == nil:
		return executor.Errorf(executor.CodeAlreadyExists, "File already exists: %s (it is never overwritten)", show)
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case errors.Is(err, syscall.ENOTDIR):
		return w.mkdirError(err, path.Dir(name), show)
	}
	return fsError(err, show, "stat")
}

// CopyFile implements fs.copyFile. It never replaces an existing destination.
func (s *Set) CopyFile(ctx context.Context, a FsCopyFileArgs) (FsCopyFileResult, error) {
	var res FsCopyFileResult
	w, src, srcShow, release, err := s.usePath(ctx, true, a.SourcePath, followFinal)
	if err != nil {
		return res, err
	}
	defer release()
	dst, dstShow, err := w.guard(a.DestinationPath, 0)
	if err != nil {
		return res, err
	}
	f, fi, err := w.openRegular(src, srcShow)
	if err != nil {
		if e := executor.ErrorFrom(err); e.Code == executor.CodeIsADirectory {
			return res, executor.Errorf(executor.CodeIsADirectory, "Path is a directory: %s (fs.copyFile copies files only)", srcShow)
		}
		return res, err
	}
	defer f.Close()
	if err := w.checkFree(dst, dstShow); err != nil {
		return res, err
	}
	if err := w.mkdirParents(dst, dstShow); err != nil {
		return res, err
	}
	err = w.atomicWrite(dst, dstShow, fi.Mode().Perm(), true, true, func(out *os.File) error {
		if _, err := io.Copy(out, ctxReader{ctx, f}); err != nil {
			return fsError(err, srcShow, "copy")
		}
		return nil
	})
	if err != nil || !w.session() {
		return res, err
	}
	// The copy is a new file (version 1) with the source's encoding hint.
	sm, err := w.metaOf(src, fi)
	if err != nil {
		return res, err
	}
	_, err = w.recordWrite(dst, dstShow, nil, sm.Encoding)
	return res, err
}

// CreateDirectory implements fs.createDirectory.
func (s *Set) CreateDirectory(ctx context.Context, a FsCreateDirectoryArgs) (FsCreateDirectoryResult, error) {
	var res FsCreateDirectoryResult
	w, name, show, release, err := s.usePath(ctx, true, a.Path, followFinal|allowRoot)
	if err != nil {
		return res, err
	}
	defer release()
	switch fi, err := w.root.Stat(name); {
	case err == nil && fi.IsDir():
		return res, nil
	case err == nil:
		return res, executor.Errorf(executor.CodeAlreadyExists, "File already exists: %s (it is a file, so no directory can be created there)", show)
	}
	if err := w.root.MkdirAll(name, 0o755); err != nil {
		return res, w.mkdirError(err, name, show)
	}
	return res, nil
}

// DeleteDirectory implements fs.deleteDirectory, recursively.
func (s *Set) DeleteDirectory(ctx context.Context, a FsDeleteDirectoryArgs) (FsDeleteDirectoryResult, error) {
	var res FsDeleteDirectoryResult
	w, release, err := s.use(ctx, true)
	if err != nil {
		return res, err
	}
	defer release()
	if clean, err := CleanPath(a.Path, w.opts); err == nil && clean == "." {
		return res, forbidden("Refusing to delete the workspace root; name a directory inside it")
	}
	name, show, err := w.guard(a.Path, 0)
	if err != nil {
		return res, err
	}
	if d, ok := w.deniedBelow(name); ok {
		return res, forbidden("Directory %s holds %s, which is reserved for the hub's state; it cannot be deleted", show, d)
	}
	fi, err := w.root.Lstat(name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return res, executor.Errorf(executor.CodeNotFound, "Directory not found: %s", show)
	case err != nil:
		return res, fsError(err, show, "stat")
	case fi.Mode()&fs.ModeSymlink != 0:
		return res, executor.Errorf(executor.CodeNotADirectory, "Path %s is a symbolic link, not a directory (delete the link with fs.deleteFile)", show)
	case !fi.IsDir():
		return res, executor.Errorf(executor.CodeNotADirectory, "Path %s is a file, not a directory (use fs.deleteFile)", show)
	}
	if err := w.root.RemoveAll(name); err != nil {
		return res, fsError(err, show, "delete")
	}
	w.syncDir(path.Dir(name))
	if w.session() {
		return res, w.metaDelete(name, show, true)
	}
	return res, nil
}

// ListDir implements fs.listDir. Entries reserved for the hub's state are
// left out. In a session workspace files carry their size, version and last
// write time; host listings keep seed 000's shape (name, isDirectory).
func (s *Set) ListDir(ctx context.Context, a FsListDirArgs) (FsListDirResult, error) {
	var res FsListDirResult
	w, name, show, release, err := s.usePath(ctx, false, a.Path, followFinal|allowRoot)
	if err != nil {
		return res, err
	}
	defer release()
	fi, err := w.root.Stat(name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return res, executor.Errorf(executor.CodeNotFound, "Directory not found: %s", show)
	case err != nil:
		return res, fsError(err, show, "stat")
	case !fi.IsDir():
		return res, executor.Errorf(executor.CodeNotADirectory, "Path %s is a file, not a directory (use fs.readFile or fs.readRange)", show)
	}
	d, err := w.root.Open(name)
	if err != nil {
		return res, fsError(err, show, "open")
	}
	defer d.Close()
	des, err := d.ReadDir(-1)
	if err != nil {
		return res, fsError(err, show, "list")
	}
	res.Entries = make([]DirEntry, 0, len(des))
	for _, de := range des {
		child := de.Name()
		if name != "." {
			child = name + "/" + child
		}
		if _, ok := w.denied(child); ok {
			continue
		}
		e := DirEntry{Name: de.Name(), IsDirectory: de.IsDir()}
		var cfi fs.FileInfo
		if de.Type()&fs.ModeSymlink != 0 {
			cfi, _ = w.root.Stat(child)
		} else if !de.IsDir() && w.session() {
			cfi, _ = de.Info() // sizes and versions: session workspaces only
		}
		if cfi != nil {
			e.IsDirectory = cfi.IsDir()
			if cfi.Mode().IsRegular() && w.session() {
				m, err := w.metaOf(child, cfi)
				if err != nil {
					return res, err
				}
				size := cfi.Size()
				e.SizeBytes, e.Version, e.UpdatedAt = &size, m.Version, fmtTime(m.UpdatedAt)
			}
		}
		res.Entries = append(res.Entries, e)
	}
	slices.SortFunc(res.Entries, func(x, y DirEntry) int {
		if x.IsDirectory != y.IsDirectory {
			if x.IsDirectory {
				return -1
			}
			return 1
		}
		return cmp.Compare(x.Name, y.Name)
	})
	return res, nil
}

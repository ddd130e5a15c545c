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
	"slices"
	"strings"
	"syscall"
	"unicode/utf8"

	unix "github.com/a6afc2ce/hermes-hub/internal/posix"

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

// usePath is use followed by locate, the prologue of every verb that takes
// one path: the workspace, the located path, and the release of the path's
// descriptor and of the session lock.
func (s *Set) usePath(ctx context.Context, write bool, p string, mode pathMode) (w *Workspace, l *loc, release func(), err error) {
	w, unlock, err := s.use(ctx, write)
	if err != nil {
		return nil, nil, nil, err
	}
	l, err = w.locate(p, mode)
	if err != nil {
		unlock()
		return nil, nil, nil, err
	}
	return w, l, func() { l.close(); unlock() }, nil
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

// openRegular opens the located file for reading, refusing directories and
// special files (a named pipe would block the hub).
func openRegular(l *loc) (*os.File, fs.FileInfo, error) {
	show := l.show
	fi, err := l.stat()
	if err != nil {
		return nil, nil, fsError(err, show, "stat")
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return nil, nil, fsError(errChanged, show, "open")
	}
	if err := needRegular(fi, show); err != nil {
		return nil, nil, err
	}
	f, err := l.open(unix.O_RDONLY|unix.O_NONBLOCK, 0)
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
	// What was opened, not only what locate saw, must not be protected.
	if err := l.w.prot.checkFileInfo(fi); err != nil {
		f.Close()
		return nil, nil, fsError(err, show, "open")
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

// mkdirError explains a failed creation of the directories of show,
// naming the file in the way.
func mkdirError(err error, show string) error {
	var we *walkErr
	if errors.As(err, &we) && (errors.Is(err, syscall.ENOTDIR) || errors.Is(err, fs.ErrExist)) {
		return executor.Errorf(executor.CodeNotADirectory, "Cannot create directory for %s: %s is a file, not a directory", show, we.at)
	}
	return fsError(err, show, "create directory for")
}

// atomicWrite writes the located file through a temporary file in the same
// directory: fill writes the content, the file is synced, then renamed over
// the name (or, with noReplace, linked to it, failing if it exists). Nothing
// is left behind on failure. With keepPerm, perm is applied exactly;
// otherwise the file is created with perm less the umask. The parent must
// be open (loc.makeParents).
func atomicWrite(l *loc, perm fs.FileMode, keepPerm, noReplace bool, fill func(*os.File) error) (err error) {
	show, dir := l.show, l.fd()
	var tmp string
	var f *os.File
	for range 10 {
		tmp = "." + l.base + ".tmp-" + randHex(6)
		var fd int
		fd, err = unix.Openat(dir, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(perm.Perm()))
		if err == nil {
			f = os.NewFile(uintptr(fd), tmp)
		}
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
			_ = unix.Unlinkat(dir, tmp, 0)
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
		err = unix.Linkat(dir, tmp, dir, l.base, 0)
		switch {
		case errors.Is(err, fs.ErrExist):
			return executor.Errorf(executor.CodeAlreadyExists, "File already exists: %s (it is never overwritten)", show)
		case err != nil:
			// Filesystems without hard links: check, then rename.
			if _, lerr := l.lstat(); lerr == nil {
				return executor.Errorf(executor.CodeAlreadyExists, "File already exists: %s (it is never overwritten)", show)
			}
			if err := unix.Renameat(dir, tmp, dir, l.base); err != nil {
				return fsError(err, show, "rename")
			}
		default:
			_ = unix.Unlinkat(dir, tmp, 0)
		}
	} else if err := unix.Renameat(dir, tmp, dir, l.base); err != nil {
		return fsError(err, show, "rename")
	}
	committed = true
	_ = syncFD(l.fd())
	return nil
}

// Exists implements fs.exists.
func (s *Set) Exists(ctx context.Context, a FsExistsArgs) (FsExistsResult, error) {
	var res FsExistsResult
	_, l, release, err := s.usePath(ctx, false, a.Path, followFinal|allowRoot|statOnly)
	if err != nil {
		return res, err
	}
	defer release()
	show := l.show
	_, err = l.located()
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
	w, l, release, err := s.usePath(ctx, false, a.Path, followFinal)
	if err != nil {
		return res, err
	}
	defer release()
	name, show := l.name, l.show
	f, fi, err := openRegular(l)
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
	switch FileEncoding(a.Encoding) {
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
	w, l, release, err := s.usePath(ctx, true, a.Path, followFinal)
	if err != nil {
		return res, err
	}
	defer release()
	name, show := l.name, l.show
	if FileEncoding(a.Encoding) == EncodingBase64 {
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
	switch fi, err := l.stat(); {
	case err == nil:
		if fi.Mode()&fs.ModeSymlink != 0 {
			return res, fsError(errChanged, show, "open")
		}
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
	if err := l.makeParents(); err != nil {
		return res, mkdirError(err, show)
	}
	var old *os.File
	if a.Mode == ModeAppend {
		if old, _, err = openRegular(l); err != nil {
			return res, err
		}
		defer old.Close()
	}
	err = atomicWrite(l, perm, keep, a.Mode == ModeCreate, func(f *os.File) error {
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
	if fi, err := l.stat(); err == nil {
		size = fi.Size()
	}
	enc := EncodingUTF8
	if FileEncoding(a.Encoding) == EncodingBase64 {
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
	w, l, release, err := s.usePath(ctx, true, a.Path, 0)
	if err != nil {
		return res, err
	}
	defer release()
	show := l.show
	st, err := l.lstat()
	if err != nil {
		return res, fsError(err, show, "stat")
	}
	if isDir(st) {
		return res, executor.Errorf(executor.CodeIsADirectory, "Path is a directory: %s (use fs.deleteDirectory)", show)
	}
	// Without AT_REMOVEDIR no directory can be removed, whatever is there now.
	if err := unix.Unlinkat(l.fd(), l.base, 0); err != nil {
		return res, fsError(err, show, "delete")
	}
	if w.session() {
		return res, w.metaDelete(l.name, show, false)
	}
	return res, nil
}

// MoveFile implements fs.moveFile. It never replaces an existing destination.
func (s *Set) MoveFile(ctx context.Context, a FsMoveFileArgs) (FsMoveFileResult, error) {
	var res FsMoveFileResult
	w, sl, release, err := s.usePath(ctx, true, a.SourcePath, 0)
	if err != nil {
		return res, err
	}
	defer release()
	dl, err := w.locate(a.DestinationPath, 0)
	if err != nil {
		return res, err
	}
	defer dl.close()
	st, err := sl.lstat()
	if err != nil {
		return res, fsError(err, sl.show, "stat")
	}
	if isDir(st) {
		return res, executor.Errorf(executor.CodeIsADirectory, "Path is a directory: %s (fs.moveFile moves files only)", sl.show)
	}
	if err := checkFree(dl); err != nil {
		return res, err
	}
	if err := dl.makeParents(); err != nil {
		return res, mkdirError(err, dl.show)
	}
	// A hard link fails if the destination appeared meanwhile, which a
	// rename would silently replace; it never links a directory.
	switch err := unix.Linkat(sl.fd(), sl.base, dl.fd(), dl.base, 0); {
	case err == nil:
		if err := unix.Unlinkat(sl.fd(), sl.base, 0); err != nil {
			return res, fsError(err, sl.show, "remove moved")
		}
	case errors.Is(err, fs.ErrExist):
		return res, executor.Errorf(executor.CodeAlreadyExists, "File already exists: %s (it is never overwritten)", dl.show)
	default:
		if err := checkFree(dl); err != nil {
			return res, err
		}
		if err := renameFile(sl, dl, idOf(st)); err != nil {
			return res, err
		}
	}
	_ = syncFD(dl.fd())
	if sl.pname != dl.pname {
		_ = syncFD(sl.fd())
	}
	if w.session() {
		// The file keeps its version and times under its new name.
		if err := w.sess.src.opts.Meta.Rename(w.sess.id, sl.name, dl.name); err != nil {
			return res, executor.Errorf(executor.CodeIOError, "Moved %s to %s but could not move its metadata: %v", sl.show, dl.show, err)
		}
	}
	return res, nil
}

// renameFile renames the file src to dst (filesystems without hard links).
// If what was renamed is not the file with identity want (a directory was
// swapped in meanwhile), it is renamed back and the move refused: a rename
// never moves a directory, nor anything holding the hub's state.
func renameFile(src, dst *loc, want fileID) error {
	if err := unix.Renameat(src.fd(), src.base, dst.fd(), dst.base); err != nil {
		return fsError(err, src.show, "move")
	}
	st, err := dst.lstat()
	if err == nil && idOf(st) == want {
		return nil
	}
	if err == nil && isDir(st) {
		if berr := unix.Renameat(dst.fd(), dst.base, src.fd(), src.base); berr != nil {
			return fsError(berr, src.show, "move back")
		}
		return executor.Errorf(executor.CodeIsADirectory, "Path is a directory: %s (fs.moveFile moves files only)", src.show)
	}
	return nil // another file, swapped in by someone else: moved as asked
}

// checkFree fails with already_exists when something is at the located name.
func checkFree(l *loc) error {
	_, err := l.lstat()
	switch {
	case err == nil:
		return executor.Errorf(executor.CodeAlreadyExists, "File already exists: %s (it is never overwritten)", l.show)
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case errors.Is(err, syscall.ENOTDIR):
		return mkdirError(err, l.show)
	}
	return fsError(err, l.show, "stat")
}

// CopyFile implements fs.copyFile. It never replaces an existing destination.
func (s *Set) CopyFile(ctx context.Context, a FsCopyFileArgs) (FsCopyFileResult, error) {
	var res FsCopyFileResult
	w, sl, release, err := s.usePath(ctx, true, a.SourcePath, followFinal)
	if err != nil {
		return res, err
	}
	defer release()
	dl, err := w.locate(a.DestinationPath, 0)
	if err != nil {
		return res, err
	}
	defer dl.close()
	f, fi, err := openRegular(sl)
	if err != nil {
		if e := executor.ErrorFrom(err); e.Code == executor.CodeIsADirectory {
			return res, executor.Errorf(executor.CodeIsADirectory, "Path is a directory: %s (fs.copyFile copies files only)", sl.show)
		}
		return res, err
	}
	defer f.Close()
	if err := checkFree(dl); err != nil {
		return res, err
	}
	if err := dl.makeParents(); err != nil {
		return res, mkdirError(err, dl.show)
	}
	err = atomicWrite(dl, fi.Mode().Perm(), true, true, func(out *os.File) error {
		if _, err := io.Copy(out, ctxReader{ctx, f}); err != nil {
			return fsError(err, sl.show, "copy")
		}
		return nil
	})
	if err != nil || !w.session() {
		return res, err
	}
	// The copy is a new file (version 1) with the source's encoding hint.
	sm, err := w.metaOf(sl.name, fi)
	if err != nil {
		return res, err
	}
	_, err = w.recordWrite(dl.name, dl.show, nil, sm.Encoding)
	return res, err
}

// CreateDirectory implements fs.createDirectory.
func (s *Set) CreateDirectory(ctx context.Context, a FsCreateDirectoryArgs) (FsCreateDirectoryResult, error) {
	var res FsCreateDirectoryResult
	w, l, release, err := s.usePath(ctx, true, a.Path, followFinal|allowRoot)
	if err != nil {
		return res, err
	}
	defer release()
	switch st, err := l.lstat(); {
	case err == nil && isDir(st):
		return res, nil // locate refused it if it is protected
	case err == nil:
		return res, executor.Errorf(executor.CodeAlreadyExists, "File already exists: %s (it is a file, so no directory can be created there)", l.show)
	}
	fd, err := descend(int(w.top.Fd()), l.name, true, w.prot)
	if err != nil {
		return res, mkdirError(err, l.show)
	}
	unix.Close(fd)
	return res, nil
}

// DeleteDirectory implements fs.deleteDirectory, recursively. The tree is
// removed by descriptors from the directory opened here: no link is
// followed, and a directory that is or holds a protected one is refused.
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
	l, err := w.locate(a.Path, 0)
	if err != nil {
		return res, err
	}
	defer l.close()
	show := l.show
	if d, ok := w.deniedBelow(l.name); ok {
		return res, forbidden("Directory %s holds %s, which is reserved for the hub's state; it cannot be deleted", show, d)
	}
	st, err := l.lstat()
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return res, executor.Errorf(executor.CodeNotFound, "Directory not found: %s", show)
	case err != nil:
		return res, fsError(err, show, "stat")
	case isLink(st):
		return res, executor.Errorf(executor.CodeNotADirectory, "Path %s is a symbolic link, not a directory (delete the link with fs.deleteFile)", show)
	case !isDir(st):
		return res, executor.Errorf(executor.CodeNotADirectory, "Path %s is a file, not a directory (use fs.deleteFile)", show)
	}
	d, err := l.openDir()
	if err != nil {
		return res, fsError(err, show, "open")
	}
	defer d.Close()
	if err := w.refuseHolding(d, show, "deleted"); err != nil {
		return res, err
	}
	id, err := fstatID(int(d.Fd()))
	if err != nil {
		return res, fsError(err, show, "stat")
	}
	err = removeTree(int(d.Fd()), l.name, w.prot)
	if err == nil {
		err = rmdirSame(l.fd(), l.base, id, l.name)
	}
	if err != nil {
		var we *walkErr
		if errors.As(err, &we) && we.at != l.name {
			return res, fsError(err, we.at, "delete")
		}
		return res, fsError(err, show, "delete")
	}
	_ = syncFD(l.fd())
	if w.session() {
		return res, w.metaDelete(l.name, show, true)
	}
	return res, nil
}

// refuseHolding refuses an operation on the whole directory d (shown as
// show) when d is or holds a protected directory.
func (w *Workspace) refuseHolding(d *os.File, show, what string) error {
	err := w.prot.holding(int(d.Fd()), w.topID)
	var pe *protectedErr
	var fe *protectedFileErr
	switch {
	case err == nil:
		return nil
	case errors.As(err, &pe):
		return forbidden("Directory %s holds %s, which is reserved for the hub's state; it cannot be %s", show, pe.dir.label(), what)
	case errors.As(err, &fe):
		return forbidden("Directory %s holds %s, a protected file of the hub (its configuration and secrets are out of the verbs' reach); it cannot be %s", show, fe.what, what)
	}
	return executor.Errorf(executor.CodeIOError, "Directory %s cannot be %s: %s", show, what, hostless(err))
}

// statFollow describes the located target of the root-relative name, links
// followed, with every check of locate.
func (w *Workspace) statFollow(name string) (fs.FileInfo, error) {
	l, err := w.locate(name, followFinal|allowRoot)
	if err != nil {
		return nil, err
	}
	defer l.close()
	return l.stat()
}

// ListDir implements fs.listDir. Entries reserved for the hub's state are
// left out. In a session workspace files carry their size, version and last
// write time; host listings keep seed 000's shape (name, isDirectory).
func (s *Set) ListDir(ctx context.Context, a FsListDirArgs) (FsListDirResult, error) {
	var res FsListDirResult
	if a.Path == "" {
		a.Path = "." // the root, as the default says
	}
	w, l, release, err := s.usePath(ctx, false, a.Path, followFinal|allowRoot)
	if err != nil {
		return res, err
	}
	defer release()
	name, show := l.name, l.show
	st, err := l.lstat()
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return res, executor.Errorf(executor.CodeNotFound, "Directory not found: %s", show)
	case err != nil:
		return res, fsError(err, show, "stat")
	case isLink(st):
		return res, fsError(errChanged, show, "open")
	case !isDir(st):
		return res, executor.Errorf(executor.CodeNotADirectory, "Path %s is a file, not a directory (use fs.readFile or fs.readRange)", show)
	}
	d, err := l.openDir()
	if err != nil {
		return res, fsError(err, show, "open")
	}
	defer d.Close()
	if w.session() {
		return w.listSession(d, name, show)
	}
	return s.listHost(w, d, name, show)
}

// listHost lists the host directory d (workspace path name, shown as
// show): from the workspace's listing cache when d has not changed since
// it was read (see listCache), else by reading it.
func (s *Set) listHost(w *Workspace, d *os.File, name, show string) (FsListDirResult, error) {
	var res FsListDirResult
	dfd := int(d.Fd())
	var before unix.Stat_t
	if err := unix.Fstat(dfd, &before); err != nil {
		return res, fsError(err, show, "stat")
	}
	// The protected files' generation is taken before the read, which
	// uses the same or a later one: a listing read while they were
	// resolved again is kept under the older one, never looked up again.
	key := listKey{ws: w.listID, gen: w.prot.loadFiles().generation(), id: idOf(&before), name: name}
	st, cacheable := dirStateOf(&before)
	if cacheable {
		if l, ok := w.lists.get(key, st); ok {
			res.Entries = w.hostEntries(l, name)
			return res, nil
		}
	}
	l, err := w.readHostListing(d, name, key.id)
	if err != nil {
		return res, fsError(err, show, "list")
	}
	if cacheable {
		// Kept only if the directory did not change while it was read.
		var after unix.Stat_t
		if err := unix.Fstat(dfd, &after); err == nil && idOf(&after) == key.id {
			if st2, _ := dirStateOf(&after); st2 == st {
				w.lists.put(key, st, l, s.opts.Clock.Now())
			}
		}
	}
	res.Entries = w.hostEntries(l, name)
	return res, nil
}

// readHostListing reads the host directory d (workspace path name, identity
// id) in one pass, leaving out the deny list's entries, the protected
// directories and the protected files. The kind of each entry comes from
// the directory read; an entry is stat'ed (relative to d) only when it is a
// directory and a protected directory lies in d (checked by each protected
// directory's parent, before and after the read), to leave that one out by
// its identity, or when it is not a directory and a protected file may
// have a name other than its place (see fileSet.elsewhere). A stat'ed
// entry that is gone is left out, and one that is no longer a directory is
// listed as what it now is. Protected files' places in d are left out by
// name.
func (w *Workspace) readHostListing(d *os.File, name string, id fileID) (*dirListing, error) {
	hold := w.prot.inDir(id)
	des, err := readDirents(d)
	if err != nil {
		return nil, err
	}
	hold = hold || w.prot.inDir(id)
	return w.hostListing(int(d.Fd()), des, name, hold, w.prot.filesIn(id)), nil
}

// hostListing builds the listing of des, read from the directory dfd at
// workspace path name; with hold, directories are stat'ed, and ff leaves
// protected files out (see readHostListing).
func (w *Workspace) hostListing(dfd int, des []dirent, name string, hold bool, ff fileFilter) *dirListing {
	// Files fill names from the front, directories from the back; links,
	// rare, go apart.
	names := make([]string, len(des))
	nf, nd := 0, 0
	var links []string
	_, denyHere := w.deniedBelow(name)
	for _, de := range des {
		if denyHere {
			if _, ok := w.denied(joinRel(name, de.name)); ok {
				continue
			}
		}
		kind := de.typ
		if ff.out(dfd, de) {
			continue
		}
		if kind.IsDir() && hold {
			cst, err := lstatAt(dfd, de.name)
			if err != nil {
				continue // removed meanwhile
			}
			if _, ok := w.prot.lookup(idOf(cst)); ok && isDir(cst) || ff.hides(cst) {
				continue
			}
			switch { // replaced meanwhile: listed as what it is now
			case isLink(cst):
				kind = fs.ModeSymlink
			case !isDir(cst):
				kind = 0
			}
		}
		switch {
		case kind&fs.ModeSymlink != 0:
			links = append(links, de.name)
		case kind.IsDir():
			nd++
			names[len(names)-nd] = de.name
		default:
			names[nf] = de.name
			nf++
		}
	}
	dirs, files := names[len(names)-nd:], names[:nf]
	sortNames(dirs)
	sortNames(files)
	sortNames(links)
	return newDirListing(dirs, files, links)
}

// hostEntries returns the entries of the host listing l of the directory
// at workspace path name: directories first, then files, each group by
// name. A link is resolved now (with every check of locate) and counts as
// a directory when it leads to one.
func (w *Workspace) hostEntries(l *dirListing, name string) []DirEntry {
	n := l.len()
	out := make([]DirEntry, 0, n)
	first := l.dirs + l.files // the first link
	if first == n {
		for i := range n {
			out = append(out, DirEntry{Name: l.name(i), IsDirectory: i < l.dirs})
		}
		return out
	}
	linkDir := make([]bool, n-first)
	for j := range linkDir {
		fi, err := w.statFollow(joinRel(name, l.name(first+j)))
		linkDir[j] = err == nil && fi.IsDir()
	}
	// Merge each group with the links of its kind; both are sorted.
	merge := func(lo, hi int, dir bool) {
		i, j := lo, 0
		for {
			for j < len(linkDir) && linkDir[j] != dir {
				j++
			}
			switch {
			case i < hi && (j == len(linkDir) || l.name(i) < l.name(first+j)):
				out = append(out, DirEntry{Name: l.name(i), IsDirectory: dir})
				i++
			case j < len(linkDir):
				out = append(out, DirEntry{Name: l.name(first + j), IsDirectory: dir})
				j++
			default:
				return
			}
		}
	}
	merge(0, l.dirs, true)
	merge(l.dirs, first, false)
	return out
}

// listSession lists the directory d of a session workspace (workspace path
// name, shown as show): files carry their size, version and last write
// time, so every entry is stat'ed, and nothing is cached.
func (w *Workspace) listSession(d *os.File, name, show string) (FsListDirResult, error) {
	var res FsListDirResult
	des, err := readDirents(d)
	if err != nil {
		return res, fsError(err, show, "list")
	}
	// One pass over the directory gives each entry's name and type; every
	// entry but a link is then stat'ed (relative to the directory's
	// descriptor): a file for its size and version, a directory to leave
	// out the hub's protected ones; a link is followed for what it points
	// to.
	dfd := int(d.Fd())
	var files fileFilter
	if w.prot.loadFiles() != nil {
		id, err := fstatID(dfd)
		if err != nil {
			return res, fsError(err, show, "stat")
		}
		files = w.prot.filesIn(id)
	}
	res.Entries = make([]DirEntry, 0, len(des))
	_, denyHere := w.deniedBelow(name)
	for _, de := range des {
		var child string
		if denyHere {
			child = joinRel(name, de.name)
			if _, ok := w.denied(child); ok {
				continue
			}
		}
		if files.out(dfd, de) {
			continue
		}
		if child == "" && (w.session() || de.typ&fs.ModeSymlink != 0) {
			child = joinRel(name, de.name)
		}
		typ := de.typ
		e := DirEntry{Name: de.name, IsDirectory: typ.IsDir()}
		var cfi fs.FileInfo
		switch {
		case typ&fs.ModeSymlink != 0:
			cfi, _ = w.statFollow(child)
		case typ.IsDir() || w.session():
			cst, err := lstatAt(dfd, de.name)
			if err != nil {
				continue // removed meanwhile
			}
			if _, ok := w.prot.lookup(idOf(cst)); ok && isDir(cst) || files.hides(cst) {
				continue
			}
			e.IsDirectory = isDir(cst)
			switch {
			case isLink(cst): // replaced by a link meanwhile
				child = joinRel(name, de.name)
				cfi, _ = w.statFollow(child)
			case !isDir(cst):
				cfi = newStatInfo(child, cst) // sizes and versions: session workspaces only
			}
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
	sortEntries(res.Entries)
	return res, nil
}

// sortEntries orders a listing: directories first, then by name. Names are
// unique within a directory, so when the entries carry nothing but their
// name and kind (host workspaces) the names alone are sorted (by
// sortNames' radix sort) and the entries rebuilt in that order, which costs
// less than moving whole entries through a comparison function.
func sortEntries(es []DirEntry) {
	nd := 0
	for i := range es {
		e := &es[i]
		if e.SizeBytes != nil || e.Version != 0 || e.UpdatedAt != "" {
			slices.SortFunc(es, func(x, y DirEntry) int {
				if x.IsDirectory != y.IsDirectory {
					if x.IsDirectory {
						return -1
					}
					return 1
				}
				return cmp.Compare(x.Name, y.Name)
			})
			return
		}
		if e.IsDirectory {
			nd++
		}
	}
	names := make([]string, len(es))
	d, f := 0, nd
	for i := range es {
		if es[i].IsDirectory {
			names[d] = es[i].Name
			d++
		} else {
			names[f] = es[i].Name
			f++
		}
	}
	sortNames(names[:nd])
	sortNames(names[nd:])
	for i, n := range names {
		es[i] = DirEntry{Name: n, IsDirectory: i < nd}
	}
}

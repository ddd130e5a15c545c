package verbs

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"syscall"
	"unicode/utf8"
	"unsafe"

	unix "github.com/a6afc2ce/hermes-hub/internal/posix"

	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/verbs/confine"
)

// place returns the place of the call in ctx.
func (s *Set) place(ctx context.Context) (Place, error) {
	if err := ctx.Err(); err != nil {
		return Place{}, err
	}
	return s.src.Place(ctx)
}

// use returns the place of the call in ctx, its session (if any) locked for
// reading or writing, and the function that unlocks it. A session removed
// by a sweep meanwhile is opened afresh.
func (s *Set) use(ctx context.Context, write bool) (Place, func(), error) {
	for range 3 {
		p, err := s.place(ctx)
		if err != nil {
			return Place{}, nil, err
		}
		if p.sess == nil {
			return p, func() {}, nil
		}
		unlock := p.sess.lock(write)
		if !p.sess.dropped {
			p.ws = p.sess.ws // the session's workspace now, under its lock
			return p, unlock, nil
		}
		unlock()
	}
	return Place{}, nil, executor.Errorf(executor.CodeIOError, "The session workspace was removed while the verb started; try again")
}

// usePath is use followed by Locate, the prologue of every verb that takes
// one path: the place, the located path, and the release of the path's
// descriptor and of the session lock.
func (s *Set) usePath(ctx context.Context, write bool, path string, mode confine.Mode) (p Place, l *confine.Loc, release func(), err error) {
	p, unlock, err := s.use(ctx, write)
	if err != nil {
		return Place{}, nil, nil, err
	}
	l, err = p.ws.root.Locate(path, mode)
	if err != nil {
		unlock()
		return Place{}, nil, nil, err
	}
	return p, l, func() { l.Close(); unlock() }, nil
}

// isText reports whether data can be returned as UTF-8 text.
func isText(data []byte) bool {
	return bytes.IndexByte(data, 0) < 0 && utf8.Valid(data)
}

// vfsFile describes file show with size and, in a session workspace, its
// recorded metadata m.
func vfsFile(show string, enc FileEncoding, size int64, m *Meta) *VfsFile {
	f := &VfsFile{Path: show, Encoding: enc, SizeBytes: size}
	if m != nil {
		f.Version, f.CreatedAt, f.UpdatedAt = m.Version, fmtTime(m.CreatedAt), fmtTime(m.UpdatedAt)
	}
	return f
}

// readOpen is a regular file of the workspace open for reading: the
// workspace's place, the file's name as the caller is shown it, the file
// and what its descriptor says of it. Close closes the file and ends the
// use of the workspace.
type readOpen struct {
	p       Place
	show    string
	f       *os.File
	fi      fs.FileInfo
	release func()
}

// openRead locates path (a final link followed inside the workspace) and
// opens the regular file there for reading (openRegular).
func (s *Set) openRead(ctx context.Context, path string) (readOpen, error) {
	p, l, release, err := s.usePath(ctx, false, path, confine.FollowFinal)
	if err != nil {
		return readOpen{}, err
	}
	f, fi, err := openRegular(l)
	if err != nil {
		release()
		return readOpen{}, err
	}
	return readOpen{p: p, show: l.Show(), f: f, fi: fi, release: release}, nil
}

// Close closes the file, then ends the use of the workspace.
func (o readOpen) Close() {
	o.f.Close()
	o.release()
}

// openRegular opens the located file for reading, refusing directories and
// special files (a named pipe would block the hub).
func openRegular(l *confine.Loc) (*os.File, fs.FileInfo, error) {
	show := l.Show()
	fi, err := l.Stat()
	if err != nil {
		return nil, nil, confine.FSError(err, show, "stat")
	}
	if err := needRegular(fi, show); err != nil {
		return nil, nil, err
	}
	f, fi, err := l.Open(unix.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
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

// Exists implements fs.exists.
func (s *Set) Exists(ctx context.Context, a FsExistsArgs) (FsExistsResult, error) {
	var res FsExistsResult
	_, l, release, err := s.usePath(ctx, false, a.Path, confine.FollowFinal|confine.AllowRoot|confine.StatOnly)
	if err != nil {
		return res, err
	}
	defer release()
	_, err = l.Located()
	switch {
	case err == nil:
		res.Exists = true
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
	default:
		return res, confine.FSError(err, l.Show(), "stat")
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
	p, l, release, err := s.usePath(ctx, false, a.Path, confine.FollowFinal)
	if err != nil {
		return res, err
	}
	defer release()
	limit := p.ws.opts.MaxReadBytes
	res.Content, res.File, res.buf, err = readWhole(ctx, p, l, limit, func(size int64) error {
		return executor.Errorf(executor.CodeTooLarge,
			"File %s is %d bytes; fs.readFile returns at most %d (use fs.lineCount and fs.readRange to read part of it)", l.Show(), size, limit)
	})
	if err != nil {
		return res, err
	}
	// In a chat, a binary or long file reads better as the file itself
	// (docs/uploads.md). Elsewhere (MCP, the API) no copy is made.
	if _, offered := executor.FilesOffered(ctx); !offered {
		return res, nil
	}
	data, text := []byte(res.Content), res.File.Encoding == EncodingUTF8
	if !text {
		if data, err = base64.StdEncoding.DecodeString(res.Content); err != nil {
			return res, err
		}
	}
	res.sent, err = sendAsFile(ctx, path.Base(l.Show()), data, text)
	return res, err
}

// readUpTo reads r to its end or to most bytes, whichever comes first,
// checking ctx between reads. size, the file's size when it was opened,
// sizes the buffer, so a file that did not grow is read in one read and
// one more that finds its end (io.ReadAll starts at 512 bytes and grows,
// copying: 9 reads for 4 KB, 20 copies for 1 MB).
func readUpTo(ctx context.Context, r io.Reader, size, most int64) ([]byte, error) {
	buf := readBuffers.Get(int(min(max(size+1, 512), most)))
	for int64(len(buf)) < most {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)] // the file grew: room to read on
		}
		end := min(int64(cap(buf)), most)
		m, err := r.Read(buf[len(buf):end])
		buf = buf[:len(buf)+m]
		if errors.Is(err, io.EOF) {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
	return buf, nil
}

// readBuffers are the buffers of files read whole: a text file's content
// shares its buffer, given back by FsReadFileResult.Release.
var readBuffers = executor.Pool[byte]{From: 1 << 10, Max: 16 << 20}

// readWhole reads the located file whole, as fs.readFile returns it, if
// it is at most limit bytes (tooLarge makes the error otherwise). Text
// shares the buffer it was read into, which shared returns (nil for
// base64, a copy).
func readWhole(ctx context.Context, p Place, l *confine.Loc, limit int64, tooLarge func(size int64) error) (content string, file *VfsFile, shared []byte, err error) {
	show := l.Show()
	f, fi, err := openRegular(l)
	if err != nil {
		return "", nil, nil, err
	}
	defer f.Close()
	if fi.Size() > limit {
		return "", nil, nil, tooLarge(fi.Size())
	}
	data, err := readUpTo(ctx, f, fi.Size(), limit+1)
	if err != nil {
		return "", nil, nil, confine.FSError(err, show, "read")
	}
	if int64(len(data)) > limit {
		readBuffers.Put(data)
		return "", nil, nil, tooLarge(int64(len(data)))
	}
	enc := EncodingUTF8
	if !isText(data) {
		enc = EncodingBase64
	}
	var m *Meta
	if p.sess != nil {
		meta, err := p.sess.metaOf(l.Name(), fi)
		if err != nil {
			return "", nil, nil, err
		}
		if meta.Encoding == string(EncodingBase64) {
			enc = EncodingBase64
		}
		m = &meta
	}
	if enc == EncodingBase64 {
		b64 := base64.StdEncoding.EncodeToString(data)
		readBuffers.Put(data)
		return b64, vfsFile(show, enc, int64(len(data)), m), nil, nil
	}
	// data is this call's own buffer and is not written again until it is
	// given back: the string shares it instead of copying the file (a
	// megabyte for a 1 MB read).
	return unsafe.String(unsafe.SliceData(data), len(data)), vfsFile(show, enc, int64(len(data)), m), data, nil
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
	p, l, release, err := s.usePath(ctx, true, a.Path, confine.FollowFinal)
	if err != nil {
		return res, err
	}
	defer release()
	show, w := l.Show(), p.ws
	if FileEncoding(a.Encoding) == EncodingBase64 {
		if len(content) > w.opts.MaxWriteChars {
			return res, executor.Errorf(executor.CodeTooLarge,
				"Content is %d bytes once decoded from base64; fs.writeFile writes at most %d per call (write a large file in parts with mode append)",
				len(content), w.opts.MaxWriteChars)
		}
	} else if err := w.checkWriteSize(a.Content, "fs.writeFile"); err != nil {
		return res, err
	}
	perm, keep, prev, err := writeTarget(l, a.Mode)
	if err != nil {
		return res, err
	}
	if err := l.MakeParents(); err != nil {
		return res, err
	}
	var old *os.File
	if a.Mode == ModeAppend {
		if old, _, err = openRegular(l); err != nil {
			return res, err
		}
		defer old.Close()
	}
	err = l.WriteAtomic(perm, keep, a.Mode == ModeCreate, func(f *os.File) error {
		if old != nil {
			if _, err := io.Copy(f, ctxReader{ctx, old}); err != nil {
				return confine.FSError(err, show, "read")
			}
		}
		_, err := f.Write(content)
		return err
	})
	if err != nil {
		return res, err
	}
	size := int64(len(content))
	if fi, err := l.Lstat(); err == nil {
		size = fi.Size()
	}
	enc := EncodingUTF8
	if FileEncoding(a.Encoding) == EncodingBase64 {
		enc = EncodingBase64
	}
	if p.sess == nil {
		res.File = vfsFile(show, enc, size, nil)
		return res, nil
	}
	// The encoding hint follows the write; an append keeps the file's own
	// hint unless it adds binary content.
	hint := string(enc)
	if a.Mode == ModeAppend && enc != EncodingBase64 {
		hint = ""
	}
	m, err := p.sess.recordWrite(l.Name(), show, prev, hint)
	if err != nil {
		return res, err
	}
	if m.Encoding == string(EncodingBase64) {
		enc = EncodingBase64
	}
	res.File = vfsFile(show, enc, size, &m)
	return res, nil
}

// writeTarget checks what is at the located path against fs.writeFile's
// mode and returns the permissions the written file gets (keep: exactly
// those of the file it replaces) and that file's description (nil for a
// new file).
func writeTarget(l *confine.Loc, mode WriteMode) (perm fs.FileMode, keep bool, prev fs.FileInfo, err error) {
	show := l.Show()
	switch fi, err := l.Stat(); {
	case err == nil:
		if err := needRegular(fi, show); err != nil {
			return 0, false, nil, err
		}
		if mode == ModeCreate {
			return 0, false, nil, executor.Errorf(executor.CodeAlreadyExists, "File already exists: %s (mode create never replaces a file; use mode overwrite or append)", show)
		}
		return fi.Mode().Perm(), true, fi, nil
	case errors.Is(err, fs.ErrNotExist):
		if mode == ModeOverwrite || mode == ModeAppend {
			return 0, false, nil, executor.Errorf(executor.CodeNotFound, "File not found: %s (mode %s needs an existing file; use mode create)", show, mode)
		}
	case errors.Is(err, syscall.ENOTDIR) && (mode == ModeOverwrite || mode == ModeAppend):
		return 0, false, nil, executor.Errorf(executor.CodeNotFound, "File not found: %s (mode %s needs an existing file; use mode create)", show, mode)
	default:
		return 0, false, nil, confine.FSError(err, show, "stat")
	}
	return 0o666, false, nil, nil
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
	p, l, release, err := s.usePath(ctx, true, a.Path, 0)
	if err != nil {
		return res, err
	}
	defer release()
	if err := l.Remove(); err != nil {
		return res, err
	}
	if p.sess != nil {
		return res, p.sess.metaDelete(l.Name(), l.Show(), false)
	}
	return res, nil
}

// MoveFile implements fs.moveFile. It never replaces an existing
// destination, and it moves files only.
func (s *Set) MoveFile(ctx context.Context, a FsMoveFileArgs) (FsMoveFileResult, error) {
	var res FsMoveFileResult
	p, sl, release, err := s.usePath(ctx, true, a.SourcePath, 0)
	if err != nil {
		return res, err
	}
	defer release()
	dl, err := p.ws.root.Locate(a.DestinationPath, 0)
	if err != nil {
		return res, err
	}
	defer dl.Close()
	if err := sl.MoveTo(dl); err != nil {
		return res, err
	}
	if p.sess != nil {
		// The file keeps its version and times under its new name.
		if err := p.sess.src.opts.Meta.Rename(p.sess.id, sl.Name(), dl.Name()); err != nil {
			return res, executor.Errorf(executor.CodeIOError, "Moved %s to %s but could not move its metadata: %v", sl.Show(), dl.Show(), err)
		}
	}
	return res, nil
}

// CopyFile implements fs.copyFile. It never replaces an existing destination.
func (s *Set) CopyFile(ctx context.Context, a FsCopyFileArgs) (FsCopyFileResult, error) {
	var res FsCopyFileResult
	p, sl, release, err := s.usePath(ctx, true, a.SourcePath, confine.FollowFinal)
	if err != nil {
		return res, err
	}
	defer release()
	dl, err := p.ws.root.Locate(a.DestinationPath, 0)
	if err != nil {
		return res, err
	}
	defer dl.Close()
	f, fi, err := openRegular(sl)
	if err != nil {
		if e := executor.ErrorFrom(err); e.Code == executor.CodeIsADirectory {
			return res, executor.Errorf(executor.CodeIsADirectory, "Path is a directory: %s (fs.copyFile copies files only)", sl.Show())
		}
		return res, err
	}
	defer f.Close()
	if err := dl.Free(); err != nil {
		return res, err
	}
	if err := dl.MakeParents(); err != nil {
		return res, err
	}
	err = dl.WriteAtomic(fi.Mode().Perm(), true, true, func(out *os.File) error {
		if _, err := io.Copy(out, ctxReader{ctx, f}); err != nil {
			return confine.FSError(err, sl.Show(), "copy")
		}
		return nil
	})
	if err != nil || p.sess == nil {
		return res, err
	}
	// The copy is a new file (version 1) with the source's encoding hint.
	sm, err := p.sess.metaOf(sl.Name(), fi)
	if err != nil {
		return res, err
	}
	_, err = p.sess.recordWrite(dl.Name(), dl.Show(), nil, sm.Encoding)
	return res, err
}

// CreateDirectory implements fs.createDirectory.
func (s *Set) CreateDirectory(ctx context.Context, a FsCreateDirectoryArgs) (FsCreateDirectoryResult, error) {
	var res FsCreateDirectoryResult
	_, l, release, err := s.usePath(ctx, true, a.Path, confine.FollowFinal|confine.AllowRoot)
	if err != nil {
		return res, err
	}
	defer release()
	return res, l.MkdirAll()
}

// DeleteDirectory implements fs.deleteDirectory, recursively, by
// descriptors (see confine.Loc.RemoveAll): no link is followed, and a
// directory that is or holds a protected one is refused.
func (s *Set) DeleteDirectory(ctx context.Context, a FsDeleteDirectoryArgs) (FsDeleteDirectoryResult, error) {
	var res FsDeleteDirectoryResult
	p, l, release, err := s.usePath(ctx, true, a.Path, confine.AllowRoot)
	if err != nil {
		return res, err
	}
	defer release()
	if err := l.RemoveAll(); err != nil {
		return res, err
	}
	if p.sess != nil {
		return res, p.sess.metaDelete(l.Name(), l.Show(), true)
	}
	return res, nil
}

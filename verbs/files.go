package verbs

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"mime"
	"os"
	"path"
	"strings"
	"time"

	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/verbs/confine"
)

// Files through the chat (docs/uploads.md): fs.upload saves the file that
// came with a message, fs.send sends a workspace file as a file. Both go
// through the confined workspace like fs.writeFile and fs.readFile; the
// bytes come from, or go to, what the surface offers the call
// (executor.UploadFrom, executor.SendFile), never a path of the hub's.

// Defaults of the upload options.
const (
	DefaultUploadDir      = "uploads"
	DefaultMaxUploadBytes = 50 << 20
	DefaultUploadTimeout  = 5 * time.Minute
)

// processStart is when this process started: a temporary file last
// written before it belongs to a write no process holds any more.
var processStart = time.Now()

// maxUploadName bounds a cleaned file name, in bytes: the path guard's
// default segment limit.
const maxUploadName = confine.DefaultMaxSegment

// Upload implements fs.upload: the file sent with the message is streamed
// to a temporary file beside its destination, with the upload's deadline,
// hashed as it goes, synced and renamed (linked, when it must not replace
// a file) to the path asked, or to the uploads directory under the
// sender's file name, cleaned. It is never taken beyond the size the
// platform announced nor beyond the configured limit.
func (s *Set) Upload(ctx context.Context, a FsUploadArgs) (FsUploadResult, error) {
	var res FsUploadResult
	up := executor.UploadFrom(ctx)
	if up == nil || up.Open == nil {
		return res, executor.Errorf(executor.CodeInvalidArguments,
			"No file came with this message: fs.upload saves the file you send with it (attach a document, photo or file, with /upload [PATH] as its caption, or none)")
	}
	limit := s.opts.MaxUploadBytes
	if up.Size > limit {
		return res, uploadTooLarge(up.Name, up.Size, limit)
	}
	dest := s.uploadPath(a.Path, up.Name)
	p, l, release, err := s.usePath(ctx, true, dest, confine.FollowFinal)
	if err != nil {
		return res, err
	}
	defer release()
	// Saves a crash cut short (before or after their file took its name)
	// left their temporary files in this directory: the next upload here
	// removes them (docs/uploads.md).
	l.RemoveStaleTemps(processStart)
	show := l.Show()
	perm, keep, prev, err := writeTarget(l, uploadMode(a.Overwrite))
	if err != nil {
		if e := executor.ErrorFrom(err); e.Code == executor.CodeAlreadyExists {
			return res, executor.Errorf(executor.CodeAlreadyExists,
				"%s already exists and was kept; send the file again with /upload %s overwrite=true to replace it, or with another path", show, show)
		}
		return res, err
	}
	if err := l.MakeParents(); err != nil {
		return res, err
	}
	h := sha256.New()
	var n int64
	err = l.WriteAtomic(perm, keep, !a.Overwrite, func(f *os.File) error {
		var derr error
		n, derr = s.download(ctx, up, io.MultiWriter(f, h), limit)
		return derr
	})
	if err != nil {
		return res, err
	}
	res = FsUploadResult{Path: show, SizeBytes: n, SHA256: hex.EncodeToString(h.Sum(nil)), Replaced: prev != nil}
	if p.sess != nil {
		if _, err := p.sess.recordWrite(l.Name(), show, prev, ""); err != nil {
			return res, err
		}
	}
	up.Saved = &executor.SavedFile{Path: res.Path, Size: res.SizeBytes, SHA256: res.SHA256}
	return res, nil
}

func uploadMode(overwrite bool) WriteMode {
	if overwrite {
		return ""
	}
	return ModeCreate
}

func uploadTooLarge(name string, size, limit int64) error {
	return executor.Errorf(executor.CodeTooLarge,
		"%s is %d bytes; files of at most %d bytes are saved here (uploads.max_bytes)", cleanUploadName(name), size, limit)
}

// download copies the upload to w within the upload's deadline: at most
// limit bytes, and never more than the size the platform announced.
func (s *Set) download(ctx context.Context, up *executor.Upload, w io.Writer, limit int64) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.UploadTimeout)
	defer cancel()
	body, err := up.Open(ctx)
	if err != nil {
		return 0, uploadFailed(ctx, err)
	}
	defer body.Close()
	max := limit
	if up.Size > 0 {
		max = min(max, up.Size)
	}
	n, err := io.Copy(w, io.LimitReader(ctxReader{ctx, body}, max+1))
	switch {
	case err != nil:
		return n, uploadFailed(ctx, err)
	case n > max && up.Size > 0 && up.Size <= limit:
		return n, executor.Errorf(executor.CodeInvalidArguments,
			"The file sent is bigger than the %d bytes its platform announced; nothing was saved", up.Size)
	case n > max:
		return n, uploadTooLarge(up.Name, n, limit)
	case up.Size > 0 && n < up.Size:
		return n, executor.Errorf(executor.CodeIOError,
			"The file sent ended after %d of the %d bytes its platform announced; nothing was saved (send it again)", n, up.Size)
	}
	return n, nil
}

// uploadFailed says why a download failed: its deadline, or the platform.
func uploadFailed(ctx context.Context, err error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return executor.Errorf(executor.CodeTimeout,
			"The file did not arrive within its deadline (uploads.timeout); nothing was saved (send it again)")
	}
	var xe *executor.Error
	if errors.As(err, &xe) {
		return xe
	}
	return executor.Errorf(executor.CodeIOError, "The file could not be fetched from the platform: %s; nothing was saved", confine.Hostless(err))
}

// uploadPath is where an upload goes: the path asked; a directory asked
// (ending in /) or none joined with the sender's file name, cleaned. The
// path guard then judges it like any path.
func (s *Set) uploadPath(asked, name string) string {
	asked = strings.TrimSpace(asked)
	switch {
	case asked == "":
		return confine.Join(s.opts.UploadDir, cleanUploadName(name))
	case strings.HasSuffix(asked, "/"):
		return confine.Join(strings.TrimRight(asked, "/"), cleanUploadName(name))
	}
	return asked
}

// cleanUploadName makes a sender's file name a safe last path element: its
// last element only (after any / or \), printable ASCII (every other run
// of characters becomes one _), no leading dots or spaces, at most
// maxUploadName bytes with its extension kept; "upload" when nothing is
// left.
func cleanUploadName(name string) string {
	if i := strings.LastIndexAny(name, `/\`); i >= 0 {
		name = name[i+1:]
	}
	var b strings.Builder
	under := false
	for _, r := range name {
		ok := r > 0x20 && r < 0x7f && r != '/' && r != '\\' || r == ' '
		if !ok {
			if !under {
				b.WriteByte('_')
			}
			under = true
			continue
		}
		b.WriteRune(r)
		under = false
	}
	clean := strings.TrimLeft(strings.TrimSpace(b.String()), ". ")
	if len(clean) > maxUploadName {
		ext := path.Ext(clean)
		if len(ext) > 16 {
			ext = ""
		}
		clean = strings.TrimRight(clean[:maxUploadName-len(ext)], ". ") + ext
	}
	if strings.Trim(clean, "_.") == "" {
		return "upload" + strings.TrimLeft(clean, "_")
	}
	return clean
}

// Send implements fs.send: a workspace file goes to the chat as a file (a
// Telegram document, a Discord attachment, a download in the panel),
// whole, or the range offset..offset+length of it, named after the file
// (a range: name.partN or name.OFFSET-END). A file larger than the
// platform takes is refused with the commands that fetch it in parts.
func (s *Set) Send(ctx context.Context, a FsSendArgs) (FsSendResult, error) {
	var res FsSendResult
	offer, ok := executor.FilesOffered(ctx)
	if !ok {
		return res, executor.Errorf(executor.CodeInvalidArguments,
			"fs.send delivers a file into a chat conversation (Telegram, Discord, the panel); this surface takes no files: read it with fs.readFile")
	}
	o, err := s.openRead(ctx, a.Path)
	if err != nil {
		return res, err
	}
	defer o.Close()
	show, f, fi := o.show, o.f, o.fi
	off, n, err := sendRange(a, fi.Size(), show)
	if err != nil {
		return res, err
	}
	if offer.Limit > 0 && n > offer.Limit {
		return res, executor.Errorf(executor.CodeTooLarge, "%s", partsAdvice(show, fi.Size(), offer))
	}
	name := path.Base(show)
	if off > 0 || n < fi.Size() {
		name = fmt.Sprintf("%s.%d-%d", name, off, off+n)
	}
	sent, err := executor.SendFile(ctx, name, mimeOf(show), n, io.NewSectionReader(ctxReaderAt{ctx, f}, off, n))
	if err != nil {
		return res, err
	}
	return FsSendResult{Path: show, Name: name, Offset: off, SizeBytes: sent.Size, FileSizeBytes: fi.Size(), SHA256: sent.SHA256}, nil
}

// sendRange is the byte range fs.send sends of a file of size bytes.
func sendRange(a FsSendArgs, size int64, show string) (off, n int64, err error) {
	if a.Offset != nil {
		off = *a.Offset
	}
	if off < 0 || off > size {
		return 0, 0, executor.Errorf(executor.CodeInvalidArguments, "offset %d is outside %s, which has %d bytes", off, show, size)
	}
	n = size - off
	if a.Length != nil {
		if *a.Length < 1 {
			return 0, 0, executor.Errorf(executor.CodeInvalidArguments, "length %d: give at least 1 byte", *a.Length)
		}
		n = min(n, *a.Length)
	}
	return off, n, nil
}

// partsAdvice says that a file is over the platform's limit and gives the
// commands that send it in parts within it.
func partsAdvice(show string, size int64, o executor.FileOffer) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s is %d bytes, over %d, the largest file %s takes. Fetch it in parts:", show, size, o.Limit, o.Where)
	parts := (size + o.Limit - 1) / o.Limit
	for i := int64(0); i < parts && i < 10; i++ {
		fmt.Fprintf(&b, "\n/fs.send %s offset=%d length=%d", show, i*o.Limit, o.Limit)
	}
	if parts > 10 {
		fmt.Fprintf(&b, "\n… (%d parts in all; the last starts at offset=%d)", parts, (parts-1)*o.Limit)
	}
	return b.String()
}

// mimeOf is the media type a sent file is announced with, by its
// extension; application/octet-stream when unknown.
func mimeOf(name string) string {
	if t := mime.TypeByExtension(path.Ext(name)); t != "" {
		return t
	}
	return "application/octet-stream"
}

// ctxReaderAt is an io.ReaderAt that stops when ctx ends.
type ctxReaderAt struct {
	ctx context.Context
	r   io.ReaderAt
}

func (c ctxReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.ReadAt(p, off)
}

// sendAsFile sends content, already read, as the file name when the call
// offers files and the content reads better as one (not text, or longer
// than the offer's TextLimit): fs.readFile's result then shows as the
// file instead of its content in chat. It reports the file sent, nil when
// none was.
func sendAsFile(ctx context.Context, name string, data []byte, text bool) (*executor.SentFile, error) {
	offer, ok := executor.FilesOffered(ctx)
	if !ok || (text && (offer.TextLimit <= 0 || int64(len(data)) <= offer.TextLimit)) {
		return nil, nil
	}
	if offer.Limit > 0 && int64(len(data)) > offer.Limit {
		return nil, nil // shown as it is shown without files
	}
	f, err := executor.SendFile(ctx, name, mimeOf(name), int64(len(data)), bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	return &f, nil
}

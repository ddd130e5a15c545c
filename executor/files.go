package executor

import (
	"context"
	"errors"
	"fmt"
	"io"
)

// Files through a call (docs/uploads.md). A chat surface offers a call two
// things a verb cannot reach otherwise: a place for the files it sends as
// files (a FileOffer: the state's file store, and how large a file the
// conversation's platform takes), and the file that came with the message
// (an Upload). The verb reads and writes the workspace as always; the
// offer and the upload carry bytes only, never a path of the hub's.

// FileSink keeps the bytes of a file a verb sends: it stores at most max
// bytes of r (0: no limit; more is an error) and returns their SHA-256 and
// size. The hub's is the state's files/.
type FileSink interface {
	Put(ctx context.Context, r io.Reader, max int64) (sha256 string, size int64, err error)
}

// FileOffer is what a surface that delivers files offers a call.
type FileOffer struct {
	Sink FileSink
	// Limit is the largest file the conversation's platform takes, in
	// bytes (Telegram's 50 MB, a Discord server's limit); 0: no limit.
	Limit int64
	// TextLimit is how long a text result may be, in bytes, before it
	// reads better as a file than as chat messages; 0: no limit.
	TextLimit int64
	// Where names the platform for messages, such as "Telegram".
	Where string
}

type offerKey struct{}

// WithFiles returns a context whose calls may send files as files.
func WithFiles(ctx context.Context, o FileOffer) context.Context {
	return context.WithValue(ctx, offerKey{}, o)
}

// FilesOffered returns the call's file offer; ok is false on a surface
// that delivers no files (the API's /api/execute, MCP, hub exec).
func FilesOffered(ctx context.Context) (FileOffer, bool) {
	o, ok := ctx.Value(offerKey{}).(FileOffer)
	return o, ok && o.Sink != nil
}

// SentFile is a file a verb sent as a file: the name and media type it is
// delivered with, and the SHA-256 and size of its stored bytes.
type SentFile struct {
	Name   string
	MIME   string
	SHA256 string
	Size   int64
}

// ErrNoFiles is SendFile's error on a surface that takes no files.
var ErrNoFiles = errors.New("this surface delivers no files")

// SendFile stores what r yields, size bytes, through the call's offer and
// adds the file to the call's outcome (Outcome.Files): the surface
// delivers it after the reply's text. Without an offer it returns
// ErrNoFiles. A size over the offer's Limit is refused before anything is
// read (the verb says how to fetch the file in parts); bytes beyond size,
// or beyond the limit, fail the store.
func SendFile(ctx context.Context, name, mime string, size int64, r io.Reader) (SentFile, error) {
	o, ok := FilesOffered(ctx)
	if !ok {
		return SentFile{}, ErrNoFiles
	}
	if o.Limit > 0 && size > o.Limit {
		return SentFile{}, Errorf(CodeTooLarge, "%s is %d bytes, over %d, the largest file %s takes", name, size, o.Limit, o.Where)
	}
	max := size
	if max <= 0 {
		max = o.Limit
	}
	sha, size, err := o.Sink.Put(ctx, r, max)
	if err != nil {
		return SentFile{}, Errorf(CodeIOError, "%s could not be kept for sending: %v", name, err)
	}
	f := SentFile{Name: name, MIME: mime, SHA256: sha, Size: size}
	if n, ok := ctx.Value(notesKey{}).(*notes); ok {
		n.mu.Lock()
		n.files = append(n.files, f)
		n.mu.Unlock()
	}
	return f, nil
}

// Upload is the file that came with a chat message, offered to the call of
// the verb that saves it (Info.TakesFile).
type Upload struct {
	// Name, Size and MIME are as the platform announced them (chat.Upload):
	// the name is untrusted, the size 0 when unknown.
	Name string
	Size int64
	MIME string
	// Open starts the download. Its reader fails once the download's
	// deadline passes; the caller closes it.
	Open func(ctx context.Context) (io.ReadCloser, error)
	// Saved is set by the verb once the file is in the workspace.
	Saved *SavedFile
}

// SavedFile is where an upload went: the workspace-relative path, the
// size and the SHA-256 of the bytes written.
type SavedFile struct {
	Path   string
	Size   int64
	SHA256 string
}

type uploadKey struct{}

// WithUpload returns a context whose call may save u.
func WithUpload(ctx context.Context, u *Upload) context.Context {
	return context.WithValue(ctx, uploadKey{}, u)
}

// UploadFrom returns the file that came with the call's message, or nil.
func UploadFrom(ctx context.Context) *Upload {
	u, _ := ctx.Value(uploadKey{}).(*Upload)
	return u
}

// Grant is the name whose grant the verb needs: Permission when set, else
// the verb's own name.
func (i Info) Grant() string {
	if i.Permission != "" {
		return i.Permission
	}
	return i.Name
}

// validAliases checks a verb's aliases: names of letters, not a builtin.
func validAliases(info Info) error {
	for _, a := range info.Aliases {
		if a == "" {
			return fmt.Errorf("register %s: empty alias", info.Name)
		}
		for _, c := range a {
			if !(c >= 'a' && c <= 'z') {
				return fmt.Errorf("register %s: alias %q: character %q not allowed (accepted: lower-case letters)", info.Name, a, c)
			}
		}
		for _, b := range Builtins {
			if a == b {
				return fmt.Errorf("register %s: alias %q is a built-in command", info.Name, a)
			}
		}
	}
	return nil
}

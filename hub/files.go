package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/store"
)

// Files through the chat (docs/uploads.md). A chat turn that came with a
// file runs the verb that saves it (the registry's Uploader, fs.upload)
// like any verb call: parsed, decided, mirrored and answered on the one
// path of a turn, with the file offered to the call (executor.Upload),
// fetched through the platform that announced it. A chat turn's call may
// send files back (executor.SendFile): they are kept in the state's
// files/ and delivered by the outbox after the reply's text, one entry
// each. The hub reads and writes no workspace file itself.

// FileSource fetches the files people send on one platform: the adapter's
// download of a Telegram file_id, a Discord attachment URL, the panel's
// upload in flight (Platform.Files).
type FileSource interface {
	Open(ctx context.Context, u *chat.Upload) (io.ReadCloser, error)
}

// FileStore is the state's files/: where the files a call sends are kept
// until the outbox has delivered them, and where the panel's downloads
// are read (store.Files).
type FileStore interface {
	executor.FileSink
	Open(sha string) (io.ReadCloser, store.FileInfo, error)
}

// WebTextLimit is how long a text result may be in the panel, in bytes,
// before fs.readFile sends it as a download instead.
const WebTextLimit = 256 << 10

// WebFileLimit is the largest file the panel and local targets are sent.
const WebFileLimit = 1 << 30

// MetaFileSHA256 and MetaFileSize are the meta keys of a mirror record of
// a stored file (a file reply's chunk, a saved upload); MetaFileName names
// the file.
const (
	MetaAttachment = "attachment" // the name of a chunk's attached file
	MetaFileName   = "file_name"
	MetaFileSHA256 = "file_sha256"
	MetaFileSize   = "file_size"
	MetaFilePath   = "file_path"
)

// SetFileSource makes src the source of the files people send on p.
func (h *Hub) SetFileSource(p chat.Platform, src FileSource) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.sources == nil {
		h.sources = map[chat.Platform]FileSource{}
	}
	h.sources[p] = src
}

func (h *Hub) fileSource(p chat.Platform) FileSource {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.sources[p]
}

// parseUpload reads a chat turn that came with a file: no text, or text
// that is not a command, saves it (the text, one line, as the path);
// a command must be the saving verb's (/upload PATH, /fs.upload …).
func (h *Hub) parseUpload(t *turn) {
	up, ok := h.x.Registry().Uploader()
	if !ok {
		t.err = executor.Errorf(executor.CodeInvalidArguments, "This hub saves no files: no verb takes a file sent with a message")
		return
	}
	if n := t.in.ExtraFiles; n > 0 {
		t.err = executor.Errorf(executor.CodeInvalidArguments, "A message brought %d files; the hub saves one file per message: send them one at a time (nothing was saved)", n+1)
		return
	}
	text := strings.TrimSpace(t.in.Text)
	if text == "" || !strings.HasPrefix(text, "/") && !strings.HasPrefix(text, "{") {
		if strings.ContainsAny(text, "\r\n") {
			t.err = executor.Errorf(executor.CodeInvalidArguments, "A file came with several lines of text; its caption is the path to save it at (one line), or /upload PATH")
			return
		}
		args, _ := json.Marshal(map[string]string{"path": text})
		if text == "" {
			args = []byte("{}")
		}
		t.cmd = executor.Command{Verb: up.Name, Arguments: args}
		t.env, t.info, t.known = t.cmd.Envelope(), up, true
		return
	}
	h.parseCommand(t)
	if t.err == nil && (t.cmd.Builtin != "" || t.cmd.Verb != up.Name) {
		name := t.cmd.Verb
		if name == "" {
			name = t.cmd.Builtin
		}
		t.err = executor.Errorf(executor.CodeInvalidArguments,
			"A file came with /%s, which takes none: send the file with /upload [PATH] as its caption (or none) to save it, and /%s without it", name, name)
	}
}

// callFiles gives a chat turn's call what its conversation offers: a place
// for the files it sends (within the reply's platform's limit), and the
// file that came with the message.
func (h *Hub) callFiles(ctx context.Context, t *turn) context.Context {
	if t.in == nil {
		return ctx
	}
	if h.opts.Files != nil {
		k := t.in.ReplyKey()
		ctx = executor.WithFiles(ctx, executor.FileOffer{
			Sink: h.opts.Files, Limit: h.fileLimit(k), TextLimit: h.textLimit(k), Where: platformName(k),
		})
	}
	if u := t.in.Upload; u != nil && t.known && t.info.TakesFile {
		ctx = executor.WithUpload(ctx, h.upload(t.in))
	}
	return ctx
}

// upload is the file of in, fetched through its platform when the verb
// starts the download.
func (h *Hub) upload(in *chat.Inbound) *executor.Upload {
	u := in.Upload
	return &executor.Upload{Name: u.Name, Size: u.Size, MIME: u.MIME, Open: func(ctx context.Context) (io.ReadCloser, error) {
		src := h.fileSource(in.Platform)
		if src == nil {
			return nil, fmt.Errorf("the %s adapter fetches no files", in.Platform)
		}
		return src.Open(ctx, u)
	}}
}

// uploadRemote is the outcome of a call that would save a file in a
// workspace on a node: files are saved in workspaces of this machine.
func uploadRemote(t *turn, workspace, node string) *executor.Outcome {
	return &executor.Outcome{Verb: t.info.Name, Err: executor.Errorf(executor.CodeInvalidArguments,
		"Files sent with a message are saved in workspaces of this machine; workspace %s runs on node %s. Send the file with /use and a local workspace, or save it there and copy it with proc.run", workspace, node)}
}

// fileLimit is the largest file the hub sends to k's platform: the
// platform's (chat.Spec.MaxFileBytes) unless configured otherwise
// (Options.FileLimits); WebFileLimit for the panel and local files.
func (h *Hub) fileLimit(k chat.Key) int64 {
	if k.Kind != chat.KindChat {
		return WebFileLimit
	}
	if n := h.opts.FileLimits[k.Platform]; n > 0 {
		return n
	}
	if s, ok := chat.SpecOf(k.Platform); ok && s.MaxFileBytes > 0 {
		return s.MaxFileBytes
	}
	return WebFileLimit
}

// textLimit is how much text a reply to k carries before a text file goes
// as a file: as many bytes as the chunks of a reply before it overflows.
func (h *Hub) textLimit(k chat.Key) int64 {
	o := h.chunkOptions(k)
	if o.MaxUnits <= 0 {
		return WebTextLimit
	}
	return int64(o.MaxUnits) * int64(max(o.MaxChunks, 1))
}

// platformName names k's platform for people.
func platformName(k chat.Key) string {
	switch {
	case k.Kind == chat.KindWeb:
		return "the panel"
	case k.Kind == chat.KindLocal:
		return "a local file"
	case k.Platform == chat.Telegram:
		return "Telegram"
	case k.Platform == chat.Discord:
		return "Discord on this server"
	}
	return string(k.Platform)
}

// sentFiles are the files an outcome sent, as the reply's attachments.
func sentFiles(out *executor.Outcome) []chat.Attachment {
	if out == nil || !out.Succeeded() {
		return nil
	}
	files := make([]chat.Attachment, 0, len(out.Files))
	for _, f := range out.Files {
		files = append(files, chat.Attachment{Name: f.Name, MIME: f.MIME, SHA256: f.SHA256, Size: f.Size})
	}
	return files
}

// mirrorSaved records a file the call saved, in the inbound mirror: its
// name as sent, where it went, its size and SHA-256, and the sender (the
// record's actor); never its bytes. Like the message's own record it is
// durable before the reply is enqueued.
func (h *Hub) mirrorSaved(ctx context.Context, in *chat.Inbound, saved *executor.SavedFile) {
	if saved == nil || in.Upload == nil {
		return
	}
	extra := map[string]string{
		MetaFileName: in.Upload.Name, MetaFilePath: saved.Path,
		MetaFileSize: strconv.FormatInt(saved.Size, 10), MetaFileSHA256: saved.SHA256,
	}
	cp := *in
	cp.Text = ""
	if err := h.mirrorInbound(ctx, &cp, store.KindFile, extra); err != nil {
		h.log.Error("mirror a saved file", "turn", in.TurnID, "err", err)
	}
}

// ErrNoFile is OpenFile's error for a file the state does not hold.
var ErrNoFile = errors.New("no such file")

// OpenFile opens a file the hub delivered to the panel, by its SHA-256:
// the panel's download. The link that names it is the web adapter's to
// check; the file stays for the outbox's retention after its delivery.
func (h *Hub) OpenFile(sha string) (io.ReadCloser, int64, error) {
	if h.opts.Files == nil {
		return nil, 0, ErrNoFile
	}
	r, info, err := h.opts.Files.Open(sha)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %w", ErrNoFile, err)
	}
	return r, info.Size, nil
}

// fileLimits are the configured limits on files the hub sends, by
// platform (discord.max_file_bytes).
func fileLimits(cfg *config.Config) map[chat.Platform]int64 {
	return map[chat.Platform]int64{chat.Discord: int64(cfg.Discord.MaxFileBytes)}
}

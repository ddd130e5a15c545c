package web

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"

	"github.com/a6afc2ce/hermes-hub/admin"
	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/hub"
)

// Files through the panel and the API (docs/uploads.md). POST
// /api/messages takes multipart/form-data as well as JSON: the fields text
// and client_turn_id, then one part named file, the file sent with the
// message, which the turn's fs.upload reads as it arrives (nothing is
// buffered here). A file the hub sends the web conversation is an event
// with a link, GET /api/files/<outbox id>, which serves the stored bytes
// while the conversation shows the event: only files delivered to this
// conversation are served, never a file by its hash alone.

// FileOpener opens a file the state's files/ keeps (hub.Hub.OpenFile).
type FileOpener interface {
	OpenFile(sha string) (io.ReadCloser, int64, error)
}

// FileLink is the file of a reply event: its name, size and where the
// panel downloads it.
type FileLink struct {
	Name string `json:"name"`
	Size int64  `json:"size"`
	URL  string `json:"url"`
	sha  string
}

// filesPath is the prefix of the download links.
const filesPath = "/api/files/"

// fileLink is the link of the file x carried, or nil.
func fileLink(x hub.Exchange) *FileLink {
	if x.File == nil || x.OutboxID == "" {
		return nil
	}
	return &FileLink{Name: x.File.Name, Size: x.File.Size, URL: filesPath + url.PathEscape(x.OutboxID), sha: x.File.SHA256}
}

// file returns the link of the file the ring's event of outboxID carries.
func (b *broker) file(outboxID string) (*FileLink, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	f, ok := b.files[outboxID]
	return f, ok
}

// download serves GET /api/files/<outbox id>: the file of a reply event of
// this conversation, as an attachment (never rendered by the browser).
func (s *Server) download(w http.ResponseWriter, r *http.Request) {
	id := strings.TrimPrefix(r.URL.Path, filesPath)
	f, ok := s.events.file(id)
	if !ok || s.files == nil {
		admin.WriteError(w, http.StatusNotFound, "no file %q in the web conversation: the panel serves the files the hub sent it while the conversation shows them", id)
		return
	}
	body, size, err := s.files.OpenFile(f.sha)
	if err != nil {
		s.log.Warn("web: a file of the conversation cannot be read", "outbox_id", id, "err", err)
		admin.WriteError(w, http.StatusGone, "file %s is no longer kept (the outbox keeps sent files for its retention): run the command again", f.Name)
		return
	}
	defer body.Close()
	h := w.Header()
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": f.Name}))
	h.Set("Content-Length", fmt.Sprint(size))
	if _, err := io.Copy(w, body); err != nil {
		// The stored bytes failed their check, or the client left: the
		// connection ends short of Content-Length.
		s.log.Warn("web: file download cut short", "outbox_id", id, "err", err)
	}
}

// inflight holds the file parts of the messages being handled, by turn id:
// the panel's FileSource.
type inflight struct {
	mu    sync.Mutex
	parts map[string]*filePart
}

// filePart is the file of a multipart message, read from its request.
type filePart struct {
	part *multipart.Part
	w    http.ResponseWriter // to bound the read by the download's deadline
}

func (f *inflight) put(turnID string, p *filePart) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.parts == nil {
		f.parts = map[string]*filePart{}
	}
	f.parts[turnID] = p
}

func (f *inflight) take(turnID string) *filePart {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := f.parts[turnID]
	delete(f.parts, turnID)
	return p
}

// Open gives the file of a message being handled to the verb that saves
// it (hub.FileSource), once: the request's body is read as the verb
// writes, within the download's deadline.
func (s *Server) Open(ctx context.Context, u *chat.Upload) (io.ReadCloser, error) {
	p := s.uploads.take(u.Ref)
	if p == nil {
		return nil, fmt.Errorf("the file sent with turn %s is no longer arriving (a file comes with its message's request): send it again", u.Ref)
	}
	if d, ok := ctx.Deadline(); ok {
		_ = http.NewResponseController(p.w).SetReadDeadline(d)
	}
	return io.NopCloser(deadlineReader{ctx, p.part}), nil
}

// deadlineReader reports the connection's read deadline, set to the
// download's, as the download's context does: the deadline passed.
type deadlineReader struct {
	ctx context.Context
	r   io.Reader
}

func (d deadlineReader) Read(p []byte) (int, error) {
	n, err := d.r.Read(p)
	if _, ok := d.ctx.Deadline(); ok && errors.Is(err, os.ErrDeadlineExceeded) {
		<-d.ctx.Done() // the same instant as the connection's deadline
		return n, d.ctx.Err()
	}
	return n, err
}

// multipartMessage reads the fields of a multipart POST /api/messages up
// to its file part, which it leaves unread: text and client_turn_id (each
// at most maxField bytes), then file, last. A form without file is a text
// message.
func multipartMessage(r *http.Request) (req MessageRequest, file *multipart.Part, err error) {
	mr, err := r.MultipartReader()
	if err != nil {
		return req, nil, fmt.Errorf("request body is not multipart/form-data: %w", err)
	}
	for {
		p, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			return req, nil, nil
		}
		if err != nil {
			return req, nil, fmt.Errorf("read multipart body: %w", err)
		}
		switch p.FormName() {
		case "file":
			if p.FileName() == "" {
				return req, nil, errors.New("the part named file has no filename (send it as a file: Content-Disposition: form-data; name=\"file\"; filename=\"...\")")
			}
			return req, p, nil
		case "text", "client_turn_id":
			v, err := io.ReadAll(io.LimitReader(p, maxField+1))
			if err != nil {
				return req, nil, fmt.Errorf("read field %s: %w", p.FormName(), err)
			}
			if len(v) > maxField {
				return req, nil, fmt.Errorf("field %s is over %d bytes", p.FormName(), maxField)
			}
			if p.FormName() == "text" {
				req.Text = string(v)
			} else {
				req.ClientTurnID = string(v)
			}
		default:
			return req, nil, fmt.Errorf("unknown field %q (accepted: text, client_turn_id, then file, last)", p.FormName())
		}
	}
}

// maxField bounds a text field of a multipart message.
const maxField = 64 << 10

// isMultipart reports whether r's body is multipart/form-data.
func isMultipart(r *http.Request) bool {
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return ct == "multipart/form-data"
}

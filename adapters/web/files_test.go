package web

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/config"
)

// form is a multipart POST /api/messages body: its fields in order, then
// the file (when name is not empty).
func form(t testing.TB, fields [][2]string, name string, data []byte) (body []byte, ctype string) {
	t.Helper()
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	for _, f := range fields {
		if err := mw.WriteField(f[0], f[1]); err != nil {
			t.Fatal(err)
		}
	}
	if name != "" {
		w, err := mw.CreateFormFile("file", name)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = w.Write(data)
	}
	_ = mw.Close()
	return b.Bytes(), mw.FormDataContentType()
}

// postForm posts a multipart message with the bearer token.
func (e *testEnv) postForm(body []byte, ctype string) response {
	e.t.Helper()
	return e.do(req{method: "POST", path: "/api/messages", body: string(body), ctype: ctype, bearer: e.token})
}

// replyOf waits for the reply events of turn and returns them.
func (e *testEnv) replyOf(turn string, n int) []Event {
	e.t.Helper()
	var out []Event
	waitUntil(e.t, fmt.Sprintf("%d reply events of %s", n, turn), func() bool {
		out = out[:0]
		var h HistoryResponse
		e.authed("GET", "/api/history", "").json(e.t, &h)
		for _, ev := range h.Events {
			if ev.Type == EventReply && ev.TurnID == turn {
				out = append(out, ev)
			}
		}
		return len(out) >= n
	})
	return out
}

// TestMessageWithFileIsSaved: a multipart POST /api/messages saves its
// file where its text says (or in the uploads directory), as a turn whose
// reply says where and how large; a file over uploads.max_bytes is
// refused, nothing saved.
func TestMessageWithFileIsSaved(t *testing.T) {
	e := newEnv(t, envConfig{mod: func(c *config.Config) { c.Uploads.MaxBytes = 4096 }})
	data := bytes.Repeat([]byte("%PDF\x00\xff"), 500)
	body, ct := form(t, [][2]string{{"text", "reports/q3.pdf"}, {"client_turn_id", "up1"}}, "Q3.pdf", data)
	r := e.postForm(body, ct)
	if r.status != http.StatusAccepted {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	if ev := e.replyOf("web.up1", 1); !strings.Contains(ev[0].Text, "Saved `reports/q3.pdf` (3000 bytes") {
		t.Fatalf("reply %q", ev[0].Text)
	}
	if got, _ := os.ReadFile(filepath.Join(e.cfg.Workspace, "reports", "q3.pdf")); !bytes.Equal(got, data) {
		t.Fatalf("saved %d bytes", len(got))
	}
	body, ct = form(t, [][2]string{{"client_turn_id", "up2"}}, "big.bin", make([]byte, 5000))
	if r := e.postForm(body, ct); r.status != http.StatusAccepted {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	if ev := e.replyOf("web.up2", 1); !strings.Contains(ev[0].Text, "files of at most 4096 bytes are saved here (uploads.max_bytes)") {
		t.Fatalf("reply %q", ev[0].Text)
	}
	if _, err := os.Stat(filepath.Join(e.cfg.Workspace, "uploads", "big.bin")); err == nil {
		t.Fatal("a file over uploads.max_bytes was saved")
	}
}

// TestMessageFormRejected: a form with an unknown field, a file part
// without a name, or a body over web.max_body_bytes + uploads.max_bytes
// is refused before any turn.
func TestMessageFormRejected(t *testing.T) {
	e := newEnv(t, envConfig{mod: func(c *config.Config) { c.Web.MaxBodyBytes = 1024 }, opts: func(o *Options) { o.MaxUploadBytes = 2048 }})
	body, ct := form(t, [][2]string{{"texte", "x"}}, "a.txt", []byte("a"))
	if r := e.postForm(body, ct); r.status != http.StatusBadRequest || !strings.Contains(r.errorText(t), `unknown field "texte" (accepted: text, client_turn_id, then file, last)`) {
		t.Fatalf("unknown field: %d %s", r.status, r.body)
	}
	body, ct = form(t, nil, "big.bin", make([]byte, 4000))
	if r := e.postForm(body, ct); r.status != http.StatusRequestEntityTooLarge || !strings.Contains(r.errorText(t), "(web.max_body_bytes + uploads.max_bytes)") {
		t.Fatalf("too large: %d %s", r.status, r.body)
	}
	body, ct = form(t, nil, "ok.bin", make([]byte, 2500))
	if r := e.postForm(body, ct); r.status != http.StatusAccepted {
		t.Fatalf("a file under both limits: %d %s", r.status, r.body)
	}
}

// TestMessageFileStalls: a file whose request stops arriving ends at
// uploads.timeout (the connection's read deadline): the reply says so,
// nothing is saved, no temporary file is left.
func TestMessageFileStalls(t *testing.T) {
	e := newEnv(t, envConfig{mod: func(c *config.Config) { c.Uploads.Timeout = config.Duration(300 * time.Millisecond) }})
	body, ct := form(t, [][2]string{{"client_turn_id", "slow"}}, "slow.bin", make([]byte, 8192))
	pr, pw := io.Pipe()
	go func() {
		_, _ = pw.Write(body[:len(body)/2])
		<-t.Context().Done()
		pw.Close()
	}()
	hr, _ := http.NewRequest("POST", e.ts.URL+"/api/messages", pr)
	hr.Header.Set("Content-Type", ct)
	hr.Header.Set("Authorization", "Bearer "+e.token)
	res, err := e.ts.Client().Do(hr)
	if err == nil {
		res.Body.Close()
	}
	if ev := e.replyOf("web.slow", 1); !strings.Contains(ev[0].Text, "did not arrive within its deadline (uploads.timeout)") {
		t.Fatalf("reply %q", ev[0].Text)
	}
	if _, err := os.Stat(filepath.Join(e.cfg.Workspace, "uploads", "slow.bin")); err == nil {
		t.Fatal("saved")
	}
	filepath.Walk(e.cfg.Workspace, func(p string, fi os.FileInfo, err error) error {
		if err == nil && strings.Contains(fi.Name(), ".tmp-") {
			t.Errorf("temporary file left: %s", p)
		}
		return nil
	})
}

// TestFileReplyDownload: /get sends a workspace file to the panel as an
// event with a download link; the link serves the bytes as an attachment
// to an authenticated client, and only for files this conversation was
// sent.
func TestFileReplyDownload(t *testing.T) {
	e := newEnv(t, envConfig{})
	data := bytes.Repeat([]byte{0, 0xff, '<', 's'}, 2000)
	e.writeFile("app.bin", string(data))
	m := e.message("/get app.bin", "get1")
	evs := e.replyOf(m.TurnID, 2)
	var link *FileLink
	for _, ev := range evs {
		if ev.File != nil {
			link = ev.File
		}
	}
	if link == nil || link.Name != "app.bin" || link.Size != 8000 || !strings.HasPrefix(link.URL, "/api/files/") {
		js, _ := json.Marshal(evs)
		t.Fatalf("no file link: %s", js)
	}
	r := e.authed("GET", link.URL, "")
	if r.status != http.StatusOK || !bytes.Equal(r.body, data) {
		t.Fatalf("download: %d, %d bytes", r.status, len(r.body))
	}
	if cd := r.header.Get("Content-Disposition"); cd != `attachment; filename=app.bin` || r.header.Get("Content-Type") != "application/octet-stream" {
		t.Fatalf("headers %v", r.header)
	}
	if r := e.do(req{method: "GET", path: link.URL}); r.status != http.StatusUnauthorized {
		t.Fatalf("without credentials: %d", r.status)
	}
	for _, p := range []string{"/api/files/reply:web.other:web:1", "/api/files/" + strings.Repeat("0", 64)} {
		if r := e.authed("GET", p, ""); r.status != http.StatusNotFound {
			t.Fatalf("%s: %d %s", p, r.status, r.body)
		}
	}
}

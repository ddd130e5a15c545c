package verbs_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/verbs"
	"github.com/a6afc2ce/hermes-hub/verbs/internal/verbtest"
)

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// upload is the file of a message: its bytes served by a reader that
// counts how often it was opened.
type upload struct {
	executor.Upload
	opened int
}

func newUpload(name string, data []byte, declared int64) *upload {
	u := &upload{Upload: executor.Upload{Name: name, Size: declared}}
	u.Open = func(context.Context) (io.ReadCloser, error) {
		u.opened++
		return io.NopCloser(bytes.NewReader(data)), nil
	}
	return u
}

func runUpload(e *verbtest.Env, u *upload, args map[string]any) *executor.Outcome {
	e.T.Helper()
	return e.RunCtx(executor.WithUpload(context.Background(), &u.Upload), "fs.upload", args)
}

// noTemp fails unless the workspace holds no temporary file of a write.
func noTemp(t *testing.T, e *verbtest.Env) {
	t.Helper()
	filepath.Walk(e.Dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && strings.Contains(fi.Name(), ".tmp-") {
			t.Errorf("temporary file left: %s", p)
		}
		return nil
	})
}

func TestUploadSavesTheFile(t *testing.T) {
	e := verbtest.New(t)
	data := []byte("%PDF-1.7\x00\xff binary report")
	u := newUpload("Q3 report.pdf", data, int64(len(data)))
	out := runUpload(e, u, map[string]any{})
	if out.Err != nil {
		t.Fatal(out.Err)
	}
	res := out.Value.(*verbs.FsUploadResult)
	if res.Path != "uploads/Q3 report.pdf" || res.SizeBytes != int64(len(data)) || res.SHA256 != sha(data) || res.Replaced {
		t.Fatalf("result %+v", res)
	}
	if got := e.Get("uploads/Q3 report.pdf"); got != string(data) {
		t.Fatalf("saved %q", got)
	}
	if s := u.Saved; s == nil || s.Path != res.Path || s.SHA256 != res.SHA256 || s.Size != res.SizeBytes {
		t.Fatalf("the caller was not told where the file went: %+v", s)
	}
	if r := executor.RenderText(out, false); !strings.Contains(r, "uploads/Q3 report.pdf") || !strings.Contains(r, "24 bytes") {
		t.Fatalf("reply %q", r)
	}
	// A path asked: a file path, or a directory ending in /.
	if out := runUpload(e, newUpload("x.bin", data, 0), map[string]any{"path": "reports/q3.pdf"}); out.Err != nil || e.Get("reports/q3.pdf") != string(data) {
		t.Fatalf("path asked: %v", out.Err)
	}
	if out := runUpload(e, newUpload("x.bin", data, 0), map[string]any{"path": "in/"}); out.Err != nil || e.Get("in/x.bin") != string(data) {
		t.Fatalf("directory asked: %v", out.Err)
	}
	noTemp(t, e)
}

// TestUploadSweepsWhatACrashLeft: the temporary files of saves a killed
// process left in the directory (written before this process started)
// are removed by the next upload there; one a live write holds (written
// since) is kept, and so is a file that only looks alike.
func TestUploadSweepsWhatACrashLeft(t *testing.T) {
	e := verbtest.New(t)
	e.Put("uploads/.a.bin.tmp-0123456789ab", "half a file")
	e.Put("uploads/.a.bin.tmp-ba9876543210", "a live write")
	e.Put("uploads/.a.bin.tmp-notmine", "something else")
	e.Put("uploads/.other.pdf.tmp-aaaaaaaaaaaa", "half another file")
	old := time.Now().Add(-24 * time.Hour)
	for _, n := range []string{".a.bin.tmp-0123456789ab", ".a.bin.tmp-notmine", ".other.pdf.tmp-aaaaaaaaaaaa"} {
		if err := os.Chtimes(filepath.Join(e.Dir, "uploads", n), old, old); err != nil {
			t.Fatal(err)
		}
	}
	if out := runUpload(e, newUpload("a.bin", []byte("whole"), 5), map[string]any{}); out.Err != nil {
		t.Fatal(out.Err)
	}
	for _, n := range []string{".a.bin.tmp-0123456789ab", ".other.pdf.tmp-aaaaaaaaaaaa"} {
		if _, err := os.Stat(filepath.Join(e.Dir, "uploads", n)); err == nil {
			t.Errorf("the leftover %s of a killed save is still there", n)
		}
	}
	for _, n := range []string{".a.bin.tmp-ba9876543210", ".a.bin.tmp-notmine"} {
		if _, err := os.Stat(filepath.Join(e.Dir, "uploads", n)); err != nil {
			t.Errorf("%s was removed: %v", n, err)
		}
	}
	// Killed after the file took its name: sent again, it is kept (never
	// replaced) and the leftover goes.
	e.Put("uploads/.a.bin.tmp-00000000cafe", "whole")
	if err := os.Chtimes(filepath.Join(e.Dir, "uploads", ".a.bin.tmp-00000000cafe"), old, old); err != nil {
		t.Fatal(err)
	}
	out := runUpload(e, newUpload("a.bin", []byte("whole"), 5), map[string]any{})
	verbtest.CheckErr(t, out.Err, executor.CodeAlreadyExists, "uploads/a.bin already exists and was kept")
	if _, err := os.Stat(filepath.Join(e.Dir, "uploads", ".a.bin.tmp-00000000cafe")); err == nil {
		t.Error("the leftover of a save killed after its link is still there")
	}
}

func TestUploadNeverReplacesUnlessAsked(t *testing.T) {
	e := verbtest.New(t)
	e.Put("uploads/a.txt", "the original")
	out := runUpload(e, newUpload("a.txt", []byte("new"), 3), map[string]any{})
	verbtest.CheckErr(t, out.Err, executor.CodeAlreadyExists, "uploads/a.txt already exists and was kept", "overwrite=true")
	if e.Get("uploads/a.txt") != "the original" {
		t.Fatal("the existing file was replaced")
	}
	out = runUpload(e, newUpload("a.txt", []byte("new"), 3), map[string]any{"path": "uploads/a.txt", "overwrite": true})
	if out.Err != nil || !out.Value.(*verbs.FsUploadResult).Replaced || e.Get("uploads/a.txt") != "new" {
		t.Fatalf("overwrite: %v", out.Err)
	}
	noTemp(t, e)
}

// TestUploadNamesStayInside: whatever name the sender's client gives, the
// file lands in the uploads directory under a clean name; a path asked
// that leaves the workspace is refused by the path guard.
func TestUploadNamesStayInside(t *testing.T) {
	e := verbtest.New(t)
	before := verbtest.Snapshot(t, e.Outside)
	for name, want := range map[string]string{
		"../../outside/secret.txt":           "uploads/secret.txt",
		"/etc/passwd":                        "uploads/passwd",
		`C:\Users\me\notes.txt`:              "uploads/notes.txt",
		".hidden":                            "uploads/hidden",
		"a\x00b\nc\x7f.txt":                  "uploads/a_b_c_.txt",
		"évian été.pdf":                      "uploads/_vian _t_.pdf",
		"\x01\x02":                           "uploads/upload",
		strings.Repeat("x", 300) + ".tar.gz": "uploads/" + strings.Repeat("x", 77) + ".gz",
	} {
		out := runUpload(e, newUpload(name, []byte("x"), 1), map[string]any{})
		if out.Err != nil {
			t.Errorf("name %q: %v", name, out.Err)
			continue
		}
		if got := out.Value.(*verbs.FsUploadResult).Path; got != want {
			t.Errorf("name %q saved as %q, want %q", name, got, want)
		}
	}
	if out := runUpload(e, newUpload("..", []byte("x"), 1), map[string]any{"path": "dots/"}); out.Err != nil || out.Value.(*verbs.FsUploadResult).Path != "dots/upload" {
		t.Errorf("name \"..\": %+v", out)
	}
	for _, p := range []string{"../outside/x", "/tmp/x", ".hub/hub.db", "a/../../x", "bad\x01name"} {
		u := newUpload("x", []byte("x"), 1)
		out := runUpload(e, u, map[string]any{"path": p})
		if out.Err == nil || out.Err.Code != executor.CodeForbiddenPath {
			t.Errorf("path %q: %+v, want forbidden_path", p, out.Err)
		}
		if u.opened != 0 {
			t.Errorf("path %q: the download started before the path was judged", p)
		}
	}
	if after := verbtest.Snapshot(t, e.Outside); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatal("something outside the workspace changed")
	}
}

func TestUploadSizes(t *testing.T) {
	e := verbtest.New(t, func(o *verbs.Options, _ *verbs.WorkspaceOptions) { o.MaxUploadBytes = 10 })
	// Announced over the limit: refused before the download.
	u := newUpload("big.bin", make([]byte, 11), 11)
	verbtest.CheckErr(t, runUpload(e, u, map[string]any{}).Err, executor.CodeTooLarge, "11 bytes", "at most 10", "uploads.max_bytes")
	if u.opened != 0 {
		t.Fatal("a file announced too large was downloaded")
	}
	// Not announced, and over the limit: cut off, nothing saved.
	verbtest.CheckErr(t, runUpload(e, newUpload("big.bin", make([]byte, 11), 0), map[string]any{}).Err, executor.CodeTooLarge, "at most 10")
	// Bigger than announced: refused, nothing saved.
	verbtest.CheckErr(t, runUpload(e, newUpload("liar.bin", []byte("0123456"), 4), map[string]any{}).Err,
		executor.CodeInvalidArguments, "bigger than the 4 bytes its platform announced")
	// Shorter than announced: a download cut short.
	verbtest.CheckErr(t, runUpload(e, newUpload("short.bin", []byte("01"), 4), map[string]any{}).Err,
		executor.CodeIOError, "ended after 2 of the 4 bytes")
	if e.Exists("uploads/big.bin") || e.Exists("uploads/liar.bin") || e.Exists("uploads/short.bin") {
		t.Fatal("a refused upload was saved")
	}
	noTemp(t, e)
	if out := runUpload(e, newUpload("ok.bin", make([]byte, 10), 10), map[string]any{}); out.Err != nil {
		t.Fatalf("exactly the limit: %v", out.Err)
	}
}

// stallingBody yields a few bytes, then blocks until its context ends.
type stallingBody struct {
	ctx  context.Context
	sent bool
}

func (s *stallingBody) Read(p []byte) (int, error) {
	if !s.sent {
		s.sent = true
		return copy(p, "first bytes"), nil
	}
	<-s.ctx.Done()
	return 0, s.ctx.Err()
}

func (s *stallingBody) Close() error { return nil }

func TestUploadThatStallsTimesOut(t *testing.T) {
	e := verbtest.New(t, func(o *verbs.Options, _ *verbs.WorkspaceOptions) { o.UploadTimeout = 50 * time.Millisecond })
	u := &executor.Upload{Name: "slow.bin", Size: 1000, Open: func(ctx context.Context) (io.ReadCloser, error) {
		return &stallingBody{ctx: ctx}, nil
	}}
	out := e.RunCtx(executor.WithUpload(context.Background(), u), "fs.upload", map[string]any{})
	verbtest.CheckErr(t, out.Err, executor.CodeTimeout, "uploads.timeout", "nothing was saved")
	if e.Exists("uploads/slow.bin") {
		t.Fatal("a stalled upload was saved")
	}
	noTemp(t, e)
}

func TestUploadWithoutAFile(t *testing.T) {
	e := verbtest.New(t)
	e.Fails(executor.CodeInvalidArguments, "fs.upload", map[string]any{"path": "x"}, "No file came with this message")
}

// sink keeps sent files in memory.
type sink struct {
	mu    sync.Mutex
	files map[string][]byte
}

func (s *sink) Put(_ context.Context, r io.Reader, max int64) (string, int64, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return "", 0, err
	}
	if max > 0 && int64(len(b)) > max {
		return "", 0, fmt.Errorf("over %d bytes", max)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.files == nil {
		s.files = map[string][]byte{}
	}
	s.files[sha(b)] = b
	return sha(b), int64(len(b)), nil
}

func offering(s *sink, limit, textLimit int64) context.Context {
	return executor.WithFiles(context.Background(), executor.FileOffer{Sink: s, Limit: limit, TextLimit: textLimit, Where: "Testgram"})
}

func TestSendAFile(t *testing.T) {
	e := verbtest.New(t)
	data := bytes.Repeat([]byte{0, 1, 2, 0xff}, 100)
	e.Put("build/app.bin", string(data))
	s := &sink{}
	out := e.RunCtx(offering(s, 1000, 0), "fs.send", map[string]any{"path": "build/app.bin"})
	if out.Err != nil {
		t.Fatal(out.Err)
	}
	if len(out.Files) != 1 || out.Files[0].Name != "app.bin" || out.Files[0].Size != 400 || !bytes.Equal(s.files[out.Files[0].SHA256], data) {
		t.Fatalf("files %+v", out.Files)
	}
	if r := executor.RenderText(out, false); !strings.Contains(r, "build/app.bin") || !strings.Contains(r, "sent as a file") {
		t.Fatalf("reply %q", r)
	}
	// /get is fs.send.
	cmd, err := e.X.ParseCommand("/get build/app.bin")
	if err != nil || cmd.Verb != "fs.send" {
		t.Fatalf("/get: %+v %v", cmd, err)
	}
	// Over the platform's limit: the commands that fetch it in parts.
	out = e.RunCtx(offering(s, 150, 0), "fs.send", map[string]any{"path": "build/app.bin"})
	verbtest.CheckErr(t, out.Err, executor.CodeTooLarge, "over 150, the largest file Testgram takes",
		"/fs.send build/app.bin offset=0 length=150", "/fs.send build/app.bin offset=300 length=150")
	// A part.
	off, n := int64(300), int64(150)
	out = e.RunCtx(offering(s, 150, 0), "fs.send", map[string]any{"path": "build/app.bin", "offset": off, "length": n})
	if out.Err != nil || out.Files[0].Name != "app.bin.300-400" || !bytes.Equal(s.files[out.Files[0].SHA256], data[300:]) {
		t.Fatalf("part: %v %+v", out.Err, out.Files)
	}
	// No files on this surface.
	e.Fails(executor.CodeInvalidArguments, "fs.send", map[string]any{"path": "build/app.bin"}, "this surface takes no files")
	out = e.RunCtx(offering(s, 150, 0), "fs.send", map[string]any{"path": "../outside/secret.txt"})
	verbtest.CheckErr(t, out.Err, executor.CodeForbiddenPath, "..")
}

func TestReadFileSendsAFileWhereOne(t *testing.T) {
	e := verbtest.New(t)
	e.Put("logo.png", "\x89PNG\r\n\x1a\n\x00binary")
	e.Put("long.log", strings.Repeat("a line of the log\n", 100))
	e.Put("short.txt", "short\n")
	s := &sink{}
	ctx := offering(s, 1<<20, 1000)
	for path, sent := range map[string]bool{"logo.png": true, "long.log": true, "short.txt": false} {
		out := e.RunCtx(ctx, "fs.readFile", map[string]any{"path": path})
		if out.Err != nil {
			t.Fatal(out.Err)
		}
		if (len(out.Files) == 1) != sent {
			t.Errorf("%s: files %+v, want sent=%v", path, out.Files, sent)
			continue
		}
		r := executor.RenderText(out, false)
		if sent && (out.Files[0].Name != path || !strings.Contains(r, "is sent as the file "+path)) {
			t.Errorf("%s: %+v, reply %q", path, out.Files, r)
		}
		if !sent && !strings.Contains(r, "short") {
			t.Errorf("%s: reply %q", path, r)
		}
	}
	// Where no files are offered, the content comes back as before.
	out := e.Run("fs.readFile", map[string]any{"path": "long.log"})
	if out.Err != nil || len(out.Files) != 0 || !strings.Contains(out.Value.(*verbs.FsReadFileResult).Content, "a line of the log") {
		t.Fatalf("without an offer: %+v", out.Err)
	}
}

package verbs_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/verbs"
	"github.com/a6afc2ce/hermes-hub/verbs/internal/verbtest"
)

// encodingJSON encodes v as Outcome.JSON's slow path does: encoding/json,
// HTML left unescaped, no trailing newline.
func encodingJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := executor.AppendEncodingJSON(nil, v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// checkExistsJSON fails unless FsExistsResult.AppendJSON appends exactly
// encoding/json's bytes for r, after what dst already holds.
func checkExistsJSON(t testing.TB, r verbs.FsExistsResult) {
	t.Helper()
	want := encodingJSON(t, &r)
	if got := r.AppendJSON(nil); !bytes.Equal(got, want) {
		t.Fatalf("AppendJSON(%+v) = %s, encoding/json: %s", r, got, want)
	}
	if got := r.AppendJSON([]byte("prefix")); !bytes.Equal(got, append([]byte("prefix"), want...)) {
		t.Fatalf("AppendJSON(%+v) after a prefix = %s", r, got)
	}
}

func TestFsExistsResultJSON(t *testing.T) {
	for _, r := range []verbs.FsExistsResult{
		{Result: executor.Result{Succeeded: true}, Exists: true},
		{Result: executor.Result{Succeeded: true}, Exists: false},
		{},
		{Result: executor.Result{ErrorMessage: `Path "a<b>&c" is outside the workspace`, ErrorCode: executor.CodeForbidden}},
		{Result: executor.Result{ErrorMessage: "bad \xff utf8 \u2028 \x01", ErrorCode: executor.CodeInternal}, Exists: true},
		{Result: executor.Result{ErrorCode: executor.CodeNotFound}},
	} {
		checkExistsJSON(t, r)
	}
}

// TestFsExistsOutcomeJSON runs fs.exists through the executor, whose
// Outcome.JSON takes the appender, and compares its bytes with
// encoding/json's for the same value.
func TestFsExistsOutcomeJSON(t *testing.T) {
	e := verbtest.New(t)
	e.Put("here.txt", "x\n")
	for _, path := range []string{"here.txt", "missing.txt", "."} {
		o := e.X.ExecuteInput(context.Background(), []byte(`{"verb":"fs.exists","arguments":{"path":"`+path+`"}}`))
		if o.Err != nil {
			t.Fatalf("fs.exists %s: %v", path, o.Err)
		}
		if _, ok := o.Value.(executor.JSONAppender); !ok {
			t.Fatalf("fs.exists's result %T does not encode itself", o.Value)
		}
		if got, want := o.JSON(), encodingJSON(t, o.Value); !bytes.Equal(got, want) {
			t.Fatalf("fs.exists %s: Outcome.JSON = %s, encoding/json: %s", path, got, want)
		}
	}
}

func FuzzFsExistsResultJSON(f *testing.F) {
	f.Add(true, true, "", "")
	f.Add(false, false, "No such file: \"x\"", "not_found")
	f.Add(false, true, "<&> \xff \u2029", "io_error")
	f.Fuzz(func(t *testing.T, succeeded, exists bool, msg, code string) {
		checkExistsJSON(t, verbs.FsExistsResult{
			Result: executor.Result{Succeeded: succeeded, ErrorMessage: msg, ErrorCode: executor.ErrorCode(code)},
			Exists: exists,
		})
	})
}

// TestFsReadFileResultJSON: FsReadFileResult.AppendJSON appends exactly
// encoding/json's bytes, with and without the file, for text that needs
// escaping, invalid UTF-8 and a failure.
func TestFsReadFileResultJSON(t *testing.T) {
	for _, r := range []verbs.FsReadFileResult{
		{Result: executor.Result{Succeeded: true}, Content: "plain\n", File: &verbs.VfsFile{Path: "a.txt", Encoding: "utf-8", SizeBytes: 6}},
		{Result: executor.Result{Succeeded: true}, Content: "<b>&\"q\"</b>\t\r\n\x00\x1f é ✓ \u2028\u2029 \xff\xfe end", File: &verbs.VfsFile{Path: "dir/<x>.txt", Encoding: "utf-8", SizeBytes: 1 << 40, Version: 7, CreatedAt: "2026-01-02T03:04:05.678Z", UpdatedAt: "2026-01-02T03:04:06.000Z"}},
		{Result: executor.Result{Succeeded: true}, Content: "AAEC", File: &verbs.VfsFile{Path: "b.bin", Encoding: "base64"}},
		{Result: executor.Result{Succeeded: true}},
		{Result: executor.Result{ErrorMessage: `File "a<b>" not found`, ErrorCode: executor.CodeNotFound}},
	} {
		want := encodingJSON(t, &r)
		if got := r.AppendJSON(nil); !bytes.Equal(got, want) {
			t.Fatalf("AppendJSON = %s\nencoding/json: %s", got, want)
		}
		if got := r.AppendJSON([]byte("prefix")); !bytes.Equal(got, append([]byte("prefix"), want...)) {
			t.Fatalf("AppendJSON after a prefix = %s", got)
		}
	}
}

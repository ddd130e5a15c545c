package store

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file:\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

// frozenFile writes content to path with an mtime in the past and returns a
// check that the file still has exactly those bytes and that mtime.
func frozenFile(t *testing.T, path, content string) (unchanged func()) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	old := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
	return func() {
		t.Helper()
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("corrupt file is gone: %v", err)
		}
		if string(got) != content {
			t.Errorf("corrupt file was rewritten:\n%s", got)
		}
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if !fi.ModTime().Equal(old) {
			t.Errorf("corrupt file's mtime changed to %v", fi.ModTime())
		}
	}
}

// sameJSON reports whether two JSON documents hold the same keys and values.
// The top-level arrays named in unordered may list their items in any order.
func sameJSON(t *testing.T, a, b []byte, unordered ...string) bool {
	t.Helper()
	var va, vb map[string]any
	if err := json.Unmarshal(a, &va); err != nil {
		t.Fatalf("%v in %s", err, a)
	}
	if err := json.Unmarshal(b, &vb); err != nil {
		t.Fatalf("%v in %s", err, b)
	}
	for _, field := range unordered {
		for _, v := range []map[string]any{va, vb} {
			if items, ok := v[field].([]any); ok {
				slices.SortFunc(items, func(x, y any) int { return strings.Compare(fmt.Sprint(x), fmt.Sprint(y)) })
			}
		}
	}
	return reflect.DeepEqual(va, vb)
}

// corruptContents are files that must be refused with a position: tLine
// and tCol as a targets file, dLine and dCol as a channel directory.
var corruptContents = []struct {
	name                     string
	content                  string
	tLine, tCol, dLine, dCol int
}{
	{"truncated", "{\n  \"version\": 1,\n  \"targets\": [\n    {\"kind\": \"web\"}", 4, 20, 4, 20},
	{"garbage", "\x00\x01not json at all", 1, 1, 1, 1},
	{"wrong type", "{\n  \"version\": 1,\n  \"targets\": {\"kind\": \"web\"},\n  \"entries\": 7\n}", 3, 14, 4, 14},
	{"version string", "{\"version\": \"1\"}", 1, 13, 1, 13},
}

// logTo returns a logger whose text output collects in the returned buffer.
func logTo() (*slog.Logger, *bytes.Buffer) {
	var buf bytes.Buffer
	return slog.New(slog.NewTextHandler(&buf, nil)), &buf
}

// openRoot opens dir (created if missing) as an os.Root closed at the end
// of the test.
func openRoot(t testing.TB, dir string) *os.Root {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	r, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// rootFile opens the directory of path (created if missing) as an os.Root
// closed at the end of the test, and returns it with path's name in it.
func rootFile(t testing.TB, path string) (*os.Root, string) {
	t.Helper()
	return openRoot(t, filepath.Dir(path)), filepath.Base(path)
}

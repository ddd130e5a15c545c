package store

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.json")
	root := openRoot(t, dir)
	for _, content := range []string{"first\n", "second, longer\n", ""} {
		if err := WriteFileAtomic(root, "a.json", []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != content {
			t.Fatalf("read back %q, %v; want %q", got, err, content)
		}
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("directory holds %d entries, want only the file (no temp files left)", len(ents))
	}

	missing := filepath.Join(dir, "no", "such", "dir", "b.json")
	if err := WriteFileAtomic(root, filepath.Join("no", "such", "dir", "b.json"), []byte("x"), 0o600); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("write into a missing directory: %v, want an error naming %s", err, missing)
	}
}

func TestReadJSONMissing(t *testing.T) {
	var v struct{ A int }
	exists, err := ReadJSON(openRoot(t, t.TempDir()), "none.json", &v)
	if exists || err != nil {
		t.Fatalf("missing file: %v, %v; want false, nil", exists, err)
	}
}

func TestReadJSONCorruptPositions(t *testing.T) {
	type doc struct {
		Version int `json:"version"`
		Targets []struct {
			Kind string `json:"kind"`
		} `json:"targets"`
		Last map[string]string `json:"last"`
	}
	tests := []struct {
		name      string
		content   string
		line, col int
		msg       string
	}{
		{"empty", "", 1, 1, "truncated"},
		{"truncated", "{\n  \"version\": 1,\n  \"targ", 3, 8, "truncated"},
		{"garbage", "garbage", 1, 1, "invalid character 'g'"},
		{"bad char", "{\n  \"version\": 1,\n  \"targets\": [x]\n}", 3, 15, "invalid character 'x'"},
		{"string for int", "{\n  \"version\": \"one\"\n}", 2, 14, `version: found string, expected an integer`},
		{"number for string", "{\"version\": 1,\n \"targets\": [\n  {\"kind\": 5}\n ]}", 3, 12, `targets.kind: found number, expected a string`},
		{"string for array", "{\"targets\": \"web\"}", 1, 13, "expected an array"},
		{"object for int", "{\n\"version\": {\"a\": 1}}", 2, 12, "found object, expected an integer"},
		{"escaped quote string", "{\"version\": \"a\\\"b\"}", 1, 13, "found string"},
		{"utf-8 column", "{\"last\": {\"é\": 5}}", 1, 16, "found number"},
		{"trailing data", "{}\n{}", 2, 1, "after top-level value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "f.json")
			if err := os.WriteFile(path, []byte(tt.content), 0o600); err != nil {
				t.Fatal(err)
			}
			var v doc
			exists, err := ReadJSON(openRoot(t, filepath.Dir(path)), "f.json", &v)
			var ce *CorruptFileError
			if !exists || !errors.As(err, &ce) {
				t.Fatalf("got %v, %v; want a *CorruptFileError", exists, err)
			}
			if ce.Line != tt.line || ce.Column != tt.col {
				t.Errorf("position %d:%d, want %d:%d (%v)", ce.Line, ce.Column, tt.line, tt.col, err)
			}
			msg := err.Error()
			for _, want := range []string{path, tt.msg, "left untouched", "repair it"} {
				if !strings.Contains(msg, want) {
					t.Errorf("message %q lacks %q", msg, want)
				}
			}
			if !errors.Is(err, ErrCorruptFile) {
				t.Error("errors.Is(err, ErrCorruptFile) is false")
			}
			if strings.Contains(msg, "Go struct") {
				t.Errorf("message %q talks about Go types", msg)
			}
		})
	}
}

func TestCheckVersion(t *testing.T) {
	if err := checkVersion("f.json", 2, 1); !errors.Is(err, ErrFileTooNew) || !strings.Contains(err.Error(), "newer hub") {
		t.Errorf("version 2: %v", err)
	}
	if err := checkVersion("f.json", -1, 1); !errors.Is(err, ErrCorruptFile) {
		t.Errorf("version -1: %v", err)
	}
	for _, v := range []int{0, 1} {
		if err := checkVersion("f.json", v, 1); err != nil {
			t.Errorf("version %d: %v", v, err)
		}
	}
}

func TestArrayElementOffsets(t *testing.T) {
	data := []byte("{\"a\": {\"targets\": 1},\n \"targets\": [\n  {\"kind\": \"web\"},\n  7, \"x\"\n]}")
	offs := arrayElementOffsets(data, "targets")
	want := []string{`{"kind"`, "7", `"x"`}
	if len(offs) != len(want) {
		t.Fatalf("offsets %v, want %d", offs, len(want))
	}
	for i, off := range offs {
		if !strings.HasPrefix(string(data[off:]), want[i]) {
			t.Errorf("element %d starts at %q, want %q", i, data[off:], want[i])
		}
	}
}

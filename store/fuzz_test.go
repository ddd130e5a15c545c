package store

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzStateFileDecode feeds arbitrary bytes to the targets and directory
// decoders: they must never panic, and a corrupt file's position must lie
// inside the file.
func FuzzStateFileDecode(f *testing.F) {
	for _, seed := range []string{
		"", "{}", "garbage", `{"version": 1, "targets": [{"kind": "web"}]}`,
		`{"version": 1, "entries": [{"platform": "telegram", "chat_id": "1", "seen_at": "2026-01-01T00:00:00Z"}]}`,
		"{\n\"version\": \"x\"}", `{"targets": [{"kind": 5}]}`, `{"last_delivery_by_target": {"é": 1}}`,
		`{"entries": [{"meta": {"a": "\"\\"}}]}`,
	} {
		f.Add([]byte(seed))
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "state.json")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		lines := bytes.Count(data, []byte{'\n'}) + 1
		check := func(err error) {
			var ce *CorruptFileError
			if !errors.As(err, &ce) || ce.Line == 0 {
				return
			}
			if ce.Line < 1 || ce.Line > lines || ce.Column < 1 {
				t.Errorf("position %d:%d outside a %d-line file: %v", ce.Line, ce.Column, lines, err)
			}
		}
		_, err := OpenTargets(rootFile(t, path))
		check(err)
		d, err := openDirectoryAt(t, path, DirectoryOptions{})
		check(err)
		if err == nil {
			d.Close()
		}
	})
}

// FuzzReadMirror reads arbitrary bytes as a mirror file: no panic, and no
// more records plus bad lines than there are lines.
func FuzzReadMirror(f *testing.F) {
	f.Add([]byte(`{"ts":"2026-02-26T09:00:00Z","direction":"inbound","text":"a"}` + "\n"))
	f.Add([]byte("\n\n{\"direction\":\"outbound\"}\nnull\n{\"ts\":"))
	f.Add([]byte(`{"direction": 5}` + "\n" + `{"direction":"inbound","meta":{"a":"b"}}`))
	flows := f.TempDir()
	dir := filepath.Join(flows, run1, "chat")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(filepath.Join(dir, "inbound.jsonl"), data, 0o600); err != nil {
			t.Fatal(err)
		}
		n := 0
		err := ReadMirror(openRoot(t, flows), MirrorFilter{OnBadLine: func(string, int, error) { n++ }}, func(r MirrorRecord) error {
			if r.Meta == nil {
				t.Error("record with nil meta")
			}
			n++
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if lines := bytes.Count(data, []byte{'\n'}) + 1; n > lines {
			t.Errorf("%d records and bad lines from %d lines", n, lines)
		}
	})
}

package outbox

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/store"
)

// openState opens dir as the state directory (store.OpenStateDir, which
// creates its layout), closed at the end of the test.
func openState(t testing.TB, dir string) *store.StateDir {
	t.Helper()
	sd, err := store.OpenStateDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sd.Close() })
	return sd
}

func readLines(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("%s:%d: %v: %q", path, n, err, sc.Text())
		}
		out = append(out, m)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestLocalSender(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	allowed := t.TempDir()
	abs := filepath.Join(allowed, "abs", "out.jsonl")
	ls := NewLocalSender(openState(t, root), []string{allowed}, nil)

	text := "line one\nline two " + strings.Repeat("é", 200)
	rel := entries(KindPMA, "api.1", chat.LocalKey("pma/deliveries.jsonl"), 2)
	rel[0].Text = text
	rel[1].Attachment = &chat.Attachment{Name: "output.txt", Data: []byte("x")}
	for i := range rel {
		if _, err := ls.Send(ctx, &rel[i]); err != nil {
			t.Fatal(err)
		}
	}
	absE := entries(KindPMA, "api.1", chat.LocalKey(abs), 1)[0]
	if _, err := ls.Send(ctx, &absE); err != nil {
		t.Fatal(err)
	}

	relPath := filepath.Join(root, "pma", "deliveries.jsonl")
	lines := readLines(t, relPath)
	if len(lines) != 2 {
		t.Fatalf("%d lines, want 2", len(lines))
	}
	l := lines[0]
	if l["event_type"] != "pma.delivery" || l["turn_id"] != "api.1" || l["text"] != text ||
		l["text_bytes"] != float64(len(text)) || l["outbox_id"] != rel[0].ID || l["ts"] == "" {
		t.Errorf("line: %v", l)
	}
	if p := l["text_preview"].(string); strings.Contains(p, "\n") || !strings.HasPrefix(p, "line one line two é") || !strings.HasSuffix(p, "…") {
		t.Errorf("preview %q", p)
	}
	if lines[1]["attachment"] != "output.txt" {
		t.Errorf("attachment name missing: %v", lines[1])
	}
	if got := readLines(t, abs); len(got) != 1 || got[0]["outbox_id"] != absE.ID {
		t.Errorf("absolute target: %v", got)
	}
	for path, want := range map[string]os.FileMode{relPath: 0o600, filepath.Dir(relPath): 0o700 | os.ModeDir, filepath.Dir(abs): 0o700 | os.ModeDir} {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != want {
			t.Errorf("%s: mode %v, want %v", path, fi.Mode(), want)
		}
	}

	// Sending the last chunk again (a crash before its delivered mark) does
	// not write it twice; an older chunk is not the last line, so it is.
	if _, err := ls.Send(ctx, &rel[1]); err != nil {
		t.Fatal(err)
	}
	if n := len(readLines(t, relPath)); n != 2 {
		t.Fatalf("resend of the last line wrote it again: %d lines", n)
	}

	// A torn last line is ended so that the next line parses.
	f, err := os.OpenFile(relPath, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"ts":"2026-`)
	f.Close()
	more := entries(KindPMA, "api.2", chat.LocalKey("pma/deliveries.jsonl"), 1)[0]
	if _, err := ls.Send(ctx, &more); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(relPath)
	last := strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n")
	var m map[string]any
	if err := json.Unmarshal([]byte(last[len(last)-1]), &m); err != nil || m["outbox_id"] != more.ID {
		t.Fatalf("line after a torn one: %v %v", err, m)
	}

	// Non-local targets are a permanent error.
	bad := entries(KindPMA, "api.1", chat.WebKey, 1)[0]
	if _, err := ls.Send(ctx, &bad); !IsPermanent(err) {
		t.Fatalf("web target: %v", err)
	}
}

func TestLocalSenderConcurrent(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	ls := NewLocalSender(openState(t, root), nil, nil)
	const writers, each = 8, 25
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			// Two keys for the same file, and a file of its own.
			keys := []chat.Key{chat.LocalKey("pma/shared.jsonl"), chat.LocalKey(filepath.Join(root, "pma", "shared.jsonl")), chat.LocalKey(fmt.Sprintf("pma/own%d.jsonl", w))}
			for i := range each {
				e := entries(KindPMA, fmt.Sprintf("w%d.%d", w, i), keys[i%3], 1)[0]
				e.Text = strings.Repeat(fmt.Sprint(w), 5000)
				if _, err := ls.Send(ctx, &e); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	shared := readLines(t, filepath.Join(root, "pma", "shared.jsonl"))
	total := len(shared)
	for w := range writers {
		total += len(readLines(t, filepath.Join(root, "pma", fmt.Sprintf("own%d.jsonl", w))))
	}
	if total != writers*each {
		t.Fatalf("%d lines, want %d", total, writers*each)
	}
}

func TestLocalSenderBadDirectory(t *testing.T) {
	root := t.TempDir()
	state := openState(t, root)
	if err := os.WriteFile(filepath.Join(root, "pma", "file"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	e := entries(KindPMA, "t", chat.LocalKey("pma/file/sub.jsonl"), 1)[0]
	_, err := NewLocalSender(state, nil, nil).Send(context.Background(), &e)
	if err == nil || IsPermanent(err) || !strings.Contains(err.Error(), "file") {
		t.Fatalf("err = %v; want a transient error naming the path", err)
	}
	var pe *os.PathError
	if !errors.As(err, &pe) {
		t.Fatalf("error does not wrap the os error: %v", err)
	}
}

// TestLocalSenderLongLastLine: the resend check finds the last line when it
// is longer than one read block (a big command output in one chunk), and
// gives up past maxTailScan, where a resend writes the line again rather
// than scanning without end.
func TestLocalSenderLongLastLine(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	ls := NewLocalSender(openState(t, root), nil, nil)
	path := filepath.Join(root, "pma", "out.jsonl")
	for _, tc := range []struct {
		size      int
		wantLines int // after sending the same entry twice
	}{
		{100 << 10, 1},
		{maxTailScan + 1, 2},
	} {
		os.Remove(path)
		e := entries(KindPMA, "long.1", chat.LocalKey("pma/out.jsonl"), 1)[0]
		e.Text = strings.Repeat("x", tc.size)
		for range 2 {
			if _, err := ls.Send(ctx, &e); err != nil {
				t.Fatal(err)
			}
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n")
		if len(lines) != tc.wantLines {
			t.Fatalf("%d-byte line sent twice: %d lines, want %d", tc.size, len(lines), tc.wantLines)
		}
		var first localLine
		if err := json.Unmarshal([]byte(lines[0]), &first); err != nil || first.Text != e.Text {
			t.Fatalf("%d-byte line: text not kept", tc.size)
		}
	}
}

// TestLocalSenderConfinement: a local target writes under the state root's
// pma/, or inside a directory outbox.local_roots lists, and nowhere else; a
// target that would leave them is refused for good (a dead letter) and
// nothing is written.
func TestLocalSenderConfinement(t *testing.T) {
	ctx := context.Background()
	base := t.TempDir()
	state := filepath.Join(base, "state")
	allowed := filepath.Join(base, "allowed")
	outside := filepath.Join(base, "outside")
	for _, d := range []string{state, allowed, outside, allowed + "x"} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	sd := openState(t, state)
	if err := os.Symlink(outside, filepath.Join(state, "pma", "link")); err != nil {
		t.Fatal(err)
	}
	ls := NewLocalSender(sd, []string{allowed}, nil)
	for _, tc := range []struct {
		path    string
		written string // the file written, "" when refused
		why     string // in the refusal
	}{
		{"pma/out.jsonl", filepath.Join(state, "pma", "out.jsonl"), ""},
		{filepath.Join(state, "pma", "abs.jsonl"), filepath.Join(state, "pma", "abs.jsonl"), ""},
		{filepath.Join(state, "abs.jsonl"), "", "keeps for itself"},
		{filepath.Join(allowed, "sub", "a.jsonl"), filepath.Join(allowed, "sub", "a.jsonl"), ""},
		{"../outside/x.jsonl", "", "leaves the state directory"},
		{"pma/../../outside/x.jsonl", "", "leaves the state directory"},
		{"..", "", "leaves the state directory"},
		{filepath.Join(outside, "x.jsonl"), "", "outbox.local_roots"},
		{filepath.Join(allowed+"x", "x.jsonl"), "", "outbox.local_roots"},
		{allowed, "", "outbox.local_roots"},
		{filepath.Join(allowed, "..", "outside", "x.jsonl"), "", "outbox.local_roots"},
		{"pma/link/x.jsonl", "", "symbolic link"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			k := chat.LocalKey(tc.path)
			checkErr := CheckLocalTarget(state, []string{allowed}, k)
			e := entries(KindPMA, "t", k, 1)[0]
			_, err := ls.Send(ctx, &e)
			if tc.written != "" {
				if err != nil || checkErr != nil {
					t.Fatalf("Send: %v, CheckLocalTarget: %v", err, checkErr)
				}
				if got := readLines(t, tc.written); len(got) != 1 {
					t.Fatalf("%d lines in %s", len(got), tc.written)
				}
				return
			}
			if !IsPermanent(err) || !strings.Contains(err.Error(), tc.why) {
				t.Fatalf("Send: %v; want a permanent refusal saying %q", err, tc.why)
			}
			if tc.why != "symbolic link" && (checkErr == nil || !strings.Contains(checkErr.Error(), tc.why)) {
				t.Fatalf("CheckLocalTarget: %v; want %q", checkErr, tc.why)
			}
		})
	}
	if got, _ := os.ReadDir(outside); len(got) != 0 {
		t.Fatalf("something was written outside: %v", got)
	}
	if got, _ := os.ReadDir(allowed + "x"); len(got) != 0 {
		t.Fatalf("something was written in a look-alike of the allowed root: %v", got)
	}
	// Without local roots, an absolute path outside the state root is refused.
	k := chat.LocalKey(filepath.Join(allowed, "b.jsonl"))
	if err := CheckLocalTarget(state, nil, k); err == nil || !strings.Contains(err.Error(), "lists none") {
		t.Fatalf("no roots: %v", err)
	}
	if err := CheckLocalTarget(state, nil, chat.WebKey); err != nil {
		t.Fatalf("web target: %v", err)
	}
}

// TestLocalTargetsNeverNameHubFiles: a local target may name no file the
// hub keeps in its state directory (its database, socket, targets file,
// channel directory, mirrors, program output, sessions, NATS keys), however
// it is spelled, nor reach one through a symbolic link under pma/ or a
// local root that holds the state directory: each is refused when checked
// (hub targets add, hub doctor) and when delivered (a dead letter), and the
// file is left as it was.
func TestLocalTargetsNeverNameHubFiles(t *testing.T) {
	ctx := context.Background()
	base := t.TempDir()
	state := filepath.Join(base, "state")
	sd := openState(t, state)
	owned := []string{
		"hub.db", "hub.sock", "pma/delivery_targets.json", "pma/.delivery_targets.json.tmp-0a1b2c",
		"chat/channel_directory.json", "flows/20260226T090000Z-aaaa/chat/inbound.jsonl",
		"proc/telegram.1.2/stdout.txt", "sessions/alice/live/x", "nats/hub.nk", "new.jsonl", "pma",
	}
	for _, name := range owned[:len(owned)-2] {
		p := filepath.Join(state, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("the hub's own\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ls := NewLocalSender(sd, []string{base}, nil)
	refused := func(t *testing.T, k chat.Key, why string) {
		t.Helper()
		if err := CheckLocalTarget(state, []string{base}, k); err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("CheckLocalTarget(%s): %v; want a refusal saying %q", k, err, why)
		}
		e := entries(KindPMA, "t", k, 1)[0]
		if _, err := ls.Send(ctx, &e); !IsPermanent(err) || !strings.Contains(err.Error(), why) {
			t.Errorf("Send(%s): %v; want a permanent refusal saying %q", k, err, why)
		}
	}
	for _, name := range owned {
		for _, spelling := range []string{name, "./" + name, filepath.Join(state, name), state + "//" + name} {
			refused(t, chat.LocalKey(spelling), "keeps for itself")
		}
	}
	// Through a local root that holds the state directory.
	refused(t, chat.LocalKey(filepath.Join(base, "state", "nats", "hub.nk")), "keeps for itself")
	refused(t, chat.LocalKey(filepath.Join(base, "other.jsonl")), "holds the state directory")
	// Through a symbolic link under pma/ to the hub's own files.
	if err := os.Symlink("../nats", filepath.Join(state, "pma", "nats")); err != nil {
		t.Fatal(err)
	}
	e := entries(KindPMA, "t", chat.LocalKey("pma/nats/hub.nk"), 1)[0]
	if _, err := ls.Send(ctx, &e); !IsPermanent(err) || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("Send through pma/nats: %v; want a permanent refusal", err)
	}
	for _, name := range owned[:len(owned)-2] {
		if b, err := os.ReadFile(filepath.Join(state, name)); err != nil || string(b) != "the hub's own\n" {
			t.Errorf("%s was changed: %q %v", name, b, err)
		}
	}
	if _, err := os.Stat(filepath.Join(state, "new.jsonl")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("new.jsonl was created outside pma/: %v", err)
	}
	// What is allowed: files under pma/.
	ok := entries(KindPMA, "t", chat.LocalKey("pma/sub/out.jsonl"), 1)[0]
	if _, err := ls.Send(ctx, &ok); err != nil {
		t.Fatal(err)
	}
}

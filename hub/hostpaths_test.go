package hub_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/hub"
	"github.com/a6afc2ce/hermes-hub/hub/hubtest"
)

// TestNoHostPathsInResults runs every verb with bad inputs, through the API
// and through chat, and checks that no result or error names the absolute
// workspace or state directory: callers see workspace-relative paths only.
func TestNoHostPathsInResults(t *testing.T) {
	ws := t.TempDir()
	state := filepath.Join(ws, ".hub")
	he := hubtest.Open(t, testConfig(t, ws, state), hubtest.Options{})
	rec := hubtest.NewRecorder()
	rec.HandleAll(t, he.Runtime)
	he.Start(t)
	he.WriteFile(t, "file.txt", "hello\n")
	os.Symlink("/etc/passwd", filepath.Join(ws, "outside"))
	os.Symlink(state, filepath.Join(ws, "state-link"))
	h := he.Runtime.Hub

	bad := []string{
		"", ".", "..", "../x", "/etc/passwd", ws, filepath.Join(ws, "file.txt"), state, filepath.Join(state, "hub.db"),
		".hub", ".hub/hub.db", "state-link/hub.db", "outside", "missing/deeper/file", "file.txt/below", "file.txt",
		"\x00", strings.Repeat("a/", 300), "/nonexistent-program", "sh",
	}
	ints := []any{-1, 0, 1 << 40}
	var forbidden = []string{ws, state}
	if real, err := filepath.EvalSymlinks(ws); err == nil {
		forbidden = append(forbidden, real)
	}
	// A path the caller gave may be echoed back; any other is a leak.
	check := func(what, text string) {
		t.Helper()
		for _, p := range forbidden {
			if strings.Contains(text, p) && !strings.Contains(what, p) {
				t.Errorf("%s names the host path %s: %s", what, p, text)
				return
			}
		}
	}
	schemas := h.Registry().Schemas()
	if len(schemas) < 10 {
		t.Fatalf("only %d verbs", len(schemas))
	}
	for _, sc := range schemas {
		for i, b := range bad {
			args := map[string]any{}
			for _, f := range sc.Arguments.Fields {
				switch f.Kind {
				case executor.KindString:
					args[f.Name] = b
				case executor.KindInt:
					args[f.Name] = ints[i%len(ints)]
				case executor.KindList:
					args[f.Name] = []string{b}
				}
			}
			in, _ := json.Marshal(map[string]any{"verb": sc.Name, "arguments": args})
			out, err := h.Execute(context.Background(), hub.APIRequest{Identity: "web", Input: in})
			if err != nil {
				t.Fatal(err)
			}
			check(sc.Name+" "+string(in), string(out.JSON()))
		}
	}
	// Chat renders the same results; a few through the whole turn.
	seen := 0
	for i, text := range []string{"/fs.readFile " + filepath.Join(state, "hub.db"), "/fs.listDir " + ws, "/fs.readFile outside", "/fs.readFile state-link/hub.db", "/vfs.info", "/sys.machineInfo"} {
		res, err := h.Handle(context.Background(), tgMsg(1, 100+i, text))
		if err != nil {
			t.Fatal(err)
		}
		sent := rec.Wait(t, "chat:telegram:100", seen+len(res.Outbox))
		for _, c := range sent[seen:] {
			check(text, c.Text)
		}
		seen = len(sent)
	}
}

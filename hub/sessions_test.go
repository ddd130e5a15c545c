package hub_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/clock"
	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/hub"
	"github.com/a6afc2ce/hermes-hub/hub/hubtest"
	"github.com/a6afc2ce/hermes-hub/store"
	"github.com/a6afc2ce/hermes-hub/verbs"
	"github.com/a6afc2ce/hermes-hub/verbs/boltmeta"
)

func TestSessionPolicy(t *testing.T) {
	tg := func(chatID, thread string) *chat.Inbound {
		return &chat.Inbound{Platform: chat.Telegram, ChatID: chatID, ThreadID: thread}
	}
	dc := &chat.Inbound{Platform: chat.Discord, ChatID: "55"}
	web := &chat.Inbound{Platform: chat.Web}
	for _, c := range []struct {
		name  string
		cfg   config.Sessions
		in    *chat.Inbound
		roles []string
		want  string
	}{
		{"host by default", config.Sessions{Mode: "host"}, tg("100", ""), nil, ""},
		{"global session: the chat key", config.Sessions{Mode: "session"}, tg("-100", "5"), nil, "chat:telegram:-100:5"},
		{"discord chat key", config.Sessions{Mode: "session"}, dc, nil, "chat:discord:55"},
		{"web", config.Sessions{Mode: "session"}, web, nil, "web"},
		{"by chat, exact thread", config.Sessions{Mode: "host", ByChat: map[string]string{"chat:telegram:100:7": "session"}}, tg("100", "7"), nil, "chat:telegram:100:7"},
		{"by chat, other thread", config.Sessions{Mode: "host", ByChat: map[string]string{"chat:telegram:100:7": "session"}}, tg("100", "8"), nil, ""},
		{"by chat covers its threads", config.Sessions{Mode: "host", ByChat: map[string]string{"chat:telegram:100": "session"}}, tg("100", "8"), nil, "chat:telegram:100:8"},
		{"exact thread wins over its chat", config.Sessions{Mode: "host", ByChat: map[string]string{"chat:telegram:100": "session", "chat:telegram:100:8": "host"}}, tg("100", "8"), nil, ""},
		{"by role", config.Sessions{Mode: "host", ByRole: map[string]string{"agent": "session"}}, tg("1", ""), []string{"admin", "agent"}, "chat:telegram:1"},
		{"roles disagree: session wins", config.Sessions{Mode: "host", ByRole: map[string]string{"a": "host", "b": "session"}}, tg("1", ""), []string{"a", "b"}, "chat:telegram:1"},
		{"role host over global session", config.Sessions{Mode: "session", ByRole: map[string]string{"admin": "host"}}, tg("1", ""), []string{"admin"}, ""},
		{"unlisted role: global", config.Sessions{Mode: "session", ByRole: map[string]string{"admin": "host"}}, tg("1", ""), []string{"other"}, "chat:telegram:1"},
		{"chat wins over role", config.Sessions{Mode: "host", ByChat: map[string]string{"web": "host"}, ByRole: map[string]string{"admin": "session"}}, web, []string{"admin"}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := hub.SessionPolicy(c.cfg)(c.in, c.roles); got != c.want {
				t.Fatalf("session %q, want %q", got, c.want)
			}
		})
	}
}

// sessionEnv is a hub in session mode with a docs mount, wired the way
// `hub serve` wires it: the executor's registry gets the verbs once the
// runtime (and so hub.db, which holds the file metadata) is open.
type sessionEnv struct {
	rt    *hub.Runtime
	rec   *hubtest.Recorder
	src   *verbs.SessionSource
	ws    string
	mount string
	clk   *clock.Fake
}

func newSessionEnv(t *testing.T) *sessionEnv {
	t.Helper()
	ws, mount := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(ws, "README.md"), []byte("# host readme\n"), 0o644)
	os.MkdirAll(filepath.Join(mount, "docs"), 0o755)
	os.WriteFile(filepath.Join(mount, "docs", "guide.md"), []byte("# guide\n"), 0o644)
	os.WriteFile(filepath.Join(mount, "docs", "skip.txt"), []byte("not mounted\n"), 0o644)
	cfg := testConfig(t, ws, filepath.Join(ws, ".hub"))
	cfg.Sessions.Mode = "session"
	cfg.Sessions.ByChat = map[string]string{"chat:telegram:300": "host"}
	cfg.Sessions.Allowed = []string{mount}
	cfg.Sessions.Mounts = []config.Mount{{HostPath: "docs", Include: []string{"*.md"}}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	clk := clock.NewFake(time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC))
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))

	var src *verbs.SessionSource
	var host *verbs.Workspace
	he := hubtest.Open(t, cfg, hubtest.Options{
		Runtime: hub.RuntimeOptions{Clock: clk, Logger: logger, SessionFor: hub.SessionPolicy(cfg.Sessions)},
		Register: func(reg *executor.Registry, cfg *config.Config, st *store.State) error {
			meta, err := boltmeta.Open(st.DB())
			if err != nil {
				return err
			}
			host, err = verbs.OpenWorkspace(cfg.Workspace, verbs.WorkspaceOptions{Deny: []string{".hub"}})
			if err != nil {
				return err
			}
			var mounts []verbs.Mount
			for _, m := range cfg.Sessions.Mounts {
				mounts = append(mounts, verbs.Mount{HostPath: m.HostPath, MountPath: m.MountPath, Include: m.Include, Exclude: m.Exclude, MaxBytes: int64(m.MaxBytes), FollowSymlinks: m.FollowSymlinks})
			}
			src, err = verbs.OpenSessions(host, verbs.SessionOptions{
				Root: cfg.SessionsDir(), Meta: meta, Mounts: mounts, MountRoots: cfg.Sessions.Allowed,
				IdleTTL: cfg.Sessions.IdleTTL.D(), SnapshotTTL: cfg.Sessions.SnapTTL.D(), MaxSnapshots: cfg.Sessions.MaxSnapshots,
				AllowProc: cfg.Sessions.AllowProc, Now: clk.Now, Logger: logger,
			})
			if err != nil {
				return err
			}
			if err := verbs.Register(reg, src, verbs.DefaultOptions(cfg.StateDir)); err != nil {
				return err
			}
			return src.Register(reg)
		},
	})
	// Before the harness closes hub.db, which holds the file metadata.
	t.Cleanup(func() {
		src.Close()
		host.Close()
	})
	rt := he.Runtime
	e := &sessionEnv{rt: rt, rec: hubtest.NewRecorder(), src: src, ws: ws, mount: mount, clk: clk}
	e.rec.HandleAll(t, rt)
	he.Start(t)
	return e
}

// turn sends text from user 1 (an admin) in Telegram chat chatID and
// returns the verb's outcome and the reply as delivered.
func (e *sessionEnv) turn(t *testing.T, chatID string, msgID int, text string) (*executor.Outcome, string) {
	t.Helper()
	in := &chat.Inbound{
		TurnID: fmt.Sprintf("telegram.%s.%d", chatID, msgID), Platform: chat.Telegram, ChatID: chatID, MessageID: fmt.Sprint(msgID),
		UserID: "1", UserName: "u", ChatType: "private", Text: text, Time: e.clk.Now(),
	}
	target := "chat:telegram:" + chatID
	before := len(e.rec.Texts(target))
	res, err := e.rt.Hub.Handle(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != hub.StatusExecuted {
		t.Fatalf("%q: status %s", text, res.Status)
	}
	got := e.rec.Wait(t, target, before+len(res.Outbox))
	var reply []string
	for _, c := range got[before:] {
		reply = append(reply, c.Text)
	}
	return res.Outcome, strings.Join(reply, "")
}

func value[R any](t *testing.T, out *executor.Outcome) *R {
	t.Helper()
	if out.Err != nil {
		t.Fatalf("%s failed: %s (%s)", out.Verb, out.Err.Message, out.Err.Code)
	}
	v, ok := out.Value.(*R)
	if !ok {
		t.Fatalf("%s: result is %T", out.Verb, out.Value)
	}
	return v
}

func names(es []verbs.DirEntry) string {
	var out []string
	for _, e := range es {
		n := e.Name
		if e.IsDirectory {
			n += "/"
		}
		out = append(out, n)
	}
	return strings.Join(out, " ")
}

// TestSessionWorkspacesThroughTheRouter is the end-to-end scenario:
// a chat starts with an empty session (plus mounts), lists, writes, reads,
// snapshots, writes again, restores and sees the snapshot's state; a second
// chat never sees the first one's files; a chat configured for the host
// workspace sees the host.
func TestSessionWorkspacesThroughTheRouter(t *testing.T) {
	e := newSessionEnv(t)
	const a, b, h = "100", "200", "300"
	n := 0
	turn := func(chatID, text string) (*executor.Outcome, string) {
		n++
		return e.turn(t, chatID, n, text)
	}

	out, reply := turn(a, "/fs.listDir .")
	if got := names(value[verbs.FsListDirResult](t, out).Entries); got != "docs/" {
		t.Fatalf("a new session lists %q", got)
	}
	if !strings.Contains(reply, "docs/") || strings.Contains(reply, "README.md") {
		t.Fatalf("reply %q", reply)
	}
	out, _ = turn(a, "/fs.listDir docs")
	if got := names(value[verbs.FsListDirResult](t, out).Entries); got != "guide.md" {
		t.Fatalf("mounted docs: %q", got)
	}

	out, _ = turn(a, "/fs.writeFile notes.md mode=create\nfirst draft")
	if f := value[verbs.FsWriteFileResult](t, out).File; f.Version != 1 || f.CreatedAt != "2026-03-04T05:06:07.000Z" {
		t.Fatalf("created %+v", f)
	}
	out, reply = turn(a, "/fs.readFile notes.md")
	if r := value[verbs.FsReadFileResult](t, out); r.Content != "first draft" || r.File.Version != 1 || !strings.Contains(reply, "first draft") {
		t.Fatalf("read %+v, reply %q", r, reply)
	}

	out, _ = turn(a, "/vfs.snapshot")
	snap := value[verbs.VfsSnapshotResult](t, out).Snapshot
	if snap.FileCount != 2 {
		t.Fatalf("snapshot %+v", snap)
	}

	e.clk.Advance(time.Minute)
	out, _ = turn(a, "/fs.writeFile notes.md mode=overwrite\nsecond draft")
	if f := value[verbs.FsWriteFileResult](t, out).File; f.Version != 2 || f.UpdatedAt != "2026-03-04T05:07:07.000Z" {
		t.Fatalf("overwritten %+v", f)
	}
	_, reply = turn(a, "/fs.readFile notes.md")
	if !strings.Contains(reply, "second draft") {
		t.Fatalf("reply %q", reply)
	}

	out, _ = turn(a, "/vfs.restore "+snap.SnapshotID)
	if r := value[verbs.VfsRestoreResult](t, out); r.FileCount != 2 {
		t.Fatalf("restore %+v", r)
	}
	out, reply = turn(a, "/fs.readFile notes.md")
	if r := value[verbs.FsReadFileResult](t, out); r.Content != "first draft" || r.File.Version != 1 || !strings.Contains(reply, "first draft") {
		t.Fatalf("after restore: %+v, reply %q", r, reply)
	}

	// The second chat has its own session: the mounts, nothing of a's.
	out, _ = turn(b, "/fs.listDir .")
	if got := names(value[verbs.FsListDirResult](t, out).Entries); got != "docs/" {
		t.Fatalf("chat b lists %q", got)
	}
	out, reply = turn(b, "/fs.readFile notes.md")
	if out.Err == nil || out.Err.Code != executor.CodeNotFound || !strings.Contains(reply, "File not found: notes.md") {
		t.Fatalf("chat b reads a's file: %+v, reply %q", out.Err, reply)
	}
	out, _ = turn(b, "/vfs.list")
	if l := value[verbs.VfsListResult](t, out).Snapshots; len(l) != 0 {
		t.Fatalf("chat b lists a's snapshots: %+v", l)
	}
	out, _ = turn(b, "/vfs.restore "+snap.SnapshotID)
	if out.Err == nil || out.Err.Code != executor.CodeNotFound {
		t.Fatalf("chat b restores a's snapshot: %+v", out.Err)
	}

	// A chat configured for the host workspace sees the host, and vfs.*
	// tells it why it cannot snapshot.
	out, _ = turn(h, "/fs.listDir .")
	if got := names(value[verbs.FsListDirResult](t, out).Entries); got != "README.md" {
		t.Fatalf("host chat lists %q", got)
	}
	_, reply = turn(h, "/vfs.snapshot")
	if !strings.Contains(reply, "this conversation uses the host workspace") {
		t.Fatalf("host chat snapshot reply %q", reply)
	}
	if _, err := os.Stat(filepath.Join(e.ws, "notes.md")); err == nil {
		t.Fatal("a session write reached the host workspace")
	}

	// The versions live in hub.db, under the chat's key.
	meta, err := boltmeta.Open(e.rt.State.DB())
	if err != nil {
		t.Fatal(err)
	}
	ids, err := meta.Sessions()
	if err != nil || strings.Join(ids, ",") != "chat:telegram:100,chat:telegram:200" {
		t.Fatalf("sessions in hub.db: %v %v", ids, err)
	}
}

package hub_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/clock"
	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/hub"
	"github.com/a6afc2ce/hermes-hub/hub/hubtest"
	"github.com/a6afc2ce/hermes-hub/internal/testkit"
	"github.com/a6afc2ce/hermes-hub/outbox"
	"github.com/a6afc2ce/hermes-hub/store"
)

type env struct {
	he    *hubtest.Env
	rt    *hub.Runtime
	rec   *hubtest.Recorder
	ws    string
	state string
	clk   clock.Clock
}

func testConfig(t testing.TB, ws, state string) *config.Config {
	t.Helper()
	cfg, err := makeConfig(ws, state)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func makeConfig(ws, state string) (*config.Config, error) {
	cfg, err := config.LoadWith("", func(string) (string, bool) { return "", false })
	if err != nil {
		return nil, err
	}
	cfg.Workspace, cfg.StateDir = ws, state
	cfg.Access.Roles = map[string]config.Role{"admin": {Verbs: []string{"*"}}, "readers": {Verbs: []string{"fs.read*", "fs.listDir"}}}
	cfg.Access.Grants = map[string][]string{
		"telegram:1": {"admin"}, "telegram:2": {"reader"}, "telegram:3": {"readers"},
		"discord-role:77": {"admin"}, "web": {"admin"},
	}
	return cfg, nil
}

func newEnv(t *testing.T, clk clock.Clock) *env {
	t.Helper()
	ws := t.TempDir()
	state := filepath.Join(ws, ".hub")
	os.WriteFile(filepath.Join(ws, "README.md"), []byte("# hello\nsecond\n"), 0o644)
	return openEnv(t, ws, state, clk)
}

func openEnv(t *testing.T, ws, state string, clk clock.Clock) *env {
	t.Helper()
	cfg := testConfig(t, ws, state)
	he := hubtest.Open(t, cfg, hubtest.Options{Runtime: hub.RuntimeOptions{Clock: clk}})
	rt := he.Runtime
	e := &env{he: he, rt: rt, rec: hubtest.NewRecorder(), ws: ws, state: state, clk: clk}
	e.rec.HandleAll(t, rt)
	he.Start(t)
	return e
}

func tgMsg(user, msgID int, text string) *chat.Inbound {
	return &chat.Inbound{
		TurnID: fmt.Sprintf("telegram.100.%d", msgID), Platform: chat.Telegram, ChatID: "100", MessageID: fmt.Sprint(msgID),
		UserID: fmt.Sprint(user), UserName: "u", ChatType: "private", Text: text, Time: time.Now(),
		ReplyMeta: map[string]string{"reply_to_message_id": fmt.Sprint(msgID)},
	}
}

func TestTurnExecutesAndReplies(t *testing.T) {
	e := newEnv(t, nil)
	res, err := e.rt.Hub.Handle(context.Background(), tgMsg(1, 10, "/fs.listDir ."))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != hub.StatusExecuted || res.Verb != "fs.listDir" || len(res.Outbox) != 1 {
		t.Fatalf("result %+v", res)
	}
	got := e.rec.Wait(t, "chat:telegram:100", 1)
	if !strings.Contains(got[0].Text, "README.md") || got[0].ID != "reply:telegram.100.10:chat:telegram:100:0" || got[0].Meta["reply_to_message_id"] != "10" {
		t.Fatalf("reply %+v", got[0])
	}
	// The exchange is mirrored: inbound command and the delivered reply.
	waitMirror(t, e, func(recs []store.MirrorRecord) bool {
		return hasRecord(recs, "inbound", "command", "/fs.listDir .") && hasRecord(recs, "outbound", "reply", "README.md")
	})
}

func TestDuplicateInboundRunsOnce(t *testing.T) {
	e := newEnv(t, nil)
	msg := tgMsg(1, 11, "/fs.writeRange log.txt 1\nran once")
	os.WriteFile(filepath.Join(e.ws, "log.txt"), nil, 0o644)
	for i := 0; i < 3; i++ {
		res, err := e.rt.Hub.Handle(context.Background(), msg)
		if err != nil {
			t.Fatal(err)
		}
		want := hub.StatusExecuted
		if i > 0 {
			want = hub.StatusDuplicate
		}
		if res.Status != want {
			t.Fatalf("delivery %d: status %s, want %s", i, res.Status, want)
		}
	}
	// Concurrent duplicates too.
	var wg sync.WaitGroup
	msg2 := tgMsg(1, 12, "/fs.writeRange log.txt 2\nconcurrent")
	statuses := make(chan hub.Status, 8)
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := e.rt.Hub.Handle(context.Background(), msg2)
			if err != nil {
				t.Error(err)
				return
			}
			statuses <- res.Status
		}()
	}
	wg.Wait()
	close(statuses)
	executed := 0
	for s := range statuses {
		if s == hub.StatusExecuted {
			executed++
		}
	}
	b, _ := os.ReadFile(filepath.Join(e.ws, "log.txt"))
	if executed != 1 || string(b) != "ran once\nconcurrent" {
		t.Fatalf("executed %d times; file %q", executed, b)
	}
	e.rec.Wait(t, "chat:telegram:100", 2)
	time.Sleep(100 * time.Millisecond)
	if n := len(e.rec.Texts("chat:telegram:100")); n != 2 {
		t.Fatalf("want exactly 2 replies, got %d", n)
	}
}

func TestStrangerDeniedOncePerHour(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC))
	e := newEnv(t, clk)
	for i := 0; i < 3; i++ {
		res, err := e.rt.Hub.Handle(context.Background(), tgMsg(999, 20+i, "/fs.listDir ."))
		if err != nil || res.Status != hub.StatusDenied {
			t.Fatalf("%v %+v", err, res)
		}
		if (i == 0) != (len(res.Outbox) == 1) {
			t.Fatalf("message %d: outbox %v (only the first is answered)", i, res.Outbox)
		}
	}
	got := e.rec.Wait(t, "chat:telegram:100", 1)
	if !strings.Contains(got[0].Text, "telegram:999") || !strings.Contains(got[0].Text, "under access.grants") || !strings.Contains(got[0].Text, "```yaml\n\"telegram:999\": [reader]\n```") {
		t.Fatalf("denial text %q", got[0].Text)
	}
	clk.Advance(61 * time.Minute)
	res, _ := e.rt.Hub.Handle(context.Background(), tgMsg(999, 30, "hello"))
	if res.Status != hub.StatusDenied || len(res.Outbox) != 1 {
		t.Fatalf("after an hour: %+v", res)
	}
	// Every denial is mirrored, answered or not.
	waitMirror(t, e, func(recs []store.MirrorRecord) bool {
		n := 0
		for _, r := range recs {
			if r.Direction == "inbound" && r.Kind == "denied" && r.Actor == "telegram:999" {
				n++
			}
		}
		return n == 4
	})
}

func TestRolesAndGlobs(t *testing.T) {
	e := newEnv(t, nil)
	cases := []struct {
		user   int
		text   string
		status hub.Status
	}{
		{2, "/fs.readFile README.md", hub.StatusExecuted},  // built-in reader: read-only verbs
		{2, "/sys.machineInfo", hub.StatusExecuted},        // reader includes machineInfo
		{2, "/fs.writeFile x.txt hi", hub.StatusForbidden}, // reader cannot write
		{2, "/proc.run id", hub.StatusForbidden},
		{3, "/fs.readRange README.md 1 1", hub.StatusExecuted}, // fs.read* glob
		{3, "/fs.listDir .", hub.StatusExecuted},
		{3, "/fs.lineCount README.md", hub.StatusForbidden}, // not matched by the globs
		{1, "/proc.run true", hub.StatusExecuted},           // admin: *
		{2, "/whoami", hub.StatusBuiltin},
		{1, "/fs.nope", hub.StatusRejected},
		{1, "just chatting", hub.StatusRejected},
	}
	for i, c := range cases {
		res, err := e.rt.Hub.Handle(context.Background(), tgMsg(c.user, 100+i, c.text))
		if err != nil || res.Status != c.status {
			t.Errorf("%d %q: status %v err %v, want %s", c.user, c.text, res, err, c.status)
		}
	}
	if _, err := os.Stat(filepath.Join(e.ws, "x.txt")); err == nil {
		t.Fatal("forbidden write happened")
	}
	// Discord roles grant through discord-role identities.
	in := &chat.Inbound{TurnID: "discord.5.6", Platform: chat.Discord, ChatID: "5", MessageID: "6", UserID: "42", RoleIDs: []string{"77"}, ChatType: "guild_text", Text: "/proc.run true"}
	res, err := e.rt.Hub.Handle(context.Background(), in)
	if err != nil || res.Status != hub.StatusExecuted {
		t.Fatalf("discord role: %+v %v", res, err)
	}
	// /verbs lists only what the caller may run.
	e.rt.Hub.Handle(context.Background(), tgMsg(3, 200, "/verbs"))
	msgs := e.rec.Wait(t, "chat:telegram:100", len(cases)+1)
	last := msgs[len(msgs)-1].Text
	if !strings.Contains(last, "/fs.readRange") || !strings.Contains(last, "/fs.readMany") || strings.Contains(last, "/proc.run") || !strings.Contains(last, "4 verbs") {
		t.Fatalf("/verbs for readers: %q", last)
	}
	// A group message that is not a command is ignored, not answered.
	g := tgMsg(1, 300, "lunch?")
	g.ChatType = "supergroup"
	if res, _ := e.rt.Hub.Handle(context.Background(), g); res.Status != hub.StatusIgnored || len(res.Outbox) != 0 {
		t.Fatalf("group chatter: %+v", res)
	}
}

func TestRenderedReplies(t *testing.T) {
	e := newEnv(t, nil)
	do := func(id int, text string) string {
		t.Helper()
		res, err := e.rt.Hub.Handle(context.Background(), tgMsg(1, id, text))
		if err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			for _, g := range e.rec.Wait(t, "chat:telegram:100", 1) {
				if g.TurnID == res.TurnID {
					return g.Text
				}
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Fatalf("no reply for %s", res.TurnID)
		return ""
	}
	if s := do(1, "/fs.readFile README.md"); !strings.Contains(s, "```markdown\n# hello\nsecond\n```") {
		t.Errorf("readFile: %q", s)
	}
	if s := do(2, "/proc.run sh -c \"echo out; echo err >&2; exit 3\""); !strings.Contains(s, "exit 3") || !strings.Contains(s, "stdout:\n```\nout\n```") || !strings.Contains(s, "stderr:") {
		t.Errorf("proc.run: %q", s)
	}
	if s := do(3, "/fs.readFile ../etc/passwd"); !strings.HasPrefix(s, "⚠ ") || !strings.Contains(s, "(forbidden_path)") {
		t.Errorf("error: %q", s)
	}
	if s := do(4, "/fs.exists README.md --json"); !strings.Contains(s, "```json") || !strings.Contains(s, `"exists": true`) {
		t.Errorf("--json: %q", s)
	}
	if s := do(5, "/fs.readRange README.md one 2"); !strings.Contains(s, "Usage: /fs.readRange <path> <startLine> <endLine>") {
		t.Errorf("usage error: %q", s)
	}
	os.WriteFile(filepath.Join(e.ws, "logo.bin"), []byte{0x89, 'P', 'N', 'G', 0, 1, 2}, 0o644)
	// A binary file comes back as a file.
	if s := do(8, "/fs.readFile logo.bin"); !strings.Contains(s, "`logo.bin` (7 bytes) is sent as the file logo.bin.") {
		t.Errorf("binary readFile: %q", s)
	}
	if s := do(6, "/sys.machineInfo"); !strings.Contains(s, "cpus") || !strings.Contains(s, "memory") {
		t.Errorf("machineInfo: %q", s)
	}
	// Long output becomes its head plus the whole text as an attachment.
	var sb strings.Builder
	for i := 0; i < 3000; i++ {
		fmt.Fprintf(&sb, "line %d with some padding to make it longer\n", i)
	}
	os.WriteFile(filepath.Join(e.ws, "big.txt"), []byte(sb.String()), 0o644)
	res, _ := e.rt.Hub.Handle(context.Background(), tgMsg(1, 7, "/fs.readRange big.txt 1 3000"))
	if len(res.Outbox) != 2 {
		t.Fatalf("overflow: want head + attachment, got %v", res.Outbox)
	}
	var att *outbox.Entry
	for _, c := range e.rec.Wait(t, "chat:telegram:100", 10) {
		if c.TurnID == "telegram.100.7" && c.Index == 1 {
			att = c
		}
	}
	if att == nil || att.Attachment == nil || !strings.Contains(string(att.Attachment.Data), "line 2999 with") {
		t.Fatalf("attachment missing: %+v", att)
	}
}

func TestDeliverFanOut(t *testing.T) {
	e := newEnv(t, nil)
	e.rt.Targets.Add(chat.ChatKey(chat.Telegram, "555", ""))
	e.rt.Targets.Add(chat.LocalKey("pma/deliveries.jsonl"))
	ids, err := e.rt.Hub.Deliver(context.Background(), "send.1", "build finished")
	if err != nil || len(ids) != 2 {
		t.Fatalf("deliver: %v %v", ids, err)
	}
	// The same turn again is skipped per target.
	if ids, err := e.rt.Hub.Deliver(context.Background(), "send.1", "build finished"); err != nil || len(ids) != 0 {
		t.Fatalf("second deliver: %v %v", ids, err)
	}
	e.rec.Wait(t, "chat:telegram:555", 1)
	deadline := time.Now().Add(5 * time.Second)
	for {
		b, _ := os.ReadFile(filepath.Join(e.state, "pma", "deliveries.jsonl"))
		if strings.Contains(string(b), `"text":"build finished"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("local target: %s", b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestExecuteAPI(t *testing.T) {
	e := newEnv(t, nil)
	out, err := e.rt.Hub.Execute(context.Background(), hub.APIRequest{Identity: "web", Input: []byte(`{"verb":"fs.exists","arguments":{"path":"README.md"}}`)})
	if err != nil || !out.Succeeded() {
		t.Fatalf("%s", out.JSON())
	}
	out, err = e.rt.Hub.Execute(context.Background(), hub.APIRequest{Identity: "telegram:2", Input: []byte(`{"verb":"proc.run","arguments":{"executable":"id","arguments":[]}}`)})
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	json.Unmarshal(out.JSON(), &m)
	if m["errorCode"] != "forbidden" {
		t.Fatalf("%v", m)
	}
}

func waitMirror(t *testing.T, e *env, ok func([]store.MirrorRecord) bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var recs []store.MirrorRecord
		store.ReadMirror(flowsRoot(t, filepath.Join(e.state, "flows")), store.MirrorFilter{}, func(r store.MirrorRecord) error {
			recs = append(recs, r)
			return nil
		})
		if ok(recs) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("mirror condition not met; records: %d", len(recs))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func hasRecord(recs []store.MirrorRecord, dir, kind, text string) bool {
	for _, r := range recs {
		if r.Direction == dir && r.Kind == kind && strings.Contains(r.Text, text) {
			return true
		}
	}
	return false
}

// TestDeliverLocalOutsideRootsDeadLetters: a local target that leaves the
// state root (added by hand to delivery_targets.json, past the checks of
// hub targets add) is never written: its chunk becomes a dead letter
// saying why.
func TestDeliverLocalOutsideRootsDeadLetters(t *testing.T) {
	e := newEnv(t, nil)
	outside := filepath.Join(t.TempDir(), "x.jsonl")
	for _, k := range []chat.Key{chat.LocalKey(outside), chat.LocalKey("../escape.jsonl")} {
		if _, err := e.rt.Targets.Add(k); err != nil {
			t.Fatal(err)
		}
	}
	ids, err := e.rt.Hub.Deliver(context.Background(), "send.out", "secret")
	if err != nil || len(ids) != 2 {
		t.Fatalf("deliver: %v %v", ids, err)
	}
	for i, why := range []string{"outbox.local_roots", "leaves the state directory"} {
		deadline := time.Now().Add(10 * time.Second)
		for {
			got, err := e.rt.Outbox.Store().Get(context.Background(), ids[i])
			if err == nil && got.State == outbox.StateDead {
				if !strings.Contains(got.LastError, why) {
					t.Fatalf("dead letter %s: %q, want the reason %q", ids[i], got.LastError, why)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s never became a dead letter: %+v %v", ids[i], got, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if _, err := os.Stat(outside); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("written outside the state root: %v", err)
	}
	if _, err := os.Stat(filepath.Join(e.ws, "escape.jsonl")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("written outside the state root: %v", err)
	}
}

// TestCancelledTurnStillEnqueuesItsReply: a turn whose context ends while
// its verb runs (the adapter stopping) still gets its answer enqueued and
// is finished, so a restart neither notices it again nor sends two answers.
func TestCancelledTurnStillEnqueuesItsReply(t *testing.T) {
	e := newEnv(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	in := tgMsg(1, 90, "/proc.run sleep 30")
	go func() {
		// Cancel once the verb is running: its process has started.
		testkit.WaitFor(t, "proc.run to start", func() bool {
			entries, _ := os.ReadDir(filepath.Join(e.state, "proc"))
			return len(entries) > 0
		})
		cancel()
	}()
	res, err := e.rt.Hub.Handle(ctx, in)
	if err != nil || res.Status != hub.StatusExecuted || len(res.Outbox) != 1 {
		t.Fatalf("cancelled turn: %+v %v", res, err)
	}
	if rec, _ := e.rt.Ledger.Get(in.TurnID); rec == nil || rec.State != store.TurnDone {
		t.Fatalf("ledger record %+v, want done", rec)
	}
	e.rec.Wait(t, "chat:telegram:100", 1)
}

// flowsRoot opens the mirrors' directory flows for reading, closed at the
// end of the test.
func flowsRoot(t testing.TB, flows string) *os.Root {
	t.Helper()
	r, err := os.OpenRoot(flows)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

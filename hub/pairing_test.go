package hub_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/clock"
	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/hub"
	"github.com/a6afc2ce/hermes-hub/hub/hubtest"
	"github.com/a6afc2ce/hermes-hub/store"
)

var codeRE = regexp.MustCompile(`pairing code is ([A-Z2-9]{4}-[A-Z2-9]{4})`)

// pairingCode sends text as user and returns the pairing code of the
// denial, which must be the reply's only chunk.
func pairingCode(t *testing.T, e *env, user, msgID int) string {
	t.Helper()
	before := len(e.rec.Texts("chat:telegram:100"))
	res, err := e.rt.Hub.Handle(context.Background(), tgMsg(user, msgID, "/fs.listDir ."))
	if err != nil || res.Status != hub.StatusDenied || len(res.Outbox) != 1 {
		t.Fatalf("stranger's message: %v %+v", err, res)
	}
	got := e.rec.Wait(t, "chat:telegram:100", before+1)
	m := codeRE.FindStringSubmatch(got[before].Text)
	if m == nil || !strings.Contains(got[before].Text, "hub access approve "+m[1]+" --role reader") {
		t.Fatalf("no pairing code and command in %q", got[before].Text)
	}
	return m[1]
}

func TestPairingApproveOnceAndRevoke(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC))
	e := newEnv(t, clk)
	ctx := context.Background()
	code := pairingCode(t, e, 500, 1)
	// The stranger's other messages within the hour get nothing, and no
	// new code.
	res, _ := e.rt.Hub.Handle(ctx, tgMsg(500, 2, "/fs.listDir ."))
	if res.Status != hub.StatusDenied || len(res.Outbox) != 0 {
		t.Fatalf("second message within the hour: %+v", res)
	}
	// An undefined role is refused, and the code survives the refusal.
	if _, err := e.rt.Hub.Approve(ctx, code, "nosuchrole", "operator"); err == nil || !strings.Contains(err.Error(), `role "nosuchrole" is not defined`) {
		t.Fatalf("undefined role: %v", err)
	}
	g, err := e.rt.Hub.Approve(ctx, strings.ToLower(code), "reader", "operator")
	if err != nil || g.Identity != "telegram:500" || g.Role != "reader" || g.ApprovedBy != "operator" {
		t.Fatalf("approve: %+v %v", g, err)
	}
	if res, _ := e.rt.Hub.Handle(ctx, tgMsg(500, 3, "/fs.listDir .")); res.Status != hub.StatusExecuted {
		t.Fatalf("after approval: %+v", res)
	}
	if _, err := e.rt.Hub.Approve(ctx, code, "admin", "operator"); !errors.Is(err, store.ErrCodeUsed) {
		t.Fatalf("reused code: %v", err)
	}
	if _, err := e.rt.Hub.Approve(ctx, "ABCD-EFGH", "reader", "operator"); !errors.Is(err, store.ErrCodeUnknown) {
		t.Fatalf("unknown code: %v", err)
	}
	l, err := e.rt.Hub.AccessList()
	if err != nil {
		t.Fatal(err)
	}
	var state, cfg int
	for _, g := range l.Grants {
		switch {
		case g.Source == "state" && g.Identity == "telegram:500" && g.Role == "reader" && g.ApprovedBy == "operator" && g.At.Equal(clk.Now()):
			state++
		case g.Source == "config":
			cfg++
		}
	}
	if state != 1 || cfg != 5 {
		t.Fatalf("list: %+v", l.Grants)
	}
	// A grant of the configuration is not revoked here.
	if _, err := e.rt.Hub.Revoke(ctx, "telegram:1", "operator"); !errors.Is(err, hub.ErrConfigGrant) || !strings.Contains(err.Error(), "access.grants") {
		t.Fatalf("revoke a config grant: %v", err)
	}
	gone, err := e.rt.Hub.Revoke(ctx, "telegram:500", "operator")
	if err != nil || len(gone) != 1 {
		t.Fatalf("revoke: %+v %v", gone, err)
	}
	if res, _ := e.rt.Hub.Handle(ctx, tgMsg(500, 4, "/fs.listDir .")); res.Status != hub.StatusDenied {
		t.Fatalf("after revoke: %+v", res)
	}
	waitMirror(t, e, func(recs []store.MirrorRecord) bool {
		var approve, revoke bool
		for _, r := range recs {
			approve = approve || r.Platform == "admin" && r.Meta["action"] == "approve" && r.Meta["identity"] == "telegram:500" && r.Actor == "operator"
			revoke = revoke || r.Platform == "admin" && r.Meta["action"] == "revoke" && r.Meta["identity"] == "telegram:500"
		}
		return approve && revoke
	})
}

func TestPairingCodeExpiresAndRateLimit(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC))
	e := newEnv(t, clk)
	ctx := context.Background()
	first := pairingCode(t, e, 600, 1)
	clk.Advance(hub.PairingTTL)
	if _, err := e.rt.Hub.Approve(ctx, first, "reader", "operator"); !errors.Is(err, store.ErrCodeExpired) {
		t.Fatalf("expired code: %v", err)
	}
	// An hour on, the stranger gets a new code, different from the first.
	second := pairingCode(t, e, 600, 2)
	if second == first {
		t.Fatalf("the same code twice: %s", second)
	}
	if _, err := e.rt.Hub.Approve(ctx, second, "reader", "operator"); err != nil {
		t.Fatal(err)
	}
}

func TestApproveFromChat(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC))
	ws := t.TempDir()
	cfg := testConfig(t, ws, filepath.Join(ws, ".hub"))
	cfg.Access.Roles["ops"] = config.Role{Verbs: []string{"fs.*", config.AdminAccess}}
	cfg.Access.Grants["telegram:7"] = []string{"ops"}
	e := openEnvConfig(t, cfg, clk)
	ctx := context.Background()
	code := pairingCode(t, e, 800, 1)
	// telegram:1 holds "*", which grants no admin permission.
	res, _ := e.rt.Hub.Handle(ctx, tgMsg(1, 2, "/approve "+code+" reader"))
	got := e.rec.Wait(t, "chat:telegram:100", 2)
	if res.Status != hub.StatusBuiltin || !strings.Contains(got[1].Text, "may not approve") {
		t.Fatalf("approve by a not-allowed identity: %+v %q", res, got[1].Text)
	}
	if res, _ := e.rt.Hub.Handle(ctx, tgMsg(800, 3, "/fs.listDir .")); res.Status != hub.StatusDenied {
		t.Fatalf("a refused approval granted access: %+v", res)
	}
	e.rt.Hub.Handle(ctx, tgMsg(7, 4, "/approve "+code+" reader"))
	got = e.rec.Wait(t, "chat:telegram:100", 3)
	if !strings.Contains(got[2].Text, "Approved: telegram:800 now holds the role reader") {
		t.Fatalf("approve by an allowed identity: %q", got[2].Text)
	}
	if res, _ := e.rt.Hub.Handle(ctx, tgMsg(800, 5, "/fs.listDir .")); res.Status != hub.StatusExecuted {
		t.Fatalf("after approval from chat: %+v", res)
	}
	// A stranger's /approve is a stranger's message.
	if res, _ := e.rt.Hub.Handle(ctx, tgMsg(801, 6, "/approve "+code+" admin")); res.Status != hub.StatusDenied {
		t.Fatalf("stranger's /approve: %+v", res)
	}
}

// TestPairingCap: a flood of strangers cannot grow the state past
// MaxPairingCodes; the one over the cap is told its identity and the
// configuration line, without a code.
func TestPairingCap(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC))
	e := newEnv(t, clk)
	acc, err := store.OpenAccess(e.he.State.DB())
	if err != nil {
		t.Fatal(err)
	}
	lim := store.PairingLimits{TTL: hub.PairingTTL, Interval: hub.PairingInterval, Max: hub.MaxPairingCodes}
	for i := 0; i < hub.MaxPairingCodes; i++ {
		if err := acc.IssueCode("telegram:"+strconv.Itoa(100000+i), hub.NewPairingCode(), clk.Now(), lim); err != nil {
			t.Fatalf("code %d: %v", i, err)
		}
	}
	before := len(e.rec.Texts("chat:telegram:100"))
	res, _ := e.rt.Hub.Handle(context.Background(), tgMsg(700, 1, "/fs.listDir ."))
	got := e.rec.Wait(t, "chat:telegram:100", before+1)
	if res.Status != hub.StatusDenied || codeRE.MatchString(got[before].Text) || !strings.Contains(got[before].Text, "too many pending") || !strings.Contains(got[before].Text, `"telegram:700": [reader]`) {
		t.Fatalf("over the cap: %q", got[before].Text)
	}
	// Once the codes expire, there is room again.
	clk.Advance(hub.PairingTTL + time.Minute)
	pairingCode(t, e, 701, 2)
}

// openEnvConfig is openEnv with a configuration of the test's own.
func openEnvConfig(t *testing.T, cfg *config.Config, clk clock.Clock) *env {
	t.Helper()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	he := hubtest.Open(t, cfg, hubtest.Options{Runtime: hub.RuntimeOptions{Clock: clk}})
	e := &env{he: he, rt: he.Runtime, rec: hubtest.NewRecorder(), ws: cfg.Workspace, state: cfg.StateDir, clk: clk}
	e.rec.HandleAll(t, he.Runtime)
	he.Start(t)
	return e
}

// tgGroupMsg is tgMsg in the group chat -100200.
func tgGroupMsg(user, msgID int, text string) *chat.Inbound {
	in := tgMsg(user, msgID, text)
	in.TurnID, in.ChatID, in.ChatType = fmt.Sprintf("telegram.-100200.%d", msgID), "-100200", chat.ChatSupergroup
	return in
}

// A stranger who writes in a group is told to write to the bot directly,
// without a code; there, in the private chat, it gets one at once.
func TestPairingCodeOnlyInPrivateChats(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC))
	e := newEnv(t, clk)
	res, err := e.rt.Hub.Handle(context.Background(), tgGroupMsg(900, 1, "/fs.listDir ."))
	if err != nil || res.Status != hub.StatusDenied || len(res.Outbox) != 1 {
		t.Fatalf("stranger in a group: %v %+v", err, res)
	}
	got := e.rec.Wait(t, "chat:telegram:-100200", 1)
	if codeRE.MatchString(got[0].Text) || strings.Contains(got[0].Text, "hub access approve") ||
		!strings.Contains(got[0].Text, "open a private chat with the bot") || !strings.Contains(got[0].Text, `"telegram:900": [reader]`) {
		t.Fatalf("the reply in a group: %q", got[0].Text)
	}
	if l, err := e.rt.Hub.AccessList(); err != nil || len(l.Codes) != 0 {
		t.Fatalf("a code was issued for a group: %+v %v", l.Codes, err)
	}
	// Once more in the group within the hour: nothing.
	if res, _ := e.rt.Hub.Handle(context.Background(), tgGroupMsg(900, 2, "/fs.listDir .")); res.Status != hub.StatusDenied || len(res.Outbox) != 0 {
		t.Fatalf("second message in the group: %+v", res)
	}
	code := pairingCode(t, e, 900, 3)
	if _, err := e.rt.Hub.Approve(context.Background(), code, "reader", "operator"); err != nil {
		t.Fatal(err)
	}
}

// No mirror file ever holds a pairing code: not the reply that gives it to
// the stranger, not a /approve that was refused (the code stays valid),
// not the one that approved it. The approval works all the same.
func TestPairingCodeNeverMirrored(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC))
	ws := t.TempDir()
	cfg := testConfig(t, ws, filepath.Join(ws, ".hub"))
	cfg.Access.Roles["ops"] = config.Role{Verbs: []string{"fs.*", config.AdminAccess}}
	cfg.Access.Grants["telegram:7"] = []string{"ops"}
	e := openEnvConfig(t, cfg, clk)
	ctx := context.Background()
	code := pairingCode(t, e, 800, 1)
	e.rt.Hub.Handle(ctx, tgMsg(7, 2, "/approve "+strings.ToLower(code)+" nosuchrole"))
	e.rt.Hub.Handle(ctx, tgMsg(7, 3, "/approve "+code+" reader"))
	got := e.rec.Wait(t, "chat:telegram:100", 3)
	if !strings.Contains(got[1].Text, "Not approved") || !strings.Contains(got[2].Text, "Approved: telegram:800 now holds the role reader") {
		t.Fatalf("approvals: %q %q", got[1].Text, got[2].Text)
	}
	if res, _ := e.rt.Hub.Handle(ctx, tgMsg(800, 4, "/fs.listDir .")); res.Status != hub.StatusExecuted {
		t.Fatalf("after approval: %+v", res)
	}
	waitMirror(t, e, func(recs []store.MirrorRecord) bool {
		return hasRecord(recs, store.DirectionOutbound, store.KindReply, "Your pairing code is [pairing code]") &&
			hasRecord(recs, store.DirectionInbound, store.KindCommand, "/approve [pairing code] nosuchrole") &&
			hasRecord(recs, store.DirectionInbound, store.KindCommand, "/approve [pairing code] reader") &&
			hasRecord(recs, store.DirectionOutbound, store.KindReply, "Approved: telegram:800")
	})
	e.he.Close()
	n := 0
	err := filepath.WalkDir(filepath.Join(e.state, store.FlowsDir), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		n++
		for _, c := range []string{code, strings.ToLower(code), store.NormalizeCode(code)} {
			if strings.Contains(string(b), c) {
				t.Errorf("%s holds the pairing code %s", p, c)
			}
		}
		return nil
	})
	if err != nil || n == 0 {
		t.Fatalf("mirror files: %d, %v", n, err)
	}
}

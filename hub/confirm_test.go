package hub_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/clock"
	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/hub"
	"github.com/a6afc2ce/hermes-hub/hub/hubtest"
	"github.com/a6afc2ce/hermes-hub/outbox"
	"github.com/a6afc2ce/hermes-hub/store"
)

// confirmConfig: telegram:5 holds deleter (fs.* with fs.delete* held for
// confirmation), telegram:7 writer (fs.writeFile held, approved by boss),
// telegram:6 boss (fs.*).
func confirmConfig(t *testing.T, ws, state string) *config.Config {
	cfg := testConfig(t, ws, state)
	cfg.Access.Roles["deleter"] = config.Role{Verbs: []string{"fs.*"}, Confirm: []string{"fs.delete*"}}
	cfg.Access.Roles["writer"] = config.Role{Verbs: []string{"fs.*"}, Confirm: []string{"fs.writeFile"}, Approvers: []string{"boss"}}
	cfg.Access.Roles["boss"] = config.Role{Verbs: []string{"fs.*"}}
	cfg.Access.Grants["telegram:5"] = []string{"deleter"}
	cfg.Access.Grants["telegram:7"] = []string{"writer"}
	cfg.Access.Grants["telegram:6"] = []string{"boss"}
	cfg.Access.ConfirmTTL = config.Duration(10 * time.Minute)
	// In the chat -100777 writer and reader may act, boss may not.
	cfg.Access.Chats = map[string]config.ChatRule{"telegram:chat:-100777": {MaxRoles: []string{"writer", "reader"}}}
	cfg.ApplyDefaults()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

func openConfirmEnv(t *testing.T, ws, state string, clk clock.Clock) *env {
	t.Helper()
	he := hubtest.Open(t, confirmConfig(t, ws, state), hubtest.Options{Runtime: hub.RuntimeOptions{Clock: clk}})
	e := &env{he: he, rt: he.Runtime, rec: hubtest.NewRecorder(), ws: ws, state: state, clk: clk}
	e.rec.HandleAll(t, e.rt)
	he.Start(t)
	return e
}

func confirmEnv(t *testing.T) *env {
	t.Helper()
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "old.log"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return openConfirmEnv(t, ws, filepath.Join(ws, ".hub"), clock.NewFake(time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)))
}

// hold sends text as user in the private chat 100 and returns the held
// call's prompt.
func hold(t *testing.T, e *env, user, msg int, text string) *outbox.Entry {
	t.Helper()
	res, err := e.rt.Hub.Handle(context.Background(), tgMsg(user, msg, text))
	if err != nil || res.Status != hub.StatusHeld {
		t.Fatalf("%q: %+v %v, want held", text, res, err)
	}
	var got *outbox.Entry
	waitFor(t, "the prompt", func() bool {
		for _, en := range e.rec.Sent("chat:telegram:100") {
			if en.TurnID == res.TurnID && en.Meta[hub.MetaConfirm] != "" {
				got = en
				return true
			}
		}
		return false
	})
	return got
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func press(t *testing.T, e *env, id, action string, user string) hub.ConfirmResult {
	t.Helper()
	res, err := e.rt.Hub.Confirm(context.Background(), hub.ConfirmPress{ID: id, Action: action, Identities: []string{"telegram:" + user}})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func exists(e *env, name string) bool {
	_, err := os.Stat(filepath.Join(e.ws, name))
	return err == nil
}

// TestConfirmRunAndCancel: a verb the role holds for confirmation does not
// run when asked; the asker gets the exact call and its buttons. A press
// by someone else does nothing but say so; the asker's Run runs it once
// (a second Run says it was decided); Cancel runs nothing.
func TestConfirmRunAndCancel(t *testing.T) {
	e := confirmEnv(t)
	p := hold(t, e, 5, 10, "/fs.deleteFile old.log")
	if p.Meta[hub.MetaConfirmStage] != hub.ConfirmStageRun || !strings.Contains(p.Text, `{"verb":"fs.deleteFile","arguments":{"path":"old.log"}}`) || !strings.Contains(p.Text, "access.roles.deleter.confirm") {
		t.Fatalf("prompt %+v", p)
	}
	if !exists(e, "old.log") {
		t.Fatal("the held call ran before its Run")
	}
	id := p.Meta[hub.MetaConfirm]
	if r := press(t, e, id, hub.ConfirmRun, "6"); !strings.Contains(r.Text, "Only telegram:5") || r.Turn != nil {
		t.Fatalf("a press by someone else: %+v", r)
	}
	if r := press(t, e, id, hub.ConfirmCancel, "6"); !strings.Contains(r.Text, "Only telegram:5") || !exists(e, "old.log") {
		t.Fatalf("a cancel by someone else: %+v", r)
	}
	r := press(t, e, id, hub.ConfirmRun, "5")
	if r.Turn == nil || r.Turn.Status != hub.StatusExecuted || exists(e, "old.log") {
		t.Fatalf("the asker's Run: %+v", r)
	}
	waitText(t, e, "chat:telegram:100", "Deleted")
	if r := press(t, e, id, hub.ConfirmRun, "5"); !strings.Contains(r.Text, "already decided") || r.Turn != nil {
		t.Fatalf("Run pressed twice: %+v", r)
	}

	os.WriteFile(filepath.Join(e.ws, "keep.log"), []byte("x"), 0o644)
	id = hold(t, e, 5, 11, "/fs.deleteFile keep.log").Meta[hub.MetaConfirm]
	if r := press(t, e, id, hub.ConfirmCancel, "5"); !strings.Contains(r.Text, "Cancelled") {
		t.Fatalf("cancel: %+v", r)
	}
	if r := press(t, e, id, hub.ConfirmRun, "5"); !strings.Contains(r.Text, "already decided (cancelled)") || !exists(e, "keep.log") {
		t.Fatalf("Run after Cancel: %+v", r)
	}
	// Every press is in the mirror, with who pressed what.
	waitMirror(t, e, func(recs []store.MirrorRecord) bool {
		var n int
		for _, r := range recs {
			if r.Kind == hub.KindConfirm && r.Meta[hub.MetaConfirm] != "" {
				n++
				if r.Actor == "telegram:6" && r.Meta["result"] != "refused: not the asker" {
					t.Errorf("the wrong presser's record %+v", r)
				}
			}
		}
		return n == 6
	})
}

// TestConfirmExpires: a Run pressed after access.confirm_ttl says the call
// expired, and nothing runs.
func TestConfirmExpires(t *testing.T) {
	e := confirmEnv(t)
	id := hold(t, e, 5, 10, "/fs.deleteFile old.log").Meta[hub.MetaConfirm]
	e.clk.(*clock.Fake).Advance(10*time.Minute + time.Second)
	if r := press(t, e, id, hub.ConfirmRun, "5"); !strings.Contains(r.Text, "expired") || r.Turn != nil || !exists(e, "old.log") {
		t.Fatalf("Run after expiry: %+v", r)
	}
	if r := press(t, e, id, hub.ConfirmRun, "5"); !strings.Contains(r.Text, "already decided (expired)") {
		t.Fatalf("Run after expiry, twice: %+v", r)
	}
}

// TestConfirmSecondApprover: a role with approvers needs, after the
// asker's Run, someone else holding an approver role: the request is
// posted in the chat with Approve and Reject; the asker may not approve
// their own call, nor may someone without the role; an approver's
// Approve runs it.
func TestConfirmSecondApprover(t *testing.T) {
	e := confirmEnv(t)
	id := hold(t, e, 7, 10, "/fs.writeFile new.txt hi").Meta[hub.MetaConfirm]
	if r := press(t, e, id, hub.ConfirmApprove, "6"); !strings.Contains(r.Text, "Nothing to approve yet") {
		t.Fatalf("approve before Run: %+v", r)
	}
	if r := press(t, e, id, hub.ConfirmRun, "7"); !strings.Contains(r.Text, "Waiting for someone holding boss") || r.Turn != nil {
		t.Fatalf("the asker's Run: %+v", r)
	}
	waitFor(t, "the approval request", func() bool {
		for _, en := range e.rec.Sent("chat:telegram:100") {
			if en.Meta[hub.MetaConfirm] == id && en.Meta[hub.MetaConfirmStage] == hub.ConfirmStageApprove && strings.Contains(en.Text, "telegram:7 asks to run fs.writeFile") {
				return true
			}
		}
		return false
	})
	for user, want := range map[string]string{"7": "someone else must approve", "5": "Only someone holding boss"} {
		if r := press(t, e, id, hub.ConfirmApprove, user); !strings.Contains(r.Text, want) || exists(e, "new.txt") {
			t.Fatalf("approve by %s: %+v", user, r)
		}
	}
	if r := press(t, e, id, hub.ConfirmApprove, "6"); r.Turn == nil || r.Turn.Status != hub.StatusExecuted || !exists(e, "new.txt") {
		t.Fatalf("the approver's Approve: %+v", r)
	}
	// In a chat whose ceiling leaves out the approver role, its holder may
	// not approve there.
	capped := &chat.Inbound{TurnID: "telegram.100777.1", Platform: chat.Telegram, ChatID: "-100777", MessageID: "1", UserID: "7", UserName: "u", ChatType: "supergroup", Text: "/fs.writeFile capped.txt hi", Time: time.Now()}
	if res, err := e.rt.Hub.Handle(context.Background(), capped); err != nil || res.Status != hub.StatusHeld {
		t.Fatalf("held in the capped chat: %+v %v", res, err)
	}
	var cid string
	waitFor(t, "the capped chat's prompt", func() bool {
		for _, en := range e.rec.Sent("chat:telegram:-100777") {
			if cid = en.Meta[hub.MetaConfirm]; cid != "" {
				return true
			}
		}
		return false
	})
	press(t, e, cid, hub.ConfirmRun, "7")
	if r := press(t, e, cid, hub.ConfirmApprove, "6"); !strings.Contains(r.Text, "Only someone holding boss") || exists(e, "capped.txt") {
		t.Fatalf("an approver beyond the chat's ceiling: %+v", r)
	}
	id = hold(t, e, 7, 11, "/fs.writeFile other.txt hi").Meta[hub.MetaConfirm]
	press(t, e, id, hub.ConfirmRun, "7")
	if r := press(t, e, id, hub.ConfirmReject, "6"); !strings.Contains(r.Text, "Rejected") || exists(e, "other.txt") {
		t.Fatalf("reject: %+v", r)
	}
}

// TestConfirmSurvivesRestart: a call held when the hub stops is held by
// the next run of the hub, and its Run runs it then.
func TestConfirmSurvivesRestart(t *testing.T) {
	e := confirmEnv(t)
	id := hold(t, e, 5, 10, "/fs.deleteFile old.log").Meta[hub.MetaConfirm]
	if err := e.he.Close(); err != nil {
		t.Fatal(err)
	}
	e = openConfirmEnv(t, e.ws, e.state, e.clk)
	if r := press(t, e, id, hub.ConfirmRun, "5"); r.Turn == nil || r.Turn.Status != hub.StatusExecuted || exists(e, "old.log") {
		t.Fatalf("Run after a restart: %+v", r)
	}
}

// TestConfirmedBeforeDeathRunsAtStart: a held call whose Run was recorded
// by a hub that died before its run began runs when the hub starts again,
// once; one whose run had begun (its turn in the ledger) is not run again.
func TestConfirmedBeforeDeathRunsAtStart(t *testing.T) {
	e := confirmEnv(t)
	os.WriteFile(filepath.Join(e.ws, "begun.log"), []byte("x"), 0o644)
	notBegun := hold(t, e, 5, 10, "/fs.deleteFile old.log").Meta[hub.MetaConfirm]
	begun := hold(t, e, 5, 11, "/fs.deleteFile begun.log").Meta[hub.MetaConfirm]
	cfs, err := store.OpenConfirmations(e.he.State.Database())
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{notBegun, begun} {
		if _, err := cfs.Update(id, func(c *store.Confirmation) error { c.State = store.ConfirmRunning; return nil }); err != nil {
			t.Fatal(err)
		}
	}
	// The run of begun had begun (its turn is in the ledger) when the hub died.
	led, err := store.OpenSharedLedger(e.he.State.Database())
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := led.Begin(store.TurnRecord{TurnID: "confirm." + begun, Identity: "telegram:5", Reply: "chat:telegram:100", Platform: "telegram", Started: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if err := e.he.Close(); err != nil {
		t.Fatal(err)
	}
	e = openConfirmEnv(t, e.ws, e.state, e.clk)
	waitFor(t, "the call confirmed before the stop", func() bool { return !exists(e, "old.log") })
	waitText(t, e, "chat:telegram:100", "may or may not have completed")
	if !exists(e, "begun.log") {
		t.Fatal("a held call whose run had begun ran again")
	}
	// The file goes during the run; the call is done once its answer is
	// enqueued, a moment later.
	cfs, err = store.OpenConfirmations(e.he.State.Database())
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the confirmed call done", func() bool {
		c, err := cfs.Get(notBegun)
		return err == nil && c.State == store.ConfirmDone
	})
	if r := press(t, e, notBegun, hub.ConfirmRun, "5"); !strings.Contains(r.Text, "already decided (done)") {
		t.Fatalf("after its run: %+v", r)
	}
}

// TestConfirmOverTheAPI: the API cannot show buttons, so a held verb is
// refused with confirmation_required naming the setting; a surface that
// asked its caller (Confirmed) runs it.
func TestConfirmOverTheAPI(t *testing.T) {
	e := confirmEnv(t)
	in := []byte(`{"verb":"fs.deleteFile","arguments":{"path":"old.log"}}`)
	out, err := e.rt.Hub.Execute(context.Background(), hub.APIRequest{Identity: "telegram:5", Input: in})
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	json.Unmarshal(out.JSON(), &m)
	if m["errorCode"] != "confirmation_required" || !strings.Contains(m["errorMessage"].(string), "access.roles.deleter.confirm lists it") || !exists(e, "old.log") {
		t.Fatalf("%v", m)
	}
	out, err = e.rt.Hub.Execute(context.Background(), hub.APIRequest{Identity: "telegram:5", Input: in, Confirmed: true})
	if err != nil || !out.Succeeded() || exists(e, "old.log") {
		t.Fatalf("confirmed: %s %v", out.JSON(), err)
	}
}

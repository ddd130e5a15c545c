package hub_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/clock"
	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/hub"
	"github.com/a6afc2ce/hermes-hub/hub/hubtest"
	"github.com/a6afc2ce/hermes-hub/internal/testkit"
	"github.com/a6afc2ce/hermes-hub/store"
)

// fakeView records the progress updates of a platform; its messages are
// numbered from 500.
type fakeView struct {
	mu      sync.Mutex
	updates []hub.ProgressUpdate
	// onFinal runs when a final update arrives (before it is recorded).
	onFinal func(u hub.ProgressUpdate)
}

func (v *fakeView) ShowProgress(ctx context.Context, u hub.ProgressUpdate) (string, error) {
	if u.Final() && v.onFinal != nil {
		v.onFinal(u)
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	v.updates = append(v.updates, u)
	if u.MessageID != "" {
		return u.MessageID, nil
	}
	return fmt.Sprint(500 + len(v.updates)), nil
}

func (v *fakeView) all() []hub.ProgressUpdate {
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([]hub.ProgressUpdate(nil), v.updates...)
}

type progressEnv struct {
	he   *hubtest.Env
	rt   *hub.Runtime
	rec  *hubtest.Recorder
	clk  *clock.Fake
	view *fakeView
	verb *hubtest.SlowVerb
}

func openProgressEnv(t *testing.T, state string, before func(rt *hub.Runtime)) *progressEnv {
	t.Helper()
	ws := t.TempDir()
	if state == "" {
		state = ws + "/.hub"
	}
	cfg := hubtest.Config(t, ws, state)
	cfg.Access.Roles = map[string]config.Role{"runner": {Verbs: []string{"test.*"}}, "boss": {Verbs: []string{"test.*", config.AdminCancel}}}
	cfg.Access.Grants = map[string][]string{"telegram:1": {"runner"}, "telegram:2": {"runner"}, "telegram:9": {"boss"}}
	e := &progressEnv{clk: clock.NewFake(time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)), view: &fakeView{}, verb: hubtest.NewSlowVerb(), rec: hubtest.NewRecorder()}
	e.he = hubtest.Open(t, cfg, hubtest.Options{
		Register: e.verb.Register,
		Runtime:  hub.RuntimeOptions{Clock: e.clk},
	})
	e.rt = e.he.Runtime
	e.rec.HandleAll(t, e.rt)
	e.rt.Hub.SetProgressView(chat.Telegram, e.view)
	if before != nil {
		before(e.rt)
	}
	e.he.Start(t)
	return e
}

// start runs msg as a turn in the background and waits for its verb to run.
func (e *progressEnv) start(t *testing.T, user, msgID int) <-chan *hub.TurnResult {
	t.Helper()
	done := make(chan *hub.TurnResult, 1)
	go func() {
		res, err := e.rt.Hub.Handle(context.Background(), tgMsg(user, msgID, "/test.slow"))
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	select {
	case <-e.verb.Started:
	case <-time.After(testkit.Wait):
		t.Fatal("the verb did not start")
	}
	return done
}

func wait[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(testkit.Wait):
		t.Fatal("timed out")
	}
	var zero T
	return zero
}

func TestProgressShowsThenFinalThenChunks(t *testing.T) {
	e := openProgressEnv(t, "", nil)
	target := "chat:telegram:100"
	var chunksAtFinal int = -1
	e.view.onFinal = func(hub.ProgressUpdate) { chunksAtFinal = len(e.rec.Sent(target)) }
	done := e.start(t, 1, 10)

	e.verb.Step(t, "compiling a")
	e.clk.Advance(2 * time.Second) // below the 3 s threshold: nothing shown
	if got := e.view.all(); len(got) != 0 {
		t.Fatalf("progress before the threshold: %+v", got)
	}
	e.clk.Advance(time.Second)
	got := e.view.all()
	if len(got) != 1 || got[0].State != hub.ProgressRunning || got[0].Tail != "compiling a" || got[0].MessageID != "" ||
		!strings.Contains(got[0].Text, "running for 3s") || got[0].Target.String() != target {
		t.Fatalf("first update %+v", got)
	}
	// The message is recorded while it ticks.
	msgs := progressRecords(t, e)
	if len(msgs) != 1 || msgs[0].MessageID != "501" || msgs[0].TurnID != "telegram.100.10" {
		t.Fatalf("recorded progress messages %+v", msgs)
	}
	e.verb.Step(t, "compiling b")
	e.clk.Advance(3 * time.Second)
	got = e.view.all()
	if len(got) != 2 || got[1].MessageID != "501" || got[1].Tail != "compiling a\ncompiling b" || !strings.Contains(got[1].Text, "running for 6s") {
		t.Fatalf("second update %+v", got)
	}
	e.verb.Finish()
	res := wait(t, done)
	if res.Status != hub.StatusExecuted || !res.Outcome.Succeeded() {
		t.Fatalf("result %+v", res)
	}
	got = e.view.all()
	if len(got) != 3 || got[2].State != hub.ProgressDone || got[2].MessageID != "501" {
		t.Fatalf("final update %+v", got)
	}
	if chunksAtFinal != 0 {
		t.Fatalf("%d chunks were sent before the progress was final", chunksAtFinal)
	}
	chunks := e.rec.Wait(t, target, 1)
	if len(chunks) != 1 || chunks[0].ID != "reply:telegram.100.10:chat:telegram:100:0" {
		t.Fatalf("chunks %+v", chunks)
	}
	// No edit after the final one, and the record is gone.
	e.clk.Advance(10 * time.Second)
	if n := len(e.view.all()); n != 3 {
		t.Fatalf("%d updates after the call ended", n)
	}
	if msgs := progressRecords(t, e); len(msgs) != 0 {
		t.Fatalf("progress records left: %+v", msgs)
	}
}

func TestProgressQuickCallShowsNothing(t *testing.T) {
	e := openProgressEnv(t, "", nil)
	done := e.start(t, 1, 11)
	e.clk.Advance(2 * time.Second)
	e.verb.Finish()
	wait(t, done)
	e.clk.Advance(10 * time.Second)
	if got := e.view.all(); len(got) != 0 {
		t.Fatalf("a quick call showed progress: %+v", got)
	}
}

func TestCancel(t *testing.T) {
	e := openProgressEnv(t, "", nil)
	target := "chat:telegram:100"
	done := e.start(t, 1, 20)
	e.verb.Step(t, "step one")
	e.clk.Advance(3 * time.Second)

	handle := func(user, msgID int, text string) string {
		t.Helper()
		res, err := e.rt.Hub.Handle(context.Background(), tgMsg(user, msgID, text))
		if err != nil || res.Status != hub.StatusBuiltin {
			t.Fatalf("%s: %+v %v", text, res, err)
		}
		sent := e.rec.Wait(t, target, 1)
		for _, c := range sent {
			if c.TurnID == res.TurnID {
				return c.Text
			}
		}
		var text2 string
		testkit.WaitFor(t, "the answer to "+text, func() bool {
			for _, c := range e.rec.Sent(target) {
				if c.TurnID == res.TurnID {
					text2 = c.Text
					return true
				}
			}
			return false
		})
		return text2
	}
	// Someone else (without admin.cancel) may not stop it.
	if got := handle(2, 21, "/cancel"); !strings.Contains(got, "You may not cancel test.slow") || !strings.Contains(got, "telegram:1") {
		t.Fatalf("other user's /cancel: %q", got)
	}
	// A button press from another chat does not reach it.
	if r := e.rt.Hub.Cancel(hub.CancelRequest{Chat: chat.Key{Kind: chat.KindChat, Platform: chat.Telegram, ChatID: "555"}, TurnID: "telegram.100.20", Identities: []string{"telegram:1"}}); len(r.Canceled) != 0 {
		t.Fatalf("cancelled from another chat: %+v", r)
	}
	// The caller may.
	if got := handle(1, 22, "/cancel"); !strings.Contains(got, "Cancelling test.slow (turn telegram.100.20)") {
		t.Fatalf("/cancel: %q", got)
	}
	res := wait(t, done)
	if res.Outcome.Succeeded() || res.Outcome.Err.Code != executor.CodeCanceled {
		t.Fatalf("outcome %+v", res.Outcome)
	}
	var reply string
	testkit.WaitFor(t, "the cancelled call's reply", func() bool {
		for _, c := range e.rec.Sent(target) {
			if c.TurnID == "telegram.100.20" {
				reply = c.Text
				return true
			}
		}
		return false
	})
	if !strings.Contains(reply, "Cancelled by telegram:1") || !strings.Contains(reply, "step one") {
		t.Fatalf("reply %q", reply)
	}
	ups := e.view.all()
	if last := ups[len(ups)-1]; last.State != hub.ProgressCanceled || !strings.Contains(last.Text, "cancelled by telegram:1") {
		t.Fatalf("final update %+v", last)
	}
	// Once finished, a button press on it is "nothing to cancel".
	r := e.rt.Hub.Cancel(hub.CancelRequest{Chat: chat.Key{Kind: chat.KindChat, Platform: chat.Telegram, ChatID: "100"}, TurnID: "telegram.100.20", Identities: []string{"telegram:1"}})
	if len(r.Canceled) != 0 || !strings.Contains(r.Text, "already finished") {
		t.Fatalf("cancel after the end: %+v", r)
	}
	if got := handle(1, 23, "/cancel"); !strings.Contains(got, "Nothing to cancel") {
		t.Fatalf("/cancel with nothing running: %q", got)
	}
}

func TestCancelByAdminPermission(t *testing.T) {
	e := openProgressEnv(t, "", nil)
	done := e.start(t, 1, 30)
	r := e.rt.Hub.Cancel(hub.CancelRequest{Chat: chat.Key{Kind: chat.KindChat, Platform: chat.Telegram, ChatID: "100"}, TurnID: "telegram.100.30", Identities: []string{"telegram:9"}})
	if len(r.Canceled) != 1 {
		t.Fatalf("admin.cancel could not stop the call: %+v", r)
	}
	if res := wait(t, done); res.Outcome.Err == nil || res.Outcome.Err.Code != executor.CodeCanceled {
		t.Fatalf("outcome %+v", res.Outcome)
	}
}

func TestStaleProgressFinalisedAtStart(t *testing.T) {
	state := t.TempDir() + "/.hub"
	first := openProgressEnv(t, state, nil)
	p, err := store.OpenProgressMessages(first.he.State.DB())
	if err != nil {
		t.Fatal(err)
	}
	if err := p.PutProgress(store.ProgressMessage{TurnID: "telegram.100.40", Target: "chat:telegram:100", MessageID: "777", Verb: "proc.run", Started: first.clk.Now()}); err != nil {
		t.Fatal(err)
	}
	if err := first.he.Close(); err != nil {
		t.Fatal(err)
	}
	second := openProgressEnv(t, state, nil)
	got := second.view.all()
	if len(got) != 1 || got[0].State != hub.ProgressInterrupted || got[0].MessageID != "777" || !strings.Contains(got[0].Text, "restarted") {
		t.Fatalf("stale progress: %+v", got)
	}
	if msgs := progressRecords(t, second); len(msgs) != 0 {
		t.Fatalf("records left: %+v", msgs)
	}
}

func progressRecords(t *testing.T, e *progressEnv) []store.ProgressMessage {
	t.Helper()
	p, err := store.OpenProgressMessages(e.he.State.DB())
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := p.ProgressMessages()
	if err != nil {
		t.Fatal(err)
	}
	return msgs
}

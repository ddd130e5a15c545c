package hub_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/hub"
	"github.com/a6afc2ce/hermes-hub/hub/hubtest"
	"github.com/a6afc2ce/hermes-hub/outbox"
	"github.com/a6afc2ce/hermes-hub/store"
)

// stubAdapter is an adapter that receives nothing.
type stubAdapter string

func (a stubAdapter) Name() string { return string(a) }

func (a stubAdapter) Run(ctx context.Context) error { <-ctx.Done(); return nil }

// TestAttachWiresAPlatformOnce: one Attach routes the platform's chunks to
// its sender, installs its progress view (which finalises what a previous
// run left, at Start) and lists its adapter; nothing else is registered.
func TestAttachWiresAPlatformOnce(t *testing.T) {
	state := t.TempDir() + "/.hub"
	first := hubtest.Open(t, hubtest.Config(t, "", state), hubtest.Options{})
	p, err := store.OpenProgressMessages(first.State.DB())
	if err != nil {
		t.Fatal(err)
	}
	if err := p.PutProgress(store.ProgressMessage{TurnID: "discord.1.2", Target: "chat:discord:1", MessageID: "m-7", Verb: "proc.run", Started: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}

	e := hubtest.Open(t, hubtest.Config(t, "", state), hubtest.Options{})
	rt := e.Runtime
	rec, view := hubtest.NewRecorder(), &fakeView{}
	if _, ok := rt.Mux.Sender("chat:discord:1"); ok {
		t.Fatal("a sender for discord before Attach")
	}
	if err := rt.Attach(hub.Platform{Name: chat.Discord, Adapter: stubAdapter("discord"), Sender: rec, Progress: view}); err != nil {
		t.Fatal(err)
	}
	if got := rt.Platforms(); len(got) != 1 || got[0].Name != chat.Discord || got[0].Adapter.Name() != "discord" {
		t.Fatalf("Platforms() = %+v", got)
	}
	for target, want := range map[string]bool{"chat:discord:1": true, "chat:telegram:1": false, "web": false} {
		if _, ok := rt.Mux.Sender(target); ok != want {
			t.Errorf("a sender for %s: %v, want %v", target, ok, want)
		}
	}
	e.Start(t)
	if got := view.all(); len(got) != 1 || got[0].State != hub.ProgressInterrupted || got[0].MessageID != "m-7" || got[0].Target != chat.ChatKey(chat.Discord, "1", "") {
		t.Fatalf("the attached view finalised %+v, want the stale message m-7", got)
	}
	k := chat.ChatKey(chat.Discord, "1", "")
	if _, err := rt.Outbox.Enqueue(context.Background(), outbox.NewEntries(outbox.KindNotice, "n1", k, chat.SplitText("hello", chat.ChunkOptionsFor(chat.Discord)), nil)); err != nil {
		t.Fatal(err)
	}
	if got := rec.Wait(t, k.String(), 1); got[0].Text != "hello" || got[0].Target != k {
		t.Fatalf("delivered %+v", got[0])
	}
}

// TestAttachRefuses: a platform Attach cannot wire is refused with what is
// wrong, and leaves nothing registered.
func TestAttachRefuses(t *testing.T) {
	e := hubtest.Open(t, hubtest.Config(t, "", ""), hubtest.Options{})
	rt := e.Runtime
	rec := hubtest.NewRecorder()
	if err := rt.Attach(hub.Platform{Name: chat.Telegram, Adapter: stubAdapter("telegram"), Sender: rec}); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		p    hub.Platform
		want string
	}{
		{"unknown platform", hub.Platform{Name: "slack", Adapter: stubAdapter("slack"), Sender: rec}, `unknown platform "slack" (accepted: web, telegram, discord)`},
		{"no adapter", hub.Platform{Name: chat.Discord, Sender: rec}, "platform discord: it needs an adapter and a sender"},
		{"no sender", hub.Platform{Name: chat.Discord, Adapter: stubAdapter("discord")}, "platform discord: it needs an adapter and a sender"},
		{"adapter of another name", hub.Platform{Name: chat.Discord, Adapter: stubAdapter("telegram"), Sender: rec}, `its adapter is named "telegram"`},
		{"twice", hub.Platform{Name: chat.Telegram, Adapter: stubAdapter("telegram"), Sender: hubtest.NewRecorder()}, "platform telegram: it is attached already"},
	} {
		err := rt.Attach(tt.p)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Attach = %v, want an error saying %q", tt.name, err, tt.want)
		}
	}
	if s, _ := rt.Mux.Sender("chat:telegram:1"); s != rec {
		t.Error("a refused second Attach replaced the first one's sender")
	}
	for _, target := range []string{"chat:discord:1", "web"} {
		if _, ok := rt.Mux.Sender(target); ok {
			t.Errorf("a refused Attach left a sender for %s", target)
		}
	}
	if n := len(rt.Platforms()); n != 1 {
		t.Errorf("%d platforms attached, want 1", n)
	}
	e.Start(t)
	err := rt.Attach(hub.Platform{Name: chat.Web, Adapter: stubAdapter("web"), Sender: rec})
	if err == nil || !strings.Contains(err.Error(), "attach every platform before Start") {
		t.Errorf("Attach after Start = %v", err)
	}
}

// TestHandleRefusesChatsNoPlatformSpells: an inbound message from a
// platform the hub does not speak, or from a chat whose key does not spell
// it back (a thread smuggled into a chat id), is refused before anything is
// recorded.
func TestHandleRefusesChatsNoPlatformSpells(t *testing.T) {
	e := newEnv(t, nil)
	for _, tt := range []struct {
		name string
		mod  func(in *chat.Inbound)
		want string
	}{
		{"unknown platform", func(in *chat.Inbound) { in.Platform = "slack" }, `unknown platform "slack"`},
		{"thread in the chat id", func(in *chat.Inbound) { in.ChatID = "100:7" }, "not canonical"},
		{"chat id not a number", func(in *chat.Inbound) { in.ChatID = "abc" }, `telegram chat id "abc" is not an integer`},
	} {
		in := tgMsg(1, 30, "/fs.listDir .")
		tt.mod(in)
		in.TurnID = "telegram.refused." + strings.ReplaceAll(tt.name, " ", "-")
		res, err := e.rt.Hub.Handle(context.Background(), in)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Handle = %+v, %v; want an error saying %q", tt.name, res, err, tt.want)
		}
		if rec, err := e.rt.Ledger.Get(in.TurnID); err != nil || rec != nil {
			t.Errorf("%s: the refused turn is in the ledger: %+v, %v", tt.name, rec, err)
		}
	}
	if sent := e.rec.Sent("chat:telegram:100:7"); len(sent) != 0 {
		t.Errorf("a reply went to the smuggled thread: %+v", sent)
	}
}

package outbox

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/chat"
)

func TestID(t *testing.T) {
	tests := []struct {
		kind   Kind
		turn   string
		target chat.Key
		index  int
		want   string
	}{
		{KindReply, "telegram.-100123.42", chat.ChatKey(chat.Telegram, "-100123", "7"), 0, "reply:telegram.-100123.42:chat:telegram:-100123:7:0"},
		{KindPMA, "api.3f9a", chat.LocalKey("pma/deliveries.jsonl"), 3, "pma:api.3f9a:local:pma/deliveries.jsonl:3"},
		{KindPMADispatch, "d1", chat.ChatKey(chat.Discord, "987654321", ""), 12, "pma-dispatch:d1:chat:discord:987654321:12"},
		{KindNotice, "web.c1", chat.WebKey, 0, "notice:web.c1:web:0"},
		{KindPMA, "t", chat.LocalKey("/var/log/a:b.jsonl"), 1, "pma:t:local:/var/log/a:b.jsonl:1"},
	}
	for _, tt := range tests {
		got := ID(tt.kind, tt.turn, tt.target, tt.index)
		if got != tt.want {
			t.Errorf("ID = %q, want %q", got, tt.want)
			continue
		}
		k, turn, target, i, err := ParseID(got)
		if err != nil {
			t.Errorf("ParseID(%q): %v", got, err)
			continue
		}
		if k != tt.kind || turn != tt.turn || target != tt.target || i != tt.index {
			t.Errorf("ParseID(%q) = %q %q %v %d", got, k, turn, target, i)
		}
	}
}

func TestParseIDRejects(t *testing.T) {
	for _, id := range []string{
		"", "reply", "reply:t", "reply:t:web", "bogus:t:web:0", "reply::web:0", "reply:t:web:-1",
		"reply:t:web:01", "reply:t:web:x", "reply:t:chat:slack:1:0", "reply:t:chat:telegram:abc:0",
		"reply:t:local::0", "reply:t\x01:web:0",
	} {
		if _, _, _, _, err := ParseID(id); err == nil {
			t.Errorf("ParseID(%q) succeeded, want an error", id)
		}
	}
}

func FuzzParseID(f *testing.F) {
	for _, s := range []string{
		"reply:telegram.1.2:chat:telegram:-100:5:0", "pma:t:local:a:b:3", "notice:w:web:0",
		"pma-dispatch:d:chat:discord:1:12", "reply:t:web:01", "::::",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		k, turn, target, i, err := ParseID(s)
		if err != nil {
			return
		}
		if got := ID(k, turn, target, i); got != s {
			t.Fatalf("ParseID(%q) does not round-trip: %q", s, got)
		}
	})
}

func TestNewEntries(t *testing.T) {
	target := tg("42")
	meta := map[string]string{"reply_to_message_id": "7"}
	split := chat.Split{
		Chunks:     []string{"head", "tail"},
		Attachment: &chat.Attachment{Name: "output.txt", MIME: chat.AttachmentMIME, Data: []byte("the whole text")},
	}
	es := NewEntries(KindReply, "telegram.42.7", target, split, meta)
	if len(es) != 3 {
		t.Fatalf("got %d entries, want 3", len(es))
	}
	for i, e := range es {
		if e.ID != ID(KindReply, "telegram.42.7", target, i) || e.Index != i || e.Total != 3 || e.Target != target {
			t.Errorf("entry %d: %+v", i, e)
		}
		if err := e.validate(); err != nil {
			t.Errorf("entry %d does not validate: %v", i, err)
		}
		if e.Meta["reply_to_message_id"] != "7" {
			t.Errorf("entry %d: meta %v", i, e.Meta)
		}
	}
	if es[0].Text != "head" || es[1].Text != "tail" || es[0].Attachment != nil {
		t.Errorf("chunks: %q %q", es[0].Text, es[1].Text)
	}
	a := es[2].Attachment
	if a == nil || a.Name != "output.txt" || !bytes.Equal(a.Data, []byte("the whole text")) {
		t.Fatalf("attachment entry: %+v", es[2])
	}
	if es[2].Text != "output.txt (14 bytes)" {
		t.Errorf("caption = %q", es[2].Text)
	}
	// Each entry owns its meta and attachment bytes.
	es[0].Meta["x"] = "y"
	if es[1].Meta["x"] != "" || meta["x"] != "" {
		t.Error("meta is shared between entries")
	}
	split.Attachment.Data[0] = 'T'
	if a.Data[0] != 't' {
		t.Error("attachment bytes are shared with the split")
	}
	if got := NewEntries(KindReply, "t", target, chat.Split{}, nil); len(got) != 0 {
		t.Errorf("empty split gave %d entries", len(got))
	}
}

func TestEntryValidate(t *testing.T) {
	good := entries(KindReply, "turn", tg("1"), 2)[1]
	tests := []struct {
		name   string
		modify func(e *Entry)
	}{
		{"unknown kind", func(e *Entry) { e.Kind = "reply2" }},
		{"empty turn", func(e *Entry) { e.TurnID = "" }},
		{"turn with colon", func(e *Entry) { e.TurnID = "a:b" }},
		// The id is made to match, so that only the target is wrong.
		{"bad target", func(e *Entry) {
			e.Target = chat.ChatKey("slack", "1", "")
			e.ID = ID(e.Kind, e.TurnID, e.Target, e.Index)
		}},
		{"non-canonical target", func(e *Entry) {
			e.Target = chat.ChatKey(chat.Telegram, "01", "")
			e.ID = ID(e.Kind, e.TurnID, e.Target, e.Index)
		}},
		{"no target", func(e *Entry) { e.Target = chat.Key{}; e.ID = ID(e.Kind, e.TurnID, e.Target, e.Index) }},
		{"negative index", func(e *Entry) { e.Index = -1 }},
		{"index past total", func(e *Entry) { e.Index = 2 }},
		{"zero total", func(e *Entry) { e.Total = 0 }},
		{"id mismatch", func(e *Entry) { e.ID = "reply:turn:chat:telegram:1:0" }},
	}
	if err := good.validate(); err != nil {
		t.Fatalf("good entry: %v", err)
	}
	for _, tt := range tests {
		e := good
		tt.modify(&e)
		if err := e.validate(); err == nil {
			t.Errorf("%s: validate succeeded", tt.name)
		}
	}
}

func TestClassify(t *testing.T) {
	base := errors.New("x")
	tests := []struct {
		err  error
		want errClass
	}{
		{nil, classNone},
		{base, classTransient},
		{Transient(base), classTransient},
		{Permanent(base), classPermanent},
		{fmt.Errorf("send: %w", Permanent(base)), classPermanent},
		{RetryAfter(time.Second, base), classRetryAfter},
		{Permanent(RetryAfter(time.Second, base)), classRetryAfter},
		{Permanent(nil), classPermanent},
	}
	for _, tt := range tests {
		if got := classify(tt.err); got != tt.want {
			t.Errorf("classify(%v) = %d, want %d", tt.err, got, tt.want)
		}
	}
	if d, ok := RetryAfterOf(fmt.Errorf("wrapped: %w", RetryAfter(3*time.Second, base))); !ok || d != 3*time.Second {
		t.Errorf("RetryAfterOf = %v %v", d, ok)
	}
	if !errors.Is(Permanent(base), base) || !IsPermanent(Permanent(base)) || !IsTransient(base) || IsTransient(nil) {
		t.Error("helpers disagree with classify")
	}
}

func TestBackoff(t *testing.T) {
	b := Backoff{Base: time.Second, Max: 10 * time.Second, Factor: 2, Jitter: 0.2}
	wantNominal := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 10 * time.Second, 10 * time.Second}
	for i, want := range wantNominal {
		n := i + 1
		if got := b.Nominal(n); got != want {
			t.Errorf("Nominal(%d) = %v, want %v", n, got, want)
		}
		lo, hi := b.delay(n, 0), b.delay(n, 1)
		if lo != time.Duration(float64(want)*0.8) {
			t.Errorf("delay(%d, 0) = %v, want %v", n, lo, time.Duration(float64(want)*0.8))
		}
		if wantHi := min(time.Duration(float64(want)*1.2), b.Max); hi != wantHi {
			t.Errorf("delay(%d, 1) = %v, want %v", n, hi, wantHi)
		}
	}
	if got := b.Nominal(100000); got != b.Max {
		t.Errorf("Nominal(100000) = %v, want the cap", got)
	}
	if got := (Backoff{Jitter: -1}).delay(3, 1); got != 4*time.Second {
		t.Errorf("no-jitter default backoff delay(3) = %v, want 4s", got)
	}
}

func TestMux(t *testing.T) {
	var tgS, dcS, chatS, webS, localS Sender = newRecorder(nil), newRecorder(nil), newRecorder(nil), newRecorder(nil), newRecorder(nil)
	m := NewMux()
	for p, s := range map[string]Sender{"chat:telegram": tgS, "chat:discord": dcS, "web": webS, "local": localS} {
		if err := m.Handle(p, s); err != nil {
			t.Fatal(err)
		}
	}
	for _, bad := range []string{"", "chat:slack", "telegram", "local:x", "*"} {
		if err := m.Handle(bad, tgS); err == nil {
			t.Errorf("Handle(%q) succeeded", bad)
		}
	}
	if err := m.Handle("web", nil); err == nil {
		t.Error("Handle with a nil sender succeeded")
	}
	tests := []struct {
		target string
		want   Sender
	}{
		{"chat:telegram:1:2", tgS}, {"chat:discord:9", dcS}, {"web", webS}, {"local:a.jsonl", localS},
		{"nonsense", nil},
	}
	for _, tt := range tests {
		got, ok := m.Sender(tt.target)
		if ok != (tt.want != nil) || got != tt.want {
			t.Errorf("Sender(%q) = %v %v", tt.target, got, ok)
		}
	}
	m2 := NewMux()
	if err := m2.Handle("chat", chatS); err != nil {
		t.Fatal(err)
	}
	if got, _ := m2.Sender("chat:discord:9"); got != chatS {
		t.Error("the chat pattern does not match a discord target")
	}
	if _, ok := m2.Sender("web"); ok {
		t.Error("the chat pattern matches web")
	}
}

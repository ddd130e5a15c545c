package chat_test

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/a6afc2ce/hermes-hub/chat"
)

// targetForms is what every ParseTarget error lists.
const targetForms = "accepted: web, local:<path>, telegram:<chat_id>[:<thread_id>], discord:<channel_id>, or a full chat:… key"

func TestKeyRoundTrip(t *testing.T) {
	tests := []struct {
		s    string
		want chat.Key
	}{
		{"web", chat.WebKey},
		{"local:/var/lib/hub/pma/deliveries.jsonl", chat.LocalKey("/var/lib/hub/pma/deliveries.jsonl")},
		{"local:relative/with spaces/and:colons.jsonl", chat.LocalKey("relative/with spaces/and:colons.jsonl")},
		{"local:журнал.jsonl", chat.LocalKey("журнал.jsonl")},
		{"chat:telegram:-100123", chat.ChatKey(chat.Telegram, "-100123", "")},
		{"chat:telegram:-100123:45", chat.ChatKey(chat.Telegram, "-100123", "45")},
		{"chat:telegram:123", chat.ChatKey(chat.Telegram, "123", "")},
		{"chat:telegram:0", chat.ChatKey(chat.Telegram, "0", "")},
		{"chat:discord:123", chat.ChatKey(chat.Discord, "123", "")},
		{"chat:discord:1180000000000000000", chat.ChatKey(chat.Discord, "1180000000000000000", "")},
	}
	for _, tt := range tests {
		t.Run(tt.s, func(t *testing.T) {
			got, err := chat.ParseKey(tt.s)
			if err != nil {
				t.Fatalf("ParseKey(%q): %v", tt.s, err)
			}
			if got != tt.want {
				t.Errorf("ParseKey(%q) = %+v, want %+v", tt.s, got, tt.want)
			}
			if s := tt.want.String(); s != tt.s {
				t.Errorf("%+v.String() = %q, want %q", tt.want, s, tt.s)
			}
			// The canonical form is also a valid operator target.
			if k, err := chat.ParseTarget(tt.s); err != nil || k != tt.want {
				t.Errorf("ParseTarget(%q) = %+v, %v; want %+v", tt.s, k, err, tt.want)
			}
		})
	}
}

func TestParseTargetShortForms(t *testing.T) {
	tests := []struct {
		s    string
		want string // canonical key
	}{
		{"telegram:-100123", "chat:telegram:-100123"},
		{"telegram:-100123:45", "chat:telegram:-100123:45"},
		{"telegram:42", "chat:telegram:42"},
		{"discord:123", "chat:discord:123"},
	}
	for _, tt := range tests {
		got, err := chat.ParseTarget(tt.s)
		if err != nil {
			t.Errorf("ParseTarget(%q): %v", tt.s, err)
			continue
		}
		if got.String() != tt.want {
			t.Errorf("ParseTarget(%q) = %q, want %q", tt.s, got, tt.want)
		}
	}
}

func TestParseKeyRejects(t *testing.T) {
	tests := []struct {
		s      string
		reason string // what was wrong, when the parser can tell
	}{
		{"", ""},
		{"telegram", ""},
		{"discord", ""},
		{"WEB", ""},
		{"web:", ""},
		{" web", ""},
		{"local", ""},
		{"local:", "empty path"},
		{"local:a\nb", "control character at byte 1"},
		{"local:\x00", "control character at byte 0"},
		{"local:a\x7f", "control character at byte 1"},
		{"local:tab\there", "control character at byte 3"},
		{"local:\xff.jsonl", "not valid UTF-8"},
		{"chat:", "missing chat id"},
		{"chat:telegram", "missing chat id"},
		{"chat:slack:1", `unknown platform "slack"`},
		{"chat:web:1", `unknown platform "web"`},
		{"chat:Telegram:1", `unknown platform "Telegram"`},
		{"chat:telegram:", `telegram chat id "" is not an integer`},
		{"chat:telegram:abc", `telegram chat id "abc" is not an integer`},
		{"chat:telegram:01", `telegram chat id "01" is not an integer`},
		{"chat:telegram:-0", `telegram chat id "-0" is not an integer`},
		{"chat:telegram:+1", `telegram chat id "+1" is not an integer`},
		{"chat:telegram: 1", `telegram chat id " 1" is not an integer`},
		{"chat:telegram:123456789012345678901", "is not an integer"},
		{"chat:telegram:1:0", `telegram thread id "0" is not a positive integer`},
		{"chat:telegram:1:-5", `telegram thread id "-5" is not a positive integer`},
		{"chat:telegram:1:", `telegram thread id "" is not a positive integer`},
		{"chat:telegram:1:2:3", "too many parts"},
		{"chat:discord:", `discord channel id "" is not a snowflake`},
		{"chat:discord:-1", `discord channel id "-1" is not a snowflake`},
		{"chat:discord:1:2", "discord keys have no thread part"},
	}
	for _, tt := range tests {
		t.Run(tt.s, func(t *testing.T) {
			k, err := chat.ParseKey(tt.s)
			if err == nil {
				t.Fatalf("ParseKey(%q) = %+v, want an error", tt.s, k)
			}
			msg := err.Error()
			if !strings.Contains(msg, chat.AcceptedKeyForms) {
				t.Errorf("ParseKey(%q) error %q does not show the accepted forms", tt.s, msg)
			}
			if !strings.Contains(msg, tt.reason) {
				t.Errorf("ParseKey(%q) error %q does not say %q", tt.s, msg, tt.reason)
			}
			if k, err := chat.ParseTarget(tt.s); err == nil {
				t.Errorf("ParseTarget(%q) = %+v, want an error", tt.s, k)
			} else if !strings.Contains(err.Error(), targetForms) {
				t.Errorf("ParseTarget(%q) error %q does not show the accepted forms", tt.s, err)
			}
		})
	}
}

func TestParseTargetRejects(t *testing.T) {
	tests := []struct {
		s      string
		reason string
	}{
		{"telegram", ""},
		{"telegram:", `telegram chat id "" is not an integer`},
		{"telegram:abc", `telegram chat id "abc" is not an integer`},
		{"telegram:1:0", `telegram thread id "0" is not a positive integer`},
		{"discord:1:2", "discord keys have no thread part"},
		{"discord:x", `discord channel id "x" is not a snowflake`},
		{"slack:1", ""},
		{"chat:telegram:abc", ""},
	}
	for _, tt := range tests {
		k, err := chat.ParseTarget(tt.s)
		if err == nil {
			t.Errorf("ParseTarget(%q) = %+v, want an error", tt.s, k)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, targetForms) || !strings.Contains(msg, tt.reason) {
			t.Errorf("ParseTarget(%q) error %q, want it to say %q and show %q", tt.s, msg, tt.reason, targetForms)
		}
	}
}

func TestChannelKeyRoundTrip(t *testing.T) {
	tests := []struct {
		s    string
		want chat.ChannelKey
	}{
		{"telegram:-100123", chat.ChannelKey{Platform: chat.Telegram, ChatID: "-100123"}},
		{"telegram:-100123:45", chat.ChannelKey{Platform: chat.Telegram, ChatID: "-100123", ThreadID: "45"}},
		{"discord:123", chat.ChannelKey{Platform: chat.Discord, ChatID: "123"}},
	}
	for _, tt := range tests {
		got, err := chat.ParseChannelKey(tt.s)
		if err != nil || got != tt.want {
			t.Errorf("ParseChannelKey(%q) = %+v, %v; want %+v", tt.s, got, err, tt.want)
			continue
		}
		if s := got.String(); s != tt.s {
			t.Errorf("%+v.String() = %q, want %q", got, s, tt.s)
		}
		// Channel and target keys convert both ways.
		k := got.Target()
		if k.String() != "chat:"+tt.s {
			t.Errorf("%+v.Target() = %q, want %q", got, k, "chat:"+tt.s)
		}
		if c, ok := k.Channel(); !ok || c != got {
			t.Errorf("%q.Channel() = %+v, %v; want %+v, true", k, c, ok, got)
		}
	}

	for _, s := range []string{"", "web", "telegram", "chat:telegram:1", "telegram:abc", "telegram:1:0", "discord:1:2", "slack:1"} {
		c, err := chat.ParseChannelKey(s)
		if err == nil {
			t.Errorf("ParseChannelKey(%q) = %+v, want an error", s, c)
		} else if !strings.Contains(err.Error(), chat.AcceptedChannelForms) {
			t.Errorf("ParseChannelKey(%q) error %q does not show the accepted forms", s, err)
		}
	}
}

func TestKeyChannelOfNonChatTargets(t *testing.T) {
	for _, k := range []chat.Key{chat.WebKey, chat.LocalKey("x.jsonl"), {}} {
		if c, ok := k.Channel(); ok {
			t.Errorf("%+v.Channel() = %+v, true; want false", k, c)
		}
	}
	if !(chat.Key{}).IsZero() || chat.WebKey.IsZero() {
		t.Error("IsZero: want true only for the zero Key")
	}
}

// FuzzParseKey checks that whatever parses formats back to exactly the same
// string, parses again to the same Key, and survives being stored as JSON
// (the targets file keeps keys as JSON strings).
func FuzzParseKey(f *testing.F) {
	for _, s := range []string{
		"web", "local:/tmp/x.jsonl", "local:", "local:a\nb", "local:\xff",
		"chat:telegram:-100123", "chat:telegram:-100123:45", "chat:discord:123",
		"chat:", "chat:slack:1", "chat:telegram:01", "chat:telegram:1:0", "chat:discord:1:2",
		"telegram:-100123:45", "discord:123", "telegram",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if k, err := chat.ParseKey(s); err == nil {
			if got := k.String(); got != s {
				t.Fatalf("ParseKey(%q).String() = %q", s, got)
			}
			k2, err := chat.ParseKey(k.String())
			if err != nil || k2 != k {
				t.Fatalf("ParseKey(%q) again = %+v, %v; want %+v", s, k2, err, k)
			}
			if t2, err := chat.ParseTarget(s); err != nil || t2 != k {
				t.Fatalf("ParseTarget(%q) = %+v, %v; want %+v as ParseKey gives", s, t2, err, k)
			}
			b, err := json.Marshal(s)
			if err != nil {
				t.Fatal(err)
			}
			var back string
			if err := json.Unmarshal(b, &back); err != nil || back != s {
				t.Fatalf("key %q does not survive JSON: %q", s, back)
			}
		}
		if k, err := chat.ParseTarget(s); err == nil {
			k2, err := chat.ParseKey(k.String())
			if err != nil || k2 != k {
				t.Fatalf("ParseTarget(%q) = %+v, whose key %q parses to %+v, %v", s, k, k.String(), k2, err)
			}
		}
		if c, err := chat.ParseChannelKey(s); err == nil {
			if got := c.String(); got != s {
				t.Fatalf("ParseChannelKey(%q).String() = %q", s, got)
			}
			if c2, err := chat.ParseChannelKey(c.String()); err != nil || c2 != c {
				t.Fatalf("ParseChannelKey(%q) again = %+v, %v; want %+v", s, c2, err, c)
			}
		}
	})
}

// TestKeyNormalized: a local target is one key however its path is
// spelled: cleaned, and relative when it lies in the state directory.
func TestKeyNormalized(t *testing.T) {
	state := filepath.Join(string(filepath.Separator)+"srv", "hub", ".hub")
	want := chat.LocalKey(filepath.Join("pma", "x.jsonl"))
	for _, p := range []string{"pma/x.jsonl", "./pma/x.jsonl", "pma//x.jsonl", "pma/./sub/../x.jsonl", filepath.Join(state, "pma", "x.jsonl"), state + "//pma/x.jsonl"} {
		if got := chat.LocalKey(p).Normalized(state); got != want {
			t.Errorf("local:%s normalized to %v, want %v", p, got, want)
		}
	}
	for _, k := range []chat.Key{
		chat.LocalKey("../out.jsonl"), chat.LocalKey(filepath.Join(string(filepath.Separator)+"srv", "other.jsonl")), chat.LocalKey(state),
		chat.WebKey, chat.ChatKey(chat.Telegram, "1", "2"),
	} {
		if got := k.Normalized(state); got != k && got.Path != filepath.Clean(k.Path) {
			t.Errorf("%v normalized to %v", k, got)
		}
	}
	if got := chat.LocalKey(filepath.Join(state, "..", ".hub", "pma", "x.jsonl")).Normalized(state); got != want {
		t.Errorf("a path through .. into the state directory: %v", got)
	}
}

// TestAcceptedFormsFromSpecs: the accepted spellings shown in errors are
// derived from the platform table and read as they always did.
func TestAcceptedFormsFromSpecs(t *testing.T) {
	if want := "accepted: web, local:<path>, chat:telegram:<chat_id>[:<thread_id>], chat:discord:<channel_id>"; chat.AcceptedKeyForms != want {
		t.Errorf("AcceptedKeyForms = %q, want %q", chat.AcceptedKeyForms, want)
	}
	if want := "accepted: telegram:<chat_id>[:<thread_id>], discord:<channel_id>"; chat.AcceptedChannelForms != want {
		t.Errorf("AcceptedChannelForms = %q, want %q", chat.AcceptedChannelForms, want)
	}
	var names []chat.Platform
	for _, s := range chat.Specs() {
		names = append(names, s.Name)
		if got, ok := chat.SpecOf(s.Name); !ok || got.Name != s.Name || got.MaxUnits != chat.ChunkOptionsFor(s.Name).MaxUnits {
			t.Errorf("SpecOf(%q) = %+v, %v", s.Name, got, ok)
		}
	}
	if want := []chat.Platform{chat.Telegram, chat.Discord}; !slices.Equal(names, want) {
		t.Errorf("Specs() = %v, want %v", names, want)
	}
	for _, p := range []chat.Platform{chat.Web, "slack", ""} {
		if _, ok := chat.SpecOf(p); ok {
			t.Errorf("SpecOf(%q) found a chat platform", p)
		}
	}
}

// TestKeyValidate: a key built from its parts is accepted only when it is
// one ParseKey gives back, spelled canonically.
func TestKeyValidate(t *testing.T) {
	for _, k := range []chat.Key{chat.WebKey, chat.LocalKey("pma/x.jsonl"), chat.ChatKey(chat.Telegram, "-100", "7"), chat.ChatKey(chat.Discord, "123", "")} {
		if err := k.Validate(); err != nil {
			t.Errorf("%v.Validate() = %v", k, err)
		}
	}
	for _, tt := range []struct {
		k    chat.Key
		want string
	}{
		{chat.Key{}, "empty target key"},
		{chat.ChatKey(chat.Telegram, "01", ""), `telegram chat id "01" is not an integer`},
		{chat.ChatKey(chat.Discord, "1", "2"), "discord keys have no thread part"},
		{chat.ChatKey("slack", "1", ""), `unknown platform "slack"`},
		{chat.ChatKey(chat.Telegram, "1:2", ""), "not canonical"},
		{chat.Key{Kind: chat.KindWeb, Path: "x"}, "not canonical"},
		{chat.LocalKey(""), "empty path"},
	} {
		err := tt.k.Validate()
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), chat.AcceptedKeyForms) {
			t.Errorf("%+v.Validate() = %v, want an error saying %q and the accepted forms", tt.k, err, tt.want)
		}
	}
}

// TestKeyText: a Key is written as its canonical string wherever it is
// encoded (JSON of outbox entries, the API) and read back by ParseKey.
func TestKeyText(t *testing.T) {
	type doc struct {
		Target chat.Key `json:"target"`
	}
	for _, k := range []chat.Key{chat.WebKey, chat.LocalKey("pma/a b.jsonl"), chat.ChatKey(chat.Telegram, "-100", "7"), chat.ChatKey(chat.Discord, "123", ""), {}} {
		b, err := json.Marshal(doc{k})
		if err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(map[string]string{"target": k.String()})
		if string(b) != string(want) {
			t.Errorf("%+v encodes as %s, want %s", k, b, want)
		}
		var back doc
		if err := json.Unmarshal(b, &back); err != nil || back.Target != k {
			t.Errorf("%s decodes to %+v, %v; want %+v", b, back.Target, err, k)
		}
	}
	var d doc
	err := json.Unmarshal([]byte(`{"target":"chat:telegram:abc"}`), &d)
	if err == nil || !strings.Contains(err.Error(), `telegram chat id "abc" is not an integer`) {
		t.Errorf("a bad key decodes with %v, want the parse error", err)
	}
}

func TestKeyLabel(t *testing.T) {
	for k, want := range map[chat.Key]string{
		chat.WebKey: "web", chat.LocalKey("x"): "local", chat.ChatKey(chat.Telegram, "1", ""): "telegram",
		chat.ChatKey(chat.Discord, "1", ""): "discord", {}: "unknown",
	} {
		if got := k.Label(); got != want {
			t.Errorf("%+v.Label() = %q, want %q", k, got, want)
		}
	}
}

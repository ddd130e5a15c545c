package telegram

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode"

	"github.com/a6afc2ce/hermes-hub/chat"
)

func decodeJSON(t testing.TB, s string) rawUpdate {
	t.Helper()
	u, err := decodeUpdate([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func TestNormalize(t *testing.T) {
	tests := []struct {
		name   string
		update string
		// want is checked field by field when in is expected; drop otherwise.
		want *chat.Inbound
		drop string
	}{
		{
			name:   "private message",
			update: `{"update_id":1,"message":{"message_id":7,"from":{"id":42,"first_name":"Ada","last_name":"L"},"chat":{"id":42,"type":"private","first_name":"Ada","last_name":"L"},"date":1700000000,"text":"/fs_listdir ."}}`,
			want: &chat.Inbound{TurnID: "telegram.42.7", ChatID: "42", MessageID: "7", UserID: "42", UserName: "Ada L", ChatType: "private",
				ChatTitle: "Ada L", Text: "/fs_listdir ."},
		},
		{
			name:   "group command addressed to this bot",
			update: `{"update_id":2,"message":{"message_id":8,"from":{"id":1,"username":"op"},"chat":{"id":-100200,"type":"supergroup","title":"Ops"},"date":1,"text":"/fs_readfile@hermestestbot README.md"}}`,
			want: &chat.Inbound{TurnID: "telegram.-100200.8", ChatID: "-100200", MessageID: "8", UserID: "1", UserName: "op", ChatType: "supergroup",
				ChatTitle: "Ops", Text: "/fs_readfile README.md"},
		},
		{
			name:   "bare command with bot name and YAML on the next line",
			update: `{"update_id":3,"message":{"message_id":9,"from":{"id":1},"chat":{"id":-5,"type":"group","title":"G"},"date":1,"text":"/fs.readRange@HermesTestBot\npath: a.txt"}}`,
			want:   &chat.Inbound{TurnID: "telegram.-5.9", ChatID: "-5", MessageID: "9", UserID: "1", ChatType: "group", ChatTitle: "G", Text: "/fs.readRange\npath: a.txt"},
		},
		{
			name:   "command for another bot",
			update: `{"update_id":4,"message":{"message_id":10,"from":{"id":1},"chat":{"id":-5,"type":"group"},"date":1,"text":"/start@OtherBot"}}`,
			drop:   "command for another bot",
		},
		{
			name:   "edited message",
			update: `{"update_id":5,"edited_message":{"message_id":11,"from":{"id":1},"chat":{"id":42,"type":"private"},"date":1,"edit_date":1700000100,"text":"/verbs"}}`,
			want:   &chat.Inbound{TurnID: "telegram.42.11.e1700000100", ChatID: "42", MessageID: "11", UserID: "1", ChatType: "private", Text: "/verbs", Edited: true},
		},
		{
			name: "forum topic message",
			update: `{"update_id":6,"message":{"message_id":50,"message_thread_id":44,"is_topic_message":true,"from":{"id":1},"chat":{"id":-100300,"type":"supergroup","title":"Ops","is_forum":true},"date":1,"text":"/verbs",
				"reply_to_message":{"message_id":44,"date":1,"chat":{"id":-100300,"type":"supergroup"},"forum_topic_created":{"name":"Deploys","icon_color":1}}}}`,
			want: &chat.Inbound{TurnID: "telegram.-100300.50", ChatID: "-100300", ThreadID: "44", MessageID: "50", UserID: "1", ChatType: "supergroup",
				ChatTitle: "Ops", TopicTitle: "Deploys", Text: "/verbs"},
		},
		{
			name:   "reply thread in a non-forum supergroup is not a topic",
			update: `{"update_id":7,"message":{"message_id":51,"message_thread_id":40,"from":{"id":1},"chat":{"id":-100300,"type":"supergroup","title":"Ops"},"date":1,"text":"/verbs"}}`,
			want:   &chat.Inbound{TurnID: "telegram.-100300.51", ChatID: "-100300", MessageID: "51", UserID: "1", ChatType: "supergroup", ChatTitle: "Ops", Text: "/verbs"},
		},
		{
			name:   "sent by a bot",
			update: `{"update_id":8,"message":{"message_id":12,"from":{"id":9,"is_bot":true},"chat":{"id":-5,"type":"group"},"date":1,"text":"/verbs"}}`,
			drop:   "sent by a bot",
		},
		{
			name:   "no text",
			update: `{"update_id":9,"message":{"message_id":13,"from":{"id":1},"chat":{"id":42,"type":"private"},"date":1,"sticker":{}}}`,
			drop:   "no text",
		},
		{
			name:   "caption counts as text",
			update: `{"update_id":10,"message":{"message_id":14,"from":{"id":1},"chat":{"id":42,"type":"private"},"date":1,"caption":"/whoami"}}`,
			want:   &chat.Inbound{TurnID: "telegram.42.14", ChatID: "42", MessageID: "14", UserID: "1", ChatType: "private", Text: "/whoami"},
		},
		{
			name:   "not a message",
			update: `{"update_id":11,"callback_query":{"id":"x"}}`,
			drop:   "not a message",
		},
		{
			name:   "migration service message",
			update: `{"update_id":12,"message":{"message_id":15,"from":{"id":1},"chat":{"id":-5,"type":"group"},"date":1,"migrate_to_chat_id":-1001234}}`,
			drop:   "group migrated",
		},
	}
	n := newNormalizer("HermesTestBot")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev := n.normalize(decodeJSON(t, tt.update))
			if tt.want == nil {
				if ev.in != nil || ev.drop != tt.drop {
					t.Fatalf("want dropped (%q), got in=%+v drop=%q", tt.drop, ev.in, ev.drop)
				}
				return
			}
			if ev.in == nil {
				t.Fatalf("dropped: %s", ev.drop)
			}
			got, w := ev.in, tt.want
			if got.TurnID != w.TurnID || got.ChatID != w.ChatID || got.ThreadID != w.ThreadID || got.MessageID != w.MessageID ||
				got.UserID != w.UserID || (w.UserName != "" && got.UserName != w.UserName) || got.ChatType != w.ChatType ||
				(w.ChatTitle != "" && got.ChatTitle != w.ChatTitle) || got.TopicTitle != w.TopicTitle || got.Text != w.Text || got.Edited != w.Edited {
				t.Fatalf("got  %+v\nwant %+v", got, w)
			}
			if got.Platform != chat.Telegram || got.ReplyMeta[MetaReplyTo] != got.MessageID {
				t.Fatalf("platform %q reply meta %v", got.Platform, got.ReplyMeta)
			}
		})
	}
}

// TestNormalizeTopicTitleRemembered: the topic's name comes from its
// creation service message and is used for later messages that do not
// carry it; a rename replaces it; the directory shows "Chat / Topic".
func TestNormalizeTopicTitleRemembered(t *testing.T) {
	n := newNormalizer("HermesTestBot")
	created := `{"update_id":1,"message":{"message_id":70,"message_thread_id":70,"is_topic_message":true,"from":{"id":1},"chat":{"id":-100400,"type":"supergroup","title":"Infra"},"date":1,"forum_topic_created":{"name":"Alerts"}}}`
	if ev := n.normalize(decodeJSON(t, created)); ev.in != nil {
		t.Fatalf("a service message is not a turn: %+v", ev.in)
	}
	msg := `{"update_id":2,"message":{"message_id":71,"message_thread_id":70,"is_topic_message":true,"from":{"id":1},"chat":{"id":-100400,"type":"supergroup","title":"Infra"},"date":1,"text":"/verbs"}}`
	ev := n.normalize(decodeJSON(t, msg))
	if ev.in == nil || ev.in.TopicTitle != "Alerts" || ev.in.Display() != "Infra / Alerts" || ev.in.ReplyKey().String() != "chat:telegram:-100400:70" {
		t.Fatalf("got %+v", ev.in)
	}
	renamed := `{"update_id":3,"message":{"message_id":72,"message_thread_id":70,"is_topic_message":true,"from":{"id":1},"chat":{"id":-100400,"type":"supergroup","title":"Infra"},"date":1,"forum_topic_edited":{"name":"Pager"}}}`
	n.normalize(decodeJSON(t, renamed))
	if ev := n.normalize(decodeJSON(t, msg)); ev.in.Display() != "Infra / Pager" {
		t.Fatalf("display after rename: %q", ev.in.Display())
	}
}

func TestNormalizeMigration(t *testing.T) {
	n := newNormalizer("b")
	for _, tt := range []struct{ update, from, to string }{
		{`{"update_id":1,"message":{"message_id":1,"chat":{"id":-5,"type":"group"},"date":1,"migrate_to_chat_id":-1009}}`, "-5", "-1009"},
		{`{"update_id":2,"message":{"message_id":1,"chat":{"id":-1009,"type":"supergroup"},"date":1,"migrate_from_chat_id":-5}}`, "-5", "-1009"},
	} {
		ev := n.normalize(decodeJSON(t, tt.update))
		if ev.migrate == nil || ev.migrate.from != tt.from || ev.migrate.to != tt.to {
			t.Fatalf("migration %+v, want %s → %s", ev.migrate, tt.from, tt.to)
		}
	}
}

func TestDecodeUpdateKeepsID(t *testing.T) {
	u, err := decodeUpdate([]byte(`{"update_id":77,"message":{"message_id":"not a number"}}`))
	if err == nil || u.ID != 77 {
		t.Fatalf("want an error and id 77, got %v, %d", err, u.ID)
	}
}

func FuzzNormalize(f *testing.F) {
	f.Add([]byte(`{"update_id":1,"message":{"message_id":7,"from":{"id":42},"chat":{"id":42,"type":"private"},"date":1,"text":"/fs_listdir ."}}`))
	f.Add([]byte(`{"update_id":2,"edited_message":{"message_id":8,"message_thread_id":3,"is_topic_message":true,"from":{"id":1},"chat":{"id":-100,"type":"supergroup"},"date":1,"text":"/x@b y"}}`))
	f.Add([]byte(`{"update_id":3,"message":{"message_id":1,"chat":{"id":-5},"migrate_to_chat_id":-9}}`))
	f.Add([]byte(`{"update_id":4,"message":{"message_id":-1,"message_thread_id":-3,"is_topic_message":true,"from":{"id":-1},"chat":{"id":9223372036854775807},"text":"/@"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		u, err := decodeUpdate(data)
		if err != nil {
			return
		}
		ev := newNormalizer("b").normalize(u)
		if ev.in == nil {
			return
		}
		in := ev.in
		if strings.ContainsAny(in.TurnID, ":/\x00") {
			t.Fatalf("turn id %q", in.TurnID)
		}
		k := in.ReplyKey().String()
		if back, err := chat.ParseKey(k); err != nil || back.String() != k {
			t.Fatalf("reply key %q does not round-trip: %v", k, err)
		}
		if strings.HasPrefix(in.Text, "/") {
			first := in.Text
			if i := strings.IndexFunc(first, unicode.IsSpace); i >= 0 {
				first = first[:i]
			}
			if strings.Contains(first, "@") {
				t.Fatalf("bot name left in %q", in.Text)
			}
		}
		if _, err := json.Marshal(in); err != nil {
			t.Fatal(err)
		}
	})
}

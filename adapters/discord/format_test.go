package discord

import (
	"strings"
	"testing"

	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/outbox"
)

func TestDiscordText(t *testing.T) {
	z := zwsp
	for _, tc := range []struct{ name, in, want string }{
		{"plain", "hello `x` world", "hello `x` world"},
		{"three-tick fence unchanged", "```go\nx := 1\n```", "```go\nx := 1\n```"},
		{"long fence shortened, runs broken", "````\na ``` b\n````", "```\na ``" + z + "` b\n```"},
		{"fence line inside content", "`````md\n```js\nx\n```\n`````", "```md\n``" + z + "`js\nx\n``" + z + "`\n```"},
		{"five backticks", "````\n`````x\n````", "```\n``" + z + "``" + z + "`x\n```"},
		{"two backticks stay", "````\n`` ```\n````", "```\n`` ``" + z + "`\n```"},
		{"outside code unchanged", "say ``` here\n````\ncode\n````\nafter ```", "say ``` here\n```\ncode\n```\nafter ```"},
		{"crlf kept", "````\r\na```b\r\n````\r\n", "```\r\na``" + z + "`b\r\n```\r\n"},
		{"unclosed fence", "````py\nprint(1)", "```py\nprint(1)"},
		{"closing fence needs enough ticks", "````\n```\n````", "```\n``" + z + "`\n```"},
		{"closer with trailing spaces", "````\nx\n````  \ny", "```\nx\n```\ny"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := discordText(tc.in); got != tc.want {
				t.Errorf("discordText(%q)\n got %q\nwant %q", tc.in, got, tc.want)
			}
		})
	}
}

// TestDiscordTextOfHubFences: what the hub renders for output that
// contains ``` comes out as one Discord code block whose text, with the
// zero-width spaces removed, is the output.
func TestDiscordTextOfHubFences(t *testing.T) {
	content := "before\n```go\nfunc main() {}\n```\nafter ````` five"
	out := discordText(executor.Fence(content, "md"))
	if !strings.HasPrefix(out, "```md\n") || !strings.HasSuffix(out, "\n```") {
		t.Fatalf("not a ``` block: %q", out)
	}
	inner := out[len("```md\n") : len(out)-len("\n```")]
	if strings.Contains(inner, "```") {
		t.Errorf("the block's content still holds ```: %q", inner)
	}
	if got := strings.ReplaceAll(inner, zwsp, ""); got != content {
		t.Errorf("content changed: %q", got)
	}
}

func FuzzDiscordText(f *testing.F) {
	for _, s := range []string{"", "a", "```\nx\n```", "````\n```\n````", "`````go\n``` ````\n`````\ntail ```", "````\r\n```\r\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := discordText(s)
		if !strings.Contains(s, "```") && out != s {
			t.Fatalf("text without ``` changed: %q → %q", s, out)
		}
		in := strings.Split(s, "\n")
		got := strings.Split(out, "\n")
		if len(in) != len(got) {
			t.Fatalf("line count changed: %d → %d", len(in), len(got))
		}
		open := false
		for i := range in {
			plain := strings.ReplaceAll(got[i], zwsp, "")
			isFence := strings.HasPrefix(got[i], "```") && !strings.Contains(got[i][3:], "`")
			switch {
			case isFence:
				open = !open
				if !strings.HasPrefix(in[i], "```") {
					t.Fatalf("line %d became a fence: %q → %q", i, in[i], got[i])
				}
			case open:
				if strings.Contains(got[i], "```") {
					t.Fatalf("line %d inside a block still holds ```: %q", i, got[i])
				}
				if plain != strings.ReplaceAll(in[i], zwsp, "") {
					t.Fatalf("line %d text changed: %q → %q", i, in[i], got[i])
				}
			default:
				if got[i] != in[i] {
					t.Fatalf("line %d outside a block changed: %q → %q", i, in[i], got[i])
				}
			}
		}
	})
}

func TestPrepare(t *testing.T) {
	// A chunk at the limit that grows once its backtick runs are broken is
	// sent as a file, so one entry stays one message.
	var b strings.Builder
	b.WriteString("````\n")
	for chat.UTF16Len(b.String()) < chat.DiscordLimit-40 {
		b.WriteString("``` ``` ``` ```\n")
	}
	b.WriteString("````")
	text := b.String()
	if chat.UTF16Len(text) > chat.DiscordLimit {
		t.Fatalf("setup: %d units", chat.UTF16Len(text))
	}
	m := prepare(&outbox.Entry{ID: "reply:t:chat:discord:1:1", Index: 1, Total: 3, Text: text})
	if m.File == nil || string(m.File.Data) != text || m.File.Name != "part-2.md" {
		t.Fatalf("overflowing chunk not sent as a file: %+v", m.File)
	}
	if !strings.Contains(m.Content, "Part 2 of 3") || chat.UTF16Len(m.Content) > chat.DiscordLimit {
		t.Errorf("content = %q", m.Content)
	}

	// A chunk that fits is sent as text.
	m = prepare(&outbox.Entry{Text: "````\na ``` b\n````"})
	if m.File != nil || m.Content != "```\na ``"+zwsp+"` b\n```" {
		t.Errorf("prepare = %+v", m)
	}
	// The overflow attachment of a reply travels with its caption.
	m = prepare(&outbox.Entry{Text: "output.txt (5 bytes)", Attachment: &chat.Attachment{Name: "output.txt", Data: []byte("hello")}})
	if m.File == nil || m.File.MIME != chat.AttachmentMIME || m.Content != "output.txt (5 bytes)" {
		t.Errorf("prepare = %+v", m)
	}
	// Discord refuses empty messages.
	if m := prepare(&outbox.Entry{Text: " \n"}); m.Content != emptyContent {
		t.Errorf("empty chunk content = %q", m.Content)
	}
}

func TestNonce(t *testing.T) {
	ids := []string{"reply:discord.1.2:chat:discord:1:0", "reply:discord.1.2:chat:discord:1:1", "notice:x:chat:discord:1:0", ""}
	seen := map[string]string{}
	for _, id := range ids {
		n := Nonce(id)
		if n != Nonce(id) {
			t.Fatalf("Nonce(%q) is not deterministic", id)
		}
		if len(n) == 0 || len(n) > 25 {
			t.Errorf("Nonce(%q) = %q: %d characters (1 to 25 accepted)", id, n, len(n))
		}
		if prev, dup := seen[n]; dup {
			t.Errorf("ids %q and %q share the nonce %q", prev, id, n)
		}
		seen[n] = id
	}
}

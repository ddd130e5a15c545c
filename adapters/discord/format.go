package discord

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/outbox"
)

// zwsp is the zero-width space that breaks a run of backticks inside a code
// block: Discord closes a block at the first ``` anywhere, not only at the
// start of a line, and renders only ``` fences well.
const zwsp = "\u200b"

// emptyContent stands in for a chunk with no visible text; Discord rejects
// an empty message.
const emptyContent = "(empty)"

// discordText rewrites a chunk's Markdown for Discord: every code fence
// (the hub makes fences longer than any backtick run they contain) becomes a
// ``` fence with its info string, and inside code blocks every run of three
// or more backticks gets a zero-width space after each pair, so the block
// renders as one block and its text reads the same. Text outside code
// blocks is unchanged.
func discordText(s string) string {
	if !strings.Contains(s, "```") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	ticks := 0 // backticks of the open fence; 0 outside a code block
	for len(s) > 0 {
		line, rest, nl := strings.Cut(s, "\n")
		s = rest
		body := strings.TrimSuffix(line, "\r")
		cr := line[len(body):]
		n := 0
		for n < len(body) && body[n] == '`' {
			n++
		}
		switch {
		case ticks == 0 && n >= 3 && !strings.Contains(body[n:], "`"):
			ticks = n
			b.WriteString("```")
			b.WriteString(body[n:])
		case ticks > 0 && n >= ticks && strings.Trim(body[n:], " \t") == "":
			ticks = 0
			b.WriteString("```")
		case ticks > 0:
			breakRuns(&b, body)
		default:
			b.WriteString(body)
		}
		b.WriteString(cr)
		if nl {
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// breakRuns writes line with a zero-width space after every second backtick
// of each run of three or more.
func breakRuns(b *strings.Builder, line string) {
	for i := 0; i < len(line); {
		if line[i] != '`' {
			j := strings.IndexByte(line[i:], '`')
			if j < 0 {
				b.WriteString(line[i:])
				return
			}
			b.WriteString(line[i : i+j])
			i += j
			continue
		}
		j := i
		for j < len(line) && line[j] == '`' {
			j++
		}
		run := j - i
		if run < 3 {
			b.WriteString(line[i:j])
		} else {
			for k := 0; k < run; k++ {
				if k > 0 && k%2 == 0 {
					b.WriteString(zwsp)
				}
				b.WriteByte('`')
			}
		}
		i = j
	}
}

// upload is a file sent with a message.
type upload struct {
	Name string
	MIME string
	Data []byte
}

// message is what one outbox entry becomes on Discord.
type message struct {
	Content    string
	File       *upload
	Components []component // a held call's buttons
}

// prepare turns an entry into its Discord message: the text formatted by
// discordText and the entry's attachment. A chunk that no longer fits in
// Discord's 2000 characters once formatted is sent as a file with a short
// note instead, so one entry stays one message.
func prepare(e *outbox.Entry) message {
	m := message{Content: discordText(e.Text), Components: confirmRow(e)}
	if a := e.Attachment; a != nil {
		mime := a.MIME
		if mime == "" {
			mime = chat.AttachmentMIME
		}
		name := a.Name
		if name == "" {
			name = chat.DefaultAttachmentName
		}
		m.File = &upload{Name: name, MIME: mime, Data: a.Data}
	}
	if chat.UTF16Len(m.Content) > chat.DiscordLimit {
		if m.File == nil {
			m.File = &upload{Name: fmt.Sprintf("part-%d.md", e.Index+1), MIME: "text/markdown; charset=utf-8", Data: []byte(e.Text)}
			m.Content = fmt.Sprintf("Part %d of %d is attached as a file: it does not fit in one Discord message.", e.Index+1, max(e.Total, e.Index+1))
		} else {
			m.Content = cutUTF16(m.Content, chat.DiscordLimit-1) + "…"
		}
	}
	if strings.TrimSpace(m.Content) == "" && m.File == nil {
		m.Content = emptyContent
	}
	return m
}

// cutUTF16 returns the longest prefix of s, on a rune boundary, of at most
// n UTF-16 code units.
func cutUTF16(s string, n int) string {
	units := 0
	for i, r := range s {
		w := 1
		if r >= 0x10000 {
			w = 2
		}
		if r == utf8.RuneError {
			w = 1
		}
		if units+w > n {
			return s[:i]
		}
		units += w
	}
	return s
}

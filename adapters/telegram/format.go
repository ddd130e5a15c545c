package telegram

import (
	"strings"

	"github.com/a6afc2ce/hermes-hub/chat"
)

// toHTML renders one chunk of the hub's Markdown-ish text as Telegram HTML:
// & < > are escaped everywhere, ``` fences become <pre> blocks (with
// <code class="language-x"> when the fence names a language), `inline code`
// becomes <code>, and nothing else is interpreted. It is applied to each
// chunk after splitting, so the platform limit (counted on the text Telegram
// shows, not on the markup) holds. A fence left open at the end of the
// chunk is closed, so the result is always balanced.
//
// Fences are read as the chunker reads them: a line of 3 or more backticks
// and an info string without backticks opens one; a line of at least as many
// backticks followed by nothing but spaces closes it.
func toHTML(chunk string) string {
	chunk = strings.ToValidUTF8(chunk, "\uFFFD")
	var b strings.Builder
	b.Grow(len(chunk) + len(chunk)/8)
	ticks := 0        // backticks of the open fence; 0 outside
	closeTag := ""    // what closes the open fence
	firstLine := true // no content line written in the open fence yet
	for rest := chunk; ; {
		line, tail, more := strings.Cut(rest, "\n")
		probe := strings.TrimSuffix(line, "\r")
		switch {
		case ticks == 0:
			if n, lang, ok := fenceOpen(probe); ok {
				ticks, firstLine = n, true
				if lang != "" {
					b.WriteString(`<pre><code class="language-` + lang + `">`)
					closeTag = "</code></pre>"
				} else {
					b.WriteString("<pre>")
					closeTag = "</pre>"
				}
				// The line break after the opening line is not content.
				if !more {
					return b.String() + closeTag
				}
				rest = tail
				continue
			}
			inlineHTML(&b, line)
		case fenceClose(probe, ticks):
			b.WriteString(closeTag)
			ticks = 0
		default:
			if !firstLine {
				b.WriteByte('\n')
			}
			firstLine = false
			escapeHTML(&b, line)
			if !more {
				return b.String() + closeTag
			}
			rest = tail
			continue
		}
		if !more {
			break
		}
		b.WriteByte('\n')
		rest = tail
	}
	if ticks != 0 {
		b.WriteString(closeTag)
	}
	return b.String()
}

// fenceOpen reports whether line opens a fence, with its backtick count and
// its language (the first word of the info string, reduced to characters
// that are safe in an attribute).
func fenceOpen(line string) (ticks int, lang string, ok bool) {
	n := 0
	for n < len(line) && line[n] == '`' {
		n++
	}
	if n < 3 || strings.IndexByte(line[n:], '`') >= 0 {
		return 0, "", false
	}
	info := strings.Fields(line[n:])
	if len(info) > 0 {
		lang = cleanLang(info[0])
	}
	return n, lang, true
}

// fenceClose reports whether line closes a fence of ticks backticks.
func fenceClose(line string, ticks int) bool {
	n := 0
	for n < len(line) && line[n] == '`' {
		n++
	}
	return n >= ticks && strings.Trim(line[n:], " \t") == ""
}

// cleanLang keeps the characters a language name uses (go, c++, c#,
// objective-c, shell_session, 1c) and drops the rest.
func cleanLang(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("+#-_.", r) {
			b.WriteRune(r)
		}
		if b.Len() >= 32 {
			break
		}
	}
	return b.String()
}

// inlineHTML writes one line outside fences: code spans (a run of backticks
// up to the next run of the same length) become <code>, everything else is
// escaped text. A run without a partner stays literal.
func inlineHTML(b *strings.Builder, line string) {
	for i := 0; i < len(line); {
		j := strings.IndexByte(line[i:], '`')
		if j < 0 {
			escapeHTML(b, line[i:])
			return
		}
		escapeHTML(b, line[i:i+j])
		i += j
		n := runLen(line, i)
		end := findRun(line, i+n, n)
		if end < 0 {
			b.WriteString(line[i : i+n])
			i += n
			continue
		}
		code := line[i+n : end]
		// CommonMark: one space on each side is padding when both are there
		// and the span is not only spaces.
		if len(code) >= 2 && code[0] == ' ' && code[len(code)-1] == ' ' && strings.Trim(code, " ") != "" {
			code = code[1 : len(code)-1]
		}
		b.WriteString("<code>")
		escapeHTML(b, code)
		b.WriteString("</code>")
		i = end + n
	}
}

// runLen is the length of the backtick run at s[i].
func runLen(s string, i int) int {
	n := 0
	for i+n < len(s) && s[i+n] == '`' {
		n++
	}
	return n
}

// findRun returns the index of the next run of exactly n backticks at or
// after i, or -1.
func findRun(s string, i, n int) int {
	for i < len(s) {
		j := strings.IndexByte(s[i:], '`')
		if j < 0 {
			return -1
		}
		i += j
		m := runLen(s, i)
		if m == n {
			return i
		}
		i += m
	}
	return -1
}

// escapeHTML writes s with &, < and > escaped, the only escapes Telegram's
// HTML needs.
func escapeHTML(b *strings.Builder, s string) {
	for {
		i := strings.IndexAny(s, "&<>")
		if i < 0 {
			b.WriteString(s)
			return
		}
		b.WriteString(s[:i])
		switch s[i] {
		case '&':
			b.WriteString("&amp;")
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		}
		s = s[i+1:]
	}
}

// plainText is the chunk as sent without parse mode: valid UTF-8, nothing
// else changed.
func plainText(chunk string) string { return strings.ToValidUTF8(chunk, "\uFFFD") }

// truncateUnits cuts s to at most max UTF-16 code units at a rune boundary,
// ending it with "…" when it was cut.
func truncateUnits(s string, max int) string {
	if chat.UTF16Len(s) <= max {
		return s
	}
	units := 0
	for i, r := range s {
		w := 1
		if r >= 0x10000 {
			w = 2
		}
		if units+w > max-1 {
			return s[:i] + "…"
		}
		units += w
	}
	return s
}

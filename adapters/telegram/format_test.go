package telegram

import (
	"html"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/a6afc2ce/hermes-hub/chat"
)

func TestToHTML(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"plain", "hello", "hello"},
		{"escapes", "a < b && c > d", "a &lt; b &amp;&amp; c &gt; d"},
		{"no other markdown", "*bold* _it_ [x](y) <b>", "*bold* _it_ [x](y) &lt;b&gt;"},
		{"inline code", "file `a<b>.go` here", "file <code>a&lt;b&gt;.go</code> here"},
		{"inline double backticks", "x ``a`b`` y", "x <code>a`b</code> y"},
		{"inline padding", "`` `x` ``", "<code>`x`</code>"},
		{"unmatched backtick", "it`s fine", "it`s fine"},
		{"unmatched run length", "``a` b", "``a` b"},
		{"fence with language", "out:\n```go\nif a < b {\n}\n```\ndone", "out:\n<pre><code class=\"language-go\">if a &lt; b {\n}</code></pre>\ndone"},
		{"fence without language", "```\nx & y\n```", "<pre>x &amp; y</pre>"},
		{"fence info words", "```yaml title=x\nk: v\n```", "<pre><code class=\"language-yaml\">k: v</code></pre>"},
		{"language sanitised", "```c\"><script>\nx\n```", "<pre><code class=\"language-cscript\">x</code></pre>"},
		{"nested backticks in longer fence", "````\n```go\nx\n```\n````", "<pre>```go\nx\n```</pre>"},
		{"inline code inside fence stays literal", "```\n`x` & <y>\n```", "<pre>`x` &amp; &lt;y&gt;</pre>"},
		{"closing fence longer", "```\nx\n`````  \nafter", "<pre>x</pre>\nafter"},
		{"shorter run does not close", "````\nx\n```\ny\n````", "<pre>x\n```\ny</pre>"},
		{"unclosed fence at chunk end", "head\n```sh\nline 1\nline 2", "head\n<pre><code class=\"language-sh\">line 1\nline 2</code></pre>"},
		{"unclosed fence ending in newline", "```\nline\n", "<pre>line\n</pre>"},
		{"fence opened on last line", "text\n```", "text\n<pre></pre>"},
		{"blank lines in fence", "```\na\n\nb\n```", "<pre>a\n\nb</pre>"},
		{"crlf fence", "```go\r\nx\r\n```\r\n", "<pre><code class=\"language-go\">x\r</code></pre>\n"},
		{"trailing newline kept", "a\nb\n", "a\nb\n"},
		{"marker after fence", "```\nx\n```\n(1/2)", "<pre>x</pre>\n(1/2)"},
		{"invalid utf8 replaced", "a\xffb", "a\uFFFDb"},
		{"indented fence is text", "  ```\n  x", "  ```\n  x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := toHTML(tt.in); got != tt.want {
				t.Errorf("toHTML(%q)\n got %q\nwant %q", tt.in, got, tt.want)
			}
		})
	}
}

// TestToHTMLAfterChunking renders the chunks of a long reply with a code
// block: each chunk is balanced HTML on its own and its visible text fits
// Telegram's limit, so escaping after splitting never breaks the limit.
func TestToHTMLAfterChunking(t *testing.T) {
	var b strings.Builder
	b.WriteString("`out.txt` (300 lines)\n```text\n")
	for i := range 300 {
		b.WriteString(strings.Repeat("<&>", 10))
		b.WriteString(" line ")
		b.WriteString(strings.Repeat("x", i%40))
		b.WriteString("\n")
	}
	b.WriteString("```\nexit 0")
	split := chat.SplitText(b.String(), chat.ChunkOptions{MaxUnits: chat.TelegramLimit, MaxChunks: -1, Markers: true})
	if len(split.Chunks) < 3 {
		t.Fatalf("want a multi-chunk reply, got %d chunks", len(split.Chunks))
	}
	for i, c := range split.Chunks {
		h := toHTML(c)
		if err := balanced(h); err != "" {
			t.Fatalf("chunk %d: %s\n%s", i, err, h)
		}
		if n := chat.UTF16Len(visible(h)); n > chat.TelegramLimit {
			t.Errorf("chunk %d: %d visible units, over the limit %d", i, n, chat.TelegramLimit)
		}
		if !strings.Contains(h, "<pre><code class=\"language-text\">") {
			t.Errorf("chunk %d lost its code block language:\n%.200s", i, h)
		}
	}
}

var tagRE = regexp.MustCompile(`<(/?)(pre|code)( class="language-[A-Za-z0-9+#._-]*")?>`)

// balanced checks that h uses only <pre>, <code> and <code class=…>,
// properly nested, and that every other '<' and '&' is escaped.
func balanced(h string) string {
	var stack []string
	rest := h
	for {
		i := strings.IndexByte(rest, '<')
		if i < 0 {
			break
		}
		m := tagRE.FindStringSubmatchIndex(rest[i:])
		if m == nil || m[0] != 0 {
			return "raw '<' at " + rest[i:min(len(rest), i+20)]
		}
		tag := rest[i+m[4] : i+m[5]]
		if m[3] > m[2] { // closing
			if len(stack) == 0 || stack[len(stack)-1] != tag {
				return "unbalanced </" + tag + ">"
			}
			stack = stack[:len(stack)-1]
		} else {
			if tag == "pre" && len(stack) > 0 {
				return "nested <pre>"
			}
			stack = append(stack, tag)
		}
		rest = rest[i+m[1]:]
	}
	if len(stack) > 0 {
		return "unclosed <" + stack[len(stack)-1] + ">"
	}
	for i := 0; i < len(h); i++ {
		if h[i] == '&' && !strings.HasPrefix(h[i:], "&amp;") && !strings.HasPrefix(h[i:], "&lt;") && !strings.HasPrefix(h[i:], "&gt;") {
			return "raw '&'"
		}
	}
	return ""
}

// visible is the text Telegram shows for h.
func visible(h string) string { return html.UnescapeString(tagRE.ReplaceAllString(h, "")) }

func FuzzToHTML(f *testing.F) {
	for _, s := range []string{"", "a<b", "```go\nx\n```", "````\n```\n````", "`a` ``b`` ```c", "```\nopen", "x\n```\r\ny\r\n```\r\n", "\xff```\xfe"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		h := toHTML(s)
		if !utf8.ValidString(h) {
			t.Fatalf("invalid UTF-8 out of %q", s)
		}
		if err := balanced(h); err != "" {
			t.Fatalf("toHTML(%q) = %q: %s", s, h, err)
		}
		// Nothing visible is invented: every visible rune of the output was
		// in the input (fence lines and code-span backticks only go away).
		in := strings.ToValidUTF8(s, "\uFFFD")
		if chat.UTF16Len(visible(h)) > chat.UTF16Len(in) {
			t.Fatalf("toHTML(%q) shows more than its input: %q", s, visible(h))
		}
	})
}

func TestTruncateUnits(t *testing.T) {
	tests := []struct {
		in   string
		max  int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"this is too long", 10, "this is t…"},
		{"😀😀😀😀😀😀", 5, "😀😀…"},
	}
	for _, tt := range tests {
		if got := truncateUnits(tt.in, tt.max); got != tt.want || chat.UTF16Len(got) > tt.max {
			t.Errorf("truncateUnits(%q, %d) = %q, want %q", tt.in, tt.max, got, tt.want)
		}
	}
}

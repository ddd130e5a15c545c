package chat_test

import (
	"bytes"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/a6afc2ce/hermes-hub/chat"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

const family = "👨\u200d👩\u200d👧\u200d👦" // 4 emoji joined by 3 ZWJ: 11 units

func TestUTF16Len(t *testing.T) {
	tests := []struct {
		in   string
		want int
	}{
		{"", 0},
		{"abc", 3},
		{"é", 1},
		{"e\u0301", 2},
		{"日本語", 3},
		{"😀", 2},
		{"👍🏽", 4},
		{family, 11},
		{"\U0010FFFF", 2},
		{"\uFFFD", 1},
		{"\xff\xfe", 2},
		{"a\xe2\x82b", 4}, // a truncated 3-byte sequence is two invalid bytes
	}
	for _, tt := range tests {
		if got := chat.UTF16Len(tt.in); got != tt.want {
			t.Errorf("UTF16Len(%q) = %d, want %d", tt.in, got, tt.want)
		}
	}
}

func TestChunkOptionsFor(t *testing.T) {
	tests := []struct {
		p    chat.Platform
		want chat.ChunkOptions
	}{
		{chat.Telegram, chat.ChunkOptions{MaxUnits: 4096, MaxChunks: 4, Markers: true, AttachmentName: "output.txt"}},
		{chat.Discord, chat.ChunkOptions{MaxUnits: 2000, MaxChunks: 4, Markers: true, AttachmentName: "output.txt"}},
		{chat.Web, chat.ChunkOptions{MaxUnits: 0, MaxChunks: 4, AttachmentName: "output.txt"}},
		{chat.Platform("slack"), chat.ChunkOptions{MaxUnits: 2000, MaxChunks: 4, Markers: true, AttachmentName: "output.txt"}},
	}
	for _, tt := range tests {
		if got := chat.ChunkOptionsFor(tt.p); got != tt.want {
			t.Errorf("ChunkOptionsFor(%q) = %+v, want %+v", tt.p, got, tt.want)
		}
	}
}

func lines(format string, n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, format, i)
	}
	return b.String()
}

func TestSplitText(t *testing.T) {
	x := func(n int) string { return strings.Repeat("x", n) }
	limit32 := chat.ChunkOptions{MaxUnits: 32}
	marked := chat.ChunkOptions{MaxUnits: 32, Markers: true, MaxChunks: -1}
	tests := []struct {
		name string
		text string
		opts chat.ChunkOptions
		want []string
	}{
		{"empty", "", limit32, nil},
		{"within limit", "hello", limit32, []string{"hello"}},
		{"exactly at limit", x(32), limit32, []string{x(32)}},
		{"exactly at limit with an emoji", x(30) + "😀", limit32, []string{x(30) + "😀"}},
		{"limit+1 is a hard split", x(33), limit32, []string{x(32), "x"}},
		{"limit+1 by an emoji", x(31) + "😀", limit32, []string{x(31), "😀"}},
		{"limit below the minimum is raised", x(33), chat.ChunkOptions{MaxUnits: 5}, []string{x(32), "x"}},
		{"unlimited web", x(100000), chat.ChunkOptions{}, []string{x(100000)}},
		{"negative limit is unlimited", x(5000), chat.ChunkOptions{MaxUnits: -1}, []string{x(5000)}},
		{"newline preferred over space", "first line\nsecond line is a bit longer\n", limit32,
			[]string{"first line\n", "second line is a bit longer\n"}},
		{"last newline that fits", "a\nbb\nccc\n" + x(30), limit32,
			[]string{"a\nbb\nccc\n", x(30)}},
		{"space when no newline fits", "the quick brown fox jumps over the lazy dog", limit32,
			[]string{"the quick brown fox jumps over ", "the lazy dog"}},
		{"tab is a space", x(20) + "\t" + x(20), limit32, []string{x(20) + "\t", x(20)}},
		{"hard split", x(40), limit32, []string{x(32), x(8)}},
		{"no blank last chunk", x(32) + "\n", limit32, []string{x(31), "x\n"}},
		{"no blank last chunk after a newline", "ab\n" + x(29) + "\n \n", limit32, []string{"ab\n", x(29) + "\n \n"}},
		{"no blank last chunk after spaces", "aaaa bbbb cccc dddd eeee ffff gg" + strings.Repeat(" ", 40), limit32,
			[]string{"aaaa bbbb cccc dddd eeee ffff ", "gg" + strings.Repeat(" ", 30), strings.Repeat(" ", 10)}},
		{"surrogate pair kept whole", x(31) + "😀😀", limit32, []string{x(31), "😀😀"}},
		{"combining mark stays with its base", x(31) + "e\u0301yz", limit32, []string{x(31), "e\u0301yz"}},
		{"several combining marks", x(29) + "a\u0301\u0302\u0303\u0304", limit32, []string{x(29), "a\u0301\u0302\u0303\u0304"}},
		{"variation selector", x(31) + "\u2764\ufe0f", limit32, []string{x(31), "\u2764\ufe0f"}},
		{"keycap", x(30) + "1\ufe0f\u20e3", limit32, []string{x(30), "1\ufe0f\u20e3"}},
		{"skin-tone modifier", x(31) + "👍🏽", limit32, []string{x(31), "👍🏽"}},
		{"ZWJ family emoji", x(25) + family + "!", limit32, []string{x(25), family + "!"}},
		{"regional-indicator pairs", x(27) + "🇩🇪🇫🇷", limit32, []string{x(27) + "🇩🇪", "🇫🇷"}},
		{"regional-indicator pair kept whole", x(29) + "🇩🇪🇫🇷", limit32, []string{x(29), "🇩🇪🇫🇷"}},
		{"CRLF kept together", x(31) + "\r\nabc", limit32, []string{x(31), "\r\nabc"}},
		{"newline followed by a combining mark is no split point", "ab\n\u0301" + x(30), limit32,
			[]string{"ab\n\u0301" + x(28), "xx"}},
		{"no empty code block after an opening line", "```\n" + x(40), limit32,
			[]string{"```\n" + x(24) + "\n```", "```\n" + x(16)}},
		{"split before an opening line", "intro\n```go\n" + x(40), limit32,
			[]string{"intro\n", "```go\n" + x(22) + "\n```", "```go\n" + x(18)}},
		{"invalid UTF-8 kept byte for byte", strings.Repeat("\xff", 40), limit32,
			[]string{strings.Repeat("\xff", 32), strings.Repeat("\xff", 8)}},
		{"hard split leaves no fence at the start of a chunk", x(32) + "```js", limit32,
			[]string{x(31), "x```js"}},
		{"space split leaves no fence at the start of a chunk", "aaaa bbbb cccc dddd eeee ffff ```sh tail", limit32,
			[]string{"aaaa bbbb cccc dddd eeee ", "ffff ```sh tail"}},
		{"fence closed and reopened with its language", "```go\n" + strings.Repeat("a := 1\n", 6) + "```\n", limit32,
			[]string{"```go\na := 1\na := 1\na := 1\n```", "```go\na := 1\na := 1\na := 1\n```\n"}},
		{"closing fence added after an in-line split", "```\n" + x(40) + "\n```\n", limit32,
			[]string{"```\n" + x(24) + "\n```", "```\n" + x(16) + "\n```\n"}},
		{"backticks inside a longer fence do not close it", "````md\n```go\nfmt\n```\ntail of doc\n````\n", limit32,
			[]string{"````md\n```go\nfmt\n```\n````", "````md\ntail of doc\n````\n"}},
		{"backticks in the info string make no fence", "```not `a` fence\nmore text here ok\n", limit32,
			[]string{"```not `a` fence\n", "more text here ok\n"}},
		{"closing line may have trailing spaces", "```\nab\n```  \n" + x(30), limit32,
			[]string{"```\nab\n```  \n", x(30)}},
		{"unclosed fence at the end stays unclosed", "```sh\n" + strings.Repeat("echo hi\n", 4), limit32,
			[]string{"```sh\necho hi\necho hi\n```", "```sh\necho hi\necho hi\n"}},
		{"markers", "one two three four five six seven eight nine ten eleven", marked,
			[]string{"one two three four five (1/3)", "six seven eight nine ten (2/3)", "eleven (3/3)"}},
		{"marker after a newline", "first line\nsecond line is a bit longer\n", marked,
			[]string{"first line\n(1/3)", "second line is a bit (2/3)", "longer\n(3/3)"}},
		{"marker after a closing fence", "```\n" + strings.Repeat("ab\n", 10), marked,
			[]string{"```\nab\nab\nab\nab\nab\nab\n```\n(1/2)", "(2/2)\n```\nab\nab\nab\nab\n"}},
		{"no marker on a single chunk", "short", marked, []string{"short"}},
		{"markers with an unclosed fence", "intro\n```sh\n" + strings.Repeat("echo hi\n", 5), marked,
			[]string{"intro\n```sh\necho hi\n```\n(1/3)", "```sh\necho hi\necho hi\n```\n(2/3)", "(3/3)\n```sh\necho hi\necho hi\n"}},
		{"MaxChunks -1 never overflows", x(200), chat.ChunkOptions{MaxUnits: 32, MaxChunks: -1},
			[]string{x(32), x(32), x(32), x(32), x(32), x(32), x(8)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := chat.SplitText(tt.text, tt.opts)
			if !equalStrings(got.Chunks, tt.want) {
				t.Errorf("chunks:\n got %q\nwant %q", got.Chunks, tt.want)
			}
			if got.Attachment != nil {
				t.Errorf("unexpected attachment %q", got.Attachment.Name)
			}
			if err := checkSplit(tt.text, tt.opts, got); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestSplitTextMarkerWidth(t *testing.T) {
	text := lines("line %02d has some text\n", 40)
	opts := chat.ChunkOptions{MaxUnits: 48, Markers: true, MaxChunks: -1}
	got := chat.SplitText(text, opts)
	n := len(got.Chunks)
	if n < 10 {
		t.Fatalf("got %d chunks, want at least 10 so that N has two digits", n)
	}
	for i, c := range got.Chunks {
		if m := fmt.Sprintf("(%d/%d)", i+1, n); !strings.HasSuffix(c, m) {
			t.Errorf("chunk %d = %q, want it to end with %q", i, c, m)
		}
	}
	if err := checkSplit(text, opts, got); err != nil {
		t.Error(err)
	}
}

func TestSplitTextOverflow(t *testing.T) {
	text := lines("line %02d of output\n", 60) // 60 lines of 18 units
	fenced := "```\n" + text + "```\n"
	tests := []struct {
		name     string
		text     string
		opts     chat.ChunkOptions
		wantHead string
		wantName string
	}{
		{"default threshold", text, chat.ChunkOptions{MaxUnits: 200},
			lines("line %02d of output\n", 8) + "… (full output attached as output.txt, 1080 bytes)", "output.txt"},
		{"named attachment", text, chat.ChunkOptions{MaxUnits: 200, AttachmentName: "run.log"},
			lines("line %02d of output\n", 8) + "… (full output attached as run.log, 1080 bytes)", "run.log"},
		{"markers do not apply to the head", text, chat.ChunkOptions{MaxUnits: 200, Markers: true},
			lines("line %02d of output\n", 8) + "… (full output attached as output.txt, 1080 bytes)", "output.txt"},
		{"head inside a fence is closed", fenced, chat.ChunkOptions{MaxUnits: 200},
			"```\n" + lines("line %02d of output\n", 7) + "```\n… (full output attached as output.txt, 1088 bytes)", "output.txt"},
		{"short note at a small limit", text, chat.ChunkOptions{MaxUnits: 40},
			lines("line %02d of output\n", 2) + "…", "output.txt"},
		{"custom threshold", text, chat.ChunkOptions{MaxUnits: 600, MaxChunks: 1},
			lines("line %02d of output\n", 30) + "… (full output attached as output.txt, 1080 bytes)", "output.txt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := chat.SplitText(tt.text, tt.opts)
			if len(got.Chunks) != 1 || got.Chunks[0] != tt.wantHead {
				t.Errorf("chunks = %q, want [%q]", got.Chunks, tt.wantHead)
			}
			a := got.Attachment
			if a == nil {
				t.Fatal("no attachment")
			}
			if a.Name != tt.wantName || a.MIME != "text/plain; charset=utf-8" || string(a.Data) != tt.text {
				t.Errorf("attachment = %q %q %d bytes, want %q, text/plain; charset=utf-8, the whole text (%d bytes)",
					a.Name, a.MIME, len(a.Data), tt.wantName, len(tt.text))
			}
			if err := checkSplit(tt.text, tt.opts, got); err != nil {
				t.Error(err)
			}
		})
	}

	// At the threshold itself there is no overflow.
	four := lines("line %02d of output\n", 4)
	got := chat.SplitText(four, chat.ChunkOptions{MaxUnits: 32})
	if len(got.Chunks) != 4 || got.Attachment != nil {
		t.Errorf("4 chunks' worth: got %d chunks, attachment %v; want 4 chunks and no attachment", len(got.Chunks), got.Attachment != nil)
	}
	got = chat.SplitText(lines("line %02d of output\n", 5), chat.ChunkOptions{MaxUnits: 32})
	if len(got.Chunks) != 1 || got.Attachment == nil {
		t.Errorf("5 chunks' worth: got %d chunks, attachment %v; want the head and an attachment", len(got.Chunks), got.Attachment != nil)
	}
}

func TestSplitTextLongOpeningLine(t *testing.T) {
	// The opening line is too long to repeat in every chunk: the fence is
	// reopened with its backticks alone.
	opener := "```" + strings.Repeat("x", 40)
	text := opener + "\n" + strings.Repeat("code line\n", 12) + "```\n"
	opts := chat.ChunkOptions{MaxUnits: 80}
	got := chat.SplitText(text, opts)
	if len(got.Chunks) < 2 {
		t.Fatalf("got %d chunks, want several", len(got.Chunks))
	}
	if !strings.HasPrefix(got.Chunks[0], opener+"\n") {
		t.Errorf("chunk 0 = %q, want it to start with the original opening line", got.Chunks[0])
	}
	for i, c := range got.Chunks[1:] {
		if !strings.HasPrefix(c, "```\ncode line\n") {
			t.Errorf("chunk %d = %q, want it to start with a bare fence", i+1, c)
		}
	}
	if err := checkSplit(text, opts, got); err != nil {
		t.Error(err)
	}
}

func TestSplitTextDoesNotAliasAttachment(t *testing.T) {
	text := strings.Repeat("word ", 1000)
	got := chat.SplitText(text, chat.ChunkOptions{MaxUnits: 100})
	if got.Attachment == nil {
		t.Fatal("no attachment")
	}
	got.Attachment.Data[0] = 'X'
	if again := chat.SplitText(text, chat.ChunkOptions{MaxUnits: 100}); again.Attachment.Data[0] != 'w' {
		t.Error("attachment data is shared between calls")
	}
}

// TestSplitTextProperties checks the invariants on generated texts.
func TestSplitTextProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	iterations := 3000
	if testing.Short() {
		iterations = 300
	}
	for i := 0; i < iterations; i++ {
		text := genText(rng)
		opts := genOptions(rng)
		got := chat.SplitText(text, opts)
		if err := checkSplit(text, opts, got); err != nil {
			t.Fatalf("iteration %d: SplitText(%q, %+v): %v\nchunks: %q", i, text, opts, err, got.Chunks)
		}
	}
}

func FuzzSplitText(f *testing.F) {
	f.Add("hello world", 32, false, 0)
	f.Add("```go\n"+strings.Repeat("fmt.Println(1)\n", 20)+"```\nafter", 48, true, -1)
	f.Add(strings.Repeat("e\u0301", 40), 32, false, -1)
	f.Add(strings.Repeat(family+" ", 10), 33, true, -1)
	f.Add(strings.Repeat("🇩🇪", 30), 35, false, 10)
	f.Add("````md\n```go\nx\n```\n"+strings.Repeat("y ", 50)+"\n````\n", 40, true, 3)
	f.Add(strings.Repeat("\xff\xe2\x82", 30), 32, false, 0)
	f.Add(strings.Repeat("`", 100), 32, true, -1)
	f.Add(strings.Repeat("x", 31)+"\r\n```\nz", 32, true, -1)
	f.Fuzz(func(t *testing.T, text string, maxUnits int, markers bool, maxChunks int) {
		opts := chat.ChunkOptions{MaxUnits: maxUnits % 5000, Markers: markers, MaxChunks: maxChunks % 100}
		got := chat.SplitText(text, opts)
		if err := checkSplit(text, opts, got); err != nil {
			t.Fatalf("SplitText(%q, %+v): %v\nchunks: %q", text, opts, err, got.Chunks)
		}
	})
}

// TestSplitTextGolden pins the chunks of realistic replies.
func TestSplitTextGolden(t *testing.T) {
	tests := []struct {
		name string
		opts chat.ChunkOptions
	}{
		{"build_log", chat.ChunkOptionsFor(chat.Discord)},
		{"readme_reply", chat.ChunkOptions{MaxUnits: 400, Markers: true, MaxChunks: -1}},
		{"unclosed_output", chat.ChunkOptions{MaxUnits: 300, Markers: true, MaxChunks: -1}},
		{"long_listing", chat.ChunkOptionsFor(chat.Telegram)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in, err := os.ReadFile(filepath.Join("testdata", "chunk", tt.name+".md"))
			if err != nil {
				t.Fatal(err)
			}
			got := chat.SplitText(string(in), tt.opts)
			if err := checkSplit(string(in), tt.opts, got); err != nil {
				t.Error(err)
			}
			var b bytes.Buffer
			fmt.Fprintf(&b, "options: %+v\n", tt.opts)
			for i, c := range got.Chunks {
				fmt.Fprintf(&b, "===== chunk %d of %d: %d units, bytes %d-%d =====\n%s\n",
					i+1, len(got.Chunks), chat.UTF16Len(c), got.Spans[i].Start, got.Spans[i].End, c)
			}
			if a := got.Attachment; a != nil {
				fmt.Fprintf(&b, "===== attachment %s (%s), %d bytes =====\n", a.Name, a.MIME, len(a.Data))
			}
			golden := filepath.Join("testdata", "chunk", tt.name+".golden")
			if *update {
				if err := os.WriteFile(golden, b.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./chat -run TestSplitTextGolden -update to create it)", err)
			}
			if !bytes.Equal(b.Bytes(), want) {
				t.Errorf("chunks differ from %s (run with -update if the change is intended):\n%s", golden, b.Bytes())
			}
		})
	}
}

func BenchmarkSplitText(b *testing.B) {
	text := benchText(1 << 20)
	for _, bc := range []struct {
		name string
		opts chat.ChunkOptions
	}{
		{"telegram", chat.ChunkOptions{MaxUnits: chat.TelegramLimit, Markers: true, MaxChunks: -1}},
		{"discord", chat.ChunkOptions{MaxUnits: chat.DiscordLimit, Markers: true, MaxChunks: -1}},
		{"telegram-overflow", chat.ChunkOptionsFor(chat.Telegram)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			b.ReportAllocs()
			chunks := 0
			for b.Loop() {
				chunks = len(chat.SplitText(text, bc.opts).Chunks)
			}
			b.ReportMetric(float64(chunks), "chunks/op")
		})
	}
}

// benchText returns about n bytes of mixed prose, code fences, long lines
// and non-ASCII text.
func benchText(n int) string {
	rng := rand.New(rand.NewPCG(7, 7))
	var b strings.Builder
	for b.Len() < n {
		switch rng.IntN(6) {
		case 0:
			b.WriteString("```go\n")
			for i := rng.IntN(60); i > 0; i-- {
				fmt.Fprintf(&b, "\tx%d := compute(%d) // naïve résumé\n", i, rng.IntN(1000))
			}
			b.WriteString("```\n")
		case 1:
			b.WriteString(strings.Repeat("long-line-without-breaks ", 10+rng.IntN(300)) + "\n")
		case 2:
			b.WriteString("日本語のテキストと絵文字 😀👍🏽 " + family + " 🇩🇪 e\u0301\n")
		default:
			b.WriteString("The quick brown fox jumps over the lazy dog, again and again.\n")
		}
	}
	return b.String()
}

// ---- property helpers: the test's own reading of the rules ----

var vocabulary = []string{
	"alpha", "beta", "γάμμα", "日本語", "naïve", "x", "fmt.Println(\"hi\")",
	" ", " ", " ", "  ", "\t", "\n", "\n", "\n\n", "\r\n",
	"```\n", "```go\n", "````md\n", "```c++ title=x\n", "```  \n", "````\n", "`````\n",
	"`x`", "``` inline ```", "```a`b", "``", "`",
	"😀", "👍🏽", family, "🇩🇪🇫🇷", "🇩", "\u2764\ufe0f", "1\ufe0f\u20e3", "\u200d",
	"e\u0301", "a\u0301\u0302\u0303", "\u0915\u094d\u0937", "\u0301",
	"\xff", "\xe2\x82", "\xf0\x9f",
}

func genText(rng *rand.Rand) string {
	var b strings.Builder
	for n := rng.IntN(120); n > 0; n-- {
		switch k := rng.IntN(20); {
		case k == 0:
			b.WriteString(strings.Repeat("z", 20+rng.IntN(300)))
		case k == 1:
			b.WriteString("\n```" + []string{"", "go", "sh"}[rng.IntN(3)] + "\n")
		case k == 2:
			b.WriteString("\n```\n")
		default:
			b.WriteString(vocabulary[rng.IntN(len(vocabulary))])
		}
	}
	return b.String()
}

func genOptions(rng *rand.Rand) chat.ChunkOptions {
	o := chat.ChunkOptions{Markers: rng.IntN(2) == 0}
	switch rng.IntN(6) {
	case 0:
		o.MaxUnits = []int{0, 1, 31, 32, 33}[rng.IntN(5)]
	default:
		o.MaxUnits = 32 + rng.IntN(300)
	}
	o.MaxChunks = []int{-1, -1, 0, 1, 3, 50}[rng.IntN(6)]
	if rng.IntN(4) == 0 {
		o.AttachmentName = "run.log"
	}
	return o
}

// tfence is an open code fence as the test reads it; ticks is 0 outside.
type tfence struct {
	ticks int
	line  string
}

// tscan follows fences over s, line by line.
func tscan(st tfence, s string) tfence {
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimSuffix(line, "\r")
		rest := strings.TrimLeft(line, "`")
		n := len(line) - len(rest)
		if st.ticks == 0 {
			if n >= 3 && !strings.Contains(rest, "`") {
				st = tfence{n, line}
			}
		} else if n >= st.ticks && strings.Trim(rest, " \t") == "" {
			st = tfence{}
		}
	}
	return st
}

// tjoined reports whether a split between a and b would part a grapheme
// cluster in the sense of the chunker's contract; ri counts the regional
// indicators in a row ending at a.
func tjoined(a, b rune, ri int) bool {
	isRI := func(r rune) bool { return r >= 0x1F1E6 && r <= 0x1F1FF }
	switch {
	case a == '\r' && b == '\n', a == 0x200D, b == 0x200D:
		return true
	case unicode.In(b, unicode.Mn, unicode.Me, unicode.Mc):
		return true
	case b >= 0xFE00 && b <= 0xFE0F, b >= 0xE0100 && b <= 0xE01EF, b >= 0x1F3FB && b <= 0x1F3FF:
		return true
	case isRI(a) && isRI(b) && ri%2 == 1:
		return true
	}
	return false
}

// boundaries returns, for every rune boundary of s, whether it is also a
// cluster boundary, and the units of the longest cluster.
func boundaries(s string) (runeAt map[int]bool, longest int) {
	runeAt = map[int]bool{0: true, len(s): true}
	prev, ri, units := rune(-1), 0, 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if i > 0 {
			runeAt[i] = !tjoined(prev, r, ri)
			if runeAt[i] {
				units = 0
			}
		}
		units += chat.UTF16Len(s[i : i+size])
		longest = max(longest, units)
		if r >= 0x1F1E6 && r <= 0x1F1FF {
			ri++
		} else {
			ri = 0
		}
		prev = r
		i += size
	}
	return runeAt, longest
}

func longestRun(s string, c byte) int {
	best, n := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			n++
			best = max(best, n)
		} else {
			n = 0
		}
	}
	return best
}

// parts is a chunk taken apart: what the chunker added around text[span].
type parts struct {
	front  bool   // the marker is on the first line
	opener string // reopened fence line, without "\n"
	closer string // added closing fence, with the "\n" before it if any
}

// markerSep is the separator the contract puts before a marker.
func markerSep(body string) string {
	last := body[strings.LastIndexByte(body, '\n')+1:]
	switch {
	case strings.HasSuffix(body, "\n"):
		return ""
	case strings.HasPrefix(strings.TrimLeft(last, " \t"), "`"):
		return "\n"
	case strings.HasSuffix(body, " "), strings.HasSuffix(body, "\t"):
		return ""
	}
	return " "
}

func validCloser(body, c string) bool {
	if c == "" {
		return true
	}
	ticks := strings.TrimPrefix(c, "\n")
	if len(ticks) < 3 || strings.Trim(ticks, "`") != "" {
		return false
	}
	return strings.HasSuffix(body, "\n") == !strings.HasPrefix(c, "\n")
}

// decompose returns every way chunk = added + body + added can be read,
// given the marker and the overflow notes allowed. A reopened fence line
// followed by an original closing line can also read as the original line
// followed by an added closer, so there may be more than one.
func decompose(chunk, body, marker string, notes []string) []parts {
	var out []parts
	for o := 0; o+len(body) <= len(chunk); o++ {
		if chunk[o:o+len(body)] != body {
			continue
		}
		head, tail := chunk[:o], chunk[o+len(body):]
		var p parts
		if marker != "" && strings.HasPrefix(head, marker+"\n") {
			head, p.front = head[len(marker)+1:], true
		}
		if head != "" {
			line, ok := strings.CutSuffix(head, "\n")
			if !ok || strings.Contains(line, "\n") || tscan(tfence{}, line).ticks == 0 {
				continue
			}
			p.opener = line
		}
		var closers []string
		switch {
		case len(notes) > 0:
			for _, n := range notes {
				if core, ok := strings.CutSuffix(tail, n); ok {
					if c, ok := strings.CutSuffix(core, "\n"); ok && !strings.HasSuffix(body+c, "\n") {
						closers = append(closers, c)
					}
					if strings.HasSuffix(body+core, "\n") {
						closers = append(closers, core)
					}
				}
			}
		case marker != "" && !p.front:
			core, ok := strings.CutSuffix(tail, marker)
			if !ok {
				continue
			}
			for _, sep := range []string{"", " ", "\n"} {
				if c, ok := strings.CutSuffix(core, sep); ok && markerSep(body+c) == sep {
					closers = append(closers, c)
				}
			}
		default:
			closers = append(closers, tail)
		}
		for _, c := range closers {
			if validCloser(body, c) {
				q := p
				q.closer = c
				out = append(out, q)
			}
		}
	}
	return out
}

// checkSplit verifies every rule of SplitText's contract on one result.
func checkSplit(text string, opts chat.ChunkOptions, got chat.Split) error {
	if text == "" {
		if len(got.Chunks) != 0 || len(got.Spans) != 0 || got.Attachment != nil {
			return fmt.Errorf("empty text: got %q, want no chunks", got.Chunks)
		}
		return nil
	}
	limit := opts.MaxUnits
	if limit > 0 && limit < chat.MinChunkUnits {
		limit = chat.MinChunkUnits
	}
	if limit <= 0 || chat.UTF16Len(text) <= limit {
		if len(got.Chunks) != 1 || got.Chunks[0] != text || got.Attachment != nil ||
			len(got.Spans) != 1 || got.Spans[0] != (chat.Span{Start: 0, End: len(text)}) {
			return fmt.Errorf("text within the limit: got %q, want exactly the input", got.Chunks)
		}
		return nil
	}
	n := len(got.Chunks)
	if n == 0 || len(got.Spans) != n {
		return fmt.Errorf("%d chunks and %d spans", n, len(got.Spans))
	}

	// Overflow policy.
	maxChunks := opts.MaxChunks
	if maxChunks == 0 {
		maxChunks = chat.DefaultMaxChunks
	}
	var notes []string
	if a := got.Attachment; a != nil {
		name := opts.AttachmentName
		if name == "" {
			name = "output.txt"
		}
		if n != 1 || maxChunks < 0 || a.Name != name || a.MIME != "text/plain; charset=utf-8" || string(a.Data) != text {
			return fmt.Errorf("overflow: %d chunks, attachment %q %q of %d bytes", n, a.Name, a.MIME, len(a.Data))
		}
		all := opts
		all.MaxChunks = -1
		if full := chat.SplitText(text, all); len(full.Chunks) <= maxChunks {
			return fmt.Errorf("overflow although the text splits into %d chunks (threshold %d)", len(full.Chunks), maxChunks)
		}
		notes = []string{fmt.Sprintf("… (full output attached as %s, %d bytes)", name, len(text)), "… (full output attached)", "…"}
	} else if maxChunks > 0 && n > maxChunks {
		return fmt.Errorf("%d chunks exceed the threshold %d but nothing is attached", n, maxChunks)
	}

	// Spans: contiguous, at rune boundaries, covering the text.
	runeAt, longestCluster := boundaries(text)
	at := 0
	for i, sp := range got.Spans {
		if sp.Start != at || sp.End <= sp.Start || sp.End > len(text) {
			return fmt.Errorf("span %d = %v does not continue at byte %d", i, sp, at)
		}
		if _, ok := runeAt[sp.End]; !ok {
			return fmt.Errorf("span %d ends at byte %d, inside a UTF-8 sequence", i, sp.End)
		}
		at = sp.End
	}
	if got.Attachment == nil && at != len(text) {
		return fmt.Errorf("spans end at byte %d of %d", at, len(text))
	}

	markers := opts.Markers && n > 1
	digits := len(fmt.Sprint(chat.UTF16Len(text)))
	reserve := 0
	if markers {
		reserve = 4 + 2*digits
	}
	maxRun := longestRun(text, '`')
	fencesFit := 2*maxRun+4+reserve <= limit && maxRun+3 <= limit/2
	avail := limit - reserve
	if got.Attachment != nil {
		avail = limit / 2
	}
	clustersFit := fencesFit && longestCluster <= avail-max(avail/4, maxRun+1)-(maxRun+2)

	// A blank last chunk is refused by the platforms: it is allowed only when
	// the white space at the end does not fit beside the last line.
	if lastBody := text[got.Spans[n-1].Start:got.Spans[n-1].End]; got.Attachment == nil &&
		strings.TrimSpace(lastBody) == "" && strings.TrimSpace(text) != "" && !strings.Contains(text, "`") && clustersFit {
		trimmed := strings.TrimRightFunc(text, unicode.IsSpace)
		lastLine := text[strings.LastIndexByte(trimmed, '\n')+1:]
		if chat.UTF16Len(lastLine) <= limit-reserve {
			return fmt.Errorf("last chunk %q is blank although the last line and the white space after it fit in one chunk", got.Chunks[n-1])
		}
	}

	c := chunkCheck{text: text, got: got, runeAt: runeAt, fencesFit: fencesFit, clustersFit: clustersFit}
	var prev *parts
	for i, chunk := range got.Chunks {
		if chunk == "" {
			return fmt.Errorf("chunk %d is empty", i)
		}
		if u := chat.UTF16Len(chunk); u > limit {
			return fmt.Errorf("chunk %d has %d units, over the limit %d", i, u, limit)
		}
		if utf8.ValidString(text) && !utf8.ValidString(chunk) {
			return fmt.Errorf("chunk %d is not valid UTF-8", i)
		}
		sp := got.Spans[i]
		body := text[sp.Start:sp.End]
		marker := ""
		if markers {
			marker = fmt.Sprintf("(%d/%d)", i+1, n)
		}
		readings := decompose(chunk, body, marker, notes)
		if len(readings) == 0 {
			return fmt.Errorf("chunk %d = %q is not text[%d:%d] = %q with fence lines and markers added", i, chunk, sp.Start, sp.End, body)
		}
		var err error
		for _, p := range readings {
			if err = c.check(i, p, prev); err == nil {
				prev = &p
				break
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// chunkCheck checks one chunk, read as parts, against the rules.
type chunkCheck struct {
	text                   string
	got                    chat.Split
	runeAt                 map[int]bool
	fencesFit, clustersFit bool
}

func (c *chunkCheck) check(i int, p parts, prev *parts) error {
	text, got := c.text, c.got
	n := len(got.Chunks)
	chunk, sp := got.Chunks[i], got.Spans[i]
	body := text[sp.Start:sp.End]
	last := i == n-1 && got.Attachment == nil
	end := tscan(tscan(tfence{}, p.opener), body)
	if p.closer != "" {
		if last {
			return fmt.Errorf("last chunk %q: a closing fence the author did not write", chunk)
		}
		if end.ticks == 0 || len(strings.TrimPrefix(p.closer, "\n")) != end.ticks {
			return fmt.Errorf("chunk %d = %q: closer %q for fence state %+v", i, chunk, p.closer, end)
		}
	}
	if p.front && !(last && end.ticks > 0) {
		return fmt.Errorf("chunk %d = %q: marker in front, but it does not end inside an open fence", i, chunk)
	}
	if c.fencesFit && !last {
		if st := tscan(tfence{}, chunk); st.ticks != 0 {
			return fmt.Errorf("chunk %d = %q is not balanced: fence %q left open", i, chunk, st.line)
		}
	}
	if i > 0 && c.fencesFit {
		was := tscan(tscan(tfence{}, prev.opener), text[got.Spans[i-1].Start:got.Spans[i-1].End])
		if prev.closer == "" && p.opener != "" {
			return fmt.Errorf("chunk %d = %q reopens a fence that chunk %d did not close", i, chunk, i-1)
		}
		if prev.closer != "" && p.opener != was.line && p.opener != strings.Repeat("`", was.ticks) {
			return fmt.Errorf("chunk %d = %q: reopened with %q, want %q", i, chunk, p.opener, was.line)
		}
	}

	// Split points: clusters kept whole, preferences respected.
	if i == n-1 && got.Attachment == nil {
		return nil
	}
	if c.clustersFit && !c.runeAt[sp.End] {
		return fmt.Errorf("chunk %d ends at byte %d, inside a grapheme cluster: %q|%q", i, sp.End, body, text[sp.End:])
	}
	endsAtNL := strings.HasSuffix(body, "\n")
	endsAtSpace := strings.HasSuffix(body, " ") || strings.HasSuffix(body, "\t")
	st, line := tscan(tfence{}, p.opener), 0
	for j := 0; j < len(body)-1; j++ {
		opened := false
		if body[j] == '\n' {
			// A chunk does not end right after the line that opens a fence.
			next := tscan(st, body[line:j])
			opened = st.ticks == 0 && next.ticks > 0
			st, line = next, j+1
		}
		if !c.runeAt[sp.Start+j+1] {
			continue
		}
		switch body[j] {
		case '\n':
			if !endsAtNL && !opened {
				return fmt.Errorf("chunk %d = %q ends in a line although it holds a newline to split at", i, body)
			}
		case ' ', '\t':
			if !endsAtNL && !endsAtSpace && !strings.HasPrefix(text[sp.Start+j+1:], "```") {
				return fmt.Errorf("chunk %d = %q is cut hard although it holds a space to split at", i, body)
			}
		}
	}
	return nil
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

package jsonstr

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// std encodes s as encoding/json does, with or without HTML escaping, and
// without the Encoder's newline.
func std(t testing.TB, s string, escapeHTML bool) []byte {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(escapeHTML)
	if err := enc.Encode(s); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

var samples = []string{
	"", "plain", `quote " and \ backslash`, "<html> & 'amp'", "tab\tnew\nline\rcr",
	"\b\f\x00\x01\x1f\x7f", "é ü 日本 🎉", "\u2028\u2029", "bad \xff\xfe utf8 \xe2\x82", "a\xc3",
	"mixed \x80 é \u2028 \x01",
	// Eight bytes at a time: escapes and runes at and across the words'
	// edges, long plain runs, HTML characters (plain without escaping).
	"0123456\"89abcdef\\", "abcdefgh\x1fijklmnop", "abcdefgé12345678\n12345678\x7f", "12345678<>&12345678",
	"abcdefghijklmnopqrstuvwxyz0123456789", "\n1234567\n1234567\n", "1234567\xe2\x80\xa8abcdefgh\xff",
}

// check compares Append with encoding/json for s, in both modes and from
// both a string and a byte slice, appended after bytes already there.
func check(t *testing.T, s string) {
	t.Helper()
	for _, html := range []bool{false, true} {
		want := append([]byte("x"), std(t, s, html)...)
		if got := Append([]byte("x"), s, html); !bytes.Equal(got, want) {
			t.Fatalf("Append(%q, escapeHTML=%v) = %s, encoding/json: %s", s, html, got, want)
		}
		if got := Append([]byte("x"), []byte(s), html); !bytes.Equal(got, want) {
			t.Fatalf("Append([]byte(%q), escapeHTML=%v) = %s, encoding/json: %s", s, html, got, want)
		}
		if !utf8.Valid(want) {
			t.Fatalf("%q: invalid UTF-8 out", s)
		}
	}
}

func TestAppendMatchesEncodingJSON(t *testing.T) {
	for _, s := range samples {
		check(t, s)
	}
	// Every byte at every position of a word.
	for b := range 256 {
		for at := range 9 {
			check(t, strings.Repeat("a", at)+string([]byte{byte(b)})+strings.Repeat("z", 9-at))
		}
	}
}

func FuzzAppend(f *testing.F) {
	for _, s := range samples {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { check(t, s) })
}

// BenchmarkAppend encodes a megabyte of text: ASCII lines (a source file,
// a log), short lines (an escape every 11 bytes) and text with a
// multi-byte rune every few bytes.
func BenchmarkAppend(b *testing.B) {
	for _, tc := range []struct{ name, line string }{
		{"ascii-lines", "func (s *Server) handle(ctx context.Context, req *Request) error { // \"x\"\n"},
		{"short-lines", "abcdefghij\n"},
		{"non-ascii", "Привет, мир:日本語のテキスト — naïve café\n"},
	} {
		s := strings.Repeat(tc.line, (1<<20)/len(tc.line))
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(s)))
			dst := make([]byte, 0, 2*len(s))
			for b.Loop() {
				dst = Append(dst[:0], s, false)
			}
		})
	}
}

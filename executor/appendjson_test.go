package executor

import (
	"bytes"
	"strings"
	"testing"
)

// stdJSON encodes v as Outcome.JSON's encoder does (HTML left unescaped, no
// trailing newline).
func stdJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := AppendEncodingJSON(nil, v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var stringSamples = []string{
	"", "plain", `quote " and \ backslash`, "<html> & 'amp'", "tab\tnew\nline\rcr",
	"\b\f\x00\x01\x1f\x7f", "é ü 日本 🎉", "\u2028\u2029", "bad \xff\xfe utf8 \xe2\x82",
	"mixed \x80 é \u2028 \x01",
	// Eight bytes at a time: escapes and runes at and across the words'
	// edges, long plain runs, HTML characters (plain without escaping).
	"0123456\"89abcdef\\", "abcdefgh\x1fijklmnop", "abcdefgé12345678\n12345678\x7f", "12345678<>&12345678",
	"abcdefghijklmnopqrstuvwxyz0123456789", "\n1234567\n1234567\n", "1234567\xe2\x80\xa8abcdefgh\xff",
}

func TestAppendJSONStringMatchesEncodingJSON(t *testing.T) {
	for _, s := range stringSamples {
		if got, want := AppendJSONString(nil, s), stdJSON(t, s); !bytes.Equal(got, want) {
			t.Errorf("AppendJSONString(%q) = %s, encoding/json: %s", s, got, want)
		}
	}
}

func FuzzAppendJSONStringNoHTML(f *testing.F) {
	for _, s := range stringSamples {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := AppendJSONString([]byte("x"), s), append([]byte("x"), stdJSON(t, s)...); !bytes.Equal(got, want) {
			t.Fatalf("AppendJSONString(%q) = %s, encoding/json: %s", s, got, want)
		}
	})
}

func TestAppendResultJSON(t *testing.T) {
	for _, r := range []Result{
		{Succeeded: true},
		{Succeeded: false, ErrorMessage: "No such file: \"a<b>\"", ErrorCode: CodeNotFound},
		{Succeeded: false, ErrorCode: CodeInternal},
	} {
		got := append(AppendResultJSON(nil, &r), '}')
		if want := stdJSON(t, &r); !bytes.Equal(got, want) {
			t.Errorf("AppendResultJSON(%+v) = %s, encoding/json: %s", r, got, want)
		}
	}
}

// appendingResult encodes itself; Outcome.JSON must use it.
type appendingResult struct {
	Result
	N int `json:"n"`
}

func (r *appendingResult) AppendJSON(dst []byte) []byte {
	return append(AppendResultJSON(dst, &r.Result), `,"n":"self"}`...)
}

func TestOutcomeJSONUsesAppender(t *testing.T) {
	o := &Outcome{Value: &appendingResult{Result: Result{Succeeded: true}}}
	if got := string(o.JSON()); got != `{"succeeded":true,"n":"self"}` {
		t.Fatalf("Outcome.JSON = %s, want the appender's bytes", got)
	}
	o = &Outcome{Err: Errorf(CodeNotFound, "gone")}
	if got := string(o.JSON()); got != `{"succeeded":false,"errorMessage":"gone","errorCode":"not_found"}` {
		t.Fatalf("Outcome.JSON of a failure = %s", got)
	}
}

// BenchmarkAppendJSONString encodes a megabyte of text: ASCII lines (a
// source file, a log) and text with a multi-byte rune every few bytes.
func BenchmarkAppendJSONString(b *testing.B) {
	for _, tc := range []struct{ name, line string }{
		{"ascii-lines", "func (s *Server) handle(ctx context.Context, req *Request) error { // \"x\"\n"},
		{"non-ascii", "Привет, мир:日本語のテキスト — naïve café\n"},
	} {
		s := strings.Repeat(tc.line, (1<<20)/len(tc.line))
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(s)))
			dst := make([]byte, 0, 2*len(s))
			for b.Loop() {
				dst = AppendJSONString(dst[:0], s)
			}
		})
	}
}

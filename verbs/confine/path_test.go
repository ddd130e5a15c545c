package confine_test

import (
	"strings"
	"testing"

	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/verbs/confine"
	"github.com/a6afc2ce/hermes-hub/verbs/internal/verbtest"
)

func TestCleanPath(t *testing.T) {
	for _, c := range []struct {
		in, want string
		msg      string // part of the refusal; empty when accepted
	}{
		{"a/b.txt", "a/b.txt", ""},
		{"a//b", "a/b", ""},
		{"a/b/", "a/b", ""},
		{".", ".", ""},
		{"./", ".", ""},
		{".hidden/x", ".hidden/x", ""},
		{"a/..b/c", "a/..b/c", ""},
		{"with space/x y", "with space/x y", ""},
		{"", "", "empty"},
		{"/etc/passwd", "", "absolute"},
		{"//x", "", "absolute"},
		{"../x", "", "'..'"},
		{"a/../b", "", "'..'"},
		{"a/../../x", "", "'..'"},
		{"./a", "", "'.' segment"},
		{"a/./b", "", "'.' segment"},
		{`..\x`, "", "only POSIX '/' separators are accepted"},
		{`a\b`, "", "backslash"},
		{"x\x00y", "", "NUL"},
		{"caf\u00e9.txt", "", "non-ASCII"},
		{"tab\there", "", "control character"},
		{"del\x7f", "", "non-ASCII or control"},
		{strings.Repeat("a/", 15) + "a", strings.Repeat("a/", 15) + "a", ""},
		{strings.Repeat("a/", 16) + "a", "", "17 segments; at most 16"},
		{strings.Repeat("b", 80), strings.Repeat("b", 80), ""},
		{strings.Repeat("b", 81), "", "81 characters; at most 80"},
	} {
		got, err := confine.CleanPath(c.in, confine.Limits{})
		if c.msg == "" {
			if err != nil || got != c.want {
				t.Errorf("CleanPath(%q) = %q, %v; want %q", c.in, got, err, c.want)
			}
			continue
		}
		if err == nil {
			t.Errorf("CleanPath(%q) = %q, want a refusal", c.in, got)
			continue
		}
		verbtest.CheckErr(t, err, executor.CodeForbiddenPath, c.msg)
	}
	// Limits are configurable.
	if _, err := confine.CleanPath("a/b/c", confine.Limits{MaxDepth: 2}); err == nil {
		t.Error("MaxDepth 2 accepted three segments")
	}
	if _, err := confine.CleanPath("abcd", confine.Limits{MaxSegment: 3}); err == nil {
		t.Error("MaxSegment 3 accepted four characters")
	}
}

// FuzzPathGuard checks that any string is either accepted as a clean
// relative ASCII path without '.' or '..' segments, NUL bytes or empty
// segments, at most 16 deep, or refused with forbidden_path; never a panic.
func FuzzPathGuard(f *testing.F) {
	for _, s := range []string{
		"a/b.txt", ".", "./", "../x", "a/../../x", "/etc/passwd", `..\x`, "x\x00y",
		"caf\u00e9.txt", strings.Repeat("a/", 17), strings.Repeat("b", 81), "a//b/", "...", "..",
		"\xff\xfe", " ", "a/./b", ".hub/hub.db",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		got, err := confine.CleanPath(p, confine.Limits{})
		if err != nil {
			if e := executor.ErrorFrom(err); e.Code != executor.CodeForbiddenPath || e.Message == "" {
				t.Fatalf("CleanPath(%q): error %v with code %s", p, err, e.Code)
			}
			return
		}
		if got == "." {
			return
		}
		if got == "" || strings.HasPrefix(got, "/") || strings.Contains(got, "\\") || strings.IndexByte(got, 0) >= 0 {
			t.Fatalf("CleanPath(%q) = %q", p, got)
		}
		segs := strings.Split(got, "/")
		if len(segs) > 16 {
			t.Fatalf("CleanPath(%q) = %q: %d segments", p, got, len(segs))
		}
		for _, s := range segs {
			if s == "" || s == "." || s == ".." || len(s) > 80 {
				t.Fatalf("CleanPath(%q) = %q: bad segment %q", p, got, s)
			}
			for i := 0; i < len(s); i++ {
				if s[i] < 0x20 || s[i] >= 0x7f {
					t.Fatalf("CleanPath(%q) = %q: byte %#x", p, got, s[i])
				}
			}
		}
		// Clean is idempotent.
		if again, err := confine.CleanPath(got, confine.Limits{}); err != nil || again != got {
			t.Fatalf("CleanPath(%q) = %q, then %q, %v", p, got, again, err)
		}
	})
}

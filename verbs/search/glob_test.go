package search

import "testing"

// A find pattern walks into the directories its leading segments can
// match, and no deeper than its segments when it has no "**".
func TestPatternDescend(t *testing.T) {
	for _, tc := range []struct {
		glob, rel string
		depth     int
		want      bool
	}{
		{"cmd/*/main.go", "cmd", 1, true},
		{"cmd/*/main.go", "docs", 1, false},
		{"cmd/*/main.go", "cmd/hub", 2, true},
		{"cmd/*/main.go", "cmd/hub/sub", 3, false},
		{"**/*_test.go", "a/b/c/d", 4, true},
		{"verbs/**/*.go", "verbs/a/b", 3, true},
		{"verbs/**/*.go", "cmd", 1, false},
		{"*.md", "docs", 1, false},
		{"{cmd/hub,docs}/*.go", "cmd", 1, true},
	} {
		p, err := NewPattern(tc.glob)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Descend(tc.rel, tc.depth); got != tc.want {
			t.Errorf("%s: Descend(%s) = %v, want %v", tc.glob, tc.rel, got, tc.want)
		}
	}
	for _, bad := range []string{"", "/abs", "[a"} {
		if _, err := NewPattern(bad); err == nil {
			t.Errorf("pattern %q accepted", bad)
		}
	}
}

// A glob without a slash matches a name at any depth; with one, the path.
func TestGlobs(t *testing.T) {
	g, err := NewGlobs("include", []string{"*.go", "docs/**/*.md", "vendor/"})
	if err != nil {
		t.Fatal(err)
	}
	for rel, want := range map[string]bool{"a/b/c.go": true, "c.go": true, "docs/x/y.md": true, "x/docs/y.md": false,
		"a/vendor": true, "a.txt": false} {
		if g.Match(rel) != want {
			t.Errorf("Match(%s) = %v", rel, !want)
		}
	}
}

package confine

import (
	"errors"
	"path"
	"strings"
)

// Path guard limits used when Limits leaves a field zero.
const (
	DefaultMaxDepth   = 16
	DefaultMaxSegment = 80
)

// Limits bound the paths CleanPath accepts; zero fields take the defaults.
type Limits struct {
	// MaxDepth caps the number of segments in a path.
	MaxDepth int
	// MaxSegment caps the length of one path segment, in bytes.
	MaxSegment int
}

// withDefaults fills the zero fields; a negative one is an error.
func (l Limits) withDefaults() (Limits, error) {
	if l.MaxDepth < 0 || l.MaxSegment < 0 {
		return l, errors.New("workspace limits must not be negative (zero means the default)")
	}
	if l.MaxDepth == 0 {
		l.MaxDepth = DefaultMaxDepth
	}
	if l.MaxSegment == 0 {
		l.MaxSegment = DefaultMaxSegment
	}
	return l, nil
}

// CleanPath is the lexical half of the path guard. It returns p as a clean
// workspace-relative name ("a//b/" becomes "a/b", "." is the root) or an
// *executor.Error with code forbidden_path saying why p is refused: empty,
// absolute, backslashes, NUL or control characters, non-ASCII, "." or ".."
// segments, too many segments or a segment too long (limits from l, zero
// meaning the default).
func CleanPath(p string, l Limits) (string, error) {
	if l.MaxDepth <= 0 {
		l.MaxDepth = DefaultMaxDepth
	}
	if l.MaxSegment <= 0 {
		l.MaxSegment = DefaultMaxSegment
	}
	switch {
	case p == "":
		return "", forbidden("Path is empty; give a path relative to the workspace root, like docs/readme.md (\".\" is the root)")
	case strings.IndexByte(p, 0) >= 0:
		return "", forbidden("Path %q contains a NUL byte", p)
	case strings.IndexByte(p, '\\') >= 0:
		return "", forbidden("Path %q contains a backslash; only POSIX '/' separators are accepted", p)
	case p[0] == '/':
		return "", forbidden("Path %q is absolute; give a path relative to the workspace root", p)
	}
	segs := make([]string, 0, 8)
	for seg := range strings.SplitSeq(p, "/") {
		if seg != "" {
			segs = append(segs, seg)
		}
	}
	if len(segs) == 1 && segs[0] == "." {
		return ".", nil
	}
	if len(segs) > l.MaxDepth {
		return "", forbidden("Path %q has %d segments; at most %d are accepted", p, len(segs), l.MaxDepth)
	}
	for _, seg := range segs {
		switch seg {
		case "..":
			return "", forbidden("Path %q contains '..'; paths stay inside the workspace and may not use '..' segments", p)
		case ".":
			return "", forbidden("Path %q contains a '.' segment; write the path without it", p)
		}
		if len(seg) > l.MaxSegment {
			return "", forbidden("Path %q has a segment of %d characters; at most %d are accepted", p, len(seg), l.MaxSegment)
		}
		for i := 0; i < len(seg); i++ {
			if c := seg[i]; c < 0x20 || c >= 0x7f {
				return "", forbidden("Path %q contains a non-ASCII or control character; only printable ASCII is accepted in paths", p)
			}
		}
	}
	return strings.Join(segs, "/"), nil
}

// denied reports the deny-list entry covering rel, if any.
func (r *Root) denied(rel string) (string, bool) {
	for _, d := range r.deny {
		if rel == d || strings.HasPrefix(rel, d+"/") {
			return d, true
		}
	}
	return "", false
}

// deniedBelow reports a deny-list entry inside directory rel (or equal to it).
func (r *Root) deniedBelow(rel string) (string, bool) {
	for _, d := range r.deny {
		if rel == "." || d == rel || strings.HasPrefix(d, rel+"/") {
			return d, true
		}
	}
	return "", false
}

// Join joins slash-separated workspace-relative paths, "." and "" meaning
// none.
func Join(a, b string) string {
	switch {
	case a == "." || a == "":
		return b
	case b == "." || b == "":
		return a
	}
	return path.Join(a, b)
}

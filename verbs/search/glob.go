package search

import (
	"fmt"
	"path"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// Globs is a set of doublestar globs an entry matches when one of them
// does. A glob without "/" matches an entry's name, at any depth ("*.go",
// "vendor"); one with "/" matches its path relative to the walk's start
// ("cmd/*/main.go", "docs/**").
type Globs struct {
	names, paths []string
}

// NewGlobs checks and keeps globs; what names them in errors is what.
func NewGlobs(what string, globs []string) (*Globs, error) {
	if len(globs) == 0 {
		return nil, nil
	}
	g := &Globs{}
	for _, p := range globs {
		p = strings.TrimPrefix(p, "./")
		if p == "" || !doublestar.ValidatePattern(p) {
			return nil, fmt.Errorf("%s glob %q is not a valid glob (accepted: *, ?, **, [abc], {a,b}; like *.go, cmd/*/main.go, docs/**)", what, p)
		}
		if strings.Contains(strings.TrimSuffix(p, "/"), "/") {
			g.paths = append(g.paths, strings.TrimSuffix(p, "/"))
		} else {
			g.names = append(g.names, strings.TrimSuffix(p, "/"))
		}
	}
	return g, nil
}

// Match reports whether the entry with start-relative path rel matches
// one of the globs; a nil set matches nothing.
func (g *Globs) Match(rel string) bool {
	if g == nil {
		return false
	}
	name := path.Base(rel)
	for _, p := range g.names {
		if doublestar.MatchUnvalidated(p, name) {
			return true
		}
	}
	for _, p := range g.paths {
		if doublestar.MatchUnvalidated(p, rel) {
			return true
		}
	}
	return false
}

// Pattern is fs.find's glob, matched against an entry's whole path
// relative to the walk's start, with what it says about the directories
// worth walking: below a pattern without "**", nothing deeper than its
// segments; and only the directories its leading segments can match.
type Pattern struct {
	glob  string
	segs  []string
	fixed int // segments before the first "**" (all of them when there is none)
	deep  bool
}

// NewPattern checks glob.
func NewPattern(glob string) (*Pattern, error) {
	glob = strings.TrimPrefix(glob, "./")
	if glob == "" || strings.HasPrefix(glob, "/") || !doublestar.ValidatePattern(glob) {
		return nil, fmt.Errorf("pattern %q is not a valid glob relative to path (accepted: *, ?, **, [abc], {a,b}; like **/*_test.go or cmd/*/main.go)", glob)
	}
	p := &Pattern{glob: glob, segs: strings.Split(glob, "/")}
	p.fixed = len(p.segs)
	if strings.Contains(glob, "{") {
		// Alternatives may hold a "/": segments say nothing then.
		p.fixed, p.deep = 0, true
	}
	for i, s := range p.segs[:p.fixed] {
		if strings.Contains(s, "**") {
			p.fixed, p.deep = i, true
			break
		}
	}
	return p, nil
}

// Match reports whether the start-relative path rel matches.
func (p *Pattern) Match(rel string) bool { return doublestar.MatchUnvalidated(p.glob, rel) }

// Descend reports whether a directory at start-relative path rel, of
// depth segments, may hold a match.
func (p *Pattern) Descend(rel string, depth int) bool {
	if !p.deep && depth >= len(p.segs) {
		return false
	}
	if depth > p.fixed {
		return true
	}
	return doublestar.MatchUnvalidated(strings.Join(p.segs[:depth], "/"), rel)
}

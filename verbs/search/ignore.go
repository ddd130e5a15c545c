package search

import (
	"errors"
	"io"
	"strings"

	"github.com/git-pkgs/gitignore"

	"github.com/a6afc2ce/hermes-hub/verbs/confine"
)

// IgnoreFiles are the files whose patterns leave entries out of a walk,
// read in this order in each directory: a later file's patterns take
// precedence over an earlier one's, and a deeper directory's over its
// parents'. Patterns follow gitignore's rules (negation with "!", "/"
// anchoring, "**", a trailing "/" for directories only); an ignore file
// applies whether or not the tree is a git repository.
var IgnoreFiles = []string{".gitignore", ".ignore"}

// maxIgnoreBytes bounds what is read of one ignore file.
const maxIgnoreBytes = 1 << 20

// Ignores is the chain of ignore files in force in a directory: the
// nearest file with an opinion on a path decides, as git decides.
type Ignores struct {
	parent *Ignores
	base   string // the file's directory, workspace-relative ("." for the root)
	m      *gitignore.Matcher
}

// Load returns the chain in force in directory d, given c, the chain of
// its parent: c with d's ignore files added, those that has names (the
// names of d's entries) says exist. An ignore file that cannot be read
// is left out.
func (c *Ignores) Load(d *confine.Dir, has func(name string) bool) *Ignores {
	for _, name := range IgnoreFiles {
		if !has(name) {
			continue
		}
		data, err := readSmall(d, name)
		if err != nil || len(data) == 0 {
			continue
		}
		m := &gitignore.Matcher{}
		m.AddPatterns(data, "")
		c = &Ignores{parent: c, base: d.Name(), m: m}
	}
	return c
}

// readSmall reads the file name of d, at most maxIgnoreBytes of it.
func readSmall(d *confine.Dir, name string) ([]byte, error) {
	f, err := d.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf := make([]byte, min(f.Size, maxIgnoreBytes)+1)
	n, err := io.ReadFull(f, buf)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return buf[:min(n, maxIgnoreBytes)], nil
}

// Ignored reports whether the entry at the workspace-relative path p, a
// directory when isDir, is left out by the chain.
func (c *Ignores) Ignored(p string, isDir bool) bool {
	for l := c; l != nil; l = l.parent {
		rel := p
		if l.base != "." {
			if !strings.HasPrefix(p, l.base+"/") {
				continue
			}
			rel = p[len(l.base)+1:]
		}
		if isDir {
			rel += "/"
		}
		if r := l.m.MatchDetail(rel); r.Matched {
			return r.Ignored
		}
	}
	return false
}

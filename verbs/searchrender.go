package verbs

import (
	"fmt"
	"strings"

	"github.com/a6afc2ce/hermes-hub/executor"
)

var (
	_ executor.Renderer = (*FsSearchResult)(nil)
	_ executor.Renderer = (*FsFindResult)(nil)
)

// Render implements executor.Renderer: a count line, then each hit as
// `path:line` over its line in a code block, hits grouped by file (by
// path, then line); with context lines, the block holds them too, marked
// as ripgrep marks them (N: the match, N- around it). How the search was
// cut, if it was, comes last.
func (r *FsSearchResult) Render(args any) string {
	a := argsAs[FsSearchArgs](args)
	where := orRoot(a.Path)
	if len(r.Matches) == 0 {
		return fmt.Sprintf("No match for %s in `%s` (%s searched).%s", inlineCode(a.Pattern), where,
			countOf(r.FilesSearched, "file", "files"), searchCut(r.TruncatedBy, a.MaxResults))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s in %s for %s",
		countOf(int64(len(r.Matches)), "matching line", "matching lines"), countOf(int64(filesOf(r.Matches)), "file", "files"), inlineCode(a.Pattern))
	for i, m := range r.Matches {
		if i > 0 && m.Path != r.Matches[i-1].Path {
			b.WriteString("\n") // a blank line between files
		}
		fmt.Fprintf(&b, "\n`%s:%d`\n%s", m.Path, m.Line, executor.Fence(hitBlock(m), langFor(m.Path)))
	}
	b.WriteString(searchCut(r.TruncatedBy, a.MaxResults))
	return b.String()
}

// hitBlock is the text of a hit's code block: the line, or with context
// the lines around it, numbered.
func hitBlock(m SearchMatch) string {
	text := m.Text
	if m.TextCut {
		text = "…" + text + "…"
	}
	if len(m.Before) == 0 && len(m.After) == 0 {
		return text
	}
	var b strings.Builder
	for i, l := range m.Before {
		fmt.Fprintf(&b, "%d- %s\n", m.Line-len(m.Before)+i, l)
	}
	fmt.Fprintf(&b, "%d: %s\n", m.Line, text)
	for i, l := range m.After {
		fmt.Fprintf(&b, "%d- %s\n", m.Line+1+i, l)
	}
	return b.String()
}

// searchCut says why a search or a find stopped early, and what to do.
func searchCut(by CutReason, maxResults *int) string {
	switch by {
	case CutByCount:
		n := DefaultSearchResults
		if maxResults != nil {
			n = *maxResults
		}
		return fmt.Sprintf("\n✂ Stopped at %s (maxResults): narrow it with path, include or exclude.", countOf(int64(n), "result", "results"))
	case CutByTime:
		return "\n✂ Stopped by the verb timeout: these are the results found so far."
	case CutByBytes:
		return "\n✂ Not everything was searched: a file was over maxFileBytes, or the results reached the size limit."
	}
	return ""
}

func filesOf(ms []SearchMatch) int {
	n := 0
	for i, m := range ms {
		if i == 0 || m.Path != ms[i-1].Path {
			n++
		}
	}
	return n
}

// Render implements executor.Renderer: one line per entry, directories
// with a trailing slash, files with their size.
func (r *FsFindResult) Render(args any) string {
	a := argsAs[FsFindArgs](args)
	where := orRoot(a.Path)
	if len(r.Entries) == 0 {
		return fmt.Sprintf("Nothing in `%s` matches %s.%s", where, inlineCode(a.Pattern), searchCut(r.TruncatedBy, a.MaxResults))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s in `%s` %s %s", countOf(int64(len(r.Entries)), "entry", "entries"), where,
		plural(int64(len(r.Entries)), "matches", "match"), inlineCode(a.Pattern))
	for _, e := range r.Entries {
		if e.Type == FindDir {
			fmt.Fprintf(&b, "\n📁 %s/", e.Path)
		} else {
			fmt.Fprintf(&b, "\n📄 %s (%s)", e.Path, countOf(e.SizeBytes, "byte", "bytes"))
		}
	}
	b.WriteString(searchCut(r.TruncatedBy, a.MaxResults))
	return b.String()
}

// countOf is "1 file", "2 files".
func countOf(n int64, one, many string) string {
	return fmt.Sprintf("%d %s", n, plural(n, one, many))
}

// inlineCode writes s as inline code, in a run of backticks longer than
// any it holds.
func inlineCode(s string) string {
	longest, run := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	if longest == 0 {
		return "`" + s + "`"
	}
	f := strings.Repeat("`", longest+1)
	return f + " " + s + " " + f
}

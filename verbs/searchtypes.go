package verbs

import (
	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/verbs/search"
)

// Argument and result types of fs.search and fs.find (see types.go for
// how schemas are derived from them).

// Limits of fs.search and fs.find.
const (
	DefaultSearchResults = 200      // maxResults when the call names none
	MaxSearchResults     = 2000     // the most maxResults may ask for
	MaxContextLines      = 10       // the most contextLines may ask for
	DefaultMaxFileBytes  = 64 << 20 // maxFileBytes when the call names none
	// MaxSearchLineBytes bounds a line's text in a match.
	MaxSearchLineBytes = search.MaxLineBytes
)

// FsSearchArgs are the arguments of fs.search.
type FsSearchArgs struct {
	Pattern      string   `json:"pattern" desc:"A regular expression (RE2 syntax), or a literal with fixedStrings; matched within one line"`
	FixedStrings bool     `json:"fixedStrings,omitempty" desc:"Take pattern as a literal string, not a regular expression"`
	IgnoreCase   bool     `json:"ignoreCase,omitempty" desc:"Match letters in either case"`
	Path         string   `json:"path,omitempty" default:"." desc:"Workspace-relative directory (or file) to search"`
	Include      []string `json:"include,omitempty" desc:"Search only files matching one of these globs: *.go matches a name at any depth, cmd/**/*.go a path under path"`
	Exclude      []string `json:"exclude,omitempty" desc:"Leave out files and directories matching one of these globs (same rules as include)"`
	ContextLines int      `json:"contextLines,omitempty" default:"0" desc:"Lines before and after each match to return, at most 10"`
	MaxResults   *int     `json:"maxResults,omitempty" default:"200" desc:"Matching lines to return, at most 2000; the search stops there"`
	MaxFileBytes *int64   `json:"maxFileBytes,omitempty" default:"67108864" desc:"Larger files are not searched (the result then says truncatedBy bytes)"`
	Hidden       bool     `json:"hidden,omitempty" desc:"Search hidden files and directories (names starting with a dot) too"`
	NoIgnore     bool     `json:"noIgnore,omitempty" desc:"Do not honour .gitignore and .ignore files (and walk .git directories when hidden)"`
	Binary       bool     `json:"binary,omitempty" desc:"Search files holding NUL bytes too (skipped by default)"`
}

// FsSearchResult is the result of fs.search.
type FsSearchResult struct {
	executor.Result
	Matches       []SearchMatch `json:"matches" desc:"Matching lines, by path and line; when the search was cut by count, which ones were found first depends on the walk"`
	FilesSearched int64         `json:"filesSearched" desc:"Files whose content was searched"`
	FilesSkipped  int64         `json:"filesSkipped" desc:"Files not searched: binary ones, unreadable ones and those over maxFileBytes"`
	Truncated     bool          `json:"truncated" desc:"Whether the search was cut before it saw every file"`
	TruncatedBy   CutReason     `json:"truncatedBy,omitempty" desc:"Why it was cut: count (maxResults reached), time (the verb timeout came; the matches found so far are returned), bytes (a file over maxFileBytes was skipped, or the matches filled the result's size limit)"`
}

// SearchMatch is one matching line.
type SearchMatch struct {
	Path    string   `json:"path" desc:"Workspace-relative path of the file"`
	Line    int      `json:"line" desc:"Line number, counting from 1"`
	Column  int      `json:"column" desc:"Byte offset of the first match in the line, counting from 1"`
	Text    string   `json:"text" desc:"The line without its line ending, at most 500 bytes"`
	TextCut bool     `json:"textCut,omitempty" desc:"The line is longer: text is the part around the match"`
	Before  []string `json:"before,omitempty" desc:"With contextLines: the lines before, in order"`
	After   []string `json:"after,omitempty" desc:"With contextLines: the lines after, in order"`
}

// CutReason says why fs.search or fs.find stopped before the end.
type CutReason string

// Cut reasons.
const (
	CutByCount CutReason = "count"
	CutByTime  CutReason = "time"
	CutByBytes CutReason = "bytes"
)

// Values implements executor.Enum.
func (CutReason) Values() []string {
	return []string{string(CutByCount), string(CutByTime), string(CutByBytes)}
}

// FsFindArgs are the arguments of fs.find.
type FsFindArgs struct {
	Pattern    string   `json:"pattern" desc:"A glob matched against whole paths relative to path: **/*_test.go at any depth, cmd/*/main.go, *.md at the top only"`
	Path       string   `json:"path,omitempty" default:"." desc:"Workspace-relative directory to search from"`
	Type       FindType `json:"type,omitempty" default:"file and dir" desc:"Only files, or only directories"`
	Exclude    []string `json:"exclude,omitempty" desc:"Leave out files and directories matching one of these globs: a name at any depth without a slash, a path under path with one"`
	MaxResults *int     `json:"maxResults,omitempty" default:"200" desc:"Entries to return, at most 2000; the walk stops there"`
	Hidden     bool     `json:"hidden,omitempty" desc:"Find hidden files and directories (names starting with a dot) too"`
	NoIgnore   bool     `json:"noIgnore,omitempty" desc:"Do not honour .gitignore and .ignore files"`
}

// FindType restricts fs.find to one kind of entry.
type FindType string

// Find types.
const (
	FindFile FindType = "file"
	FindDir  FindType = "dir"
)

// Values implements executor.Enum.
func (FindType) Values() []string { return []string{string(FindFile), string(FindDir)} }

// FsFindResult is the result of fs.find.
type FsFindResult struct {
	executor.Result
	Entries     []FoundEntry `json:"entries" desc:"Matching entries, by path"`
	Truncated   bool         `json:"truncated" desc:"Whether the walk was cut before it saw every entry"`
	TruncatedBy CutReason    `json:"truncatedBy,omitempty" desc:"Why it was cut: count (maxResults reached) or time (the verb timeout came; the entries found so far are returned)"`
}

// FoundEntry is one entry fs.find found.
type FoundEntry struct {
	Path       string   `json:"path" desc:"Workspace-relative path"`
	Type       FindType `json:"type" desc:"file or dir"`
	SizeBytes  int64    `json:"sizeBytes" desc:"Size in bytes (of the directory entry itself for a directory)"`
	ModifiedAt string   `json:"modifiedAt" desc:"Last modification, UTC with milliseconds, like 2026-01-02T03:04:05.678Z"`
}

package verbs

import (
	"context"
	"errors"
	"io/fs"
	"path"
	"runtime"
	"time"

	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/verbs/confine"
	"github.com/a6afc2ce/hermes-hub/verbs/search"
)

// fs.search and fs.find walk the workspace with package search, every
// directory and file through the workspace's confinement (verbs/confine):
// the hub's state directory and protected files are never walked, opened
// or shown, and symbolic links are not followed. docs/search.md says what
// they do for their users.

// Search implements fs.search.
func (s *Set) Search(ctx context.Context, a FsSearchArgs) (FsSearchResult, error) {
	var res FsSearchResult
	opts, err := a.options()
	if err != nil {
		return res, err
	}
	p, l, release, err := s.usePath(ctx, false, orRoot(a.Path), confine.FollowFinal|confine.AllowRoot)
	if err != nil {
		return res, err
	}
	defer release()
	fi, err := located(l)
	if err != nil {
		return res, err
	}
	opts.MaxBytes = p.ws.opts.MaxReadBytes
	stop, done := deadlineStop(ctx)
	defer done()
	workers := runtime.GOMAXPROCS(0)
	sr := search.NewSearch(opts, stop, workers)
	if fi.IsDir() {
		wopts, err := walkOptions(p.ws, a.Hidden, a.NoIgnore, a.Exclude)
		if err != nil {
			return res, err
		}
		if err := s.walk(p.ws, l, wopts, stop, sr.Visitors()); err != nil {
			return res, err
		}
	} else if err := searchFile(p.ws, l, sr); err != nil {
		return res, err
	}
	if stop.Reason() == search.ByCancel {
		return res, ctx.Err()
	}
	matches, searched, skipped, large := sr.Results()
	res.Matches = make([]SearchMatch, len(matches))
	for i, m := range matches {
		res.Matches[i] = SearchMatch{Path: m.Path, Line: m.Line, Column: m.Column, Text: m.Text, TextCut: m.Cut, Before: m.Before, After: m.After}
	}
	res.FilesSearched, res.FilesSkipped = searched, skipped
	res.TruncatedBy = cutReason(stop.Reason())
	if res.TruncatedBy == "" && large {
		res.TruncatedBy = CutByBytes
	}
	res.Truncated = res.TruncatedBy != ""
	return res, nil
}

// options checks the arguments of fs.search and returns the search's
// options (all but its byte budget).
func (a FsSearchArgs) options() (search.SearchOptions, error) {
	var o search.SearchOptions
	m, err := search.Compile(a.Pattern, a.FixedStrings, a.IgnoreCase)
	if err != nil {
		return o, executor.Errorf(executor.CodeInvalidArguments, "pattern: %v", err)
	}
	o.Matcher, o.Binary = m, a.Binary
	if o.MaxResults, err = maxResults(a.MaxResults); err != nil {
		return o, err
	}
	if a.ContextLines < 0 || a.ContextLines > MaxContextLines {
		return o, executor.Errorf(executor.CodeInvalidArguments, "contextLines is %d (accepted: 0 to %d)", a.ContextLines, MaxContextLines)
	}
	o.Context = a.ContextLines
	o.MaxFileBytes = DefaultMaxFileBytes
	if a.MaxFileBytes != nil {
		if *a.MaxFileBytes < 1 {
			return o, executor.Errorf(executor.CodeInvalidArguments, "maxFileBytes is %d (accepted: 1 or more bytes; default %d)", *a.MaxFileBytes, DefaultMaxFileBytes)
		}
		o.MaxFileBytes = *a.MaxFileBytes
	}
	if o.Include, err = search.NewGlobs("include", a.Include); err != nil {
		return o, executor.Errorf(executor.CodeInvalidArguments, "%v", err)
	}
	return o, nil
}

// maxResults checks a maxResults argument (nil: the default).
func maxResults(n *int) (int, error) {
	if n == nil {
		return DefaultSearchResults, nil
	}
	if *n < 1 || *n > MaxSearchResults {
		return 0, executor.Errorf(executor.CodeInvalidArguments, "maxResults is %d (accepted: 1 to %d; default %d)", *n, MaxSearchResults, DefaultSearchResults)
	}
	return *n, nil
}

// walkOptions are the options of a walk of workspace w.
func walkOptions(w *Workspace, hidden, noIgnore bool, exclude []string) (search.WalkOptions, error) {
	ex, err := search.NewGlobs("exclude", exclude)
	if err != nil {
		return search.WalkOptions{}, executor.Errorf(executor.CodeInvalidArguments, "%v", err)
	}
	return search.WalkOptions{Hidden: hidden, NoIgnore: noIgnore, MaxDepth: w.opts.MaxDepth, Exclude: ex}, nil
}

func orRoot(p string) string {
	if p == "" {
		return "."
	}
	return p
}

// located describes the located path, or says it does not exist.
func located(l *confine.Loc) (fs.FileInfo, error) {
	fi, err := l.Stat()
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, executor.Errorf(executor.CodeNotFound, "Path not found: %s", l.Show())
	case err != nil:
		return nil, confine.FSError(err, l.Show(), "stat")
	}
	return fi, nil
}

// walk walks the located directory l of workspace w, with the ignore
// files of its parents in force (unless they leave l itself out: a
// directory named explicitly is walked by its own ignore files only).
func (s *Set) walk(w *Workspace, l *confine.Loc, opts search.WalkOptions, stop *search.Stop, vs []search.Visitor) error {
	d, err := l.OpenWalk()
	if err != nil {
		return err
	}
	var ign *search.Ignores
	if !opts.NoIgnore {
		ign = parentIgnores(w, l.Name())
		if l.Name() != "." && ign.Ignored(l.Name(), true) {
			ign = nil
		}
	}
	search.Walk(d, ign, opts, stop, vs)
	return nil
}

// parentIgnores is the chain of ignore files of the directories above
// name, from the workspace's root down; a directory that cannot be opened
// adds none.
func parentIgnores(w *Workspace, name string) *search.Ignores {
	if name == "." {
		return nil
	}
	dirs := []string{"."}
	for i := range len(name) {
		if name[i] == '/' {
			dirs = append(dirs, name[:i])
		}
	}
	var ign *search.Ignores
	all := func(string) bool { return true }
	for _, dir := range dirs {
		l, err := w.root.Locate(dir, confine.FollowFinal|confine.AllowRoot)
		if err != nil {
			return ign
		}
		if d, err := l.OpenWalk(); err == nil {
			ign = ign.Load(d, all)
			d.Close()
		}
		l.Close()
	}
	return ign
}

// searchFile searches the one file located as l.
func searchFile(w *Workspace, l *confine.Loc, sr *search.Search) error {
	pl, err := w.root.Locate(path.Dir(l.Name()), confine.FollowFinal|confine.AllowRoot)
	if err != nil {
		return err
	}
	defer pl.Close()
	d, err := pl.OpenWalk()
	if err != nil {
		return err
	}
	defer d.Close()
	f, err := d.Open(path.Base(l.Name()))
	if err != nil {
		return err
	}
	f.Close()
	sr.File(d, path.Base(l.Name()))
	return nil
}

// deadlineStop returns the stop signal of a walk in ctx, set a little
// before ctx's deadline (so that the partial result still reaches the
// caller, or the hub waiting for a node) and when ctx is canceled, and the
// function that releases its timer.
func deadlineStop(ctx context.Context) (*search.Stop, func()) {
	stop := &search.Stop{}
	var t *time.Timer
	if dl, ok := ctx.Deadline(); ok {
		left := time.Until(dl)
		switch grace := min(max(left/10, 20*time.Millisecond), 2*time.Second); {
		case left <= grace:
			stop.Set(search.ByTime) // too late to start: the answer is that
		default:
			t = time.AfterFunc(left-grace, func() { stop.Set(search.ByTime) })
		}
	}
	cancel := context.AfterFunc(ctx, func() {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			stop.Set(search.ByTime)
		} else {
			stop.Set(search.ByCancel)
		}
	})
	return stop, func() {
		if t != nil {
			t.Stop()
		}
		cancel()
	}
}

func cutReason(r search.Reason) CutReason {
	switch r {
	case search.ByCount:
		return CutByCount
	case search.ByTime:
		return CutByTime
	case search.ByBytes:
		return CutByBytes
	}
	return ""
}

package verbs

import (
	"cmp"
	"context"
	"runtime"
	"slices"
	"sync/atomic"

	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/verbs/confine"
	"github.com/a6afc2ce/hermes-hub/verbs/search"
)

// Find implements fs.find: the entries below path whose path relative to
// it matches the glob, walked as fs.search walks (hidden entries and
// ignore files left out unless asked, links not followed), with only the
// directories the glob can match below walked into.
func (s *Set) Find(ctx context.Context, a FsFindArgs) (FsFindResult, error) {
	var res FsFindResult
	pat, err := search.NewPattern(a.Pattern)
	if err != nil {
		return res, executor.Errorf(executor.CodeInvalidArguments, "%v", err)
	}
	switch a.Type {
	case "", FindFile, FindDir:
	default:
		return res, executor.Errorf(executor.CodeInvalidArguments, "type %q is not accepted (accepted: file, dir; leave it out for both)", a.Type)
	}
	limit, err := maxResults(a.MaxResults)
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
	if !fi.IsDir() {
		return res, executor.Errorf(executor.CodeNotADirectory, "Path %s is a file, not a directory (fs.find searches below a directory)", l.Show())
	}
	wopts, err := walkOptions(p.ws, a.Hidden, a.NoIgnore, a.Exclude)
	if err != nil {
		return res, err
	}
	wopts.Descend = pat.Descend
	stop, done := deadlineStop(ctx)
	defer done()
	shared := &finds{pat: pat, typ: a.Type, limit: int64(limit), stop: stop}
	vs := make([]search.Visitor, runtime.GOMAXPROCS(0))
	fs := make([]*finder, len(vs))
	for i := range vs {
		fs[i] = &finder{finds: shared}
		vs[i] = fs[i]
	}
	if err := s.walk(p.ws, l, wopts, stop, vs); err != nil {
		return res, err
	}
	if stop.Reason() == search.ByCancel {
		return res, ctx.Err()
	}
	res.Entries = []FoundEntry{}
	for _, f := range fs {
		res.Entries = append(res.Entries, f.found...)
	}
	slices.SortFunc(res.Entries, func(a, b FoundEntry) int { return cmp.Compare(a.Path, b.Path) })
	res.TruncatedBy = cutReason(stop.Reason())
	res.Truncated = res.TruncatedBy != ""
	return res, nil
}

// finds is what the workers of one fs.find share.
type finds struct {
	pat   *search.Pattern
	typ   FindType
	limit int64
	count atomic.Int64
	stop  *search.Stop
}

// finder is one worker's visitor of fs.find.
type finder struct {
	*finds
	found []FoundEntry
}

// File implements search.Visitor.
func (f *finder) File(e search.Entry) {
	if f.typ != FindDir {
		f.visit(e, FindFile)
	}
}

// Dir implements search.Visitor.
func (f *finder) Dir(e search.Entry) {
	if f.typ != FindFile {
		f.visit(e, FindDir)
	}
}

func (f *finder) visit(e search.Entry, typ FindType) {
	if f.stop.Stopped() || !f.pat.Match(e.Rel()) {
		return
	}
	fi, err := e.Dir.Lstat(e.Name)
	if err != nil {
		return // gone meanwhile, or refused
	}
	if f.count.Add(1) > f.limit {
		f.stop.Set(search.ByCount)
		return
	}
	f.found = append(f.found, FoundEntry{Path: e.Path(), Type: typ, SizeBytes: fi.Size(), ModifiedAt: fmtTime(fi.ModTime())})
}

package verbs

import (
	"context"
	"fmt"
	"strings"

	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/verbs/confine"
)

// fs.readMany reads several files in one call, each as fs.readFile reads
// it and each with its own success or error, in the order given: at most
// maxReadMany paths, and at most the workspace's read limit
// (verbs.max_read_bytes) of content in all. A file that does not fit in
// what is left of that limit fails with too_large; the files after it are
// still read if they fit.

// maxReadMany bounds the paths of one fs.readMany call.
const maxReadMany = 32

// FsReadManyArgs are the arguments of fs.readMany.
type FsReadManyArgs struct {
	Paths []string `json:"paths" desc:"Workspace-relative paths of files, 1 to 32; their content together is at most verbs.max_read_bytes (4 MiB by default)"`
}

// FsReadManyResult is the result of fs.readMany. The call succeeds when
// its arguments are valid; each file says whether it was read.
type FsReadManyResult struct {
	executor.Result
	Files []ReadManyFile `json:"files" desc:"One entry per path, in the order given"`
}

// ReadManyFile is one file of fs.readMany's result.
type ReadManyFile struct {
	Path         string             `json:"path" desc:"The path as given"`
	Succeeded    bool               `json:"succeeded" desc:"Whether the file was read"`
	Content      string             `json:"content" desc:"The whole file, as fs.readFile returns it: text as it is, or base64 when file.encoding is base64; empty when it was not read"`
	File         *VfsFile           `json:"file,omitempty" desc:"The file's path, encoding and size; in session workspaces also its version and timestamps"`
	ErrorMessage string             `json:"errorMessage,omitempty" desc:"Why the file was not read"`
	ErrorCode    executor.ErrorCode `json:"errorCode,omitempty" desc:"Why the file was not read, for programs: not_found, forbidden_path, too_large, …"`
}

// ReadMany implements fs.readMany.
func (s *Set) ReadMany(ctx context.Context, a FsReadManyArgs) (FsReadManyResult, error) {
	var res FsReadManyResult
	if n := len(a.Paths); n == 0 || n > maxReadMany {
		return res, executor.Errorf(executor.CodeInvalidArguments, "paths names %d files; fs.readMany reads 1 to %d per call", n, maxReadMany)
	}
	p, unlock, err := s.use(ctx, false)
	if err != nil {
		return res, err
	}
	defer unlock()
	limit := p.ws.opts.MaxReadBytes
	left := limit
	res.Files = make([]ReadManyFile, len(a.Paths))
	for i, path := range a.Paths {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		f := &res.Files[i]
		f.Path = path
		f.Content, f.File, err = readOne(ctx, p, path, left, limit)
		if err != nil {
			e := executor.ErrorFrom(err)
			f.ErrorMessage, f.ErrorCode = e.Message, e.Code
			continue
		}
		f.Succeeded = true
		left -= f.File.SizeBytes
	}
	return res, nil
}

// readOne reads one file of fs.readMany, if it fits in the left bytes of
// the call's limit.
func readOne(ctx context.Context, p Place, path string, left, limit int64) (string, *VfsFile, error) {
	l, err := p.ws.root.Locate(path, confine.FollowFinal)
	if err != nil {
		return "", nil, err
	}
	defer l.Close()
	content, f, _, err := readWhole(ctx, p, l, left, func(size int64) error {
		if size > limit {
			return executor.Errorf(executor.CodeTooLarge,
				"File %s is %d bytes; fs.readMany returns at most %d in all (use fs.readRange to read part of it)", l.Show(), size, limit)
		}
		return executor.Errorf(executor.CodeTooLarge,
			"File %s is %d bytes, more than the %d left of the %d fs.readMany returns in one call; read it in another call", l.Show(), size, left, limit)
	})
	// The content is a result's of its own (never given back): the
	// buffer it shares stays with it.
	return content, f, err
}

var _ executor.Renderer = (*FsReadManyResult)(nil)

// Render implements executor.Renderer: one block per file, as fs.readFile
// renders it, or its error.
func (r *FsReadManyResult) Render(any) string {
	parts := make([]string, 0, len(r.Files))
	for _, f := range r.Files {
		if !f.Succeeded {
			parts = append(parts, fmt.Sprintf("`%s`: ⚠ %s (%s)", f.Path, f.ErrorMessage, f.ErrorCode))
			continue
		}
		one := FsReadFileResult{Content: f.Content, File: f.File}
		parts = append(parts, one.Render(&FsReadFileArgs{Path: f.Path}))
	}
	return strings.Join(parts, "\n\n")
}

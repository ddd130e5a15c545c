package confine

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"

	"github.com/a6afc2ce/hermes-hub/executor"
)

// protectedErr is the refusal of a path that leads into a protected
// directory; FSError turns it into forbidden_path.
type protectedErr struct{ dir *guardedDir }

func (e *protectedErr) Error() string { return "path leads into " + e.dir.label() }

// protectedFileErr is the refusal of a protected file; FSError turns it
// into forbidden_path.
type protectedFileErr struct{ what string }

func (e *protectedFileErr) Error() string { return "path is " + e.what + ", a protected file" }

// errChanged reports a symbolic link found where the path's resolution,
// just before, saw none: something swapped it in meanwhile.
var errChanged = errors.New("a symbolic link appeared in the path while it was being opened")

// errEscapes marks a symbolic link that leaves the root.
var errEscapes = errors.New("path escapes from the workspace")

// walkErr is a failed descent, naming the root-relative prefix it stopped at.
type walkErr struct {
	at  string
	err error
}

func (e *walkErr) Error() string { return e.at + ": " + e.err.Error() }
func (e *walkErr) Unwrap() error { return e.err }

// FSError turns an error of the os package, or of this package, into an
// *executor.Error whose message names the workspace-relative path rel and
// never a host path; op says what failed ("read", "stat"). An
// *executor.Error is returned as it is, and so are the context's errors.
func FSError(err error, rel, op string) error {
	var e *executor.Error
	if errors.As(err, &e) {
		return e
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var pe *protectedErr
	var fe *protectedFileErr
	switch {
	case errors.As(err, &pe):
		return fail(executor.CodeForbiddenPath, err, "Path %s leads into %s, which is reserved for the hub's state and cannot be accessed", rel, pe.dir.label())
	case errors.As(err, &fe):
		return fail(executor.CodeForbiddenPath, err, "Path %s leads to %s, a protected file of the hub (its configuration and secrets are out of the verbs' reach); it cannot be accessed", rel, fe.what)
	case errors.Is(err, errChanged):
		return fail(executor.CodeIOError, err, "Path %s changed while it was being opened (a symbolic link appeared in it); try again", rel)
	case isEscape(err):
		return fail(executor.CodeForbiddenPath, err, "Path %s resolves outside the workspace", rel)
	case errors.Is(err, syscall.ELOOP):
		return fail(executor.CodeForbiddenPath, err, "Path %s has too many levels of symbolic links", rel)
	case errors.Is(err, fs.ErrNotExist):
		return fail(executor.CodeNotFound, err, "File not found: %s", rel)
	case errors.Is(err, syscall.ENOTDIR):
		return fail(executor.CodeNotADirectory, err, "A parent of %s is a file, not a directory", rel)
	case errors.Is(err, syscall.EISDIR):
		return fail(executor.CodeIsADirectory, err, "Path is a directory: %s", rel)
	case errors.Is(err, fs.ErrPermission):
		return fail(executor.CodeIOError, err, "Permission denied: %s", rel)
	case errors.Is(err, syscall.ENOSPC):
		return fail(executor.CodeIOError, err, "No space left on the device holding %s", rel)
	}
	return fail(executor.CodeIOError, err, "%s %s: %s", op, rel, Hostless(err))
}

// Hostless is err's message without the host path that *fs.PathError and
// *os.LinkError carry: what a caller may see of an I/O failure.
func Hostless(err error) string {
	var pe *fs.PathError
	var le *os.LinkError
	switch {
	case errors.As(err, &pe):
		return pe.Err.Error()
	case errors.As(err, &le):
		return le.Err.Error()
	}
	return err.Error()
}

// isEscape reports os.Root's refusal of a path that leaves the root. The os
// package does not export that error, so it is matched by its text.
func isEscape(err error) bool {
	for err != nil {
		if err.Error() == "path escapes from parent" {
			return true
		}
		err = errors.Unwrap(err)
	}
	return false
}

// fail returns an *executor.Error with a formatted message and cause.
func fail(code executor.ErrorCode, cause error, format string, args ...any) *executor.Error {
	return &executor.Error{Code: code, Message: fmt.Sprintf(format, args...), Err: cause}
}

func forbidden(format string, args ...any) *executor.Error {
	return executor.Errorf(executor.CodeForbiddenPath, format, args...)
}

// mkdirError explains a failed creation of the directories of show,
// naming the file in the way.
func mkdirError(err error, show string) error {
	var we *walkErr
	if errors.As(err, &we) && (errors.Is(err, syscall.ENOTDIR) || errors.Is(err, fs.ErrExist)) {
		return executor.Errorf(executor.CodeNotADirectory, "Cannot create directory for %s: %s is a file, not a directory", show, we.at)
	}
	return FSError(err, show, "create directory for")
}

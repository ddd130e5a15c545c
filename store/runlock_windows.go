//go:build windows

package store

import (
	"errors"
	"os"

	"golang.org/x/sys/windows"
)

// runLocks says whether this system locks run files: it does.
const runLocks = true

// tryLockFile takes an exclusive lock on the first byte of f without
// waiting: ErrRunOpen when another handle holds it. The lock goes when the
// handle is closed, or with the process.
func tryLockFile(f *os.File) error {
	var ol windows.Overlapped
	err := windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, &ol)
	if errors.Is(err, windows.ERROR_LOCK_VIOLATION) || errors.Is(err, windows.ERROR_IO_PENDING) {
		return ErrRunOpen
	}
	if err != nil {
		return &os.PathError{Op: "LockFileEx", Path: f.Name(), Err: err}
	}
	return nil
}

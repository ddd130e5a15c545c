//go:build unix

package store

import (
	"errors"
	"os"
	"syscall"
)

// runLocks says whether this system locks run files: it does.
const runLocks = true

// tryLockFile takes an exclusive flock on f without waiting: ErrRunOpen
// when another open file holds one. The lock goes with the file's last
// close, or with the process. flock, not fcntl: a lock belongs to its open
// file, so probing a run this process writes (a second open, closed
// again) neither takes nor drops the writer's lock.
func tryLockFile(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EWOULDBLOCK):
			return ErrRunOpen
		}
		return &os.PathError{Op: "flock", Path: f.Name(), Err: err}
	}
}

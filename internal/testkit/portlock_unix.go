//go:build unix

package testkit

import (
	"io"
	"os"
	"path/filepath"
	"sync"
	"syscall"
)

// portLocks is the file whose bytes stand for ports: a process holds a
// port by a write lock on the byte at its number. The kernel drops a
// process's locks when it ends, however it ends; the file stays open
// until then (closing any descriptor of it would drop them all).
var portLocks struct {
	once sync.Once
	f    *os.File
}

// portLockFile is the file, in the temporary directory every test
// process of the project shares.
const portLockFile = "hermes-hub-test-ports.lock"

// claimPort holds port p for this process, false when another process
// holds it. Without the file (a temporary directory that cannot hold it)
// every port may be claimed: the bind check alone decides, as before.
func claimPort(p int) bool {
	portLocks.once.Do(func() {
		f, err := os.OpenFile(filepath.Join(os.TempDir(), portLockFile), os.O_CREATE|os.O_RDWR, 0o600)
		if err == nil {
			portLocks.f = f
		}
	})
	if portLocks.f == nil {
		return true
	}
	lk := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: io.SeekStart, Start: int64(p), Len: 1}
	return syscall.FcntlFlock(portLocks.f.Fd(), syscall.F_SETLK, &lk) == nil
}

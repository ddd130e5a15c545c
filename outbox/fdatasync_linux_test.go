package outbox

import (
	"os"
	"syscall"
)

// fdatasync is what bbolt calls on Linux to commit.
func fdatasync(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }

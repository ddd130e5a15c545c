package main

import (
	"os"
	"syscall"
)

// fdatasync flushes f's data (not its times), as bbolt does on Linux.
func fdatasync(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }

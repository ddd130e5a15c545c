//go:build !linux

package main

import "os"

// fdatasync flushes f: the system has no fdatasync, so its fsync.
func fdatasync(f *os.File) error { return f.Sync() }

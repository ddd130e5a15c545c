//go:build !linux

package outbox

import "os"

// fdatasync is an fsync where there is no fdatasync, as in bbolt.
func fdatasync(f *os.File) error { return f.Sync() }

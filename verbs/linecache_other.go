//go:build !linux

package verbs

import "io/fs"

// fileKeyOf reports no key where the change time is not read, so nothing
// is cached there.
func fileKeyOf(fs.FileInfo) (fileKey, bool) { return fileKey{}, false }

//go:build !unix

package store

import "io/fs"

// inodeOf is unknown where files have no inode numbers.
func inodeOf(fs.FileInfo) (uint64, bool) { return 0, false }

//go:build windows

package verbs

import "io/fs"

// Windows has no such flags; nothing opens files there, since the
// workspace refuses to open (see posix.Supported).
const (
	oNoFollow = 0
	oNonblock = 0
)

// hostFileID is unknown on Windows: the workspace does not open there.
func hostFileID(fs.FileInfo) (fileID, bool) { return fileID{}, false }

// fileOwner is unknown on Windows.
func fileOwner(fs.FileInfo) (int, bool) { return 0, false }

// linkCount is unknown on Windows.
func linkCount(fs.FileInfo) (uint64, bool) { return 0, false }

// fileGroup is unknown on Windows.
func fileGroup(fs.FileInfo) (int, bool) { return 0, false }

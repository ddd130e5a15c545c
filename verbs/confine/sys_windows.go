package confine

import (
	"errors"
	"io/fs"
)

// Nothing below is reached on Windows: a Root does not open there (see
// internal/posix).

func dupFD(int) (int, error) { return -1, errors.ErrUnsupported }

func syncFD(int) error { return errors.ErrUnsupported }

func hostFileID(fs.FileInfo) (fileID, bool) { return fileID{}, false }

func linkCount(fs.FileInfo) (uint64, bool) { return 0, false }

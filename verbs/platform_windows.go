//go:build windows

package verbs

// Windows has no such flags; nothing opens files there, since the
// workspace refuses to open (see posix.Supported).
const (
	oNoFollow = 0
	oNonblock = 0
)

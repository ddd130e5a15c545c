//go:build unix

package verbs

import "syscall"

// Open flags that keep a path's last element from being followed or a FIFO
// from blocking the open (copies of a session workspace's tree).
const (
	oNoFollow = syscall.O_NOFOLLOW
	oNonblock = syscall.O_NONBLOCK
)

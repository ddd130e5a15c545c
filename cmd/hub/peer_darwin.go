//go:build darwin

package main

import (
	"net"

	"golang.org/x/sys/unix"
)

// peerCheckSupported: macOS reports a socket peer's credentials
// (LOCAL_PEERCRED).
func peerCheckSupported() error { return nil }

// peerUID is the uid of the process at the other end of c, -1 when unknown.
func peerUID(c *net.UnixConn) int {
	raw, err := c.SyscallConn()
	if err != nil {
		return -1
	}
	uid := -1
	_ = raw.Control(func(fd uintptr) {
		cred, err := unix.GetsockoptXucred(int(fd), unix.SOL_LOCAL, unix.LOCAL_PEERCRED)
		if err == nil {
			uid = int(cred.Uid)
		}
	})
	return uid
}

//go:build darwin

package main

import (
	"net"

	"golang.org/x/sys/unix"
)

// peerCheckSupported: macOS reports a socket peer's credentials
// (LOCAL_PEERCRED).
func peerCheckSupported() error { return nil }

// peerTrusted tells whether the process at the other end of c runs as
// uid (macOS has no mount or PID namespaces to compare).
func peerTrusted(c *net.UnixConn, uid int) bool {
	raw, err := c.SyscallConn()
	if err != nil {
		return false
	}
	peer := -1
	_ = raw.Control(func(fd uintptr) {
		cred, err := unix.GetsockoptXucred(int(fd), unix.SOL_LOCAL, unix.LOCAL_PEERCRED)
		if err == nil {
			peer = int(cred.Uid)
		}
	})
	return peer == uid
}

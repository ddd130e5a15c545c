//go:build linux

package main

import (
	"net"
	"syscall"
)

// peerCheckSupported: Linux reports a socket peer's uid (SO_PEERCRED).
func peerCheckSupported() error { return nil }

// peerUID is the uid of the process at the other end of c, -1 when unknown.
func peerUID(c *net.UnixConn) int {
	raw, err := c.SyscallConn()
	if err != nil {
		return -1
	}
	uid := -1
	_ = raw.Control(func(fd uintptr) {
		cred, err := syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
		if err == nil {
			uid = int(cred.Uid)
		}
	})
	return uid
}

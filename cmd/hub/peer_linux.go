//go:build linux

package main

import (
	"errors"
	"io/fs"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// peerCheckSupported: Linux reports a socket peer's uid and pid
// (SO_PEERCRED).
func peerCheckSupported() error { return nil }

// peerTrusted tells whether the process at the other end of c runs as uid
// in the hub's own mount and PID namespaces. A process of the hub's user
// in another namespace (a container that was handed the socket, or that
// sees the state directory) is not the operator: its view of the files the
// hub names, and of the processes, is not the hub's.
func peerTrusted(c *net.UnixConn, uid int) bool {
	raw, err := c.SyscallConn()
	if err != nil {
		return false
	}
	var cred *syscall.Ucred
	_ = raw.Control(func(fd uintptr) {
		cred, err = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	})
	if err != nil || cred == nil || int(cred.Uid) != uid || cred.Pid <= 0 {
		return false
	}
	return sameNamespaces(int(cred.Pid))
}

// sameNamespaces tells whether process pid (of the hub's PID namespace)
// shares the hub's mount and PID namespaces, by their identities in
// /proc/PID/ns. Reading them needs the right to trace the process: a
// non-dumpable peer (the hub CLI makes itself one) of a hub without
// CAP_SYS_PTRACE is judged by what /proc shows anyone, sameByTables.
func sameNamespaces(pid int) bool {
	same, err := sameNSLinks(pid)
	if errors.Is(err, fs.ErrPermission) {
		return sameByTables(pid)
	}
	return err == nil && same
}

// sameNSLinks compares the namespace links of pid with the hub's own.
func sameNSLinks(pid int) (bool, error) {
	for _, ns := range []string{"mnt", "pid"} {
		mine, err := os.Readlink("/proc/self/ns/" + ns)
		if err != nil {
			return false, err
		}
		theirs, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/ns/" + ns)
		if err != nil || theirs != mine {
			return false, err
		}
	}
	return true, nil
}

// sameByTables tells whether pid shares the hub's mount namespace (and
// root directory) and PID namespace by files /proc shows every user: the
// line of its mount table for its root directory, whose mount id no mount
// of another mount namespace has, and the depth of its NSpid line (one pid
// per PID namespace it is in, from this /proc's down).
func sameByTables(pid int) bool {
	p := "/proc/" + strconv.Itoa(pid)
	mineRoot, err1 := rootMount("/proc/self/mountinfo")
	theirRoot, err2 := rootMount(p + "/mountinfo")
	mineDepth, err3 := nsPidDepth("/proc/self/status")
	theirDepth, err4 := nsPidDepth(p + "/status")
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return false
	}
	return mineRoot == theirRoot && mineDepth == theirDepth
}

// rootMount is the line of a mount table whose mount point is "/".
func rootMount(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) > 4 && f[4] == "/" {
			return line, nil
		}
	}
	return "", errors.New("no root mount in " + path)
}

// nsPidDepth counts the pids of a status file's NSpid line.
func nsPidDepth(path string) (int, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "NSpid:"); ok {
			return len(strings.Fields(rest)), nil
		}
	}
	return 0, errors.New("no NSpid line in " + path)
}

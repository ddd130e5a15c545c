package main

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// portHolder names the process (its pid and program name) listening on addr's TCP port, from
// /proc/net/tcp{,6} and the processes' descriptors; 0 when none is found
// or this user may not see it (another user's process, as a non-root hub).
func portHolder(addr string) (pid int, name string) {
	port := listenPort(addr)
	if port <= 0 {
		return 0, ""
	}
	inodes := map[string]bool{}
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		listeningInodes(f, port, inodes)
	}
	if len(inodes) == 0 {
		return 0, ""
	}
	fds, _ := filepath.Glob("/proc/[0-9]*/fd/*")
	for _, fd := range fds {
		l, err := os.Readlink(fd)
		if err != nil || !strings.HasPrefix(l, "socket:[") || !inodes[l[len("socket:["):len(l)-1]] {
			continue
		}
		p := strings.Split(fd, "/")[2]
		pid, _ = strconv.Atoi(p)
		// The program's name only: its arguments may hold secrets.
		b, _ := os.ReadFile("/proc/" + p + "/comm")
		return pid, strings.TrimSpace(string(b))
	}
	return 0, ""
}

// listeningInodes adds the inodes of the sockets of file (/proc/net/tcp's
// format) listening on port.
func listeningInodes(file string, port int, into map[string]bool) {
	f, err := os.Open(file)
	if err != nil {
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
		fields := strings.Fields(sc.Text())
		if len(fields) < 10 || fields[3] != "0A" { // 0A: LISTEN
			continue
		}
		_, hexPort, ok := strings.Cut(fields[1], ":")
		if p, err := strconv.ParseUint(hexPort, 16, 16); ok && err == nil && int(p) == port {
			into[fields[9]] = true
		}
	}
}

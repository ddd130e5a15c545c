//go:build linux

// Command setid is a test program for the docker destination's rule
// against set-user-ID files. "setid make DIR" tries, inside a container,
// every call that can give a new file in DIR the set-user-ID or
// set-group-ID bit, and the same calls without them, printing one line
// per attempt: "NAME ok" or "NAME ERROR". "setid whoami" prints its real
// and effective uid: run on the host from a file the container made, it
// shows whether the file gave its runner another user.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

func main() {
	switch {
	case len(os.Args) == 2 && os.Args[1] == "whoami":
		fmt.Printf("uid=%d euid=%d gid=%d egid=%d\n", os.Getuid(), os.Geteuid(), os.Getgid(), os.Getegid())
	case len(os.Args) == 3 && os.Args[1] == "make":
		makeAll(os.Args[2])
	default:
		fmt.Fprintln(os.Stderr, "usage: setid whoami | setid make DIR")
		os.Exit(2)
	}
}

// attempt is one way of making a file with mode.
type attempt struct {
	name string
	do   func(p string, mode uint32) error
}

var attempts = []attempt{
	{"chmod", func(p string, mode uint32) error { return thenChange(p, func() error { return unix.Chmod(p, mode) }) }},
	{"fchmod", func(p string, mode uint32) error {
		return thenChange(p, func() error {
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			defer f.Close()
			return unix.Fchmod(int(f.Fd()), mode)
		})
	}},
	{"fchmodat", func(p string, mode uint32) error {
		return thenChange(p, func() error { return unix.Fchmodat(unix.AT_FDCWD, p, mode, 0) })
	}},
	{"open", func(p string, mode uint32) error {
		return created(unix.Open(p, unix.O_CREAT|unix.O_WRONLY|unix.O_EXCL, mode))
	}},
	{"openat", func(p string, mode uint32) error {
		return created(unix.Openat(unix.AT_FDCWD, p, unix.O_CREAT|unix.O_WRONLY|unix.O_EXCL, mode))
	}},
	{"creat", func(p string, mode uint32) error { return created(unix.Creat(p, mode)) }},
	{"mknodat", func(p string, mode uint32) error { return unix.Mknodat(unix.AT_FDCWD, p, unix.S_IFREG|mode, 0) }},
	{"tmpfile", func(p string, mode uint32) error {
		fd, err := unix.Open(filepath.Dir(p), unix.O_TMPFILE|unix.O_WRONLY, mode)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		return unix.Linkat(fd, "", unix.AT_FDCWD, p, unix.AT_EMPTY_PATH)
	}},
}

// makeAll makes DIR/NAME-MODE for each attempt and mode.
func makeAll(dir string) {
	unix.Umask(0)
	for _, mode := range []uint32{0o4755, 0o2755, 0o755} {
		for _, a := range attempts {
			p := filepath.Join(dir, fmt.Sprintf("%s-%o", a.name, mode))
			if err := a.do(p, mode); err != nil {
				fmt.Printf("%s-%o %v\n", a.name, mode, err)
				continue
			}
			fmt.Printf("%s-%o ok\n", a.name, mode)
		}
	}
}

// thenChange copies this program to p with mode 0755 and runs change.
func thenChange(p string, change func() error) error {
	self, err := os.ReadFile("/proc/self/exe")
	if err != nil {
		return err
	}
	if err := os.WriteFile(p, self, 0o755); err != nil {
		return err
	}
	return change()
}

func created(fd int, err error) error {
	if err != nil {
		return err
	}
	return syscall.Close(fd)
}

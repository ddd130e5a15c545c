//go:build linux

package main

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// harden makes the hub non-dumpable: processes of the same user (every
// program proc.run starts) can then neither read /proc/<hub>/environ, mem
// or fd nor ptrace the hub. Root still can.
func harden() {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		fmt.Fprintf(os.Stderr, "hub: cannot make the process non-dumpable (programs run as this user could read its tokens): %v\n", err)
	}
}

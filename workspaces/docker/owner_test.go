//go:build linux

package docker_test

import (
	"os"
	"syscall"
)

func sameOwner(a, b os.FileInfo) bool {
	if a == nil || b == nil {
		return false
	}
	sa, ok1 := a.Sys().(*syscall.Stat_t)
	sb, ok2 := b.Sys().(*syscall.Stat_t)
	return ok1 && ok2 && sa.Uid == sb.Uid && sa.Gid == sb.Gid
}

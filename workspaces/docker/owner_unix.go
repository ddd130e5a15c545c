//go:build unix

package docker

import (
	"io/fs"
	"syscall"
)

// fileOwner is who owns a directory, and its identity.
type fileOwner struct{ uid, gid, dev, ino uint64 }

// ownerOf reads fi's owner and identity.
func ownerOf(fi fs.FileInfo) (fileOwner, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileOwner{}, false
	}
	return fileOwner{uid: uint64(st.Uid), gid: uint64(st.Gid), dev: uint64(st.Dev), ino: uint64(st.Ino)}, true
}

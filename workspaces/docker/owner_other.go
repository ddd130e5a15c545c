//go:build !unix

package docker

import "io/fs"

// fileOwner is who owns a directory, and its identity.
type fileOwner struct{ uid, gid, dev, ino uint64 }

// ownerOf knows no owner here: the container runs as Config.User, or as
// the image's user.
func ownerOf(fs.FileInfo) (fileOwner, bool) { return fileOwner{}, false }

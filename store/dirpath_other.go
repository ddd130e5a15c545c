//go:build !linux

package store

import (
	"fmt"
	"os"
	"path/filepath"
)

// DirPath returns a host path that names the directory name of root for
// the calls that only take paths (binding a unix socket, a library that
// opens its files by path). Without Linux's /proc/self/fd it is the
// directory's path, checked to be a directory, not a symbolic link, when
// DirPath is called; release does nothing.
func DirPath(root *os.Root, name string) (path string, release func() error, err error) {
	fi, err := root.Lstat(name)
	if err != nil {
		return "", nil, err
	}
	if !fi.IsDir() {
		return "", nil, fmt.Errorf("%s is %s, not a directory", filepath.Join(root.Name(), name), FileKind(fi.Mode()))
	}
	return filepath.Join(root.Name(), name), func() error { return nil }, nil
}

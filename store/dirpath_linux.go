package store

import (
	"fmt"
	"os"
	"strconv"
)

// DirPath returns a host path that names the directory name of root for
// the calls that only take paths (binding a unix socket, a library that
// opens its files by path): on Linux /proc/self/fd/<n>, the magic link of
// a descriptor of the directory opened through root, so that no symbolic
// link in the state directory and no parent renamed or replaced since can
// redirect it. The path stays valid until release is called.
func DirPath(root *os.Root, name string) (path string, release func() error, err error) {
	d, err := root.Open(name)
	if err != nil {
		return "", nil, err
	}
	fi, err := d.Stat()
	if err == nil && !fi.IsDir() {
		err = fmt.Errorf("%s is not a directory", d.Name())
	}
	if err != nil {
		d.Close()
		return "", nil, err
	}
	return "/proc/self/fd/" + strconv.Itoa(int(d.Fd())), d.Close, nil
}

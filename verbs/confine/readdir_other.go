//go:build !linux

package confine

import "os"

// readDirents reads every entry of the open directory fd, through a
// duplicate of the descriptor.
func readDirents(fd int) ([]Entry, error) {
	dup, err := dupFD(fd)
	if err != nil {
		return nil, err
	}
	d := os.NewFile(uintptr(dup), ".")
	defer d.Close()
	des, err := d.ReadDir(-1)
	if err != nil {
		return nil, err
	}
	out := make([]Entry, len(des))
	for i, de := range des {
		out[i] = Entry{Name: de.Name(), Type: de.Type()}
	}
	return out, nil
}

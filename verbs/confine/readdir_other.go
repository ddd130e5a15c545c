//go:build !linux

package confine

import "os"

// readDirents reads every entry of the open directory d.
func readDirents(d *os.File) ([]Entry, error) {
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

//go:build !linux

package verbs

import "os"

// readDirents reads every entry of the open directory d.
func readDirents(d *os.File) ([]dirent, error) {
	des, err := d.ReadDir(-1)
	if err != nil {
		return nil, err
	}
	out := make([]dirent, len(des))
	for i, de := range des {
		out[i] = dirent{name: de.Name(), typ: de.Type()}
	}
	return out, nil
}

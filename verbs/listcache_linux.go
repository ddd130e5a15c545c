//go:build linux

package verbs

import unix "github.com/a6afc2ce/hermes-hub/internal/posix"

// dirStateOf returns the state of the directory st describes: Linux
// reports the change time.
func dirStateOf(st *unix.Stat_t) (dirState, bool) {
	return dirState{
		mtime: st.Mtim.Nano(),
		ctime: st.Ctim.Nano(),
		size:  st.Size,
		nlink: uint64(st.Nlink), //nolint:unconvert // widths differ by arch
	}, true
}

//go:build !linux

package verbs

import unix "github.com/a6afc2ce/hermes-hub/internal/posix"

// dirStateOf reports no state where the change time is not read, so no
// listing is cached there.
func dirStateOf(*unix.Stat_t) (dirState, bool) { return dirState{}, false }

//go:build unix

package verbs_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/a6afc2ce/hermes-hub/internal/testkit"
	"github.com/a6afc2ce/hermes-hub/verbs"
	"github.com/a6afc2ce/hermes-hub/verbs/internal/verbtest"
)

// TestEditKeepsTheOwner: a hub running as root edits a file of another
// user (a container's, say) and the file stays that user's, with its mode.
func TestEditKeepsTheOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		testkit.Unavailable(t, "giving the file another owner needs root")
	}
	e := verbtest.New(t)
	e.Put("conf.txt", "a = 1\n")
	p := filepath.Join(e.Dir, "conf.txt")
	if err := os.Chown(p, 4242, 4343); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, 0o600); err != nil {
		t.Fatal(err)
	}
	verbtest.OK[verbs.FsEditResult](e, "fs.edit", map[string]any{"path": "conf.txt", "oldText": "1", "newText": "2"})
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	if st.Uid != 4242 || st.Gid != 4343 || fi.Mode().Perm() != 0o600 || e.Get("conf.txt") != "a = 2\n" {
		t.Fatalf("after the edit: owner %d:%d, mode %v, content %q", st.Uid, st.Gid, fi.Mode(), e.Get("conf.txt"))
	}
}

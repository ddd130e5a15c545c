package verbs

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/verbs/confine"
)

// TestEditRefusesAFileChangedMeanwhile: the check fs.edit makes before it
// renames its new file over the old one fails when another program wrote
// the file (or replaced it) after the edit read it.
func TestEditRefusesAFileChangedMeanwhile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a.txt")
	if err := os.WriteFile(p, []byte("one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ws, err := OpenWorkspace(dir, WorkspaceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	l, err := ws.root.Locate("a.txt", confine.FollowFinal)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	f, fi, err := openRegular(l)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := unchangedSince(l, fi, "a.txt"); err != nil {
		t.Fatalf("unchanged file: %v", err)
	}
	for name, change := range map[string]func() error{
		"appended": func() error {
			f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = f.WriteString("two\n")
			return err
		},
		"replaced": func() error {
			if err := os.WriteFile(p+".new", []byte("one\n"), 0o644); err != nil {
				return err
			}
			return os.Rename(p+".new", p)
		},
	} {
		if err := change(); err != nil {
			t.Fatal(err)
		}
		err := unchangedSince(l, fi, "a.txt")
		if e := executor.ErrorFrom(err); err == nil || e.Code != executor.CodeConflict {
			t.Fatalf("%s: %v, want conflict", name, err)
		}
	}
}

package confine_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/verbs/confine"
	"github.com/a6afc2ce/hermes-hub/verbs/internal/verbtest"
)

// TestRootGate drives the package's API as a verb does: a path is located,
// then acted on through the Loc; the state directory, a protected file and
// a link into either are refused; a shared root (a session's) is refused
// them too and hides nothing of its own.
func TestRootGate(t *testing.T) {
	base := t.TempDir()
	ws, state := filepath.Join(base, "ws"), filepath.Join(base, "ws", ".hub")
	config := filepath.Join(ws, "hub.yml")
	verbtest.WriteFile(t, filepath.Join(state, "hub.db"), "CANARY\n")
	verbtest.WriteFile(t, config, "CANARY: 1\n")
	r, err := confine.Open(ws, confine.Options{Protect: []string{state}, ProtectFiles: []confine.ProtectedFile{{Path: config, What: "the configuration file"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if got := r.Hidden(); !slices.Equal(got, []string{".hub"}) {
		t.Errorf("Hidden = %v, want the state directory", got)
	}

	l, err := r.Locate("a/b/new.txt", confine.FollowFinal)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Lstat(); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Lstat of a path whose parent is missing: %v", err)
	}
	if err := l.MakeParents(); err != nil {
		t.Fatal(err)
	}
	if err := l.WriteAtomic(0o644, false, true, func(f *os.File) error { _, err := f.WriteString("hello"); return err }); err != nil {
		t.Fatal(err)
	}
	if fi, err := l.Stat(); err != nil || fi.Size() != 5 || l.Name() != "a/b/new.txt" {
		t.Fatalf("after WriteAtomic: %v %v %s", fi, err, l.Name())
	}
	err = l.WriteAtomic(0o644, false, true, func(*os.File) error { return nil })
	verbtest.CheckErr(t, err, executor.CodeAlreadyExists, "never overwritten")
	if err := l.Remove(); err != nil {
		t.Fatal(err)
	}
	l.Close()

	for _, link := range [][2]string{{"to-state", ".hub"}, {"to-config", "hub.yml"}} {
		if err := os.Symlink(link[1], filepath.Join(ws, link[0])); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{".hub/hub.db", "to-state/hub.db", "hub.yml", "to-config", "../ws/hub.yml"} {
		if l, err := r.Locate(p, confine.FollowFinal); err == nil {
			l.Close()
			t.Errorf("Locate(%q) let it through", p)
		} else {
			verbtest.CheckErr(t, err, executor.CodeForbiddenPath)
		}
	}

	// A session's root, inside the state, shares the protection.
	sess := filepath.Join(state, "sessions", "s1")
	if err := os.MkdirAll(sess, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(config, filepath.Join(sess, "hl-config")); err != nil {
		t.Fatal(err)
	}
	sr, err := confine.OpenShared(sess, confine.Limits{}, r.Protection())
	if err != nil {
		t.Fatal(err)
	}
	defer sr.Close()
	if got := sr.Hidden(); got != nil {
		t.Errorf("a shared root hides %v", got)
	}
	_, err = sr.Locate("hl-config", confine.FollowFinal)
	verbtest.CheckErr(t, err, executor.CodeForbiddenPath, "the configuration file")
	if err := sr.Refresh(nil); err == nil {
		t.Error("a shared root refreshed its host's protection")
	}
}

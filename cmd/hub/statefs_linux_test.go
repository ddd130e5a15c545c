package main

import (
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/a6afc2ce/hermes-hub/store"
)

// TestAdminSocketInTheOpenedStateDirectory: the admin socket is created in
// the state directory the hub opened at start, through it: when the path
// that named it was moved away and replaced by a link to another directory
// meanwhile, the socket still appears in the hub's own directory (wherever
// it now is), nothing appears in the other one, and the socket is removed
// from the hub's directory again.
func TestAdminSocketInTheOpenedStateDirectory(t *testing.T) {
	base := t.TempDir()
	state, moved, other := filepath.Join(base, "state"), filepath.Join(base, "moved"), filepath.Join(base, "other")
	sd, err := store.OpenStateDir(state)
	if err != nil {
		t.Fatal(err)
	}
	defer sd.Close()
	if err := os.Mkdir(other, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(state, moved); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(other, state); err != nil {
		t.Fatal(err)
	}
	ln, err := listenAdmin(sd)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(filepath.Join(moved, store.SocketFile))
	if err != nil || fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o600 {
		t.Errorf("the socket is not in the hub's own state directory, owner-only: %v %v", fi, err)
	}
	if ents, _ := os.ReadDir(other); len(ents) != 0 {
		t.Errorf("the socket went where the state directory's old path now leads: %v", ents)
	}
	c, err := net.Dial("unix", filepath.Join(moved, store.SocketFile))
	if err != nil {
		t.Fatalf("the socket does not answer: %v", err)
	}
	c.Close()
	ln.Close()
	if err := sd.Root().Remove(store.SocketFile); err != nil {
		t.Errorf("remove the socket through the state directory: %v", err)
	}
}

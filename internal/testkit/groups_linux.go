package testkit

import (
	"syscall"
	"testing"
)

// WithGroups gives this process (every thread) the supplementary groups
// gids for the rest of t, so that what a child keeps of them shows; it
// needs root. The previous groups come back when t ends.
func WithGroups(t testing.TB, gids ...int) {
	t.Helper()
	was, err := syscall.Getgroups()
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Setgroups(gids); err != nil {
		t.Fatalf("set the supplementary groups %v: %v", gids, err)
	}
	t.Cleanup(func() {
		if err := syscall.Setgroups(was); err != nil {
			t.Errorf("restore the supplementary groups %v: %v", was, err)
		}
	})
}

package nodes

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/a6afc2ce/hermes-hub/internal/testkit"
)

// TestHubNATSStateNeverFollowsLinks: the hub's NATS state (its nkey seed,
// the embedded server's storage) lives in nats/ of the state directory. A
// nats/ or hub.nk that was replaced by a symbolic link leading outside (as
// a program that could write there would plant) is refused: the hub neither
// writes its seed or its storage outside nor takes a planted seed for its
// own.
func TestHubNATSStateNeverFollowsLinks(t *testing.T) {
	for _, tc := range []struct{ name, link string }{
		{"nats directory", "nats"},
		{"hub seed", filepath.Join("nats", "hub.nk")},
		{"jetstream storage", filepath.Join("nats", "jetstream")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			state, outside := t.TempDir(), t.TempDir()
			target := outside
			if strings.HasSuffix(tc.link, "hub.nk") {
				target = filepath.Join(outside, "planted.nk")
				if _, err := NewSeed(target); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.MkdirAll(filepath.Join(state, filepath.Dir(tc.link)), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, filepath.Join(state, tc.link)); err != nil {
				t.Fatal(err)
			}
			before, _ := os.ReadDir(outside)
			h, err := OpenHub(t.Context(), HubOptions{StateDir: state, Embedded: true, Listen: "127.0.0.1:0", Logger: testkit.Discard()})
			if err == nil {
				h.Close()
				t.Fatalf("the hub started with %s a link leading outside the state directory", tc.link)
			}
			if after, _ := os.ReadDir(outside); len(after) != len(before) {
				t.Errorf("the hub created files outside the state directory: %v", after)
			}
		})
	}
}

package store

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOpenNeverFollowsLinks: a state directory whose hub.db or one of whose
// own directories was replaced by a symbolic link leading outside it (as a
// program that could write there would plant) is refused, saying what to
// move away, and nothing is created or changed outside.
func TestOpenNeverFollowsLinks(t *testing.T) {
	for _, name := range []string{DBFile, "pma", "chat", FlowsDir, ProcDir} {
		t.Run(name, func(t *testing.T) {
			state := filepath.Join(t.TempDir(), "state")
			outside := t.TempDir()
			if err := os.MkdirAll(state, 0o700); err != nil {
				t.Fatal(err)
			}
			target := outside
			if name == DBFile {
				target = filepath.Join(outside, "planted.db")
			}
			if err := os.Symlink(target, filepath.Join(state, name)); err != nil {
				t.Fatal(err)
			}
			s, err := Open(state, Options{})
			if err == nil {
				s.Close()
				t.Fatalf("opened a state directory whose %s leads outside it", name)
			}
			if !strings.Contains(err.Error(), "symbolic link") || !strings.Contains(err.Error(), "move it away") {
				t.Errorf("error %q does not say that %s is a symbolic link to move away", err, name)
			}
			if ents, _ := os.ReadDir(outside); len(ents) != 0 {
				t.Fatalf("something was created outside the state directory: %v", ents)
			}
		})
	}
}

// TestStateFilesNeverFollowLinks: the files the hub keeps in the state
// directory are read and written through it. A targets file or channel
// directory replaced by a symbolic link is refused, not read from where it
// points; a write that would go through a linked directory is refused; an
// atomic write replaces a link rather than writing through it; and nothing
// outside is created or changed.
func TestStateFilesNeverFollowLinks(t *testing.T) {
	state := t.TempDir()
	sd, err := OpenStateDir(state)
	if err != nil {
		t.Fatal(err)
	}
	defer sd.Close()
	outside := t.TempDir()
	planted := filepath.Join(outside, "planted.json")
	const content = `{"version": 1, "targets": [{"kind": "chat", "platform": "telegram", "chat_id": "666"}]}`
	if err := os.WriteFile(planted, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{DeliveryTargetsFile, ChannelDirectory} {
		if err := os.Symlink(planted, filepath.Join(state, name)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := OpenTargets(sd.Root(), DeliveryTargetsFile); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("targets through a link: %v", err)
	}
	if _, err := OpenDirectory(sd.Root(), ChannelDirectory, DirectoryOptions{}); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("channel directory through a link: %v", err)
	}
	if err := WriteFileAtomic(sd.Root(), DeliveryTargetsFile, []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(filepath.Join(state, DeliveryTargetsFile)); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("the atomic write did not replace the link: %v %v", fi, err)
	}
	// A directory of the state replaced by a link once the hub runs.
	if err := os.Rename(filepath.Join(state, ChatDir), filepath.Join(state, "chat.moved")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(state, ChatDir)); err != nil {
		t.Fatal(err)
	}
	if err := WriteFileAtomic(sd.Root(), filepath.Join(ChatDir, "x.json"), []byte("{}\n"), 0o600); err == nil {
		t.Error("wrote through chat/, a link leading outside")
	}
	if b, err := os.ReadFile(planted); err != nil || string(b) != content {
		t.Errorf("the file outside was changed: %q %v", b, err)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 1 {
		t.Errorf("files were created outside: %v", ents)
	}
}

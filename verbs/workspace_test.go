package verbs_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/a6afc2ce/hermes-hub/verbs"
)

func TestOpenWorkspaceOptions(t *testing.T) {
	dir := t.TempDir()
	for _, o := range []verbs.WorkspaceOptions{
		{Deny: []string{"../x"}},
		{Deny: []string{"."}},
		{MaxDepth: -1},
	} {
		if ws, err := verbs.OpenWorkspace(dir, o); err == nil {
			ws.Close()
			t.Errorf("OpenWorkspace accepted %+v", o)
		}
	}
	if _, err := verbs.OpenWorkspace(filepath.Join(dir, "missing"), verbs.WorkspaceOptions{}); err == nil {
		t.Error("OpenWorkspace accepted a missing directory")
	}
	ws, err := verbs.OpenWorkspace(dir, verbs.WorkspaceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	if o := ws.Options(); o.MaxWriteChars != 48000 || o.MaxReadBytes != 4<<20 || o.MaxDepth != 16 || o.MaxSegment != 80 {
		t.Errorf("defaults %+v", o)
	}
	if got, err := ws.Place(context.Background()); got.Workspace() != ws || err != nil {
		t.Error("a Workspace is its own WorkspaceSource")
	}
}

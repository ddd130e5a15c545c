//go:build windows

package verbs_test

import (
	"strings"
	"testing"

	"github.com/a6afc2ce/hermes-hub/verbs"
)

// On Windows the workspace refuses to open, saying what is unsupported,
// instead of confining verbs less.
func TestWorkspaceRefusedOnWindows(t *testing.T) {
	_, err := verbs.OpenWorkspace(t.TempDir(), verbs.WorkspaceOptions{})
	if err == nil || !strings.Contains(err.Error(), "not supported on Windows") {
		t.Fatalf("OpenWorkspace = %v, want a refusal naming Windows", err)
	}
}

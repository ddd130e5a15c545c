package mcp_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	mcpsurface "github.com/a6afc2ce/hermes-hub/adapters/mcp"
	"github.com/a6afc2ce/hermes-hub/hub"
	"github.com/a6afc2ce/hermes-hub/hub/hubtest"
	"github.com/a6afc2ce/hermes-hub/store"
)

// fullFile fails every write while full is set, like a full disk.
type fullFile struct {
	*os.File
	full *atomic.Bool
}

func (f fullFile) Write(p []byte) (int, error) {
	if f.full.Load() {
		return 0, &os.PathError{Op: "write", Path: f.Name(), Err: syscall.ENOSPC}
	}
	return f.File.Write(p)
}

// TestMirrorFailureNamesNoHostPath: when the mirror cannot record a
// tools/call (a full disk), the call is refused with the cause, and the
// error names neither the state directory nor the workspace by its host
// path.
func TestMirrorFailureNamesNoHostPath(t *testing.T) {
	full := new(atomic.Bool)
	env, cs := stdioEnvHub(t, hubtest.Options{Runtime: hub.RuntimeOptions{
		MirrorOpenFile: func(root *os.Root, name string, flag int, perm os.FileMode) (store.MirrorFile, error) {
			f, err := root.OpenFile(name, flag, perm)
			if err != nil {
				return nil, err
			}
			return fullFile{File: f, full: full}, nil
		},
	}}, mcpsurface.Options{Identity: "agent:local"}, nil)
	full.Store(true)
	_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "fs_writeFile", Arguments: map[string]any{"path": "x.txt", "content": "ran"}})
	if err == nil {
		t.Fatal("a call that could not be mirrored ran")
	}
	msg := err.Error()
	if !strings.Contains(msg, "no space left on device") {
		t.Errorf("error %q does not give the cause", msg)
	}
	for _, p := range []string{env.Config.StateDir, env.Config.Workspace} {
		real, _ := filepath.EvalSymlinks(p)
		for _, hp := range []string{p, real} {
			if hp != "" && strings.Contains(msg, hp) {
				t.Errorf("error %q names the host path %s", msg, hp)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(env.Config.Workspace, "x.txt")); err == nil {
		t.Fatal("the call ran unmirrored")
	}
}

package web

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

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

// TestExecuteRefusedWhenMirrorFull: POST /api/execute with a full mirror
// disk answers 503 with a JSON error naming the mirror problem, without
// host paths, and the verb does not run.
func TestExecuteRefusedWhenMirrorFull(t *testing.T) {
	full := new(atomic.Bool)
	e := newEnv(t, envConfig{hub: hubtest.Options{Runtime: hub.RuntimeOptions{
		MirrorOpenFile: func(root *os.Root, name string, flag int, perm os.FileMode) (store.MirrorFile, error) {
			f, err := root.OpenFile(name, flag, perm)
			if err != nil {
				return nil, err
			}
			return fullFile{File: f, full: full}, nil
		},
	}}})
	full.Store(true)
	r := e.authed(http.MethodPost, "/api/execute", `{"verb":"fs.writeFile","arguments":{"path":"x.txt","content":"ran"}}`)
	if r.status != http.StatusServiceUnavailable {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	msg := r.errorText(t)
	if !strings.Contains(msg, "mirror") || !strings.Contains(msg, "no space left on device") || strings.Contains(msg, e.cfg.StateDir) {
		t.Fatalf("error %q", msg)
	}
	if _, err := os.Stat(e.cfg.Workspace + "/x.txt"); err == nil {
		t.Fatal("the verb ran unmirrored")
	}
	full.Store(false)
	if r := e.authed(http.MethodPost, "/api/execute", `{"verb":"fs.writeFile","arguments":{"path":"x.txt","content":"ran"}}`); r.status != http.StatusOK {
		t.Fatalf("with room again: %d %s", r.status, r.body)
	}
	if got := e.readFile("x.txt"); got != "ran" {
		t.Fatalf("x.txt %q", got)
	}
}

// TestMirrorFailureNamesNoHostPath: when the mirror cannot record a call or
// a message (a full disk), POST /api/execute and POST /api/messages refuse
// it with the cause, and their errors name neither the state directory nor
// the workspace by its host path.
func TestMirrorFailureNamesNoHostPath(t *testing.T) {
	full := new(atomic.Bool)
	e := newEnv(t, envConfig{hub: hubtest.Options{Runtime: hub.RuntimeOptions{
		MirrorOpenFile: func(root *os.Root, name string, flag int, perm os.FileMode) (store.MirrorFile, error) {
			f, err := root.OpenFile(name, flag, perm)
			if err != nil {
				return nil, err
			}
			return fullFile{File: f, full: full}, nil
		},
	}}})
	full.Store(true)
	hostPaths := []string{e.cfg.StateDir, e.cfg.Workspace}
	for _, p := range []string{e.cfg.StateDir, e.cfg.Workspace} {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			hostPaths = append(hostPaths, real)
		}
	}
	for _, call := range []struct{ path, body string }{
		{"/api/execute", `{"verb":"fs.writeFile","arguments":{"path":"x.txt","content":"ran"}}`},
		{"/api/messages", `{"text":"/fs.writeFile x.txt ran"}`},
	} {
		r := e.authed(http.MethodPost, call.path, call.body)
		if r.status < 500 {
			t.Fatalf("POST %s with a full mirror: %d %s", call.path, r.status, r.body)
		}
		msg := r.errorText(t)
		if !strings.Contains(msg, "no space left on device") {
			t.Errorf("POST %s: error %q does not give the cause", call.path, msg)
		}
		for _, p := range hostPaths {
			if strings.Contains(msg, p) {
				t.Errorf("POST %s: error %q names the host path %s", call.path, msg, p)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(e.cfg.Workspace, "x.txt")); err == nil {
		t.Fatal("a call ran unmirrored")
	}
}

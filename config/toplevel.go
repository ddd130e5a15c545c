package config

import (
	"fmt"
	"path/filepath"
	"strings"
)

// topLevel is the section of the top-level keys workspace and state_dir.
type topLevel struct{}

// applyDefaults: the working directory as workspace (unless
// workspaces.default.path gave it), ./.hub as state directory.
func (topLevel) applyDefaults(c *Config) {
	setDefault(&c.Workspace, ".")
	setDefault(&c.StateDir, ".hub")
}

func (topLevel) validate(c *Config, v *validator) {
	if err := CheckStateDir(c.Workspace, c.StateDir); err != nil {
		v.add(v.firstWritten("state_dir", "workspace"), "state_dir", err.Error())
	}
}

// CheckStateDir refuses a state directory that is the workspace or
// contains it: the verbs could then reach nothing but the hub's state, or the
// state's protection would cover the whole workspace. A state directory
// inside the workspace (the default, .hub) or outside it is accepted. Paths
// are compared absolute, and again with their symbolic links resolved when
// they exist.
func CheckStateDir(workspace, stateDir string) error {
	ws, err1 := filepath.Abs(workspace)
	st, err2 := filepath.Abs(stateDir)
	if err1 != nil || err2 != nil {
		return nil // reported when the directories are opened
	}
	holds := func(dir, p string) bool {
		rel, err := filepath.Rel(dir, p)
		return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
	}
	bad := holds(st, ws)
	if rws, err := filepath.EvalSymlinks(ws); err == nil {
		if rst, err := filepath.EvalSymlinks(st); err == nil {
			bad = bad || holds(rst, rws)
		}
	}
	if !bad {
		return nil
	}
	return fmt.Errorf("state_dir: %s is the workspace (%s) or contains it, so the verbs could reach the hub's own state (accepted: a directory inside the workspace, such as the default .hub, or one outside it)", stateDir, workspace)
}

package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"gopkg.in/yaml.v3"
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

// StateDirOf reads state_dir from the configuration file at path,
// expanded from env as Load expands it, even when the rest of the file
// does not load: `hub reload` finds the running hub by it, and the hub
// says what is wrong with the file. "" when the file holds no state_dir
// that can be read.
func StateDirOf(path string, env Getenv) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	var doc yaml.Node
	written, found := "", false
	if yaml.Unmarshal(data, &doc) == nil && len(doc.Content) == 1 && doc.Content[0].Kind == yaml.MappingNode {
		root := doc.Content[0]
		for i := 0; i+1 < len(root.Content); i += 2 {
			if root.Content[i].Value == "state_dir" && root.Content[i+1].Kind == yaml.ScalarNode {
				written, found = root.Content[i+1].Value, true
			}
		}
	} else {
		// Not YAML as a whole: the line that sets it, unquoted.
		for _, line := range strings.Split(string(data), "\n") {
			if v, ok := strings.CutPrefix(line, "state_dir:"); ok {
				v, _, _ = strings.Cut(v, " #")
				written, found = strings.Trim(strings.TrimSpace(v), `"'`), true
			}
		}
	}
	if !found {
		return ""
	}
	dir, err := Expand(written, env)
	if err != nil {
		return ""
	}
	return dir
}

package config

import (
	"fmt"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/a6afc2ce/hermes-hub/chat"
)

// DefaultWorkspace is the workspace every hub has: the top-level workspace
// directory, run locally unless configured otherwise.
const DefaultWorkspace = "default"

// The reserved keys of the workspaces section.
const (
	WorkspacesByChat = "by_chat"
	WorkspacesByRole = "by_role"
)

// WorkspaceNamePattern is the shape of a workspace name.
var WorkspaceNamePattern = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,31}$`)

// workspaceNameRule says WorkspaceNamePattern in words, for errors.
const workspaceNameRule = "1 to 32 lower-case letters, digits, '-' and '_', starting with a letter, other than by_chat and by_role"

// Workspaces is the workspaces section: named workspaces, and the reserved
// keys by_chat (chat key → workspace) and by_role (role → workspace) that
// choose one by configuration.
type Workspaces struct {
	Named  map[string]WorkspaceConfig `yaml:"-"`
	ByChat map[string]string          `yaml:"-"`
	ByRole map[string]string          `yaml:"-"`
}

// WorkspaceConfig is one named workspace.
type WorkspaceConfig struct {
	// Path is the workspace directory; the default workspace's is the
	// top-level workspace setting.
	Path        string      `yaml:"path"`
	Destination Destination `yaml:"destination"`
}

// checkYAML checks the section's shape: the reserved keys as mappings of
// names, every other key as a workspace whose keys are checked like the
// rest of the configuration.
func (w *Workspaces) checkYAML(d *decoder, n *yaml.Node, key string) {
	if n.Kind != yaml.MappingNode {
		d.bad(n.Line, key, "%s must be a mapping of workspace names (and by_chat, by_role), not %s (accepted: each workspace's name with its path and destination below it, such as sandbox: {path: ./sandbox})", key, d.found(n))
		return
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if d.twice(k, key, seen) {
			continue
		}
		path := d.record(key, k)
		if k.Value == WorkspacesByChat || k.Value == WorkspacesByRole {
			checkNameMap(d, v, path, map[string]string{WorkspacesByChat: "chat keys", WorkspacesByRole: "roles"}[k.Value])
			continue
		}
		d.walk(v, reflect.TypeFor[WorkspaceConfig](), path)
	}
}

// checkNameMap checks by_chat or by_role: a mapping of what to workspace
// names.
func checkNameMap(d *decoder, n *yaml.Node, key, what string) {
	if isNull(n) {
		return
	}
	if n.Kind != yaml.MappingNode {
		d.bad(n.Line, key, "%s must be a mapping of %s to workspace names, not %s (accepted: one \"KEY: WORKSPACE\" per line below the key)", key, what, d.found(n))
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		d.record(key, k)
		if v.Kind != yaml.ScalarNode {
			entry := fmt.Sprintf("%s[%q]", key, k.Value)
			d.bad(v.Line, entry, "%s must be a workspace name, not %s (accepted: the name of a workspace, such as default)", entry, d.found(v))
		}
	}
}

// UnmarshalYAML decodes the section, which checkYAML has checked: the
// reserved keys as maps of names, every other key as a workspace.
func (w *Workspaces) UnmarshalYAML(n *yaml.Node) error {
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: workspaces must be a mapping of workspace names (and by_chat, by_role)", n.Line)
	}
	w.Named = map[string]WorkspaceConfig{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		var err error
		switch k.Value {
		case WorkspacesByChat:
			err = v.Decode(&w.ByChat)
		case WorkspacesByRole:
			err = v.Decode(&w.ByRole)
		default:
			var wc WorkspaceConfig
			err = v.Decode(&wc)
			w.Named[k.Value] = wc
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// applyDefaults makes the top-level workspace and workspaces.default.path
// one setting, and fills each destination's defaults. It runs before the
// top-level workspace gets its own default.
func (w *Workspaces) applyDefaults(c *Config) {
	if d, ok := w.Named[DefaultWorkspace]; ok && c.Workspace == "" && d.Path != "" {
		c.Workspace = d.Path
	}
	for name, wc := range w.Named {
		setDefault(&wc.Destination.Kind, DestinationLocal)
		if wc.Destination.Kind == DestinationDocker {
			setDefault(&wc.Destination.Network, "none")
		}
		w.Named[name] = wc
	}
}

// WorkspaceNames lists the configured workspaces, default first, then by
// name. default is always there.
func (c *Config) WorkspaceNames() []string {
	out := []string{DefaultWorkspace}
	for name := range c.Workspaces.Named {
		if name != DefaultWorkspace {
			out = append(out, name)
		}
	}
	sort.Strings(out[1:])
	return out
}

// WorkspaceByName returns a configured workspace with its defaults: the
// default workspace's path is always the top-level workspace (so the
// --workspace flag moves it), its destination local unless configured.
func (c *Config) WorkspaceByName(name string) (WorkspaceConfig, bool) {
	wc, ok := c.Workspaces.Named[name]
	if name == DefaultWorkspace {
		wc.Path, ok = c.Workspace, true
	}
	if wc.Destination.Kind == "" {
		wc.Destination.Kind = DestinationLocal
	}
	return wc, ok
}

// WorkspaceSessionsDir is the directory holding the session workspaces of
// a named workspace: SessionsDir for default (so existing sessions stay),
// a sibling per other workspace, so no two workspaces share one.
func (c *Config) WorkspaceSessionsDir(name string) string {
	base := c.SessionsDir()
	if name == DefaultWorkspace {
		return base
	}
	return base + "-ws-" + name
}

// ValidWorkspaceName checks a workspace name.
func ValidWorkspaceName(name string) error {
	if !WorkspaceNamePattern.MatchString(name) || name == WorkspacesByChat || name == WorkspacesByRole {
		return fmt.Errorf("%q is not a workspace name (accepted: %s)", name, workspaceNameRule)
	}
	return nil
}

// validate checks the named workspaces, their paths and destinations, and
// the rules by_chat and by_role. The workspaces a role names are checked
// with access.
func (w *Workspaces) validate(c *Config, v *validator) {
	if d, ok := w.Named[DefaultWorkspace]; ok && d.Path != "" && c.Workspace != "" && filepath.Clean(d.Path) != filepath.Clean(c.Workspace) {
		v.bad("workspaces.default.path", " (%s) and the top-level workspace (%s) are both set and differ (accepted: one of them, or both the same; workspace: means workspaces.default.path)", d.Path, c.Workspace)
	}
	for _, name := range sortedKeys(w.Named) {
		key := "workspaces." + name
		if err := ValidWorkspaceName(name); err != nil {
			v.badAt(key, "workspaces", ": %v", err)
			continue
		}
		w.validatePath(c, v, name)
		validateDestination(c, v, key+".destination", name, w.Named[name].Destination)
	}
	w.validateRules(c, v)
}

// validatePath checks a workspace's path: none for a remote one, one for
// every other but default, never the state directory or above it.
func (w *Workspaces) validatePath(c *Config, v *validator, name string) {
	key, wc := "workspaces."+name, w.Named[name]
	switch remote := wc.IsRemote(); {
	case remote && name == DefaultWorkspace:
		v.bad(key+".destination.kind", ": remote is not accepted for the default workspace (accepted: local or docker; name another workspace, such as db1-logs, with kind remote)")
	case remote && wc.Path != "":
		v.bad(key+".path", ": a remote workspace has no path on the hub (accepted: no path; the node's configuration names the directory of destination.workspace)")
	case remote, name == DefaultWorkspace:
	case wc.Path == "":
		v.badAt(key, key+".path", " is empty (accepted: the directory the workspace's verbs act in, such as ./sandbox)")
	default:
		if err := CheckStateDir(wc.Path, c.StateDir); err != nil {
			v.bad(key+".path", ": %v", err)
		}
	}
}

// validateRules checks by_chat and by_role: canonical chat keys, defined
// roles, configured workspaces.
func (w *Workspaces) validateRules(c *Config, v *validator) {
	names := strings.Join(c.WorkspaceNames(), ", ")
	known := func(n string) bool {
		_, ok := c.WorkspaceByName(n)
		return ok
	}
	for _, k := range sortedKeys(w.ByChat) {
		at := "workspaces.by_chat." + k
		if key, err := chat.ParseKey(k); err != nil || key.Kind == chat.KindLocal || key.String() != k {
			v.badAt(at, "workspaces.by_chat", ": %q is not a chat key (accepted: web, chat:telegram:<chat_id>[:<thread_id>], chat:discord:<channel_id>)", k)
		}
		if ws := w.ByChat[k]; !known(ws) {
			v.badAt(at, fmt.Sprintf("workspaces.by_chat[%q]", k), ": workspace %q is not configured (accepted: %s)", ws, names)
		}
	}
	for _, r := range sortedKeys(w.ByRole) {
		at := "workspaces.by_role." + r
		if !c.roleKnown(r) {
			v.badAt(at, "workspaces.by_role", ": role %q is not defined (define it under access.roles, or use reader)", r)
		}
		if ws := w.ByRole[r]; !known(ws) {
			v.badAt(at, fmt.Sprintf("workspaces.by_role[%q]", r), ": workspace %q is not configured (accepted: %s)", ws, names)
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

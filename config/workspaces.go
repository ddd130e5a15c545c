package config

import (
	"fmt"
	"net"
	"net/url"
	"path"
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

// Destination kinds: where a workspace's proc.run runs. Every kind is
// listed here and checked in validateDestination, in one place.
const (
	DestinationLocal  = "local"
	DestinationDocker = "docker"
	// DestinationRemote sends every call to a workspace of a remote node
	// (`hub node`, see docs/nodes.md); it has no path on the hub.
	DestinationRemote = "remote"
)

// DestinationKinds lists the accepted destination kinds.
var DestinationKinds = []string{DestinationLocal, DestinationDocker, DestinationRemote}

// WorkspaceNamePattern is the shape of a workspace name.
var WorkspaceNamePattern = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,31}$`)

// workspaceNameRule says WorkspaceNamePattern in words, for errors.
const workspaceNameRule = "1 to 32 lower-case letters, digits, '-' and '_', starting with a letter, other than by_chat and by_role"

// Workspaces is the workspaces section: named workspaces, and the reserved
// keys by_chat (chat key → workspace) and by_role (role → workspace) that
// choose one by configuration. It keeps the YAML line of every entry, so
// validation errors can say where the problem is.
type Workspaces struct {
	Named  map[string]WorkspaceConfig `yaml:"-"`
	ByChat map[string]string          `yaml:"-"`
	ByRole map[string]string          `yaml:"-"`
	// lines maps "name", "name.key.sub", "by_chat.KEY", "by_role.ROLE"
	// to their line in the file.
	lines map[string]int
}

// WorkspaceConfig is one named workspace.
type WorkspaceConfig struct {
	// Path is the workspace directory; the default workspace's is the
	// top-level workspace setting.
	Path        string      `yaml:"path"`
	Destination Destination `yaml:"destination"`
}

// Destination is where a workspace's programs run: "local" (host
// processes, the default) or "docker" (a long-lived container per
// workspace and session, the workspace bind-mounted at /workspace).
type Destination struct {
	Kind string `yaml:"kind"`
	// The Docker settings; refused for other kinds.
	Image string `yaml:"image"`
	// Network is "none" (the default), "host" or the name of a network
	// the operator created.
	Network  string   `yaml:"network"`
	Memory   Size     `yaml:"memory"`
	CPUs     float64  `yaml:"cpus"`
	Pids     int64    `yaml:"pids"`
	User     string   `yaml:"user"` // uid[:gid]; default: the workspace directory's owner, 65534 for root; "0" runs as root
	EnvAllow []string `yaml:"env_allow"`
	// IdleTimeout removes a container unused this long; 0 means the
	// default, 30m.
	IdleTimeout Duration `yaml:"idle_timeout"`
	// The remote settings; refused for other kinds. Node names an entry
	// under nodes:, Workspace one of that node's workspaces ("" for its
	// default_workspace).
	Node      string `yaml:"node"`
	Workspace string `yaml:"workspace"`
	// DockerHost is the daemon's address: unix:///path or a loopback
	// tcp://127.0.0.1:PORT; "" is DOCKER_HOST or the default socket.
	DockerHost string `yaml:"docker_host"`
}

// UnmarshalYAML decodes the section strictly: the reserved keys as maps of
// names, every other key as a workspace whose keys are checked like the
// rest of the configuration.
func (w *Workspaces) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: workspaces must be a mapping of workspace names (and by_chat, by_role)", n.Line)
	}
	w.Named, w.lines = map[string]WorkspaceConfig{}, map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		switch k.Value {
		case WorkspacesByChat, WorkspacesByRole:
			m, err := w.nameMap(k.Value, v)
			if err != nil {
				return err
			}
			if k.Value == WorkspacesByChat {
				w.ByChat = m
			} else {
				w.ByRole = m
			}
			continue
		}
		w.lines[k.Value] = k.Line
		if err := checkKeys(v, reflect.TypeFor[WorkspaceConfig](), "workspaces."+k.Value+"."); err != nil {
			return err
		}
		var wc WorkspaceConfig
		if err := v.Decode(&wc); err != nil {
			var te *yaml.TypeError
			if ok := asTypeError(err, &te); ok {
				return fmt.Errorf("%s", strings.Join(te.Errors, "; "))
			}
			return err
		}
		w.Named[k.Value] = wc
		w.recordLines(k.Value, v)
	}
	return nil
}

func asTypeError(err error, te **yaml.TypeError) bool {
	t, ok := err.(*yaml.TypeError)
	if ok {
		*te = t
	}
	return ok
}

// nameMap decodes by_chat or by_role: a mapping of scalars.
func (w *Workspaces) nameMap(key string, v *yaml.Node) (map[string]string, error) {
	if v.Kind == yaml.ScalarNode && v.ShortTag() == "!!null" {
		return nil, nil
	}
	if v.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("line %d: workspaces.%s must be a mapping of %s to workspace names", v.Line, key, map[string]string{WorkspacesByChat: "chat keys", WorkspacesByRole: "roles"}[key])
	}
	m := map[string]string{}
	for i := 0; i+1 < len(v.Content); i += 2 {
		kk, vv := v.Content[i], v.Content[i+1]
		if vv.Kind != yaml.ScalarNode {
			return nil, fmt.Errorf("line %d: workspaces.%s[%q] must be a workspace name", vv.Line, key, kk.Value)
		}
		m[kk.Value] = vv.Value
		w.lines[key+"."+kk.Value] = kk.Line
	}
	return m, nil
}

// recordLines keeps the line of every key below a workspace.
func (w *Workspaces) recordLines(prefix string, n *yaml.Node) {
	if n.Kind != yaml.MappingNode {
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := prefix + "." + n.Content[i].Value
		w.lines[k] = n.Content[i].Line
		w.recordLines(k, n.Content[i+1])
	}
}

// at returns " (line N)" for a recorded key, the nearest recorded parent
// otherwise, or "".
func (w *Workspaces) at(key string) string {
	for key != "" {
		if l, ok := w.lines[key]; ok {
			return fmt.Sprintf("line %d: ", l)
		}
		i := strings.LastIndexByte(key, '.')
		if i < 0 {
			break
		}
		key = key[:i]
	}
	return ""
}

// applyWorkspaceDefaults makes the top-level workspace and
// workspaces.default.path one setting, and fills each destination's
// defaults. It runs before the top-level workspace gets its own default.
func (c *Config) applyWorkspaceDefaults() {
	if d, ok := c.Workspaces.Named[DefaultWorkspace]; ok && c.Workspace == "" && d.Path != "" {
		c.Workspace = d.Path
	}
	for name, wc := range c.Workspaces.Named {
		if wc.Destination.Kind == "" {
			wc.Destination.Kind = DestinationLocal
		}
		if wc.Destination.Kind == DestinationDocker && wc.Destination.Network == "" {
			wc.Destination.Network = "none"
		}
		c.Workspaces.Named[name] = wc
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

// validateWorkspaces checks the workspaces section and the workspaces the
// roles name.
func (c *Config) validateWorkspaces(bad func(format string, args ...any), roleKnown func(string) bool) {
	ws := &c.Workspaces
	if d, ok := ws.Named[DefaultWorkspace]; ok && d.Path != "" && c.Workspace != "" && filepath.Clean(d.Path) != filepath.Clean(c.Workspace) {
		bad("%sworkspaces.default.path (%s) and the top-level workspace (%s) are both set and differ (accepted: one of them, or both the same; workspace: means workspaces.default.path)", ws.at(DefaultWorkspace+".path"), d.Path, c.Workspace)
	}
	known := func(n string) bool {
		_, ok := c.WorkspaceByName(n)
		return ok
	}
	names := strings.Join(c.WorkspaceNames(), ", ")
	for _, name := range sortedKeys(ws.Named) {
		wc := ws.Named[name]
		if err := ValidWorkspaceName(name); err != nil {
			bad("%sworkspaces: %v", ws.at(name), err)
			continue
		}
		remote := wc.Destination.Kind == DestinationRemote
		switch {
		case remote && name == DefaultWorkspace:
			bad("%sworkspaces.default.destination.kind: remote is not accepted for the default workspace (accepted: local or docker; name another workspace, such as db1-logs, with kind remote)", ws.at(name+".destination.kind"))
		case remote && wc.Path != "":
			bad("%sworkspaces.%s.path: a remote workspace has no path on the hub (accepted: no path; the node's configuration names the directory of destination.workspace)", ws.at(name+".path"), name)
		case remote:
		case name != DefaultWorkspace:
			if wc.Path == "" {
				bad("%sworkspaces.%s.path is empty (accepted: the directory the workspace's verbs act in, such as ./sandbox)", ws.at(name), name)
			} else if err := CheckStateDir(wc.Path, c.StateDir); err != nil {
				bad("%sworkspaces.%s.path: %v", ws.at(name+".path"), name, err)
			}
		}
		validateDestination(name, wc.Destination, ws.at, c.nodeKnown, bad)
	}
	for _, k := range sortedKeys(ws.ByChat) {
		v := ws.ByChat[k]
		if key, err := chat.ParseKey(k); err != nil || key.Kind == chat.KindLocal || key.String() != k {
			bad("%sworkspaces.by_chat: %q is not a chat key (accepted: web, chat:telegram:<chat_id>[:<thread_id>], chat:discord:<channel_id>)", ws.at("by_chat."+k), k)
		}
		if !known(v) {
			bad("%sworkspaces.by_chat[%q]: workspace %q is not configured (accepted: %s)", ws.at("by_chat."+k), k, v, names)
		}
	}
	for _, r := range sortedKeys(ws.ByRole) {
		v := ws.ByRole[r]
		if !roleKnown(r) {
			bad("%sworkspaces.by_role: role %q is not defined (define it under access.roles, or use reader)", ws.at("by_role."+r), r)
		}
		if !known(v) {
			bad("%sworkspaces.by_role[%q]: workspace %q is not configured (accepted: %s)", ws.at("by_role."+r), r, v, names)
		}
	}
	for _, role := range sortedKeys(c.Access.Roles) {
		for _, p := range c.Access.Roles[role].Workspaces {
			if _, err := path.Match(p, "x"); err != nil || p == "" {
				bad("access.roles.%s.workspaces: %q is not a valid pattern (accepted: a workspace name, a glob such as dev-*, or * for all)", role, p)
				continue
			}
			if !strings.ContainsAny(p, "*?[") && !known(p) {
				bad("access.roles.%s.workspaces: workspace %q is not configured (accepted: %s, or a glob)", role, p, names)
			}
		}
	}
}

// validateDestination checks one workspace's destination: the one place
// that knows every kind and its settings.
func validateDestination(name string, d Destination, at func(string) string, nodeKnown func(string) (bool, string), bad func(format string, args ...any)) {
	key := "workspaces." + name + ".destination"
	line := at(name + ".destination")
	if d.Kind != DestinationRemote && (d.Node != "" || d.Workspace != "") {
		bad("%s%s: node and workspace only apply to kind remote (accepted for kind %s: not them)", line, key, d.Kind)
	}
	switch d.Kind {
	case DestinationLocal, "":
		var set []string
		for k, on := range map[string]bool{"image": d.Image != "", "network": d.Network != "", "memory": d.Memory != 0, "cpus": d.CPUs != 0, "pids": d.Pids != 0, "user": d.User != "", "env_allow": len(d.EnvAllow) > 0, "idle_timeout": d.IdleTimeout != 0, "docker_host": d.DockerHost != ""} {
			if on {
				set = append(set, k)
			}
		}
		if len(set) > 0 {
			sort.Strings(set)
			bad("%s%s: %s only apply to kind docker; this workspace runs locally (accepted for kind local: nothing but kind)", line, key, strings.Join(set, ", "))
		}
	case DestinationDocker:
		if d.Image == "" {
			bad("%s%s.image is empty (accepted: an image present on the Docker host, such as debian:bookworm-slim)", at(name+".destination.kind"), key)
		}
		if d.Network != "none" && d.Network != "host" && !dockerNamePattern.MatchString(d.Network) {
			bad("%s%s.network: %q is not accepted (accepted: none, host, or the name of a network you created)", at(name+".destination.network"), key, d.Network)
		}
		if d.Memory < 0 || d.Memory != 0 && d.Memory < 6<<20 {
			bad("%s%s.memory: %s is too small (accepted: 0 for no limit, or at least 6MiB, such as 512MiB)", at(name+".destination.memory"), key, d.Memory)
		}
		if d.CPUs < 0 || d.CPUs > 1024 {
			bad("%s%s.cpus: %g is out of range (accepted: 0 for no limit, or a number of CPUs such as 1 or 0.5)", at(name+".destination.cpus"), key, d.CPUs)
		}
		if d.Pids < 0 {
			bad("%s%s.pids: %d is negative (accepted: 0 for no limit, or a number of processes such as 256)", at(name+".destination.pids"), key, d.Pids)
		}
		if d.User != "" && !userPattern.MatchString(d.User) {
			bad("%s%s.user: %q is not accepted (accepted: empty for the owner of the workspace directory (65534 when root owns it), or uid[:gid] such as 1000:1000, 0 for root)", at(name+".destination.user"), key, d.User)
		}
		for _, e := range d.EnvAllow {
			if !validEnvName(e) {
				bad("%s%s.env_allow: %q is not a variable name (accepted: letters, digits and _, such as PATH)", at(name+".destination.env_allow"), key, e)
			}
		}
		if d.IdleTimeout < 0 {
			bad("%s%s.idle_timeout: %s is negative (accepted: a duration such as 1h; unset means 30m)", at(name+".destination.idle_timeout"), key, d.IdleTimeout)
		}
		if err := checkDockerHost(d.DockerHost); err != nil {
			bad("%s%s.docker_host: %v (accepted: empty for DOCKER_HOST or the default socket, unix:///path/to/docker.sock, or tcp://127.0.0.1:PORT on this machine)", at(name+".destination.docker_host"), key, err)
		}
	case DestinationRemote:
		validateRemote(name, d, at, nodeKnown, bad)
	default:
		bad("%s%s.kind: %q is not accepted (accepted: %s)", at(name+".destination.kind"), key, d.Kind, strings.Join(DestinationKinds, ", "))
	}
}

// checkDockerHost accepts "", unix:// with an absolute path, or tcp:// to
// a loopback address with a port: the daemon's API is root on its machine,
// so the hub never talks to it in the clear over a network.
func checkDockerHost(h string) error {
	if h == "" {
		return nil
	}
	u, err := url.Parse(h)
	if err != nil {
		return fmt.Errorf("%q is not an address", h)
	}
	switch u.Scheme {
	case "unix":
		if u.Host != "" || !path.IsAbs(u.Path) || u.RawQuery != "" || u.Fragment != "" {
			return fmt.Errorf("%q is not unix:// followed by an absolute path", h)
		}
		return nil
	case "tcp":
		host, port, err := net.SplitHostPort(u.Host)
		if err != nil || port == "" || (u.Path != "" && u.Path != "/") || u.User != nil {
			return fmt.Errorf("%q is not tcp://HOST:PORT", h)
		}
		if host == "localhost" {
			return nil
		}
		if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
			return fmt.Errorf("%q is not a loopback address: an unencrypted daemon API elsewhere gives root on that machine to the network", h)
		}
		return nil
	}
	return fmt.Errorf("%q has scheme %q", h, u.Scheme)
}

var (
	dockerNamePattern = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,63}$`)
	userPattern       = regexp.MustCompile(`^[0-9]{1,10}(:[0-9]{1,10})?$`)
)

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

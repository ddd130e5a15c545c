package config

import (
	"sort"
	"strings"
)

// nodeKnown reports whether name is under nodes:, and the configured
// names for an error.
func (c *Config) nodeKnown(name string) (bool, string) {
	_, ok := c.Nodes[name]
	names := sortedKeys(c.Nodes)
	if len(names) == 0 {
		return ok, "none configured: add the node under nodes: with the block `hub node init` prints"
	}
	return ok, strings.Join(names, ", ")
}

// IsRemote reports whether the workspace sends its calls to a node.
func (wc WorkspaceConfig) IsRemote() bool { return wc.Destination.Kind == DestinationRemote }

// validateRemote checks a remote destination: a configured node, the
// shape of the node's workspace name, and none of the Docker settings.
func validateRemote(name string, d Destination, at func(string) string, nodeKnown func(string) (bool, string), bad func(format string, args ...any)) {
	key := "workspaces." + name + ".destination"
	var set []string
	for k, on := range map[string]bool{"image": d.Image != "", "network": d.Network != "", "memory": d.Memory != 0, "cpus": d.CPUs != 0, "pids": d.Pids != 0, "user": d.User != "", "env_allow": len(d.EnvAllow) > 0, "idle_timeout": d.IdleTimeout != 0, "docker_host": d.DockerHost != ""} {
		if on {
			set = append(set, k)
		}
	}
	if len(set) > 0 {
		sort.Strings(set)
		bad("%s%s: %s only apply to kind docker; this workspace runs on a remote node (accepted for kind remote: node and workspace; the node decides how its workspace runs)", at(name+".destination"), key, strings.Join(set, ", "))
	}
	switch known, names := nodeKnown(d.Node); {
	case d.Node == "":
		bad("%s%s.node is empty (accepted: a node under nodes:, %s)", at(name+".destination"), key, names)
	case !known:
		bad("%s%s.node: %q is not under nodes: (accepted: %s)", at(name+".destination.node"), key, d.Node, names)
	}
	if d.Workspace != "" {
		if err := ValidNodeName(d.Workspace); err != nil {
			bad("%s%s.workspace: %s (accepted: the name of one of the node's workspaces, or empty for its default_workspace)", at(name+".destination.workspace"), key, strings.Replace(err.Error(), "node name", "node workspace name", 1))
		}
	}
}

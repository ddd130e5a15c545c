package config

import (
	"fmt"
	"net"
	"net/url"
	"path"
	"regexp"
	"sort"
	"strings"
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

// Destination is where a workspace's programs run: "local" (host
// processes, the default), "docker" (a long-lived container per
// workspace and session, the workspace bind-mounted at /workspace) or
// "remote" (a workspace of a node).
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

// IsRemote reports whether the workspace sends its calls to a node.
func (wc WorkspaceConfig) IsRemote() bool { return wc.Destination.Kind == DestinationRemote }

// validateDestination checks one workspace's destination (key is its key
// path): the one place that knows every kind and its settings.
func validateDestination(c *Config, v *validator, key, name string, d Destination) {
	if d.Kind != DestinationRemote && (d.Node != "" || d.Workspace != "") {
		v.bad(key, ": node and workspace only apply to kind remote (accepted for kind %s: not them)", d.Kind)
	}
	switch d.Kind {
	case DestinationLocal, "":
		if set := d.dockerKeys(); set != "" {
			v.bad(key, ": %s only apply to kind docker; this workspace runs locally (accepted for kind local: nothing but kind)", set)
		}
	case DestinationDocker:
		validateDocker(v, key, d)
	case DestinationRemote:
		validateRemote(c, v, key, d)
	default:
		v.bad(key+".kind", ": %q is not accepted (accepted: %s)", d.Kind, strings.Join(DestinationKinds, ", "))
	}
}

// dockerKeys lists the Docker settings d sets, "" for none.
func (d Destination) dockerKeys() string {
	var set []string
	for k, on := range map[string]bool{"image": d.Image != "", "network": d.Network != "", "memory": d.Memory != 0, "cpus": d.CPUs != 0, "pids": d.Pids != 0, "user": d.User != "", "env_allow": len(d.EnvAllow) > 0, "idle_timeout": d.IdleTimeout != 0, "docker_host": d.DockerHost != ""} {
		if on {
			set = append(set, k)
		}
	}
	sort.Strings(set)
	return strings.Join(set, ", ")
}

// validateDocker checks a docker destination: an image, and each setting
// in range.
func validateDocker(v *validator, key string, d Destination) {
	if d.Image == "" {
		v.badAt(key+".kind", key+".image", " is empty (accepted: an image present on the Docker host, such as debian:bookworm-slim)")
	}
	if d.Network != "none" && d.Network != "host" && !dockerNamePattern.MatchString(d.Network) {
		v.bad(key+".network", ": %q is not accepted (accepted: none, host, or the name of a network you created)", d.Network)
	}
	if d.Memory < 0 || d.Memory != 0 && d.Memory < 6<<20 {
		v.bad(key+".memory", ": %s is too small (accepted: 0 for no limit, or at least 6MiB, such as 512MiB)", d.Memory)
	}
	if d.CPUs < 0 || d.CPUs > 1024 {
		v.bad(key+".cpus", ": %g is out of range (accepted: 0 for no limit, or a number of CPUs such as 1 or 0.5)", d.CPUs)
	}
	if d.Pids < 0 {
		v.bad(key+".pids", ": %d is negative (accepted: 0 for no limit, or a number of processes such as 256)", d.Pids)
	}
	if d.User != "" && !userPattern.MatchString(d.User) {
		v.bad(key+".user", ": %q is not accepted (accepted: empty for the owner of the workspace directory (65534 when root owns it), or uid[:gid] such as 1000:1000, 0 for root)", d.User)
	}
	for i, e := range d.EnvAllow {
		if !validEnvName(e) {
			v.badAt(item(key+".env_allow", i), key+".env_allow", ": %q is not a variable name (accepted: letters, digits and _, such as PATH)", e)
		}
	}
	if d.IdleTimeout < 0 {
		v.bad(key+".idle_timeout", ": %s is negative (accepted: a duration such as 1h; unset means 30m)", d.IdleTimeout)
	}
	if err := checkDockerHost(d.DockerHost); err != nil {
		v.bad(key+".docker_host", ": %v (accepted: empty for DOCKER_HOST or the default socket, unix:///path/to/docker.sock, or tcp://127.0.0.1:PORT on this machine)", err)
	}
}

// validateRemote checks a remote destination: a configured node, the
// shape of the node's workspace name, and none of the Docker settings.
func validateRemote(c *Config, v *validator, key string, d Destination) {
	if set := d.dockerKeys(); set != "" {
		v.bad(key, ": %s only apply to kind docker; this workspace runs on a remote node (accepted for kind remote: node and workspace; the node decides how its workspace runs)", set)
	}
	switch known, names := c.nodeKnown(d.Node); {
	case d.Node == "":
		v.bad(key+".node", " is empty (accepted: a node under nodes:, %s)", names)
	case !known:
		v.bad(key+".node", ": %q is not under nodes: (accepted: %s)", d.Node, names)
	}
	if d.Workspace != "" {
		if err := ValidNodeName(d.Workspace); err != nil {
			v.bad(key+".workspace", ": %s (accepted: the name of one of the node's workspaces, or empty for its default_workspace)", strings.Replace(err.Error(), "node name", "node workspace name", 1))
		}
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

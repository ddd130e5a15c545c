package config

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"reflect"
	"sort"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// DefaultNATSListen is where the embedded NATS server listens by default:
// loopback only.
const DefaultNATSListen = "127.0.0.1:4222"

// DefaultCallTimeout is how long the hub waits for a node's answer.
const DefaultCallTimeout = 10 * time.Minute

// NATS configures the transport of remote nodes: an embedded NATS server
// run by `hub serve`, or an existing server or cluster at URL.
type NATS struct {
	// Embedded runs a NATS server in-process, its JetStream storage under
	// <state_dir>/nats.
	Embedded bool `yaml:"embedded"`
	// Listen is the embedded server's client address (default
	// 127.0.0.1:4222). A non-loopback address needs CertFile and KeyFile.
	Listen   string `yaml:"listen"`
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
	// URL names an existing NATS server or cluster instead of the embedded
	// one (nats://host:4222, tls://host:4222; several separated by commas).
	URL string `yaml:"url"`
	// CallTimeout bounds the wait for a node's answer (default 10m).
	CallTimeout Duration `yaml:"call_timeout"`
	// NodeLimits bound what one node may make the hub's NATS store and the
	// hub read (Limits gives them with their defaults).
	NodeLimits NodeLimits `yaml:"node_limits"`
}

// Defaults of nats.node_limits.
const (
	DefaultMaxResultBytes       = 8 << 20
	DefaultMaxStreamBytes       = 64 << 20
	DefaultMaxStreamMessages    = 10000
	DefaultMaxNodeConnections   = 4
	DefaultMaxNodeSubscriptions = 100
)

// NodeLimits bound each node: what its answers may weigh, what its
// streams may hold, and what its account on the embedded server may open.
type NodeLimits struct {
	// MaxResultBytes is the largest answer a node may publish: the
	// largest message its account may send, the largest its results
	// stream stores, and the largest the hub reads.
	MaxResultBytes Size `yaml:"max_result_bytes"`
	// MaxStreamBytes and MaxStreamMessages bound each of a node's two
	// streams (its queued calls, its results not yet read): beyond them a
	// new message is refused.
	MaxStreamBytes    Size `yaml:"max_stream_bytes"`
	MaxStreamMessages int  `yaml:"max_stream_messages"`
	// MaxConnections and MaxSubscriptions bound the node's account on the
	// embedded server (subscriptions per connection).
	MaxConnections   int `yaml:"max_connections"`
	MaxSubscriptions int `yaml:"max_subscriptions"`
}

// Limits is NodeLimits with the defaults of the keys left unset.
func (n NATS) Limits() NodeLimits { return n.NodeLimits.WithDefaults() }

// WithDefaults fills the limits left unset (zero) with their defaults.
func (l NodeLimits) WithDefaults() NodeLimits {
	setDefault(&l.MaxResultBytes, DefaultMaxResultBytes)
	setDefault(&l.MaxStreamBytes, DefaultMaxStreamBytes)
	setDefault(&l.MaxStreamMessages, DefaultMaxStreamMessages)
	setDefault(&l.MaxConnections, DefaultMaxNodeConnections)
	setDefault(&l.MaxSubscriptions, DefaultMaxNodeSubscriptions)
	return l
}

func setDefault[T Size | int](v *T, d T) {
	if *v == 0 {
		*v = d
	}
}

// validateNodeLimits checks nats.node_limits, with the defaults of the
// keys left unset.
func (n NATS) validateNodeLimits(bad func(format string, args ...any)) {
	l := n.Limits()
	if l.MaxResultBytes < 64<<10 || l.MaxResultBytes > 32<<20 {
		bad("nats.node_limits.max_result_bytes: %s is out of range (accepted: 64KiB to 32MiB; default 8MiB)", l.MaxResultBytes)
	}
	if l.MaxStreamBytes < 16<<20 || l.MaxStreamBytes > 1<<40 {
		bad("nats.node_limits.max_stream_bytes: %s is out of range (accepted: 16MiB to 1TiB; default 64MiB)", l.MaxStreamBytes)
	} else if l.MaxStreamBytes < 2*l.MaxResultBytes {
		bad("nats.node_limits.max_stream_bytes: %s holds fewer than two answers of max_result_bytes (%s): set it to at least %s", l.MaxStreamBytes, l.MaxResultBytes, 2*l.MaxResultBytes)
	}
	if m := l.MaxStreamMessages; m < 100 || m > 10_000_000 {
		bad("nats.node_limits.max_stream_messages: %d is out of range (accepted: 100 to 10000000; default 10000)", m)
	}
	if c := l.MaxConnections; c < 1 || c > 1000 {
		bad("nats.node_limits.max_connections: %d is out of range (accepted: 1 to 1000; default 4)", c)
	}
	if s := l.MaxSubscriptions; s < 16 || s > 100_000 {
		bad("nats.node_limits.max_subscriptions: %d is out of range (accepted: 16 to 100000; default 100)", s)
	}
}

// Enabled reports whether the hub uses NATS at all.
func (n NATS) Enabled() bool { return n.Embedded || n.URL != "" }

// ListenAddress is Listen or its default.
func (n NATS) ListenAddress() string {
	if n.Listen == "" {
		return DefaultNATSListen
	}
	return n.Listen
}

// Timeout is CallTimeout or its default.
func (n NATS) Timeout() time.Duration {
	if n.CallTimeout <= 0 {
		return DefaultCallTimeout
	}
	return n.CallTimeout.D()
}

// NodeEntry is one remote node the hub accepts, under nodes: NAME.
type NodeEntry struct {
	// NKey is the node's public user nkey (U…), printed by `hub node init`.
	NKey string `yaml:"nkey"`
}

// ValidNodeName checks a node's name: it becomes part of NATS subjects,
// stream and key names.
func ValidNodeName(name string) error {
	ok := name != "" && len(name) <= 64
	for i := 0; i < len(name) && ok; i++ {
		c := name[i]
		ok = c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || (i > 0 && (c == '-' || c == '_'))
	}
	if !ok {
		return fmt.Errorf("%q is not a node name (accepted: 1 to 64 lower-case letters, digits, '-' and '_', starting with a letter or digit)", name)
	}
	return nil
}

// validNKey checks the shape of a public user nkey without importing the
// nkeys package into the configuration: 56 base32 characters starting
// with U. The NATS server checks the checksum when it loads the key.
func validNKey(k string) bool {
	if len(k) != 56 || k[0] != 'U' {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c >= 'A' && c <= 'Z' || c >= '2' && c <= '7') {
			return false
		}
	}
	return true
}

// validateNodes checks the nats and nodes sections.
func (c *Config) validateNodes(bad func(format string, args ...any)) {
	n := c.NATS
	if n.Embedded && n.URL != "" {
		bad("nats: embedded is true and url is set: choose one (the embedded server, or an existing server at url)")
	}
	if n.CallTimeout < 0 || n.CallTimeout.D() > 24*time.Hour {
		bad("nats.call_timeout: %s is out of range (accepted: 1s to 24h; default 10m)", n.CallTimeout)
	} else if n.CallTimeout != 0 && n.CallTimeout.D() < time.Second {
		bad("nats.call_timeout: %s is out of range (accepted: 1s to 24h; default 10m)", n.CallTimeout)
	}
	n.validateNodeLimits(bad)
	if (n.CertFile == "") != (n.KeyFile == "") {
		bad("nats.cert_file and nats.key_file must be set together")
	}
	if n.Embedded {
		host, port, err := net.SplitHostPort(n.ListenAddress())
		switch {
		case err != nil || port == "":
			bad("nats.listen: %q is not host:port (for example 127.0.0.1:4222)", n.ListenAddress())
		case !IsLoopback(host) && (n.CertFile == "" || n.KeyFile == ""):
			bad("nats.listen: %s is not a loopback address, so nats.cert_file and nats.key_file must be set (nodes then connect with tls://); without TLS the embedded server only listens on 127.0.0.1", n.ListenAddress())
		}
	}
	if n.URL != "" {
		for _, u := range strings.Split(n.URL, ",") {
			u = strings.TrimSpace(u)
			if !strings.HasPrefix(u, "nats://") && !strings.HasPrefix(u, "tls://") {
				bad("nats.url: %q must start with nats:// or tls://", u)
			}
		}
	}
	if len(c.Nodes) > 0 && !n.Enabled() {
		bad("nodes: nodes are configured but nats is not: set nats.embedded: true (or nats.url)")
	}
	names := make([]string, 0, len(c.Nodes))
	for name := range c.Nodes {
		names = append(names, name)
	}
	sort.Strings(names)
	seen := map[string]string{}
	for _, name := range names {
		if err := ValidNodeName(name); err != nil {
			bad("nodes: %v", err)
		}
		k := c.Nodes[name].NKey
		if !validNKey(k) {
			bad("nodes.%s.nkey: not a public user nkey (56 characters starting with U, as printed by `hub node init`)", name)
			continue
		}
		if other, dup := seen[k]; dup {
			bad("nodes.%s and nodes.%s have the same nkey: give each node its own (hub node init)", other, name)
		}
		seen[k] = name
	}
}

// NodeFile is the configuration of `hub node`, the process on a remote
// machine: who it is, where the hub's NATS is, its state and workspaces.
type NodeFile struct {
	Node NodeSection `yaml:"node"`
	// StateDir holds the node's ledger and proc output (default .hub-node).
	StateDir string `yaml:"state_dir"`
	// Workspaces are the directories the node serves, by name.
	Workspaces map[string]NodeWorkspace `yaml:"workspaces"`
	// DefaultWorkspace serves calls that name no workspace; it may be
	// omitted when there is one workspace.
	DefaultWorkspace string `yaml:"default_workspace"`
	// Verbs holds the proc.run setting a node shares with the hub:
	// verbs.proc.user, whom a node running as root runs programs as.
	Verbs NodeVerbs `yaml:"verbs"`

	// Path is the file the configuration came from.
	Path string `yaml:"-"`
}

// NodeSection says who the node is and how it reaches the hub.
type NodeSection struct {
	Name    string `yaml:"name"`
	NATSURL string `yaml:"nats_url"`
	// NKeyFile is the node's nkey seed (owner-only), from `hub node init`.
	NKeyFile string `yaml:"nkey_file"`
	// CAFile verifies a tls:// server whose certificate the system does
	// not trust.
	CAFile string `yaml:"ca_file"`
	// Concurrency is how many calls run at once (default 4).
	Concurrency int `yaml:"concurrency"`
	// Heartbeat is the liveness interval (default 5s); the hub considers
	// the node offline after three missed beats.
	Heartbeat Duration `yaml:"heartbeat"`
}

// NodeVerbs is the verbs section of a node's configuration.
type NodeVerbs struct {
	Proc struct {
		User string `yaml:"user"`
	} `yaml:"proc"`
}

// NodeWorkspace is one workspace of a node.
type NodeWorkspace struct {
	Path string `yaml:"path"`
}

// LoadNode reads a `hub node` configuration strictly (unknown keys are
// errors), expands ${VAR}, applies defaults and validates.
func LoadNode(path string, env Getenv) (*NodeFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("node config: %w", err)
	}
	nf := &NodeFile{}
	if err := parseNode(data, env, nf); err != nil {
		return nil, fmt.Errorf("node config %s: %w", path, err)
	}
	nf.Path = path
	nf.applyDefaults()
	if err := nf.Validate(); err != nil {
		return nil, fmt.Errorf("node config %s: %w", path, err)
	}
	return nf, nil
}

func parseNode(data []byte, env Getenv, nf *NodeFile) error {
	if len(bytes.TrimSpace(data)) == 0 {
		return errors.New("empty: it needs at least node.name, node.nats_url, node.nkey_file and one workspace")
	}
	doc, err := oneDocument(data)
	if err != nil {
		return err
	}
	if len(doc.Content) == 0 {
		return errors.New("empty: it needs at least node.name, node.nats_url, node.nkey_file and one workspace")
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: the configuration must be a mapping of keys (node, state_dir, workspaces)", root.Line)
	}
	if err := expandNode(root, env); err != nil {
		return err
	}
	if err := checkKeys(root, reflect.TypeOf(nf).Elem(), ""); err != nil {
		return err
	}
	if err := root.Decode(nf); err != nil {
		var te *yaml.TypeError
		if errors.As(err, &te) {
			return fmt.Errorf("%s", strings.Join(te.Errors, "; "))
		}
		return err
	}
	return nil
}

func (nf *NodeFile) applyDefaults() {
	if nf.StateDir == "" {
		nf.StateDir = ".hub-node"
	}
	if nf.Node.Concurrency == 0 {
		nf.Node.Concurrency = 4
	}
	if nf.Node.Heartbeat == 0 {
		nf.Node.Heartbeat = Duration(5 * time.Second)
	}
	if nf.DefaultWorkspace == "" && len(nf.Workspaces) == 1 {
		for name := range nf.Workspaces {
			nf.DefaultWorkspace = name
		}
	}
}

// Validate checks the node configuration and names the key of the first
// problems.
func (nf *NodeFile) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if err := ValidNodeName(nf.Node.Name); err != nil {
		bad("node.name: %v", err)
	}
	if u := nf.Node.NATSURL; !strings.HasPrefix(u, "nats://") && !strings.HasPrefix(u, "tls://") {
		bad("node.nats_url: %q must start with nats:// or tls:// (for example nats://hub.example:4222)", u)
	}
	if nf.Node.NKeyFile == "" {
		bad("node.nkey_file is empty: name the seed file `hub node init --name NAME --seed FILE` wrote")
	}
	if c := nf.Node.Concurrency; c < 1 || c > 64 {
		bad("node.concurrency: %d is out of range (accepted: 1 to 64)", c)
	}
	if h := nf.Node.Heartbeat.D(); h < 100*time.Millisecond || h > time.Minute {
		bad("node.heartbeat: %s is out of range (accepted: 100ms to 1m)", nf.Node.Heartbeat)
	}
	if err := ValidProcUser(nf.Verbs.Proc.User); err != nil {
		bad("verbs.proc.user: %v", err)
	}
	if len(nf.Workspaces) == 0 {
		bad("workspaces: the node serves no workspace: add one, for example workspaces: {logs: {path: /var/log/app}}")
	}
	names := make([]string, 0, len(nf.Workspaces))
	for name := range nf.Workspaces {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if err := ValidNodeName(name); err != nil {
			bad("workspaces: %v", strings.Replace(err.Error(), "node name", "workspace name", 1))
		}
		if nf.Workspaces[name].Path == "" {
			bad("workspaces.%s.path is empty: name the directory the workspace serves", name)
		}
	}
	if len(nf.Workspaces) > 1 && nf.DefaultWorkspace == "" {
		bad("default_workspace is empty and there are %d workspaces: name the one calls without a workspace use (one of %s)", len(names), strings.Join(names, ", "))
	} else if _, ok := nf.Workspaces[nf.DefaultWorkspace]; !ok && len(nf.Workspaces) > 0 {
		bad("default_workspace: %q is not a workspace (accepted: %s)", nf.DefaultWorkspace, strings.Join(names, ", "))
	}
	return errors.Join(errs...)
}

package config

import "strings"

// NodeEntry is one remote node the hub accepts, under nodes: NAME.
type NodeEntry struct {
	// NKey is the node's public user nkey (U…), printed by `hub node init`.
	NKey string `yaml:"nkey"`
}

// ValidNodeName checks a node's name: it becomes part of NATS subjects,
// stream and key names.
func ValidNodeName(name string) error { return checkName("a node", name) }

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

// nodesSection is the nodes section: the remote nodes the hub accepts
// (Config.Nodes, by name).
type nodesSection struct{}

func (nodesSection) applyDefaults(*Config) {}

// validate checks each node's name and key, distinct keys, and that NATS
// is configured for them.
func (nodesSection) validate(c *Config, v *validator) {
	if len(c.Nodes) > 0 && !c.NATS.Enabled() {
		v.bad("nodes", ": nodes are configured but nats is not: set nats.embedded: true (or nats.url)")
	}
	seen := map[string]string{}
	for _, name := range sortedKeys(c.Nodes) {
		key := "nodes." + name
		if err := ValidNodeName(name); err != nil {
			v.badAt(key, "nodes", ": %v", err)
		}
		k := c.Nodes[name].NKey
		if !validNKey(k) {
			v.bad(key+".nkey", ": not a public user nkey (56 characters starting with U, as printed by `hub node init`)")
			continue
		}
		if other, dup := seen[k]; dup {
			v.badAt(key+".nkey", "nodes."+other, " and %s have the same nkey: give each node its own (hub node init)", key)
		}
		seen[k] = name
	}
}

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

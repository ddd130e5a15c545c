package config

import (
	"fmt"
	"os"
	"strings"
	"time"
)

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
	// src is where the keys were written, for the errors of Validate.
	src *source
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
// errors), expands ${VAR}, applies defaults and validates. Its errors name
// the file, and each problem its line and key path (Error).
func LoadNode(path string, env Getenv) (*NodeFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("node config: %w", err)
	}
	nf := &NodeFile{src: newSource(path, "node config")}
	root, err := readDocument(data, nf.src, "the configuration must be a mapping of keys (node, state_dir, workspaces)")
	if err != nil {
		return nil, err
	}
	if root == nil {
		return nil, nf.src.newError(0, "", "empty: it needs at least node.name, node.nats_url, node.nkey_file and one workspace")
	}
	if err := decodeInto(root, nf, nf.src, env); err != nil {
		return nil, err
	}
	nf.Path = path
	nf.applyDefaults()
	if err := nf.Validate(); err != nil {
		return nil, err
	}
	return nf, nil
}

func (nf *NodeFile) applyDefaults() {
	setDefault(&nf.StateDir, ".hub-node")
	setDefault(&nf.Node.Concurrency, 4)
	setDefault(&nf.Node.Heartbeat, Duration(5*time.Second))
	if nf.DefaultWorkspace == "" && len(nf.Workspaces) == 1 {
		for name := range nf.Workspaces {
			nf.DefaultWorkspace = name
		}
	}
}

// Validate checks the node configuration; each problem is an *Error
// naming its key.
func (nf *NodeFile) Validate() error {
	v := &validator{src: nf.src}
	if err := ValidNodeName(nf.Node.Name); err != nil {
		v.bad("node.name", ": %v", err)
	}
	if u := nf.Node.NATSURL; !strings.HasPrefix(u, "nats://") && !strings.HasPrefix(u, "tls://") {
		v.bad("node.nats_url", ": %q must start with nats:// or tls:// (for example nats://hub.example:4222)", u)
	}
	if nf.Node.NKeyFile == "" {
		v.bad("node.nkey_file", " is empty: name the seed file `hub node init --name NAME --seed FILE` wrote")
	}
	if c := nf.Node.Concurrency; c < 1 || c > 64 {
		v.bad("node.concurrency", ": %d is out of range (accepted: 1 to 64)", c)
	}
	if h := nf.Node.Heartbeat.D(); h < 100*time.Millisecond || h > time.Minute {
		v.bad("node.heartbeat", ": %s is out of range (accepted: 100ms to 1m)", nf.Node.Heartbeat)
	}
	if err := ValidProcUser(nf.Verbs.Proc.User); err != nil {
		v.bad("verbs.proc.user", ": %v", err)
	}
	nf.validateWorkspaces(v)
	return v.err()
}

// validateWorkspaces checks the node's workspaces and its default one.
func (nf *NodeFile) validateWorkspaces(v *validator) {
	if len(nf.Workspaces) == 0 {
		v.bad("workspaces", ": the node serves no workspace: add one, for example workspaces: {logs: {path: /var/log/app}}")
	}
	names := sortedKeys(nf.Workspaces)
	for _, name := range names {
		if err := ValidNodeName(name); err != nil {
			v.badAt("workspaces."+name, "workspaces", ": %v", strings.Replace(err.Error(), "node name", "workspace name", 1))
		}
		if nf.Workspaces[name].Path == "" {
			v.bad("workspaces."+name+".path", " is empty: name the directory the workspace serves")
		}
	}
	if len(nf.Workspaces) > 1 && nf.DefaultWorkspace == "" {
		v.bad("default_workspace", " is empty and there are %d workspaces: name the one calls without a workspace use (one of %s)", len(names), strings.Join(names, ", "))
	} else if _, ok := nf.Workspaces[nf.DefaultWorkspace]; !ok && len(nf.Workspaces) > 0 {
		v.bad("default_workspace", ": %q is not a workspace (accepted: %s)", nf.DefaultWorkspace, strings.Join(names, ", "))
	}
}

// ProtectedFiles lists a node's own files: its configuration file,
// node.nkey_file (its seed) and node.ca_file. Its state directory is
// protected on its own.
func (nf *NodeFile) ProtectedFiles() []ProtectedFile {
	out := protectedList{}
	out.add(WhatNodeConfigFile, nf.Path)
	out.add("node.nkey_file", nf.Node.NKeyFile)
	out.add("node.ca_file", nf.Node.CAFile)
	return out
}

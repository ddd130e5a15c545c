package config

import (
	"path/filepath"
)

// ProtectedFile is a file no verb may reach, in any workspace: the
// configuration file itself, or a file one of its keys names that holds a
// secret (a token, a private key, a node's seed) or what a secret is checked
// against (a certificate). Whoever could rewrite the configuration could
// grant themselves any role; whoever could read a token could act as the
// hub.
type ProtectedFile struct {
	// What names the file for people: WhatConfigFile, WhatNodeConfigFile or
	// the key that names it ("telegram.token_file").
	What string
	// Path is the file's absolute path (relative paths in the
	// configuration are relative to the working directory, as the hub
	// opens them).
	Path string
}

// What a protected file is, when no key names it.
const (
	WhatConfigFile     = "the configuration file"
	WhatNodeConfigFile = "the node's configuration file"
)

// ProtectedFiles lists the configuration file c was loaded from and every
// file its keys name that holds or checks a secret (each section lists its
// own with secretFiles): web.token_file, web.tls_cert, web.tls_key,
// telegram.token_file, telegram.webhook.secret_token_file,
// discord.token_file, mcp.agents.<name>.token_file, nats.cert_file,
// nats.key_file and nats.ca_file. The state directory, which holds the hub's own keys, is
// protected on its own.
func (c *Config) ProtectedFiles() []ProtectedFile {
	out := protectedList{}
	out.add(WhatConfigFile, c.Path)
	for _, f := range c.secretFiles() {
		out.add(f.key, f.path)
	}
	return out
}

// ProtectedPaths is ProtectedFiles' paths, for destinations that hide them
// by path.
func (c *Config) ProtectedPaths() []string { return protectedList(c.ProtectedFiles()).paths() }

type protectedList []ProtectedFile

// add appends the file at p, made absolute; nothing when p is empty.
func (l *protectedList) add(what, p string) {
	if p == "" {
		return
	}
	if abs, err := filepath.Abs(p); err == nil {
		p = abs
	}
	*l = append(*l, ProtectedFile{What: what, Path: p})
}

func (l protectedList) paths() []string {
	out := make([]string, len(l))
	for i, f := range l {
		out[i] = f.Path
	}
	return out
}

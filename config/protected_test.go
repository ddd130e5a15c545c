package config

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestProtectedFiles: the configuration file and every file a key names
// that holds or checks a secret, made absolute; nothing for unset keys.
func TestProtectedFiles(t *testing.T) {
	dir := t.TempDir()
	tok := writeTokenFile(t, dir, "tok", fileToken+"\n", 0o600)
	agentTok := writeTokenFile(t, dir, "agent", "agent-token-0123456789abcdef\n", 0o600)
	cfgFile := filepath.Join(dir, "hub.yml")
	os.WriteFile(cfgFile, []byte("web:\n  tls_cert: c.pem\n  tls_key: k.pem\n  token_file: "+tok+"\n"+
		"mcp:\n  enabled: true\n  agents:\n    bot: {token_file: "+agentTok+"}\n"+
		"nats:\n  embedded: true\n  cert_file: /etc/n/c.pem\n  key_file: /etc/n/k.pem\n"), 0o600)
	cfg, err := LoadWith(cfgFile, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	wd, _ := os.Getwd()
	want := []ProtectedFile{
		{WhatConfigFile, cfgFile},
		{"web.token_file", tok},
		{"web.tls_cert", filepath.Join(wd, "c.pem")},
		{"web.tls_key", filepath.Join(wd, "k.pem")},
		{"mcp.agents.bot.token_file", agentTok},
		{"nats.cert_file", "/etc/n/c.pem"},
		{"nats.key_file", "/etc/n/k.pem"},
	}
	if got := cfg.ProtectedFiles(); !slices.Equal(got, want) {
		t.Fatalf("ProtectedFiles:\n got %v\nwant %v", got, want)
	}
	if got := cfg.ProtectedPaths(); len(got) != len(want) || got[0] != cfgFile {
		t.Fatalf("ProtectedPaths: %v", got)
	}
	if got := Default().ProtectedFiles(); len(got) != 0 {
		t.Fatalf("defaults protect %v", got)
	}
	// A cluster's CA decides whom the hub trusts as its NATS: no verb may
	// replace it.
	os.WriteFile(cfgFile, []byte("nats: {url: 'tls://a:4222', ca_file: /etc/n/ca.pem}\n"), 0o600)
	if cfg, err = LoadWith(cfgFile, env(nil)); err != nil {
		t.Fatal(err)
	}
	if got := cfg.ProtectedFiles(); !slices.Equal(got, []ProtectedFile{{WhatConfigFile, cfgFile}, {"nats.ca_file", "/etc/n/ca.pem"}}) {
		t.Fatalf("ProtectedFiles with nats.ca_file: %v", got)
	}
	nf := &NodeFile{Path: "node.yml", Node: NodeSection{NKeyFile: "/k/seed.nk", CAFile: "ca.pem"}}
	if got := nf.ProtectedFiles(); !slices.Equal(got, []ProtectedFile{
		{WhatNodeConfigFile, filepath.Join(wd, "node.yml")}, {"node.nkey_file", "/k/seed.nk"}, {"node.ca_file", filepath.Join(wd, "ca.pem")},
	}) {
		t.Fatalf("node ProtectedFiles: %v", got)
	}
}

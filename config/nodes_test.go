package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const testNKey = "UDXU4RCSJNZOIQHZNWXHXORDPRTGNJAHAHFRGZNEEJCPQTT2M7NLCNF4"

func TestNodesValidation(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"embedded default", "nats: {embedded: true}\nnodes: {db-1: {nkey: " + testNKey + "}}\n", ""},
		{"non-loopback without TLS", "nats: {embedded: true, listen: 0.0.0.0:4222}\n", "nats.cert_file and nats.key_file must be set"},
		{"non-loopback with TLS", "nats: {embedded: true, listen: 0.0.0.0:4222, cert_file: c.pem, key_file: k.pem}\n", ""},
		{"both embedded and url", "nats: {embedded: true, url: nats://x:4222}\n", "choose one"},
		{"bad url", "nats: {url: http://x}\n", "must start with nats:// or tls://"},
		{"nodes without nats", "nodes: {db-1: {nkey: " + testNKey + "}}\n", "nodes are configured but nats is not"},
		{"bad node name", "nats: {embedded: true}\nnodes: {DB1: {nkey: " + testNKey + "}}\n", "not a node name"},
		{"bad key", "nats: {embedded: true}\nnodes: {db-1: {nkey: SUAXYZ}}\n", "not a public user nkey"},
		{"shared key", "nats: {embedded: true}\nnodes: {a: {nkey: " + testNKey + "}, b: {nkey: " + testNKey + "}}\n", "same nkey"},
		{"unknown key", "nats: {embeded: true}\n", `unknown key "embeded"`},
		{"short timeout", "nats: {embedded: true, call_timeout: 10ms}\n", "nats.call_timeout"},
		{"tiny result", "nats: {embedded: true, node_limits: {max_result_bytes: 1KiB}}\n", "nats.node_limits.max_result_bytes: 1KiB is out of range (accepted: 64KiB to 32MiB"},
		{"huge result", "nats: {embedded: true, node_limits: {max_result_bytes: 1GiB}}\n", "nats.node_limits.max_result_bytes: 1GiB is out of range"},
		{"stream below two results", "nats: {embedded: true, node_limits: {max_result_bytes: 16MiB, max_stream_bytes: 20MiB}}\n",
			"nats.node_limits.max_stream_bytes: 20MiB holds fewer than two answers of max_result_bytes (16MiB): set it to at least 32MiB"},
		{"tiny stream", "nats: {embedded: true, node_limits: {max_stream_bytes: 1MiB}}\n", "nats.node_limits.max_stream_bytes: 1MiB is out of range (accepted: 16MiB to 1TiB"},
		{"few messages", "nats: {embedded: true, node_limits: {max_stream_messages: 10}}\n", "nats.node_limits.max_stream_messages: 10 is out of range"},
		{"no connection", "nats: {embedded: true, node_limits: {max_connections: -1}}\n", "nats.node_limits.max_connections: -1 is out of range (accepted: 1 to 1000"},
		{"few subscriptions", "nats: {embedded: true, node_limits: {max_subscriptions: 2}}\n", "nats.node_limits.max_subscriptions: 2 is out of range (accepted: 16 to 100000"},
		{"limits set", "nats: {embedded: true, node_limits: {max_result_bytes: 1MiB, max_stream_bytes: 16MiB, max_stream_messages: 500, max_connections: 2, max_subscriptions: 50}}\n", ""},
		{"unknown limit", "nats: {embedded: true, node_limits: {max_bytes: 1MiB}}\n", `unknown key "max_bytes"`},
		{"cluster", "nats: {url: 'tls://a:4222,tls://b:4222,tls://c:4222', ca_file: ca.pem, replicas: 3, ack_wait: 10s}\n", ""},
		{"ca_file without url", "nats: {embedded: true, ca_file: ca.pem}\n", "nats.ca_file: applies to nats.url"},
		{"replicas without url", "nats: {embedded: true, replicas: 3}\n", "nats.replicas: 3 needs nats.url"},
		{"too many replicas", "nats: {url: nats://a:4222, replicas: 7}\n", "nats.replicas: 7 is out of range (accepted: 1 to 5"},
		{"short ack wait", "nats: {embedded: true, ack_wait: 500ms}\n", "nats.ack_wait: 500ms is out of range (accepted: 2s to 1h; default 30s)"},
		{"long ack wait", "nats: {embedded: true, ack_wait: 2h}\n", "nats.ack_wait: 2h0m0s is out of range"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "hub.yml")
			os.WriteFile(p, []byte(tc.yaml), 0o600)
			cfg, err := LoadWith(p, func(string) (string, bool) { return "", false })
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if cfg.NATS.Timeout() != DefaultCallTimeout {
					t.Fatalf("timeout %s", cfg.NATS.Timeout())
				}
				if r, w := cfg.NATS.ReplicaCount(), cfg.NATS.AckWaitTime(); cfg.NATS.URL == "" && (r != 1 || w != DefaultAckWait) || cfg.NATS.URL != "" && (r != 3 || w != 10*time.Second) {
					t.Fatalf("replicas %d, ack wait %s", r, w)
				}
				if l := cfg.NATS.Limits(); l.MaxResultBytes == 0 || l.MaxStreamBytes == 0 || l.MaxStreamMessages == 0 || l.MaxConnections == 0 || l.MaxSubscriptions == 0 {
					t.Fatalf("limits without defaults: %+v", l)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

// Unset node limits take their defaults; set ones are kept.
func TestNodeLimitsDefaults(t *testing.T) {
	got := NATS{NodeLimits: NodeLimits{MaxStreamMessages: 500}}.Limits()
	want := NodeLimits{MaxResultBytes: DefaultMaxResultBytes, MaxStreamBytes: DefaultMaxStreamBytes, MaxStreamMessages: 500,
		MaxConnections: DefaultMaxNodeConnections, MaxSubscriptions: DefaultMaxNodeSubscriptions}
	if got != want {
		t.Fatalf("limits = %+v, want %+v", got, want)
	}
}

func TestLoadNode(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"one workspace", "node: {name: db-1, nats_url: nats://h:4222, nkey_file: k}\nworkspaces: {logs: {path: /var/log}}\n", ""},
		{"two without default", "node: {name: db-1, nats_url: nats://h:4222, nkey_file: k}\nworkspaces: {a: {path: /a}, b: {path: /b}}\n", "default_workspace is empty"},
		{"bad default", "node: {name: db-1, nats_url: nats://h:4222, nkey_file: k}\nworkspaces: {a: {path: /a}}\ndefault_workspace: z\n", `"z" is not a workspace`},
		{"no workspace", "node: {name: db-1, nats_url: nats://h:4222, nkey_file: k}\n", "serves no workspace"},
		{"bad url", "node: {name: db-1, nats_url: h:4222, nkey_file: k}\nworkspaces: {a: {path: /a}}\n", "node.nats_url"},
		{"unknown key", "node: {name: db-1, nats_url: nats://h:4222, nkey_file: k, seed: x}\nworkspaces: {a: {path: /a}}\n", `unknown key "seed"`},
		{"proc user", "node: {name: db-1, nats_url: nats://h:4222, nkey_file: k}\nworkspaces: {logs: {path: /var/log}}\nverbs: {proc: {user: '1000:1000'}}\n", ""},
		{"bad proc user", "node: {name: db-1, nats_url: nats://h:4222, nkey_file: k}\nworkspaces: {a: {path: /a}}\nverbs: {proc: {user: 'a b'}}\n", `verbs.proc.user: "a b" is not a user`},
		{"other verbs keys", "node: {name: db-1, nats_url: nats://h:4222, nkey_file: k}\nworkspaces: {a: {path: /a}}\nverbs: {proc: {max_procs: 3}}\n", `unknown key "max_procs"`},
		{"destination not yet", "node: {name: db-1, nats_url: nats://h:4222, nkey_file: k}\nworkspaces: {a: {path: /a, destination: {kind: docker}}}\n", `unknown key "destination"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "node.yml")
			os.WriteFile(p, []byte(tc.yaml), 0o600)
			nf, err := LoadNode(p, func(string) (string, bool) { return "", false })
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if nf.DefaultWorkspace != "logs" || nf.StateDir != ".hub-node" || nf.Node.Concurrency != 4 {
					t.Fatalf("defaults: %+v", nf)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

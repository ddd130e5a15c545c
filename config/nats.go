package config

import (
	"net"
	"strings"
	"time"
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

	// CAFile verifies the certificates of the servers at URL (tls://) when
	// the system does not trust them.
	CAFile string `yaml:"ca_file"`
	// Replicas is how many servers of the cluster at URL keep each stream
	// and the liveness bucket (1 to 5, default 1; 3 on a three-server
	// cluster survives one server failing). The embedded server is one
	// server: 1.
	Replicas int `yaml:"replicas"`
	// AckWait is how long a node may hold a call without a sign of life
	// before the server hands it out again (default 30s; a node renews it
	// every third of it while the call runs).
	AckWait Duration `yaml:"ack_wait"`
}

// Defaults of nats.replicas and nats.ack_wait. An ack wait of 30s is
// three times the longest leader election of a NATS cluster (9s), so a
// call running through a failover is renewed before it runs out; it is
// also how long a call whose node died waits before its restarted node
// answers it "may or may not have completed".
const (
	DefaultReplicas = 1
	DefaultAckWait  = 30 * time.Second
)

// ReplicaCount is Replicas or its default.
func (n NATS) ReplicaCount() int {
	if n.Replicas <= 0 {
		return DefaultReplicas
	}
	return n.Replicas
}

// AckWaitTime is AckWait or its default.
func (n NATS) AckWaitTime() time.Duration {
	if n.AckWait <= 0 {
		return DefaultAckWait
	}
	return n.AckWait.D()
}

// validateCluster checks the keys of an existing server or cluster:
// ca_file and replicas need url; the ack wait's range.
func (n *NATS) validateCluster(v *validator) {
	if n.CAFile != "" && n.URL == "" {
		v.bad("nats.ca_file", ": applies to nats.url (the servers' certificates); the embedded server's clients verify nats.cert_file")
	}
	if r := n.Replicas; r < 0 || r > 5 {
		v.bad("nats.replicas", ": %d is out of range (accepted: 1 to 5, at most the servers of the cluster; default 1)", r)
	} else if r > 1 && n.URL == "" {
		v.bad("nats.replicas", ": %d needs nats.url (a cluster of at least %d servers): the embedded server is one server", r, r)
	}
	if w := n.AckWait; w < 0 || w != 0 && (w.D() < 2*time.Second || w.D() > time.Hour) {
		v.bad("nats.ack_wait", ": %s is out of range (accepted: 2s to 1h; default 30s)", w)
	}
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

// validateNodeLimits checks nats.node_limits, with the defaults of the
// keys left unset.
func (n *NATS) validateNodeLimits(v *validator) {
	l, key := n.Limits(), "nats.node_limits."
	if l.MaxResultBytes < 64<<10 || l.MaxResultBytes > 32<<20 {
		v.bad(key+"max_result_bytes", ": %s is out of range (accepted: 64KiB to 32MiB; default 8MiB)", l.MaxResultBytes)
	}
	if l.MaxStreamBytes < 16<<20 || l.MaxStreamBytes > 1<<40 {
		v.bad(key+"max_stream_bytes", ": %s is out of range (accepted: 16MiB to 1TiB; default 64MiB)", l.MaxStreamBytes)
	} else if l.MaxStreamBytes < 2*l.MaxResultBytes {
		v.bad(key+"max_stream_bytes", ": %s holds fewer than two answers of max_result_bytes (%s): set it to at least %s", l.MaxStreamBytes, l.MaxResultBytes, 2*l.MaxResultBytes)
	}
	if m := l.MaxStreamMessages; m < 100 || m > 10_000_000 {
		v.bad(key+"max_stream_messages", ": %d is out of range (accepted: 100 to 10000000; default 10000)", m)
	}
	if c := l.MaxConnections; c < 1 || c > 1000 {
		v.bad(key+"max_connections", ": %d is out of range (accepted: 1 to 1000; default 4)", c)
	}
	if s := l.MaxSubscriptions; s < 16 || s > 100_000 {
		v.bad(key+"max_subscriptions", ": %d is out of range (accepted: 16 to 100000; default 100)", s)
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

// applyDefaults: none are stored; Limits, ListenAddress and Timeout give
// the defaults of the keys left unset.
func (n *NATS) applyDefaults(*Config) {}

// validate checks the transport of remote nodes: one server, its address,
// TLS off loopback, the call timeout and the node limits.
func (n *NATS) validate(_ *Config, v *validator) {
	if n.Embedded && n.URL != "" {
		v.badAt("nats.url", "nats", ": embedded is true and url is set: choose one (the embedded server, or an existing server at url)")
	}
	if t := n.CallTimeout; t < 0 || t.D() > 24*time.Hour || t != 0 && t.D() < time.Second {
		v.bad("nats.call_timeout", ": %s is out of range (accepted: 1s to 24h; default 10m)", t)
	}
	n.validateNodeLimits(v)
	n.validateCluster(v)
	if (n.CertFile == "") != (n.KeyFile == "") {
		v.bad("nats.cert_file", " and nats.key_file must be set together")
	}
	if n.Embedded {
		host, port, err := net.SplitHostPort(n.ListenAddress())
		switch {
		case err != nil || port == "":
			v.bad("nats.listen", ": %q is not host:port (for example 127.0.0.1:4222)", n.ListenAddress())
		case !IsLoopback(host) && (n.CertFile == "" || n.KeyFile == ""):
			v.bad("nats.listen", ": %s is not a loopback address, so nats.cert_file and nats.key_file must be set (nodes then connect with tls://); without TLS the embedded server only listens on 127.0.0.1", n.ListenAddress())
		}
	}
	if n.URL != "" {
		for _, u := range strings.Split(n.URL, ",") {
			u = strings.TrimSpace(u)
			if !strings.HasPrefix(u, "nats://") && !strings.HasPrefix(u, "tls://") {
				v.bad("nats.url", ": %q must start with nats:// or tls://", u)
			}
		}
	}
}

func (n *NATS) secretFiles() []secretFile {
	return []secretFile{{key: "nats.cert_file", path: n.CertFile}, {key: "nats.key_file", path: n.KeyFile}, {key: "nats.ca_file", path: n.CAFile}}
}

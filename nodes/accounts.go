package nodes

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"

	"github.com/a6afc2ce/hermes-hub/config"
)

// The embedded server's accounts. The hub's account holds JetStream: every
// stream, consumer and the status bucket. Each node has an account of its
// own, without JetStream, bounded in connections, subscriptions and
// payload; it imports from the hub's account exactly the subjects its
// permissions name, each exported to that node's account only. What a
// node publishes can therefore only land in its own streams, whose bytes,
// messages and message size are bounded (streamConfigs).
const (
	hubAccount = "HUB"
	// headerRoom is what a node's message may carry beyond its answer
	// (the message id header).
	headerRoom = 4 << 10
	// maxHeartbeatBytes bounds a value of the status bucket.
	maxHeartbeatBytes = 64 << 10
)

// jsAccountInfo is the JetStream API's account info. The server gives an
// account without JetStream its own JetStream API, which answers every
// request "not enabled" and would race the hub's answers to the imported
// requests, unless the account imports this subject from elsewhere: each
// node's account imports it from the hub's, and the node's permissions do
// not let it be sent.
const jsAccountInfo = "$JS.API.INFO"

func nodeAccount(node string) string { return "NODE_" + node }

// service is a subject of the hub's account a node's account imports;
// streamed when one request gets many replies (a pull of messages).
type service struct {
	subject  string
	streamed bool
}

// nodeServices are all a node may publish: consume its own queue (consumer
// info, pulls, acks, and a reset of its consumer after a reconnection),
// publish its results and its heartbeat.
func nodeServices(node string) []service {
	s := nodeStream(node)
	return []service{
		{subject: fmt.Sprintf("$JS.API.CONSUMER.INFO.%s.%s", s, workConsumer)},
		{subject: fmt.Sprintf("$JS.API.CONSUMER.MSG.NEXT.%s.%s", s, workConsumer), streamed: true},
		{subject: fmt.Sprintf("$JS.ACK.%s.%s.>", s, workConsumer)},
		{subject: fmt.Sprintf("$JS.API.CONSUMER.RESET.%s.%s", s, workConsumer)},
		{subject: resultSubject(node)},
		{subject: statusSubject(node)},
	}
}

// nodePayload is the largest message a node's account may publish.
func nodePayload(l config.NodeLimits) int { return int(l.MaxResultBytes) + headerRoom }

// serverPayload is the server's max_payload: the hub's requests (up to
// maxPayload) and the nodes' answers.
func serverPayload(l config.NodeLimits) int32 { return int32(max(maxPayload, nodePayload(l))) }

// The server's configuration format, written as JSON (which it reads).
type (
	confAllow struct {
		Allow []string `json:"allow"`
	}
	confPermissions struct {
		Publish   confAllow `json:"publish"`
		Subscribe confAllow `json:"subscribe"`
	}
	confUser struct {
		NKey        string          `json:"nkey"`
		Permissions confPermissions `json:"permissions"`
	}
	confLimits struct {
		MaxConnections   int `json:"max_connections"`
		MaxSubscriptions int `json:"max_subscriptions"`
		MaxPayload       int `json:"max_payload"`
	}
	// confJetStream is an account's JetStream and its limits.
	confJetStream struct {
		MaxMem       int64 `json:"max_mem"`
		MaxFile      int64 `json:"max_file"`
		MaxStreams   int   `json:"max_streams"`
		MaxConsumers int   `json:"max_consumers"`
	}
	confExport struct {
		Service      string   `json:"service"`
		Accounts     []string `json:"accounts"`
		ResponseType string   `json:"response_type,omitempty"`
	}
	confRef struct {
		Account string `json:"account"`
		Subject string `json:"subject"`
	}
	confImport struct {
		Service confRef `json:"service"`
	}
	confAccount struct {
		Users     []confUser     `json:"users"`
		JetStream *confJetStream `json:"jetstream,omitempty"`
		Limits    *confLimits    `json:"limits,omitempty"`
		Exports   []confExport   `json:"exports,omitempty"`
		Imports   []confImport   `json:"imports,omitempty"`
	}
)

func user(key string, pub, sub []string) confUser {
	return confUser{NKey: key, Permissions: confPermissions{Publish: confAllow{pub}, Subscribe: confAllow{sub}}}
}

// Accounts are what a NATS server must know of the hub and its nodes:
// the embedded server's accounts, and those `hub nats config` prints for
// each server of a cluster. The hub's key is in the hub's account, which
// holds JetStream within limits (jetStreamLimits); each node's key in an
// account of its own (nodeAccount).
type Accounts struct {
	// HubKey is the hub's public user nkey.
	HubKey string
	// Nodes maps each node's name to its public user nkey.
	Nodes    map[string]string
	Limits   config.NodeLimits
	Replicas int
}

func (a Accounts) names() []string {
	names := make([]string, 0, len(a.Nodes))
	for n := range a.Nodes {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// jetStreamLimits bound the hub's account: two streams and two consumers
// per node and the status bucket, their bytes counted once per replica
// (as the server counts an account's storage).
func (a Accounts) jetStreamLimits() *confJetStream {
	l, n := a.Limits.WithDefaults(), len(a.Nodes)
	perReplica := 2*int64(n)*int64(l.MaxStreamBytes) + statusBucketBytes(n)
	return &confJetStream{MaxMem: 0, MaxFile: int64(max(a.Replicas, 1)) * perReplica, MaxStreams: 2*n + 1, MaxConsumers: 2 * n}
}

// statusBucketBytes bounds the status bucket: one heartbeat per node,
// twice over for the value being replaced.
func statusBucketBytes(nodes int) int64 {
	return 2 * int64(max(nodes, 1)) * (maxHeartbeatBytes + 1<<10)
}

// config is the accounts section: the hub's account and one per node.
func (a Accounts) config() map[string]confAccount {
	l := a.Limits.WithDefaults()
	names := a.names()
	hpub, hsub := hubPermissions(names)
	hubAcc := confAccount{Users: []confUser{user(a.HubKey, hpub, hsub)}, JetStream: a.jetStreamLimits()}
	accounts := map[string]confAccount{}
	all := make([]string, 0, len(names))
	for _, n := range names {
		acc := nodeAccount(n)
		all = append(all, acc)
		pub, sub := nodePermissions(n)
		na := confAccount{Users: []confUser{user(a.Nodes[n], pub, sub)}, Limits: &confLimits{
			MaxConnections: l.MaxConnections, MaxSubscriptions: l.MaxSubscriptions, MaxPayload: nodePayload(l),
		}}
		for _, s := range nodeServices(n) {
			e := confExport{Service: s.subject, Accounts: []string{acc}}
			if s.streamed {
				e.ResponseType = "stream"
			}
			hubAcc.Exports = append(hubAcc.Exports, e)
		}
		for _, s := range append(nodeServices(n), service{subject: jsAccountInfo}) {
			na.Imports = append(na.Imports, confImport{Service: confRef{Account: hubAccount, Subject: s.subject}})
		}
		accounts[acc] = na
	}
	if len(all) > 0 {
		hubAcc.Exports = append(hubAcc.Exports, confExport{Service: jsAccountInfo, Accounts: all})
	}
	accounts[hubAccount] = hubAcc
	return accounts
}

// accountOptions are the embedded server's options with its accounts and
// users: the hub's key in the hub's account, each node's in its own.
func accountOptions(a Accounts) (*server.Options, error) {
	data, err := confValue(map[string]any{"accounts": a.config()}, "")
	if err != nil {
		return nil, fmt.Errorf("nats accounts: %w", err)
	}
	opts := &server.Options{}
	if err := opts.ProcessConfigString(data); err != nil {
		return nil, fmt.Errorf("nats accounts: %w", err)
	}
	return opts, nil
}

// confValue writes v as the server reads it: JSON, indented by indent
// when not empty. The server's parser knows no \u escapes: '>' stays as
// it is.
func confValue(v any, indent string) (string, error) {
	var data strings.Builder
	enc := json.NewEncoder(&data)
	enc.SetEscapeHTML(false)
	if indent != "" {
		enc.SetIndent("", indent)
	}
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return strings.TrimSuffix(data.String(), "\n"), nil
}

// Server is one server of a NATS cluster, for ServerConfig. Every field
// may be left empty: only what is set is written.
type Server struct {
	// Name is the server's name, unique in the cluster (JetStream needs
	// one).
	Name string
	// Listen is the clients' address (host:port).
	Listen string
	// StoreDir is the server's JetStream storage.
	StoreDir string
	// ClusterName names the cluster; ClusterListen is this server's
	// address for the others, Routes are theirs (nats://host:port).
	ClusterName, ClusterListen string
	Routes                     []string
	// CertFile and KeyFile turn TLS on for clients.
	CertFile, KeyFile string
	// RouteCertFile, RouteKeyFile and RouteCAFile turn TLS on between the
	// servers, both ways: each presents its certificate, and takes only
	// a server whose certificate RouteCAFile signed.
	RouteCertFile, RouteKeyFile, RouteCAFile string
}

// ServerConfig writes the configuration of a NATS server for the hub and
// its nodes: its largest message, the accounts, their users by nkey with
// their permissions, the hub account's JetStream limits and each node
// account's limits; and, where s sets them, the server's name, client
// address, JetStream storage, cluster and TLS. Every server of a cluster
// takes the same accounts.
func ServerConfig(w io.Writer, a Accounts, s Server) error {
	if !nkeys.IsValidPublicUserKey(a.HubKey) {
		return errors.New("nats config: the hub's key is not a public user nkey")
	}
	for _, n := range a.names() {
		if err := config.ValidNodeName(n); err != nil {
			return fmt.Errorf("nats config: %w", err)
		}
		if !nkeys.IsValidPublicUserKey(a.Nodes[n]) {
			return fmt.Errorf("nats config: nodes.%s.nkey is not a public user nkey", n)
		}
	}
	var lines []string
	add := func(key string, v any, indent string) error {
		text, err := confValue(v, indent)
		if err == nil {
			lines = append(lines, key+": "+text)
		}
		return err
	}
	set := func(key, v string) error {
		if v == "" {
			return nil
		}
		return add(key, v, "")
	}
	errs := []error{set("server_name", s.Name), set("listen", s.Listen)}
	errs = append(errs, add("max_payload", serverPayload(a.Limits.WithDefaults()), ""))
	if s.StoreDir != "" {
		errs = append(errs, add("jetstream", map[string]string{"store_dir": s.StoreDir}, ""))
	}
	if s.ClusterName != "" || s.ClusterListen != "" || len(s.Routes) > 0 {
		cluster := map[string]any{"name": s.ClusterName, "listen": s.ClusterListen, "routes": s.Routes}
		if s.RouteCertFile != "" {
			cluster["tls"] = map[string]any{"cert_file": s.RouteCertFile, "key_file": s.RouteKeyFile, "ca_file": s.RouteCAFile, "verify": true}
		}
		errs = append(errs, add("cluster", cluster, ""))
	}
	if s.CertFile != "" || s.KeyFile != "" {
		errs = append(errs, add("tls", map[string]string{"cert_file": s.CertFile, "key_file": s.KeyFile}, ""))
	}
	errs = append(errs, add("accounts", a.config(), "  "))
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("nats config: %w", err)
	}
	_, err := io.WriteString(w, strings.Join(lines, "\n")+"\n")
	return err
}

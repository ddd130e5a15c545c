package nodes

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/nats-io/nats-server/v2/server"

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
// info, pulls, acks), publish its results and its heartbeat.
func nodeServices(node string) []service {
	s := nodeStream(node)
	return []service{
		{subject: fmt.Sprintf("$JS.API.CONSUMER.INFO.%s.%s", s, workConsumer)},
		{subject: fmt.Sprintf("$JS.API.CONSUMER.MSG.NEXT.%s.%s", s, workConsumer), streamed: true},
		{subject: fmt.Sprintf("$JS.ACK.%s.%s.>", s, workConsumer)},
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
		Users     []confUser   `json:"users"`
		JetStream string       `json:"jetstream,omitempty"`
		Limits    *confLimits  `json:"limits,omitempty"`
		Exports   []confExport `json:"exports,omitempty"`
		Imports   []confImport `json:"imports,omitempty"`
	}
)

func user(key string, pub, sub []string) confUser {
	return confUser{NKey: key, Permissions: confPermissions{Publish: confAllow{pub}, Subscribe: confAllow{sub}}}
}

// accountOptions are the embedded server's options with its accounts and
// users: the hub's key in the hub's account, each node's in its own.
func accountOptions(hubKey string, nodes map[string]string, l config.NodeLimits) (*server.Options, error) {
	names := make([]string, 0, len(nodes))
	for n := range nodes {
		names = append(names, n)
	}
	sort.Strings(names)
	hpub, hsub := hubPermissions(names)
	hubAcc := confAccount{Users: []confUser{user(hubKey, hpub, hsub)}, JetStream: "enabled"}
	accounts := map[string]confAccount{}
	all := make([]string, 0, len(names))
	for _, n := range names {
		acc := nodeAccount(n)
		all = append(all, acc)
		pub, sub := nodePermissions(n)
		na := confAccount{Users: []confUser{user(nodes[n], pub, sub)}, Limits: &confLimits{
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
	// The server's parser knows no \u escapes: keep '>' as it is.
	var data strings.Builder
	enc := json.NewEncoder(&data)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(map[string]any{"accounts": accounts}); err != nil {
		return nil, fmt.Errorf("nats accounts: %w", err)
	}
	opts := &server.Options{}
	if err := opts.ProcessConfigString(data.String()); err != nil {
		return nil, fmt.Errorf("nats accounts: %w", err)
	}
	return opts, nil
}

package nodes

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/a6afc2ce/hermes-hub/config"
)

const (
	// legacyResultsStream is the one results stream of earlier versions,
	// removed at start (its subjects overlap the per-node streams').
	legacyResultsStream = "HUB_RESULTS"
	resultsConsumer     = "hub"
	workConsumer        = "work"
	statusBucket        = "hub_nodes"
	resultsPrefix       = "hub.results."
	// hubInbox prefixes the hub's reply inboxes.
	hubInbox = "_INBOX.hub"
)

func requestSubject(node string) string { return "hub.node." + node + ".req" }
func resultSubject(node string) string  { return resultsPrefix + node }
func nodeStream(node string) string     { return "HUB_NODE_" + node }
func resultsStream(node string) string  { return "HUB_RESULTS_" + node }
func statusSubject(node string) string  { return "$KV." + statusBucket + "." + node }
func inboxPrefix(node string) string    { return "_INBOX.node." + node }

// CallID is the message id of a call: the turn id and the call's index in
// the turn. JetStream deduplicates requests and results by it.
func CallID(turnID string, index int) string { return turnID + "#" + strconv.Itoa(index) }

// nodeOfResult returns the node a result subject belongs to.
func nodeOfResult(subject string) (string, bool) {
	n, ok := strings.CutPrefix(subject, resultsPrefix)
	return n, ok && config.ValidNodeName(n) == nil
}

// nodePermissions are a node's only rights: publish what its account
// imports (consume its own queue, ack its own messages, publish its own
// results and heartbeat) and read its inboxes.
func nodePermissions(node string) (pub, sub []string) {
	for _, s := range nodeServices(node) {
		pub = append(pub, s.subject)
	}
	return pub, []string{inboxPrefix(node) + ".>"}
}

// hubPermissions are the hub's own rights on the embedded server: the
// JetStream API (it creates the streams, consumers and the status bucket,
// and reads heartbeats through it), publishing requests to the nodes'
// queues, acking the results it consumes, and its inboxes. It cannot
// publish a result or a heartbeat: nothing on the wire speaks for a node
// but the node.
func hubPermissions(nodes []string) (pub, sub []string) {
	pub = []string{"$JS.API.>", requestSubject("*")}
	for _, n := range nodes {
		pub = append(pub, fmt.Sprintf("$JS.ACK.%s.%s.>", resultsStream(n), resultsConsumer))
	}
	return pub, []string{hubInbox + ".>"}
}

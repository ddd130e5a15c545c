// Package nodes is the NATS side of remote destinations: the hub's end
// (an embedded NATS server or a connection to an existing one, a
// JetStream work queue per node, a results stream, a key-value bucket of
// heartbeats, nkey identities with per-node subject permissions) and the
// node's end (`hub node`: consume its own queue, run each call at most
// once under its own ledger, publish the outcome, heartbeat).
//
// Subjects, per node NAME:
//
//	hub.node.NAME.req      requests, stream HUB_NODE_NAME (work queue), consumer "work"
//	hub.results.NAME       results, stream HUB_RESULTS_NAME, consumer "hub"
//	$KV.hub_nodes.NAME     heartbeats, bucket hub_nodes (TTL)
//	_INBOX.node.NAME.>     the node's reply inboxes
//
// A node's user may publish and subscribe to nothing else, so it cannot
// read another node's requests, answer as another node or reach the hub's
// state. On the embedded server each node's user is in an account of its
// own, bounded in connections, subscriptions and payload, importing only
// those subjects from the hub's account (accounts.go); its streams are
// bounded in bytes and messages. The hub trusts the subject a result
// arrives on (the server enforces it), not the node name written in the
// result, and reads nothing of an answer over the result limit.
package nodes

package hub

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/executor"
)

// Mirror and reply meta keys of a call a remote node answered.
const (
	MetaNode        = "node"
	MetaNodeVersion = "node_version"
)

// Remote runs calls on remote nodes: the destination kind remote of named
// workspaces. The hub imports no transport; cmd/hub adapts package nodes
// (NATS) to it.
type Remote interface {
	// Call sends c to node and waits for its answer, at most the
	// transport's call timeout (and c.Timeout when set). The answer's
	// outcome is decoded with the hub's registry, exactly as a local
	// call's. An error means no answer: its message says why for people
	// (the node offline, the wait ended).
	Call(ctx context.Context, node string, c RemoteCall) (RemoteAnswer, error)
	// Nodes reports the liveness of every configured node, by name.
	Nodes(ctx context.Context) ([]NodeStatus, error)
}

// RemoteCall is one envelope for a node, with the turn it belongs to.
type RemoteCall struct {
	TurnID string
	// Index numbers the calls of a turn; with TurnID it is the call's
	// message id, which the transport deduplicates.
	Index int
	// Workspace is the node's workspace ("" for its default).
	Workspace string
	Identity  string
	Session   string
	Envelope  executor.Envelope
	// Timeout bounds the call below the transport's call timeout (the
	// configured verb timeout); 0 for the call timeout alone.
	Timeout time.Duration
}

// RemoteAnswer is a node's answer.
type RemoteAnswer struct {
	Outcome *executor.Outcome
	// Node is the node that answered (as the transport authenticated it),
	// NodeVersion its version, checked and bounded by the transport: both
	// become mirror and reply meta.
	Node, NodeVersion string
}

// NodeStatus is what the hub knows of a node's liveness.
type NodeStatus struct {
	Name       string
	Online     bool
	Version    string
	LastSeen   time.Time // zero: never seen within the heartbeat TTL
	Workspaces []string
	Load       [3]float64
	Running    int
}

// answeredBy names the node that answered a call ("" for a local call).
type answeredBy struct{ node, version string }

// meta adds the node that answered to m (a reply's or a mirror record's
// meta).
func (a answeredBy) meta(m map[string]string) map[string]string {
	if a.node == "" {
		return m
	}
	if m == nil {
		m = map[string]string{}
	}
	m[MetaNode], m[MetaNodeVersion] = a.node, a.version
	return m
}

// remoteDestination returns the destination of workspace when its calls
// go to a node.
func (h *Hub) remoteDestination(workspace string) (config.Destination, bool) {
	p := h.ws.Load()
	if p == nil || workspace == "" {
		return config.Destination{}, false
	}
	wc, ok := p.Workspace(workspace)
	if !ok || !wc.IsRemote() {
		return config.Destination{}, false
	}
	return wc.Destination, true
}

// callRemote sends a call for a remote workspace to its node; the outcome
// stands for the local executor's. A call without an answer is a failed
// outcome that says why.
//
// The outcome's verb is verb, the registered name of the verb sent ("" for
// a verb the hub does not know, as locally), never the node's claim: it
// becomes a metrics label and mirror meta.
func (h *Hub) callRemote(ctx context.Context, call executor.Call, d config.Destination, env executor.Envelope, verb string) (*executor.Outcome, answeredBy) {
	if h.opts.Remote == nil {
		return &executor.Outcome{Verb: verb, ID: env.ID, Err: executor.Errorf(executor.CodeInternal,
			"Workspace %s runs on node %s, but this hub has no connection to its nodes (nats: is not configured)", call.Workspace, d.Node)}, answeredBy{}
	}
	env.Workspace = "" // the hub's name for it; the node's is d.Workspace
	start := h.opts.Clock.Now()
	ans, err := h.opts.Remote.Call(ctx, d.Node, RemoteCall{
		TurnID: call.TurnID, Workspace: d.Workspace, Identity: call.Identity, Session: call.Session,
		Envelope: env, Timeout: h.opts.VerbTimeout,
	})
	if err != nil {
		code := executor.CodeTimeout
		msg := upperFirst(err.Error())
		switch {
		case errors.Is(err, context.Canceled):
			code = executor.CodeCanceled
			msg = fmt.Sprintf("The wait for node %s was stopped (%v); the call may still run there", d.Node, context.Cause(ctx))
		case errors.Is(err, context.DeadlineExceeded):
			msg = fmt.Sprintf("Node %s did not answer in time; the call may still run there", d.Node)
		}
		h.log.Warn("remote call without an answer", "turn", call.TurnID, "node", d.Node, "err", err.Error())
		return &executor.Outcome{Verb: verb, ID: env.ID, Err: executor.Errorf(code, "%s", msg), Duration: h.opts.Clock.Now().Sub(start)}, answeredBy{}
	}
	out := ans.Outcome
	out.ID, out.Verb = env.ID, verb
	return out, answeredBy{node: ans.Node, version: ans.NodeVersion}
}

// liveness says whether a remote workspace's node is online, for /where
// and /use ("" for a workspace that runs here).
func (h *Hub) liveness(workspace string) string {
	d, ok := h.remoteDestination(workspace)
	if !ok || h.opts.Remote == nil {
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	list, err := h.opts.Remote.Nodes(ctx)
	if err != nil {
		return "; node liveness unknown: " + err.Error()
	}
	for _, s := range list {
		if s.Name == d.Node {
			if s.Online {
				return "; node " + d.Node + " is online"
			}
			return "; node " + d.Node + " is offline: calls wait for it, then fail"
		}
	}
	return "; node " + d.Node + " is unknown to the transport"
}

// nodes answers /nodes: every node's liveness, for roles that name
// admin.read.
func (h *Hub) nodes(ids []string, d *decision) string {
	if !d.acc.permits(d.standing, executor.Info{Name: config.AdminRead}) {
		return fmt.Sprintf("⚠ You may not run /nodes (forbidden): it needs a role with %s. Your roles: %s. %s", config.AdminRead, rolesText(d.roles), h.opts.Access.ForbiddenHint(ids[0], config.AdminRead))
	}
	if h.opts.Remote == nil {
		return "This hub has no remote nodes (nats: is not configured; see docs/nodes.md)."
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	list, err := h.opts.Remote.Nodes(ctx)
	if err != nil {
		return "⚠ The nodes' liveness cannot be read: " + err.Error()
	}
	if len(list) == 0 {
		return "No nodes configured. Add one with hub node init --name NAME --seed FILE (docs/nodes.md)."
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Nodes (%d):\n", len(list))
	now := h.opts.Clock.Now()
	for _, s := range list {
		if !s.Online {
			fmt.Fprintf(&b, "%s: offline\n", s.Name)
			continue
		}
		ws := strings.Join(s.Workspaces, ", ")
		if ws == "" {
			ws = "none"
		}
		fmt.Fprintf(&b, "%s: online, version %s, last seen %s ago, workspaces %s, load %.2f %.2f %.2f, %d running\n",
			s.Name, s.Version, max(0, now.Sub(s.LastSeen)).Round(time.Second), ws, s.Load[0], s.Load[1], s.Load[2], s.Running)
	}
	return strings.TrimRight(b.String(), "\n")
}

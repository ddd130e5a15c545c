package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/hub"
	"github.com/a6afc2ce/hermes-hub/nodes"
)

// remoteNodes adapts the nodes' transport to the hub's Remote: the hub
// imports no NATS, and decodes a node's answer with its own registry so it
// renders exactly as a local call's.
type remoteNodes struct {
	nodes *nodes.Hub
	reg   *executor.Registry
}

var _ hub.Remote = remoteNodes{}

func (r remoteNodes) Call(ctx context.Context, node string, c hub.RemoteCall) (hub.RemoteAnswer, error) {
	env, err := json.Marshal(c.Envelope)
	if err != nil {
		return hub.RemoteAnswer{}, fmt.Errorf("encode the envelope for node %s: %w", node, err)
	}
	resp, err := r.nodes.Call(ctx, node, nodes.Request{
		TurnID: c.TurnID, CallIndex: c.Index, Workspace: c.Workspace, Identity: c.Identity,
		Session: c.Session, Envelope: env, Timeout: c.Timeout,
	})
	if err != nil {
		return hub.RemoteAnswer{}, err
	}
	return hub.RemoteAnswer{Outcome: resp.Outcome(r.reg, c.Envelope.Verb, c.Envelope.Arguments), Node: resp.Node, NodeVersion: resp.NodeVersion}, nil
}

func (r remoteNodes) Nodes(ctx context.Context) ([]hub.NodeStatus, error) {
	list, err := r.nodes.List(ctx)
	if err != nil {
		return nil, err
	}
	return nodeStatuses(list), nil
}

func nodeStatuses(list []nodes.NodeStatus) []hub.NodeStatus {
	out := make([]hub.NodeStatus, 0, len(list))
	for _, s := range list {
		st := hub.NodeStatus{Name: s.Name, Online: s.Online}
		if hb := s.Heartbeat; hb != nil {
			st.Version, st.LastSeen, st.Workspaces, st.Load, st.Running = hb.Version, hb.LastSeen, hb.Workspaces, hb.Load, hb.Running
		}
		out = append(out, st)
	}
	return out
}

// dialNodes connects to the hub's NATS with the hub's key, as `hub nodes
// list` and `hub workspaces show` read the nodes' liveness.
func dialNodes(cfg *config.Config) (func(ctx context.Context) ([]nodes.NodeStatus, error), func(), error) {
	if !cfg.NATS.Enabled() {
		return nil, nil, fmt.Errorf("nats is not configured: set nats.embedded: true (see docs/nodes.md)")
	}
	url, ca := cfg.NATS.URL, cfg.NATS.CAFile
	if cfg.NATS.Embedded {
		scheme := "nats"
		if cfg.NATS.CertFile != "" {
			scheme, ca = "tls", cfg.NATS.CertFile
		}
		url = scheme + "://" + cfg.NATS.ListenAddress()
	}
	nc, err := nodes.DialHub(url, cfg.StateDir, ca)
	if err != nil {
		return nil, nil, err
	}
	names := make([]string, 0, len(cfg.Nodes))
	for n := range cfg.Nodes {
		names = append(names, n)
	}
	list := func(ctx context.Context) ([]nodes.NodeStatus, error) { return nodes.ListStatus(ctx, nc, names) }
	return list, nc.Close, nil
}

// nodeLiveness is the node of a remote workspace as `hub workspaces show`
// reports it (the "node" object of --json).
type nodeLiveness struct {
	Name     string    `json:"name"`
	Online   bool      `json:"online"`
	Version  string    `json:"version,omitempty"`
	LastSeen time.Time `json:"last_seen,omitzero"`
	// Unknown says why the liveness could not be read (then Online is
	// false: the hub cannot tell).
	Unknown string `json:"unknown,omitempty"`
}

func (l *nodeLiveness) String() string {
	switch {
	case l.Unknown != "":
		return fmt.Sprintf("node %s: liveness unknown (%s)", l.Name, l.Unknown)
	case l.Online:
		return fmt.Sprintf("node %s is online (version %s, last seen %s)", l.Name, l.Version, l.LastSeen.UTC().Format(time.RFC3339))
	}
	return fmt.Sprintf("node %s is offline: calls wait for it (nats.call_timeout), then fail", l.Name)
}

// remoteNode reads the liveness of a remote workspace's node through the
// hub's NATS (nil for a workspace that runs here).
func remoteNode(cfg *config.Config, workspace string) *nodeLiveness {
	wc, ok := cfg.WorkspaceByName(workspace)
	if !ok || !wc.IsRemote() {
		return nil
	}
	l := &nodeLiveness{Name: wc.Destination.Node}
	list, closeConn, err := dialNodes(cfg)
	if err != nil {
		l.Unknown = err.Error()
		return l
	}
	defer closeConn()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := list(ctx)
	if err != nil {
		l.Unknown = err.Error()
		return l
	}
	for _, s := range st {
		if s.Name == l.Name && s.Online && s.Heartbeat != nil {
			l.Online, l.Version, l.LastSeen = true, s.Heartbeat.Version, s.Heartbeat.LastSeen
		}
	}
	return l
}

// remoteLiveness says whether the node of a remote workspace is online,
// for `hub workspaces show` and `hub doctor` ("" for other workspaces).
func remoteLiveness(cfg *config.Config, workspace string) string {
	if l := remoteNode(cfg, workspace); l != nil {
		return l.String()
	}
	return ""
}

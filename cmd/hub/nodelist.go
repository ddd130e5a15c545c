package main

import (
	"context"

	"github.com/a6afc2ce/hermes-hub/admin"
	"github.com/a6afc2ce/hermes-hub/nodes"
)

// nodeLister lists the remote nodes for the admin API (GET /api/nodes, the
// panel's Nodes view).
type nodeLister struct{ h *nodes.Hub }

func (l nodeLister) List(ctx context.Context) ([]admin.NodeStatus, error) {
	list, err := l.h.List(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]admin.NodeStatus, 0, len(list))
	for _, n := range list {
		s := admin.NodeStatus{Name: n.Name, Online: n.Online}
		if hb := n.Heartbeat; hb != nil {
			s.Version, s.Started, s.LastSeen = hb.Version, hb.Started, hb.LastSeen
			s.Workspaces, s.Load, s.Running = hb.Workspaces, hb.Load, hb.Running
		}
		out = append(out, s)
	}
	return out, nil
}

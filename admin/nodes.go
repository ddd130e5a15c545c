package admin

import (
	"context"
	"net/http"
	"time"

	"github.com/a6afc2ce/hermes-hub/config"
)

// NodeStatus is one remote node as GET /api/nodes lists it.
type NodeStatus struct {
	Name string `json:"name"`
	// Online: its heartbeat is fresh (and, with the embedded NATS server,
	// it is connected).
	Online bool `json:"online"`
	// The rest comes from its last heartbeat; zero when it never sent one.
	Version    string     `json:"version,omitempty"`
	Started    time.Time  `json:"started,omitzero"`
	LastSeen   time.Time  `json:"last_seen,omitzero"`
	Workspaces []string   `json:"workspaces"`
	Load       [3]float64 `json:"load"`
	Running    int        `json:"running"`
}

// NodeLister lists the configured remote nodes (the nodes hub of `hub
// serve`, when NATS is configured).
type NodeLister interface {
	List(ctx context.Context) ([]NodeStatus, error)
}

// NodesView is GET /api/nodes. Configured is false when the hub has no
// remote nodes (no nats: section); Nodes is then empty.
type NodesView struct {
	Configured bool         `json:"configured"`
	Nodes      []NodeStatus `json:"nodes"`
	Note       string       `json:"note,omitempty"`
}

// nodesTimeout bounds one listing: it reads the liveness bucket.
const nodesTimeout = 10 * time.Second

func (a *API) nodeRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/nodes", a.need(config.AdminRead, a.listNodes))
}

func (a *API) listNodes(w http.ResponseWriter, r *http.Request) {
	if a.Nodes == nil {
		WriteJSON(w, http.StatusOK, NodesView{Nodes: []NodeStatus{}, Note: "remote nodes are not configured (see docs/nodes.md: a nats: section and nodes:)"})
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), nodesTimeout)
	defer cancel()
	list, err := a.Nodes.List(ctx)
	if err != nil {
		WriteError(w, http.StatusServiceUnavailable, "list remote nodes: %v", err)
		return
	}
	v := NodesView{Configured: true, Nodes: make([]NodeStatus, 0, len(list))}
	for _, n := range list {
		if n.Workspaces == nil {
			n.Workspaces = []string{}
		}
		v.Nodes = append(v.Nodes, n)
	}
	WriteJSON(w, http.StatusOK, v)
}

package admin_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/admin"
	"github.com/a6afc2ce/hermes-hub/config"
)

type fakeNodes struct {
	list []admin.NodeStatus
	err  error
}

func (f fakeNodes) List(context.Context) ([]admin.NodeStatus, error) { return f.list, f.err }

// TestNodesEndpoint: GET /api/nodes says when remote nodes are not
// configured, lists them when they are, reports a listing that failed, and
// needs admin.read.
func TestNodesEndpoint(t *testing.T) {
	seen := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	cases := []struct {
		name       string
		nodes      admin.NodeLister
		perm       bool
		status     int
		configured bool
		names      []string
	}{
		{"not configured", nil, true, http.StatusOK, false, nil},
		{"listed", fakeNodes{list: []admin.NodeStatus{
			{Name: "db-1", Online: true, Version: "1.2.0", LastSeen: seen, Workspaces: []string{"logs"}, Load: [3]float64{0.5, 0.25, 0.1}},
			{Name: "build-2"},
		}}, true, http.StatusOK, true, []string{"db-1", "build-2"}},
		{"listing failed", fakeNodes{err: errors.New("nats: no responders")}, true, http.StatusServiceUnavailable, false, nil},
		{"no permission", fakeNodes{}, false, http.StatusForbidden, false, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			api := &admin.API{Nodes: c.nodes, Allowed: func(id, perm string) bool { return c.perm && perm == config.AdminRead }}
			w := serve(api.HandlerAs("web"), "GET", "/api/nodes", "")
			if w.Code != c.status {
				t.Fatalf("status %d, want %d: %s", w.Code, c.status, w.Body)
			}
			if c.status != http.StatusOK {
				var e admin.APIError
				if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil || e.Error == "" {
					t.Fatalf("error body %s", w.Body)
				}
				if c.perm && !strings.Contains(e.Error, "no responders") {
					t.Fatalf("error %q does not say why", e.Error)
				}
				return
			}
			var v admin.NodesView
			if err := json.Unmarshal(w.Body.Bytes(), &v); err != nil {
				t.Fatal(err)
			}
			if v.Configured != c.configured || len(v.Nodes) != len(c.names) {
				t.Fatalf("view %+v", v)
			}
			if !c.configured && !strings.Contains(v.Note, "not configured") {
				t.Fatalf("note %q", v.Note)
			}
			for i, n := range v.Nodes {
				if n.Name != c.names[i] || n.Workspaces == nil {
					t.Fatalf("node %d: %+v", i, n)
				}
			}
			if c.configured && (!v.Nodes[0].Online || !v.Nodes[0].LastSeen.Equal(seen) || v.Nodes[0].Load[0] != 0.5 || v.Nodes[1].Online) {
				t.Fatalf("nodes %+v", v.Nodes)
			}
		})
	}
}

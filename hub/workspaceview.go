package hub

import (
	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/workspaces/policy"
)

// WorkspaceOption is one workspace a caller may choose with /use.
type WorkspaceOption struct {
	Name        string `json:"name"`
	Destination string `json:"destination"`
}

// WorkspaceView is where a conversation works and what its caller may
// choose: what /where and /use answer, as data for the web panel.
type WorkspaceView struct {
	// Current is the effective workspace; Error says why none can be
	// resolved (then Current is empty).
	Current policy.Resolution `json:"current"`
	Error   string            `json:"error,omitempty"`
	// Chosen is the conversation's own /use choice ("" when the
	// configuration decides).
	Chosen string `json:"chosen"`
	// Usable lists the workspaces the caller's roles may use.
	Usable []WorkspaceOption `json:"usable"`
}

// WorkspacesFor resolves the workspace of the conversation key for the
// identities (a caller and its roles' holders) with the access policy and
// workspace choices of now, as /where and /use would.
func (h *Hub) WorkspacesFor(key chat.Key, ids []string) WorkspaceView {
	roles := h.opts.Access.Current().RolesOf(ids)
	conv := key.String()
	v := WorkspaceView{Usable: []WorkspaceOption{}}
	if len(roles) == 0 {
		v.Error = "no role of yours grants any workspace"
		return v
	}
	cur, err := h.WhereFor(conv, roles)
	if err != nil {
		v.Error = err.Error()
	} else {
		v.Current = cur
	}
	if c, err := h.chosenWorkspace(conv); err == nil {
		v.Chosen = c
	}
	names := []string{policy.Default}
	if p := h.ws.Load(); p != nil {
		names = p.Usable(roles)
	}
	for _, n := range names {
		v.Usable = append(v.Usable, WorkspaceOption{Name: n, Destination: h.describe(n)})
	}
	return v
}

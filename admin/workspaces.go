package admin

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/workspaces/policy"
)

// WorkspaceAdmin is what the workspace endpoints need of the hub's named
// workspaces (cmd/hub adapts the open workspaces and the hub's resolution
// to it): the list with each destination's containers, the resolution of
// a chat, and the removal of sandboxes.
type WorkspaceAdmin interface {
	// Workspaces lists every workspace, default first.
	Workspaces(ctx context.Context) []WorkspaceView
	// Effective resolves the workspace of the conversation key as the
	// hub does for a turn without a choice of its own (its /use choice,
	// by_chat, default; by_role depends on who speaks and is not applied).
	Effective(key string) (policy.Resolution, error)
	// Reset removes the sandboxes of the workspace name (of one session
	// when session is not ""). Errors wrap ErrUnknownWorkspace or
	// ErrNoSandbox when that is why.
	Reset(ctx context.Context, name, session string) error
}

// Why a reset is refused (wrapped by WorkspaceAdmin.Reset's errors).
var (
	ErrUnknownWorkspace = errors.New("no such workspace")
	ErrNoSandbox        = errors.New("the workspace has no sandbox to remove")
)

// WorkspaceView is one workspace of GET /api/workspaces.
type WorkspaceView struct {
	Name        string   `json:"name"`
	Path        string   `json:"path"`
	Kind        string   `json:"kind"`
	Destination string   `json:"destination"`
	Roles       []string `json:"roles"`
	// Containers are a docker destination's containers (absent for
	// local); ContainersError says why they could not be listed.
	Containers      []ContainerView `json:"containers,omitempty"`
	ContainersError string          `json:"containers_error,omitempty"`
}

// ContainerView is one container of a workspace.
type ContainerView struct {
	ID      string    `json:"id"`
	Session string    `json:"session"` // "" for the workspace's own
	State   string    `json:"state"`
	Created time.Time `json:"created"`
	// LastUsed is zero when the hub has not used it since it started.
	LastUsed time.Time `json:"last_used,omitzero"`
}

// WorkspacesView is GET /api/workspaces.
type WorkspacesView struct {
	Workspaces []WorkspaceView `json:"workspaces"`
}

// EffectiveView is GET /api/workspaces/effective.
type EffectiveView struct {
	Chat string `json:"chat"`
	policy.Resolution
	// Note says what the resolution leaves out.
	Note string `json:"note"`
}

// ResetView is POST /api/workspaces/{name}/reset.
type ResetView struct {
	Workspace string `json:"workspace"`
	Session   string `json:"session,omitempty"`
	Removed   string `json:"removed"`
}

// maxSessionParam bounds the session of a reset (a chat key or an agent's
// session id).
const maxSessionParam = 256

// workspaceRoutes mounts the workspace endpoints: reading behind
// admin.read, resetting behind admin.workspaces.
func (a *API) workspaceRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/workspaces", a.need(config.AdminRead, a.listWorkspaces))
	mux.HandleFunc("GET /api/workspaces/effective", a.need(config.AdminRead, a.effectiveWorkspace))
	mux.HandleFunc("POST /api/workspaces/{name}/reset", a.need(config.AdminWorkspaces, a.resetWorkspace))
}

func (a *API) workspacesOff(w http.ResponseWriter) bool {
	if a.Workspaces == nil {
		WriteError(w, http.StatusServiceUnavailable, "the workspaces are unavailable here: they are served by a running hub (`hub workspaces` reads the configuration without one)")
		return true
	}
	return false
}

func (a *API) listWorkspaces(w http.ResponseWriter, r *http.Request) {
	if a.workspacesOff(w) {
		return
	}
	ws := a.Workspaces.Workspaces(r.Context())
	if ws == nil {
		ws = []WorkspaceView{}
	}
	WriteJSON(w, http.StatusOK, WorkspacesView{Workspaces: ws})
}

func (a *API) effectiveWorkspace(w http.ResponseWriter, r *http.Request) {
	if a.workspacesOff(w) {
		return
	}
	key := r.URL.Query().Get("chat")
	if key == "" {
		key = string(chat.Web)
	}
	if _, err := chat.ParseKey(key); err != nil {
		WriteError(w, http.StatusBadRequest, "chat %q is not a chat key: %v (accepted: web, chat:PLATFORM:ID[:THREAD], dm:PLATFORM:ID)", key, err)
		return
	}
	res, err := a.Workspaces.Effective(key)
	if err != nil {
		WriteError(w, http.StatusConflict, "%v", err)
		return
	}
	WriteJSON(w, http.StatusOK, EffectiveView{Chat: key, Resolution: res,
		Note: "workspaces.by_role is not applied: it depends on who speaks"})
}

func (a *API) resetWorkspace(w http.ResponseWriter, r *http.Request) {
	if a.workspacesOff(w) {
		return
	}
	name := r.PathValue("name")
	if config.ValidWorkspaceName(name) != nil {
		WriteError(w, http.StatusBadRequest, "%q is not a workspace name (1 to 32 lower-case letters, digits, '-' and '_', starting with a letter)", name)
		return
	}
	session := r.URL.Query().Get("session")
	if len(session) > maxSessionParam {
		WriteError(w, http.StatusBadRequest, "session is over %d bytes", maxSessionParam)
		return
	}
	for i := 0; i < len(session); i++ {
		if session[i] <= 0x20 || session[i] >= 0x7f {
			WriteError(w, http.StatusBadRequest, "session %q is not a session id (printable ASCII without spaces, such as chat:telegram:-100:5)", session)
			return
		}
	}
	err := a.Workspaces.Reset(r.Context(), name, session)
	switch {
	case errors.Is(err, ErrUnknownWorkspace):
		WriteError(w, http.StatusNotFound, "%v", err)
		return
	case errors.Is(err, ErrNoSandbox):
		WriteError(w, http.StatusConflict, "%v", err)
		return
	case err != nil:
		WriteError(w, http.StatusBadGateway, "%v", err)
		return
	}
	v := ResetView{Workspace: name, Session: session, Removed: "every sandbox"}
	if session != "" {
		v.Removed = "the sandbox of session " + session
	}
	WriteJSON(w, http.StatusOK, v)
}

package admin

import (
	"context"
	"errors"
	"net/http"

	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/hub"
	"github.com/a6afc2ce/hermes-hub/store"
)

// AccessAdmin manages the grants kept in the state: pairing approvals,
// revocations and the list (*hub.Hub).
type AccessAdmin interface {
	Approve(ctx context.Context, code, role, by string) (store.Grant, error)
	Revoke(ctx context.Context, identity, by string) ([]store.Grant, error)
	AccessList() (hub.AccessList, error)
}

var _ AccessAdmin = (*hub.Hub)(nil)

// accessRoutes mounts the access endpoints (admin.access) and the reload
// (the operator only: the admin socket).
func (a *API) accessRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/access", a.need(config.AdminAccess, a.listAccess))
	mux.HandleFunc("POST /api/access/approve", a.need(config.AdminAccess, a.approve))
	mux.HandleFunc("POST /api/access/revoke", a.need(config.AdminAccess, a.revoke))
	mux.HandleFunc("POST /api/reload", a.operatorOnly(a.reload))
}

// operatorOnly serves h to the operator (the admin socket's caller) only:
// no role grants it.
func (a *API) operatorOnly(h http.HandlerFunc) http.HandlerFunc {
	return operatorOnly("`hub reload` on the hub's machine, as its user, or SIGHUP to `hub serve`", h)
}

// operatorOnly serves h to the operator only; the refusal says how the
// operator does it (how).
func operatorOnly(how string, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if IdentityOf(r.Context()) == Operator {
			h(w, r)
			return
		}
		WriteError(w, http.StatusForbidden, "only the operator may do this, through the admin socket (%s)", how)
	}
}

func (a *API) listAccess(w http.ResponseWriter, r *http.Request) {
	if a.AccessAdmin == nil {
		WriteError(w, http.StatusServiceUnavailable, "access management is unavailable")
		return
	}
	l, err := a.AccessAdmin.AccessList()
	if err != nil {
		WriteError(w, http.StatusInternalServerError, "%v", err)
		return
	}
	WriteJSON(w, http.StatusOK, l)
}

// ApproveRequest is POST /api/access/approve: a pairing code and the role
// to grant.
type ApproveRequest struct {
	Code string `json:"code"`
	Role string `json:"role"`
}

// ApproveResult is the grant made.
type ApproveResult struct {
	Grant store.Grant `json:"grant"`
	Note  string      `json:"note,omitempty"`
}

func (a *API) approve(w http.ResponseWriter, r *http.Request) {
	var req ApproveRequest
	if !a.readBody(w, r, &req) {
		return
	}
	if a.AccessAdmin == nil {
		WriteError(w, http.StatusServiceUnavailable, "access management is unavailable")
		return
	}
	g, err := a.AccessAdmin.Approve(r.Context(), req.Code, req.Role, IdentityOf(r.Context()))
	if err != nil {
		WriteError(w, http.StatusBadRequest, "%v", err)
		return
	}
	res := ApproveResult{Grant: g}
	if !a.running() {
		res.Note = "recorded in the state; it applies when `hub serve` runs"
	}
	WriteJSON(w, http.StatusOK, res)
}

// RevokeRequest is POST /api/access/revoke.
type RevokeRequest struct {
	Identity string `json:"identity"`
}

// RevokeResult lists the grants removed.
type RevokeResult struct {
	Identity string        `json:"identity"`
	Removed  []store.Grant `json:"removed"`
}

func (a *API) revoke(w http.ResponseWriter, r *http.Request) {
	var req RevokeRequest
	if !a.readBody(w, r, &req) {
		return
	}
	if a.AccessAdmin == nil {
		WriteError(w, http.StatusServiceUnavailable, "access management is unavailable")
		return
	}
	gone, err := a.AccessAdmin.Revoke(r.Context(), req.Identity, IdentityOf(r.Context()))
	switch {
	case errors.Is(err, hub.ErrConfigGrant):
		WriteError(w, http.StatusConflict, "%v", err)
		return
	case err != nil:
		WriteError(w, http.StatusBadRequest, "%v", err)
		return
	}
	if gone == nil {
		gone = []store.Grant{}
	}
	WriteJSON(w, http.StatusOK, RevokeResult{Identity: req.Identity, Removed: gone})
}

func (a *API) reload(w http.ResponseWriter, r *http.Request) {
	if a.Reload == nil || !a.running() {
		WriteError(w, http.StatusConflict, "%v", hub.ErrNoReload)
		return
	}
	rep, err := a.Reload()
	if errors.Is(err, hub.ErrNoReload) {
		WriteError(w, http.StatusConflict, "%v", err)
		return
	}
	if err != nil {
		WriteError(w, http.StatusUnprocessableEntity, "%v", err)
		return
	}
	WriteJSON(w, http.StatusOK, rep)
}

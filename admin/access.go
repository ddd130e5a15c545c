package admin

import (
	"context"
	"fmt"
	"net/http"
	"strconv"

	"github.com/a6afc2ce/hermes-hub/config"
)

// Operator is the identity of the admin socket's caller: the hub's own user
// on the machine (the socket is owner-only and checks its peer's uid), who
// may do everything.
const Operator = "operator"

type identityKey struct{}

// WithIdentity returns ctx carrying the identity of an admin API caller.
// The code that mounts the API sets it on every request: the web listener
// its identity ("web"), the admin socket Operator.
func WithIdentity(ctx context.Context, identity string) context.Context {
	return context.WithValue(ctx, identityKey{}, identity)
}

// IdentityOf returns the caller's identity set by WithIdentity, or "".
func IdentityOf(ctx context.Context) string {
	id, _ := ctx.Value(identityKey{}).(string)
	return id
}

// HandlerAs serves the admin API to callers of one identity.
func (a *API) HandlerAs(identity string) http.Handler {
	h := a.Handler()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(WithIdentity(r.Context(), identity)))
	})
}

// permitted reports whether the caller of r holds perm: the operator holds
// every permission; any other identity what API.Allowed grants it; a
// request without an identity none.
func (a *API) permitted(r *http.Request, perm string) bool {
	id := IdentityOf(r.Context())
	switch {
	case id == Operator:
		return true
	case id == "" || a.Allowed == nil:
		return false
	}
	return a.Allowed(id, perm)
}

// permissionUse says, in an error, what a permission allows.
var permissionUse = map[string]string{
	config.AdminRead:       "read the mirrors, the outbox, the delivery targets, the channel directory and the schedules",
	config.AdminTargets:    "change the delivery targets",
	config.AdminDeliver:    "deliver text to the delivery targets",
	config.AdminOutbox:     "retry or purge outbox entries",
	config.AdminChannels:   "rebuild the channel directory",
	config.AdminAccess:     "list, approve or revoke access grants",
	config.AdminWorkspaces: "reset workspaces' sandboxes",
	config.AdminCancel:     "cancel someone else's call",
	config.AdminSchedules:  "run a schedule now",
}

// need serves h only to callers holding perm; others get 403 naming it.
func (a *API) need(perm string, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if a.permitted(r, perm) {
			h(w, r)
			return
		}
		id := IdentityOf(r.Context())
		if id == "" {
			id = "unknown"
		}
		hint := fmt.Sprintf("(add %s to a role's verbs under access.roles and grant that role to %s under access.grants)", perm, id)
		if a.ForbiddenHint != nil && id != "unknown" {
			hint = a.ForbiddenHint(id, perm)
		}
		WriteError(w, http.StatusForbidden, "the %s identity may not %s: none of its roles grants %s. %s", id, permissionUse[perm], perm, hint)
	}
}

// WhoAmI is GET /api/whoami: the caller's identity and the admin
// permissions it holds, so a client (the panel) offers only what it may do.
type WhoAmI struct {
	Identity    string   `json:"identity"`
	Permissions []string `json:"permissions"`
}

func (a *API) whoami(w http.ResponseWriter, r *http.Request) {
	v := WhoAmI{Identity: IdentityOf(r.Context()), Permissions: []string{}}
	for _, p := range config.AdminPermissions {
		if a.permitted(r, p) {
			v.Permissions = append(v.Permissions, p)
		}
	}
	WriteJSON(w, http.StatusOK, v)
}

// Bounds of the counts a request may ask for.
const (
	// MaxTail is the most mirror records GET /api/mirror returns (n).
	MaxTail = 10000
	// MaxList is the most outbox entries GET /api/outbox returns (limit).
	MaxList = 10000
)

// CountError is the message of a count out of its range.
func CountError(name string, lo, hi int) string {
	return name + " must be a whole number from " + strconv.Itoa(lo) + " to " + strconv.Itoa(hi)
}

// queryCount reads the query parameter name as a whole number from lo to
// hi, def when absent; on a bad value it writes a 400 naming the parameter
// and the range, and returns false.
func queryCount(w http.ResponseWriter, r *http.Request, name string, def, lo, hi int) (int, bool) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return def, true
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < lo || n > hi {
		WriteError(w, http.StatusBadRequest, "%s (got %q)", CountError(name, lo, hi), truncate(s, 32))
		return 0, false
	}
	return n, true
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

package admin

import (
	"net/http"
	"strconv"

	"github.com/a6afc2ce/hermes-hub/clock"
	"github.com/a6afc2ce/hermes-hub/store"
)

// stateRoutes mounts mirror pruning and backups, for the operator only:
// they remove chat history, or copy every secret the state holds.
func (a *API) stateRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/mirror/prune", operatorOnly("`hub mirror prune --dry-run` on the hub's machine, as its user", a.pruneMirrors(true)))
	mux.HandleFunc("POST /api/mirror/prune", operatorOnly("`hub mirror prune` on the hub's machine, as its user", a.pruneMirrors(false)))
	mux.HandleFunc("POST /api/backup", operatorOnly("`hub backup FILE` on the hub's machine, as its user", a.backup))
}

// PruneView is the answer of /api/mirror/prune: every run, and what
// pruning removes (GET: would remove; POST: removed).
type PruneView struct {
	DryRun bool `json:"dry_run"`
	store.PrunePlan
}

func (a *API) pruneMirrors(dryRun bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if a.PruneMirrors == nil {
			WriteError(w, http.StatusServiceUnavailable, "mirror pruning is unavailable")
			return
		}
		plan, err := a.PruneMirrors(dryRun)
		if err != nil && plan.Runs == nil {
			WriteError(w, http.StatusInternalServerError, "prune mirrors: %v", err)
			return
		}
		if err != nil {
			// Some runs went, some could not: say which went, and why not.
			WriteJSON(w, http.StatusInternalServerError, struct {
				PruneView
				Error string `json:"error"`
			}{PruneView{DryRun: dryRun, PrunePlan: plan}, err.Error()})
			return
		}
		WriteJSON(w, http.StatusOK, PruneView{DryRun: dryRun, PrunePlan: plan})
	}
}

// backup streams a backup archive (application/x-tar). An error before
// the first byte is an error answer; one after cuts the connection, so the
// client never takes a partial archive for a whole one (which also lacks
// its manifest).
func (a *API) backup(w http.ResponseWriter, r *http.Request) {
	if a.Backup == nil {
		WriteError(w, http.StatusServiceUnavailable, "backups are unavailable")
		return
	}
	proc := false
	if v := r.URL.Query().Get("proc"); v != "" {
		var err error
		if proc, err = strconv.ParseBool(v); err != nil {
			WriteError(w, http.StatusBadRequest, "proc=%q is not accepted (accepted: true or false)", v)
			return
		}
	}
	w.Header().Set("Content-Type", "application/x-tar")
	sw := &streamWriter{w: w, rc: http.NewResponseController(w)}
	err := a.Backup(r.Context(), sw, store.BackupOptions{Proc: proc, HubVersion: a.Version})
	if err == nil {
		return
	}
	if sw.n == 0 {
		WriteError(w, http.StatusInternalServerError, "%v", err)
		return
	}
	panic(http.ErrAbortHandler)
}

// streamWriter gives each write of a long response its own deadline, so a
// reader that stops reading is dropped and a slow, steady one is not.
type streamWriter struct {
	w  http.ResponseWriter
	rc *http.ResponseController
	n  int64
}

func (s *streamWriter) Write(p []byte) (int, error) {
	_ = s.rc.SetWriteDeadline(clock.Real{}.Now().Add(followWriteTimeout))
	n, err := s.w.Write(p)
	s.n += int64(n)
	return n, err
}

package web

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/a6afc2ce/hermes-hub/admin"
	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/hub"
)

// Progress is the state of a running (or just ended) call from the panel,
// carried by a progress event.
type Progress struct {
	Verb string `json:"verb"`
	// State is running, done, failed, cancelled or interrupted; every state
	// but running is final.
	State string `json:"state"`
	// ElapsedMS is how long the call had run when the update was made.
	ElapsedMS int64 `json:"elapsed_ms"`
	// Tail is the last lines of the call's output so far.
	Tail string `json:"tail,omitempty"`
}

// ProgressView shows the progress of calls from the panel (attached with
// the panel, Platform): every update is a progress event of the
// web conversation, which the panel renders in place, one element per call
// with a Cancel control while it runs. Running updates reach the connected
// clients (and clients that connect while the call runs) without entering
// the history; the final one is kept in it, so a reload shows how the call
// ended, never a call still running. The reply follows as usual.
func (s *Server) ProgressView() hub.ProgressView { return progressView{s: s} }

type progressView struct{ s *Server }

// ShowProgress publishes u. The message id is the turn id: the hub records
// it while the call runs, so a restart finalises the call as interrupted.
func (v progressView) ShowProgress(ctx context.Context, u hub.ProgressUpdate) (string, error) {
	if u.Target.Kind != chat.KindWeb {
		return "", fmt.Errorf("web: progress for %s is not for the web conversation", u.Target)
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	v.s.events.publishProgress(Event{
		Type: EventProgress, TurnID: u.TurnID, Text: u.Text,
		Progress: &Progress{Verb: u.Verb, State: string(u.State), ElapsedMS: u.Elapsed.Milliseconds(), Tail: u.Tail},
	})
	return u.TurnID, nil
}

// CancelRequest is POST /api/cancel: the turn whose call to stop ("" stops
// every call of the web conversation the caller may stop, as /cancel).
type CancelRequest struct {
	Turn string `json:"turn"`
}

// CancelResponse is the answer of POST /api/cancel: the turns told to
// stop, and the hub's answer for people.
type CancelResponse struct {
	Canceled []string `json:"cancelled"`
	Text     string   `json:"text"`
}

// cancel stops a running call of the web conversation. The hub decides:
// the caller's own calls, or anyone's with admin.cancel. 200 when a call
// was told to stop (it ends as cancelled with its output so far, in its
// own reply), 409 when nothing was.
func (s *Server) cancel(w http.ResponseWriter, r *http.Request) {
	var req CancelRequest
	if !decodeJSON(w, r, &req) {
		return
	}
	if len(req.Turn) > 128 || strings.ContainsAny(req.Turn, " \t\r\n/\\") {
		admin.WriteError(w, http.StatusBadRequest, "turn %q is not a turn id (such as web.3f2a…, at most 128 characters without spaces or slashes)", req.Turn)
		return
	}
	res := s.hub.Cancel(hub.CancelRequest{Chat: chat.WebKey, TurnID: req.Turn, Identities: []string{Identity}})
	if len(res.Canceled) == 0 {
		admin.WriteJSON(w, http.StatusConflict, map[string]any{"error": res.Text, "cancelled": []string{}, "text": res.Text})
		return
	}
	s.log.Info("calls cancelled from the panel", "turns", res.Canceled)
	admin.WriteJSON(w, http.StatusOK, CancelResponse{Canceled: res.Canceled, Text: res.Text})
}

// ConfirmRequest is POST /api/confirm: a press on a held call's button
// in the panel's dialog.
type ConfirmRequest struct {
	ID     string `json:"id"`
	Action string `json:"action"`
}

// confirm decides a press on a held call's Run, Cancel, Approve or Reject
// (the panel's dialog) as the web identity: 200 with the hub's answer for
// people, whatever came of it (a press by someone else, twice or too late
// is answered, not refused).
func (s *Server) confirm(w http.ResponseWriter, r *http.Request) {
	var req ConfirmRequest
	if !decodeJSON(w, r, &req) {
		return
	}
	if len(req.ID) == 0 || len(req.ID) > 64 || strings.Trim(req.ID, "0123456789abcdef") != "" {
		admin.WriteError(w, http.StatusBadRequest, "id %q is not a held call's id (accepted: the hex id of the prompt, such as 3f2a9c0d1e2b4a5f)", req.ID)
		return
	}
	switch req.Action {
	case hub.ConfirmRun, hub.ConfirmCancel, hub.ConfirmApprove, hub.ConfirmReject:
	default:
		admin.WriteError(w, http.StatusBadRequest, "action %q is not accepted (accepted: run, cancel, approve, reject)", req.Action)
		return
	}
	res, err := s.hub.Confirm(r.Context(), hub.ConfirmPress{ID: req.ID, Action: req.Action, Identities: []string{Identity}})
	if err != nil {
		admin.WriteError(w, http.StatusInternalServerError, "%v", err)
		return
	}
	admin.WriteJSON(w, http.StatusOK, map[string]string{"text": res.Text})
}

// workspace serves GET /api/workspace: where the web conversation works
// (the workspace, its destination and why) and the workspaces the web
// identity may choose with /use.
func (s *Server) workspace(w http.ResponseWriter, r *http.Request) {
	admin.WriteJSON(w, http.StatusOK, s.hub.WorkspacesFor(chat.WebKey, []string{Identity}))
}

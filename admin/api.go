package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/clock"
	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/hub"
	"github.com/a6afc2ce/hermes-hub/outbox"
	"github.com/a6afc2ce/hermes-hub/store"
)

// API is the operator's view of the state: delivery targets, the channel
// directory, the outbox, the mirrors and hub-level delivery. Its fields are
// the parts of the hub it works on; nil funcs are unavailable features.
type API struct {
	Outbox  *outbox.Outbox
	Targets *store.Targets
	// Directory returns the channel directory in use (nil when it is
	// unavailable) and SetDirectory installs one rebuilt from the mirrors,
	// so every API of a hub (the socket's, the panel's) sees the same one.
	Directory    func() *store.Directory
	SetDirectory func(*store.Directory)
	// State is the state directory: the mirrors are read, and the
	// directory rebuilt (with DirectoryOptions), through it.
	State            *store.StateDir
	DirectoryOptions store.DirectoryOptions
	// Deliver fans text out to the delivery targets (Hub.Deliver), and
	// NewTurnID names a delivery sent without a turn id (hub.NewTurnID);
	// delivery needs both.
	Deliver   func(ctx context.Context, turnID, text string) ([]string, error)
	NewTurnID func(prefix string) string
	// Status adds the running hub's state to GET /api/status.
	Status func() map[string]any
	// Running is true inside hub serve once the dispatcher runs: offline
	// changes say they wait for it. Nil is offline.
	Running func() bool
	// Off says why chunks for a target's platform cannot be sent with this
	// configuration ("" when they can); a target added for it gets a note.
	Off func(chat.Key) string
	// CheckTarget refuses a target that may not be added (a local: path
	// outside the state directory and outbox.local_roots); nil accepts all.
	CheckTarget func(chat.Key) error
	// MaxBody caps request bodies; default 1 MiB.
	MaxBody int64
	// Clock dates GET /api/status; default real.
	Clock clock.Clock
	// Allowed reports whether an identity holds an admin permission
	// (config.AdminRead, …). The operator (the admin socket) holds them
	// all; any other caller is refused what Allowed does not grant, and
	// everything when it is nil. GET /api/status and GET /api/whoami need
	// none.
	Allowed func(identity, permission string) bool
	// ForbiddenHint says, in a refusal, what configuration would grant an
	// identity a permission (hub.Access.ForbiddenHint); nil: the refusal
	// names the permission only.
	ForbiddenHint func(identity, permission string) string
	// AccessAdmin manages the grants of the state (GET /api/access, POST
	// /api/access/approve and /revoke); nil: unavailable.
	AccessAdmin AccessAdmin
	// Reload re-reads the configuration of the running hub (POST
	// /api/reload, the operator only); nil: unavailable.
	Reload func() (hub.ReloadReport, error)
	// Nodes lists the remote nodes (GET /api/nodes); nil: none configured.
	Nodes NodeLister
	// Workspaces serves GET /api/workspaces, GET /api/workspaces/effective
	// and POST /api/workspaces/{name}/reset; nil: unavailable.
	Workspaces WorkspaceAdmin
	// PruneMirrors applies mirror retention: GET /api/mirror/prune says
	// what it would remove, POST removes it (the operator only); nil:
	// unavailable.
	PruneMirrors func(dryRun bool) (store.PrunePlan, error)
	// Backup writes a backup of the state (POST /api/backup, the operator
	// only), recording Version, the hub's; nil: unavailable.
	Backup  func(ctx context.Context, w io.Writer, opts store.BackupOptions) error
	Version string
	// Schedules serves GET /api/schedules and POST /api/schedules/run;
	// nil: unavailable.
	Schedules ScheduleAdmin
}

// followWriteTimeout bounds each write of GET /api/mirror?follow=1.
const followWriteTimeout = 30 * time.Second

// Handler serves the admin API under /api/. Every endpoint but GET
// /api/status and GET /api/whoami needs an admin permission of the caller's
// identity (WithIdentity; HandlerAs).
func (a *API) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/targets", a.need(config.AdminRead, a.listTargets))
	mux.HandleFunc("POST /api/targets", a.need(config.AdminTargets, a.addTarget))
	mux.HandleFunc("DELETE /api/targets", a.need(config.AdminTargets, a.removeTarget))
	mux.HandleFunc("POST /api/targets/clear", a.need(config.AdminTargets, a.clearTargets))
	mux.HandleFunc("GET /api/channels", a.need(config.AdminRead, a.listChannels))
	mux.HandleFunc("POST /api/channels/rebuild", a.need(config.AdminChannels, a.rebuildChannels))
	mux.HandleFunc("GET /api/outbox", a.need(config.AdminRead, a.listOutbox))
	mux.HandleFunc("GET /api/outbox/entry", a.need(config.AdminRead, a.showEntry))
	mux.HandleFunc("POST /api/outbox/retry", a.need(config.AdminOutbox, a.retryEntry))
	mux.HandleFunc("POST /api/outbox/purge", a.need(config.AdminOutbox, a.purgeOutbox))
	mux.HandleFunc("GET /api/mirror", a.need(config.AdminRead, a.tailMirror))
	mux.HandleFunc("GET /api/mirror/search", a.need(config.AdminRead, a.searchMirror))
	mux.HandleFunc("POST /api/deliver", a.need(config.AdminDeliver, a.deliver))
	mux.HandleFunc("GET /api/status", a.status)
	mux.HandleFunc("GET /api/whoami", a.whoami)
	a.accessRoutes(mux)
	a.nodeRoutes(mux)
	a.workspaceRoutes(mux)
	a.stateRoutes(mux)
	a.scheduleRoutes(mux)
	return mux
}

// running is whether the hub serves: changes take effect now rather than
// when `hub serve` next runs.
func (a *API) running() bool { return a.Running != nil && a.Running() }

func (a *API) readBody(w http.ResponseWriter, r *http.Request, v any) bool {
	max := a.MaxBody
	if max <= 0 {
		max = 1 << 20
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, max))
	if err != nil {
		WriteError(w, http.StatusRequestEntityTooLarge, "request body over %d bytes", max)
		return false
	}
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		WriteError(w, http.StatusBadRequest, "request body: %v", err)
		return false
	}
	return true
}

// TargetsView is GET /api/targets.
type TargetsView struct {
	Targets      []string          `json:"targets"`
	LastDelivery map[string]string `json:"last_delivery_by_target"`
}

func (a *API) listTargets(w http.ResponseWriter, r *http.Request) {
	if a.Targets == nil {
		WriteError(w, http.StatusServiceUnavailable, "delivery targets are unavailable")
		return
	}
	v := TargetsView{Targets: []string{}, LastDelivery: map[string]string{}}
	for _, k := range a.Targets.List() {
		v.Targets = append(v.Targets, k.String())
		if t := a.Targets.LastDelivery(k); t != "" {
			v.LastDelivery[k.String()] = t
		}
	}
	WriteJSON(w, http.StatusOK, v)
}

// TargetRequest names one target in any accepted form.
type TargetRequest struct {
	Target string `json:"target"`
}

// ChangeResult reports a change.
type ChangeResult struct {
	Target  string `json:"target,omitempty"`
	Changed bool   `json:"changed"`
	Count   int    `json:"count,omitempty"`
	Note    string `json:"note,omitempty"`
}

func (a *API) addTarget(w http.ResponseWriter, r *http.Request) {
	var req TargetRequest
	if !a.readBody(w, r, &req) {
		return
	}
	k, err := chat.ParseTarget(req.Target)
	k = a.Targets.Normalize(k) // checked, stored and reported as stored
	if err == nil && a.CheckTarget != nil {
		err = a.CheckTarget(k)
	}
	if err != nil {
		WriteError(w, http.StatusBadRequest, "%v", err)
		return
	}
	added, err := a.Targets.Add(k)
	if err != nil {
		WriteError(w, http.StatusInternalServerError, "%v", err)
		return
	}
	res := ChangeResult{Target: k.String(), Changed: added}
	if a.Off != nil {
		if why := a.Off(k); why != "" {
			res.Note = why + ": chunks for this target wait in the outbox until it is"
		}
	}
	WriteJSON(w, http.StatusOK, res)
}

func (a *API) removeTarget(w http.ResponseWriter, r *http.Request) {
	k, err := chat.ParseTarget(r.URL.Query().Get("target"))
	if err != nil {
		WriteError(w, http.StatusBadRequest, "%v", err)
		return
	}
	k = a.Targets.Normalize(k)
	removed, err := a.Targets.Remove(k)
	if err != nil {
		WriteError(w, http.StatusInternalServerError, "%v", err)
		return
	}
	WriteJSON(w, http.StatusOK, ChangeResult{Target: k.String(), Changed: removed})
}

func (a *API) clearTargets(w http.ResponseWriter, r *http.Request) {
	n, err := a.Targets.Clear()
	if err != nil {
		WriteError(w, http.StatusInternalServerError, "%v", err)
		return
	}
	WriteJSON(w, http.StatusOK, ChangeResult{Changed: n > 0, Count: n})
}

func (a *API) listChannels(w http.ResponseWriter, r *http.Request) {
	dir := a.Directory()
	if dir == nil {
		WriteError(w, http.StatusServiceUnavailable, "the channel directory is unavailable (rebuild it from the mirrors with `hub channels rebuild`)")
		return
	}
	entries := dir.List(r.URL.Query().Get("query"))
	if entries == nil {
		entries = []store.DirectoryEntry{}
	}
	WriteJSON(w, http.StatusOK, entries)
}

func (a *API) rebuildChannels(w http.ResponseWriter, r *http.Request) {
	if dir := a.Directory(); dir != nil && a.running() {
		// The live directory is in use: merge every sighting from the mirrors.
		n, err := dir.MergeMirrors(a.State.Flows())
		if err != nil {
			WriteError(w, http.StatusInternalServerError, "rebuild channel directory: %v", err)
			return
		}
		WriteJSON(w, http.StatusOK, ChangeResult{Changed: true, Count: dir.Len(), Note: fmt.Sprintf("merged %d inbound records", n)})
		return
	}
	d, n, err := store.RebuildDirectory(a.State.Root(), store.ChannelDirectory, a.State.Flows(), a.DirectoryOptions)
	if err != nil {
		WriteError(w, http.StatusInternalServerError, "rebuild channel directory: %v", err)
		return
	}
	a.SetDirectory(d) // replaces, and closes, the one in use
	WriteJSON(w, http.StatusOK, ChangeResult{Changed: true, Count: n})
}

func (a *API) listOutbox(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := outbox.Filter{State: outbox.State(q.Get("state")), Target: q.Get("target"), TurnID: q.Get("turn"), Kind: outbox.Kind(q.Get("kind"))}
	if f.State == "" {
		f.State = outbox.StatePending
	}
	switch f.State {
	case outbox.StatePending, outbox.StateDead, outbox.StateDelivered:
	default:
		WriteError(w, http.StatusBadRequest, "state %q is not accepted (accepted: pending, dead, delivered)", f.State)
		return
	}
	limit, ok := queryCount(w, r, "limit", 0, 1, MaxList)
	if !ok {
		return
	}
	f.Limit = limit // 0: the store's default
	entries, err := a.Outbox.Store().List(r.Context(), f)
	if err != nil {
		WriteError(w, http.StatusInternalServerError, "%v", err)
		return
	}
	if entries == nil {
		entries = []outbox.Entry{}
	}
	WriteJSON(w, http.StatusOK, entries)
}

func (a *API) showEntry(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("id")
	e, err := a.Outbox.Store().Get(r.Context(), id)
	if errors.Is(err, outbox.ErrNotFound) {
		WriteError(w, http.StatusNotFound, "no outbox entry %q", id)
		return
	}
	if err != nil {
		WriteError(w, http.StatusInternalServerError, "%v", err)
		return
	}
	WriteJSON(w, http.StatusOK, e)
}

// IDRequest names one outbox entry.
type IDRequest struct {
	ID string `json:"id"`
}

func (a *API) retryEntry(w http.ResponseWriter, r *http.Request) {
	var req IDRequest
	if !a.readBody(w, r, &req) {
		return
	}
	e, err := a.Outbox.Requeue(r.Context(), req.ID)
	if errors.Is(err, outbox.ErrNotFound) {
		WriteError(w, http.StatusNotFound, "no outbox entry %q", req.ID)
		return
	}
	if err != nil {
		WriteError(w, http.StatusBadRequest, "%v", err)
		return
	}
	note := ""
	if !a.running() {
		note = "queued; it is sent when `hub serve` runs"
	}
	WriteJSON(w, http.StatusOK, struct {
		Entry outbox.Entry `json:"entry"`
		Note  string       `json:"note,omitempty"`
	}{e, note})
}

// PurgeRequest selects dead letters to delete; empty fields match all.
type PurgeRequest struct {
	Target string `json:"target,omitempty"`
	TurnID string `json:"turn_id,omitempty"`
}

func (a *API) purgeOutbox(w http.ResponseWriter, r *http.Request) {
	var req PurgeRequest
	if !a.readBody(w, r, &req) {
		return
	}
	n, err := a.Outbox.Store().Purge(r.Context(), outbox.Filter{Target: req.Target, TurnID: req.TurnID})
	if err != nil {
		WriteError(w, http.StatusInternalServerError, "%v", err)
		return
	}
	WriteJSON(w, http.StatusOK, ChangeResult{Changed: n > 0, Count: n})
}

// tailMirror returns the last n records, or with follow=1 streams new ones
// as JSON lines until the client goes away.
func (a *API) tailMirror(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := store.MirrorFilter{RunID: q.Get("run"), Direction: q.Get("direction")}
	switch f.Direction {
	case "", "in", "inbound":
		if f.Direction != "" {
			f.Direction = store.DirectionInbound
		}
	case "out", "outbound":
		f.Direction = store.DirectionOutbound
	default:
		WriteError(w, http.StatusBadRequest, "direction %q is not accepted (accepted: in, out)", f.Direction)
		return
	}
	n, ok := queryCount(w, r, "n", 50, 0, MaxTail)
	if !ok {
		return
	}
	recs, err := store.TailMirror(a.State.Flows(), f, n)
	if err != nil {
		WriteError(w, http.StatusInternalServerError, "%v", err)
		return
	}
	if q.Get("follow") == "" {
		if recs == nil {
			recs = []store.MirrorRecord{}
		}
		WriteJSON(w, http.StatusOK, recs)
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	rc := http.NewResponseController(w)
	// Each write of the stream gets its own deadline: a reader that stops
	// reading is dropped, one that waits for records is not. Deadlines are
	// the network's, so real time, not a.Clock.
	deadline := func() { _ = rc.SetWriteDeadline(clock.Real{}.Now().Add(followWriteTimeout)) }
	deadline()
	for _, rec := range recs {
		_ = enc.Encode(rec)
	}
	_ = rc.Flush()
	_ = store.FollowMirror(r.Context(), a.State.Flows(), f, func(rec store.MirrorRecord) error {
		deadline()
		if err := enc.Encode(rec); err != nil {
			return err
		}
		return rc.Flush()
	})
}

// DeliverRequest is POST /api/deliver.
type DeliverRequest struct {
	Text   string `json:"text"`
	TurnID string `json:"turn_id,omitempty"` // makes a resubmission idempotent
}

// DeliverResult lists the ids enqueued.
type DeliverResult struct {
	TurnID string   `json:"turn_id"`
	Outbox []string `json:"outbox"`
	Note   string   `json:"note,omitempty"`
}

func (a *API) deliver(w http.ResponseWriter, r *http.Request) {
	var req DeliverRequest
	if !a.readBody(w, r, &req) {
		return
	}
	if a.Deliver == nil || a.NewTurnID == nil {
		WriteError(w, http.StatusServiceUnavailable, "delivery is unavailable")
		return
	}
	turn := req.TurnID
	if turn == "" {
		turn = a.NewTurnID("send")
	} else if strings.ContainsAny(turn, ":/\x00") || len(turn) > 128 {
		WriteError(w, http.StatusBadRequest, "turn_id %q may not contain ':', '/' or NUL, and has at most 128 characters", turn)
		return
	}
	ids, err := a.Deliver(r.Context(), turn, req.Text)
	if err != nil {
		WriteError(w, http.StatusBadRequest, "%v", err)
		return
	}
	res := DeliverResult{TurnID: turn, Outbox: ids}
	if res.Outbox == nil {
		res.Outbox = []string{}
	}
	switch {
	case a.Targets != nil && len(a.Targets.List()) == 0:
		res.Note = "no delivery targets: add one with `hub targets add`"
	case !a.running():
		res.Note = "queued; it is sent when `hub serve` runs"
	}
	WriteJSON(w, http.StatusOK, res)
}

func (a *API) status(w http.ResponseWriter, r *http.Request) {
	st := map[string]any{"time": a.clock().Now().UTC().Format(time.RFC3339), "running": a.running()}
	if a.Outbox != nil {
		st["outbox"] = a.Outbox.Stats()
	}
	if a.Status != nil {
		for k, v := range a.Status() {
			st[k] = v
		}
	}
	WriteJSON(w, http.StatusOK, st)
}

package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/store"
)

// ErrNotMirrored is returned (wrapped, with the mirror's own error) by
// Execute when the call could not be recorded in the mirror before it ran:
// nothing ran. Every exchange is mirrored or refused.
var ErrNotMirrored = errors.New("the call could not be recorded in the mirror, so it did not run")

// APIRequest is one envelope from an API caller (POST /api/execute), or
// one call a surface decoded from its own framing (an MCP tools/call).
type APIRequest struct {
	// Identity is the caller's access identity ("web" for the panel and
	// bearer-token clients).
	Identity string
	// Session picks a session workspace ("" = by configuration).
	Session string
	// Workspace names the workspace to act in (?workspace=); "" lets the
	// envelope's "workspace" or the web conversation's choice decide.
	Workspace string
	// TurnID identifies the call in mirrors and proc output ("api.<id>").
	TurnID string
	// Input is the envelope, YAML or JSON.
	Input []byte
	// Verb and Arguments are, in place of Input, a call the surface
	// decoded itself: the verb as the registry describes it and its
	// arguments as sent. No envelope is decoded and the verb is not looked
	// up again; the call is recorded as the envelope JSON
	// {"verb":…,"arguments":…} (executor.EncodeEnvelope), and checked as
	// that envelope would be.
	Verb      executor.Info
	Arguments json.RawMessage
	// Confirmed says the surface asked the caller to confirm this exact
	// call and the caller did (MCP elicitation): a call a role's confirm
	// holds runs instead of being refused with confirmation_required.
	Confirmed bool
}

// Execute runs one call for an API caller: the stable protocol for
// agents, and the MCP tools. It is decided as a chat turn is (turn.go);
// the outcome is returned, not enqueued, and there is no ledger. The call
// is mirrored before it runs; when that record cannot be written, nothing
// runs and the error wraps ErrNotMirrored. The outcome is mirrored after.
//
// Both records of a call that may change state (any verb not read-only,
// and refused calls) are durable: Execute waits for their fsync (shared
// with concurrent appends). Those of a read-only verb the caller may run
// are written to the mirror file before it runs and after, without
// waiting for the fsync: a crash of the process loses neither, a crash of
// the machine may lose the record of a read, never that of a change.
func (h *Hub) Execute(ctx context.Context, req APIRequest) (*executor.Outcome, error) {
	t, text, err := h.apiTurn(req)
	if err != nil {
		return nil, err
	}
	d := h.identify(&t)
	h.decide(&t, &d)
	durable := !d.readOnlyRun(&t)
	if err := h.mirrorAPI(ctx, &t, apiInbound(&t, &d, text), durable); err != nil {
		h.observeTurn(SurfaceAPI, nil, err)
		return nil, fmt.Errorf("api call %s: %w: %w", t.id, ErrNotMirrored, err)
	}
	out, by := h.apiOutcome(ctx, &t, &d)
	h.observeTurn(SurfaceAPI, &TurnResult{TurnID: t.id, Status: d.status()}, nil)
	// apiResult encodes the result once (EncodedJSON), for the record and
	// for the surface's answer.
	if err := h.mirrorAPI(context.WithoutCancel(ctx), &t, apiResult(&t, out, by), durable); err != nil {
		// The verb has run; its outcome still reaches the caller.
		h.log.Error("mirror api result", "turn", t.id, "err", fmt.Sprint(err))
	}
	return out, nil
}

// apiTurn is the parse step of an API call: its envelope decoded, or the
// call its surface decoded encoded as the envelope it stands for. text is
// what the mirror records of the request. An error means the request
// cannot even be recorded.
func (h *Hub) apiTurn(req APIRequest) (t turn, text []byte, err error) {
	if req.TurnID == "" {
		req.TurnID = NewTurnID("api", h.opts.Clock.Now())
	}
	t = turn{id: req.TurnID, identity: req.Identity, ids: []string{req.Identity}, asked: req.Workspace, session: req.Session, confirmed: req.Confirmed}
	switch {
	case req.Verb.Name == "":
		t.env, t.err = h.x.DecodeEnvelope(req.Input)
		return t, req.Input, nil
	case req.Input != nil:
		return t, nil, fmt.Errorf("api call %s: the request carries both an envelope and a decoded call (Verb %s); send one", req.TurnID, req.Verb.Name)
	}
	t.info, t.known = req.Verb, true
	t.env, text, t.err = h.x.EncodeEnvelope(req.Verb.Name, req.Arguments)
	if text == nil {
		return t, nil, fmt.Errorf("api call %s: %w", req.TurnID, t.err)
	}
	return t, text, nil
}

// apiOutcome delivers an API call's decision: the outcome of its run, or
// the error it was refused with.
func (h *Hub) apiOutcome(ctx context.Context, t *turn, d *decision) (*executor.Outcome, answeredBy) {
	switch d.verdict {
	case verdictInvalid:
		return &executor.Outcome{Err: executor.ErrorFrom(d.err), ID: t.env.ID}, answeredBy{}
	case verdictForbidden:
		return &executor.Outcome{Verb: t.info.Name, ID: t.env.ID, Err: executor.Errorf(executor.CodeForbidden,
			"%s may not run %s (forbidden; roles: %s). %s", t.identity, t.info.Name, rolesText(d.roles), forbiddenWhy(t, d))}, answeredBy{}
	case verdictWorkspace:
		return &executor.Outcome{Verb: t.info.Name, ID: t.env.ID, Err: executor.Errorf(executor.CodeForbidden, "%s was not run: %s.%s", t.info.Name, d.werr.Error(), workspaceHint(t, d))}, answeredBy{}
	case verdictConfirm:
		return &executor.Outcome{Verb: t.info.Name, ID: t.env.ID, Err: confirmError(t, d)}, answeredBy{}
	}
	return h.run(ctx, t, d)
}

// apiInbound is the mirror record of an API call before it runs: the
// request's text, with the session and the workspace it acts in. A call
// refused before it was placed (it does not parse, its roles do not grant
// the verb, it names two workspaces) records the workspace the request
// named.
func apiInbound(t *turn, d *decision, text []byte) store.MirrorRecord {
	meta := map[string]string{"turn_id": t.id}
	if v := t.verbName(); v != "" {
		meta[store.MetaVerb] = v
	}
	if d.session != "" {
		meta["session"] = d.session
	}
	ws := t.asked
	if d.placed && d.allowed {
		ws = d.where.Name
	}
	if ws != "" {
		meta[MetaWorkspace] = ws
	}
	if t.call.Verb != "" {
		meta[MetaCall] = callText(t.call)
	}
	return store.MirrorRecord{Direction: store.DirectionInbound, Platform: "api", Actor: t.identity, Kind: "execute", Text: string(text), Meta: meta}
}

// apiResult is the mirror record of an API call's outcome.
func apiResult(t *turn, out *executor.Outcome, by answeredBy) store.MirrorRecord {
	meta := map[string]string{"turn_id": t.id, store.MetaVerb: out.Verb}
	if !out.Succeeded() {
		meta[store.MetaErrorCode] = string(out.Err.Code)
	}
	meta = by.meta(meta)
	return store.MirrorRecord{Direction: store.DirectionOutbound, Platform: "api", Actor: "hub", Kind: "result", Bytes: out.EncodedJSON(), Meta: meta}
}

// mirrorAPI writes a record of an API call; with durable, it returns once
// the record is fsynced.
func (h *Hub) mirrorAPI(ctx context.Context, t *turn, rec store.MirrorRecord, durable bool) error {
	if h.opts.Mirror == nil {
		return nil
	}
	if err := h.opts.Mirror.Append(ctx, rec, durable); err != nil {
		h.log.Error("mirror api call", "turn", t.id, "direction", rec.Direction, "err", fmt.Sprint(err))
		return err
	}
	return nil
}

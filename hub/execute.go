package hub

import (
	"context"
	"errors"
	"fmt"

	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/store"
	"github.com/a6afc2ce/hermes-hub/workspaces/policy"
)

// ErrNotMirrored is returned (wrapped, with the mirror's own error) by
// Execute when the call could not be recorded in the mirror before it ran:
// nothing ran. Every exchange is mirrored or refused.
var ErrNotMirrored = errors.New("the call could not be recorded in the mirror, so it did not run")

// APIRequest is one envelope from an API caller (POST /api/execute).
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
}

// Execute runs one envelope for an API caller: the stable protocol for
// agents. Access is checked like in chat; the result is returned, not
// enqueued. The call is mirrored before it runs; when that record cannot
// be written, nothing runs and the error wraps ErrNotMirrored. The outcome
// is mirrored after.
//
// Both records of a call that may change state (any verb not read-only,
// and refused calls) are durable: Execute waits for their fsync (shared
// with concurrent appends). Those of a read-only verb the caller may run
// are written to the mirror file before it runs and after, without
// waiting for the fsync: a crash of the process loses neither, a crash of
// the machine may lose the record of a read, never that of a change.
func (h *Hub) Execute(ctx context.Context, req APIRequest) (*executor.Outcome, error) {
	if req.TurnID == "" {
		req.TurnID = NewTurnID("api", h.opts.Clock.Now())
	}
	env, decErr := h.x.DecodeEnvelope(req.Input)
	var info executor.Info
	known := false
	if decErr == nil {
		info, known = h.x.Registry().Lookup(env.Verb)
	}
	ids := []string{req.Identity}
	forbidden := known && !h.opts.Access.Allowed(ids, info.Name)
	if decErr == nil && !forbidden && req.Session == "" && h.opts.SessionFor != nil {
		// Without an explicit session, an API call works where the web
		// conversation works.
		req.Session = h.opts.SessionFor(&chat.Inbound{Platform: chat.Web, ChatID: "web", UserID: "web"}, h.opts.Access.RolesOf(ids))
	}
	var where policy.Resolution
	var werr error
	if decErr == nil && !forbidden {
		explicit := req.Workspace
		if env.Workspace != "" && explicit != "" && env.Workspace != explicit {
			decErr = executor.Errorf(executor.CodeInvalidEnvelope, "The envelope names workspace %q and the request %q; name one", env.Workspace, explicit)
		} else if explicit == "" {
			explicit = env.Workspace
		}
		if decErr == nil {
			// Without a choice of its own, an API call works where the
			// web conversation works.
			where, werr = h.resolveWorkspace(explicit, WebConversation, h.opts.Access.RolesOf(ids))
			req.Workspace = where.Name
		}
	}
	// Only a read-only verb that will run skips waiting for the fsync.
	durable := decErr != nil || !known || forbidden || werr != nil || !info.ReadOnly
	if err := h.mirrorAPI(ctx, req, nil, answeredBy{}, durable); err != nil {
		h.observeTurn(SurfaceAPI, nil, err)
		return nil, fmt.Errorf("api call %s: %w: %w", req.TurnID, ErrNotMirrored, err)
	}
	var out *executor.Outcome
	var by answeredBy
	res := &TurnResult{TurnID: req.TurnID}
	switch {
	case decErr != nil:
		out = &executor.Outcome{Err: executor.ErrorFrom(decErr), ID: env.ID}
		res.Status = StatusRejected
	case forbidden:
		out = &executor.Outcome{Verb: info.Name, ID: env.ID, Err: executor.Errorf(executor.CodeForbidden,
			"%s may not run %s; grant a role that names it under access.roles", req.Identity, info.Name)}
		res.Status = StatusForbidden
	case werr != nil:
		out = &executor.Outcome{Verb: info.Name, ID: env.ID, Err: executor.Errorf(executor.CodeForbidden, "%s was not run: %s", info.Name, werr.Error())}
		res.Status = StatusForbidden
	default:
		out, by = h.call(ctx, executor.Call{TurnID: req.TurnID, Identity: req.Identity, Session: req.Session, Workspace: where.Name}, env)
		res.Status = StatusExecuted
	}
	h.observeTurn(SurfaceAPI, res, nil)
	if err := h.mirrorAPI(context.WithoutCancel(ctx), req, out, by, durable); err != nil {
		// The verb has run; its outcome still reaches the caller.
		h.log.Error("mirror api result", "turn", req.TurnID, "err", fmt.Sprint(err))
	}
	return out, nil
}

// mirrorAPI writes the inbound record of an API call (out nil) or its
// outcome; with durable, it returns once the record is fsynced.
func (h *Hub) mirrorAPI(ctx context.Context, req APIRequest, out *executor.Outcome, by answeredBy, durable bool) error {
	if h.opts.Mirror == nil {
		return nil
	}
	var rec store.MirrorRecord
	if out == nil {
		meta := map[string]string{"turn_id": req.TurnID}
		if req.Session != "" {
			meta["session"] = req.Session
		}
		if req.Workspace != "" {
			meta[MetaWorkspace] = req.Workspace
		}
		rec = store.MirrorRecord{Direction: store.DirectionInbound, Platform: "api", Actor: req.Identity, Kind: "execute", Text: string(req.Input), Meta: meta}
	} else {
		meta := map[string]string{"turn_id": req.TurnID, "verb": out.Verb}
		if !out.Succeeded() {
			meta["error_code"] = string(out.Err.Code)
		}
		meta = by.meta(meta)
		rec = store.MirrorRecord{Direction: store.DirectionOutbound, Platform: "api", Actor: "hub", Kind: "result", Text: string(out.JSON()), Meta: meta}
	}
	if err := h.opts.Mirror.Append(ctx, rec, durable); err != nil {
		h.log.Error("mirror api call", "turn", req.TurnID, "direction", rec.Direction, "err", fmt.Sprint(err))
		return err
	}
	return nil
}

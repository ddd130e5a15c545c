package hub

import (
	"context"
	"fmt"

	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/store"
)

// APIRequest is one envelope from an API caller (POST /api/execute).
type APIRequest struct {
	// Identity is the caller's access identity ("web" for the panel and
	// bearer-token clients).
	Identity string
	// Session picks a session workspace ("" = by configuration).
	Session string
	// TurnID identifies the call in mirrors and proc output ("api.<id>").
	TurnID string
	// Input is the envelope, YAML or JSON.
	Input []byte
}

// Execute runs one envelope for an API caller: the stable protocol for
// agents. Access is checked like in chat; the exchange is mirrored; the
// result is returned, not enqueued.
func (h *Hub) Execute(ctx context.Context, req APIRequest) *executor.Outcome {
	if req.TurnID == "" {
		req.TurnID = NewTurnID("api", h.opts.Clock.Now())
	}
	env, err := h.x.DecodeEnvelope(req.Input)
	var out *executor.Outcome
	switch {
	case err != nil:
		out = &executor.Outcome{Err: executor.ErrorFrom(err), ID: env.ID}
	default:
		info, known := h.x.Registry().Lookup(env.Verb)
		ids := []string{req.Identity}
		if known && !h.opts.Access.Allowed(ids, info.Name) {
			out = &executor.Outcome{Verb: info.Name, ID: env.ID, Err: executor.Errorf(executor.CodeForbidden,
				"%s may not run %s; grant a role that names it under access.roles", req.Identity, info.Name)}
			break
		}
		if req.Session == "" && h.opts.SessionFor != nil {
			// Without an explicit session, an API call works where the web
			// conversation works.
			req.Session = h.opts.SessionFor(&chat.Inbound{Platform: chat.Web, ChatID: "web", UserID: "web"}, h.opts.Access.RolesOf(ids))
		}
		out = h.call(ctx, executor.Call{TurnID: req.TurnID, Identity: req.Identity, Session: req.Session}, env)
	}
	// A call cancelled by its caller is still recorded.
	h.mirrorAPI(context.WithoutCancel(ctx), req, out)
	return out
}

func (h *Hub) mirrorAPI(ctx context.Context, req APIRequest, out *executor.Outcome) {
	if h.opts.Mirror == nil {
		return
	}
	meta := map[string]string{"turn_id": req.TurnID}
	if req.Session != "" {
		meta["session"] = req.Session
	}
	in := store.MirrorRecord{Direction: store.DirectionInbound, Platform: "api", Actor: req.Identity, Kind: "execute", Text: string(req.Input), Meta: meta}
	res := out.JSON()
	om := map[string]string{"turn_id": req.TurnID, "verb": out.Verb}
	if !out.Succeeded() {
		om["error_code"] = string(out.Err.Code)
	}
	outRec := store.MirrorRecord{Direction: store.DirectionOutbound, Platform: "api", Actor: "hub", Kind: "result", Text: string(res), Meta: om}
	for _, r := range []store.MirrorRecord{in, outRec} {
		if err := h.opts.Mirror.Append(ctx, r, true); err != nil {
			h.log.Error("mirror api call", "turn", req.TurnID, "err", fmt.Sprint(err))
		}
	}
}

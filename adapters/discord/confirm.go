package discord

import (
	"context"
	"strings"

	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/hub"
	"github.com/a6afc2ce/hermes-hub/outbox"
)

// confirmPrefix starts the custom_id of a held call's buttons:
// "cf:<action>:<id>".
const confirmPrefix = "cf:"

// Button styles of a held call's prompt.
const (
	buttonPrimary   = 1
	buttonSecondary = 2
)

// confirmRow is the action row of a held call's prompt (the last chunk of
// an entry whose meta names the held call): Run and Cancel for the asker,
// Approve and Reject for the approvers; nil for any other chunk.
func confirmRow(e *outbox.Entry) []component {
	id := e.Meta[hub.MetaConfirm]
	if id == "" || e.Index != e.Total-1 {
		return nil
	}
	yes, no := hub.ConfirmRun, hub.ConfirmCancel
	if e.Meta[hub.MetaConfirmStage] == hub.ConfirmStageApprove {
		yes, no = hub.ConfirmApprove, hub.ConfirmReject
	}
	button := func(action string, style int) component {
		return component{Type: componentButton, Style: style, Label: strings.ToUpper(action[:1]) + action[1:], CustomID: confirmPrefix + action + ":" + id}
	}
	return []component{{Type: componentActionRow, Components: []component{button(yes, buttonPrimary), button(no, buttonSecondary)}}}
}

// onConfirm decides a press on a held call's button (custom_id after
// confirmPrefix) and answers the press with what came of it.
func (a *Adapter) onConfirm(ctx context.Context, data string, user string, roles []string) string {
	action, id, ok := strings.Cut(data, ":")
	if !ok {
		return "This button does nothing any more."
	}
	who := hub.Identities(&chat.Inbound{Platform: chat.Discord, UserID: user, RoleIDs: roles})
	res, err := a.hub.Confirm(ctx, hub.ConfirmPress{ID: id, Action: action, Identities: who})
	if err != nil {
		a.log.Error("a press on a held call", "confirm", id, "err", err)
		return "⚠ " + err.Error()
	}
	a.log.Info("held call button pressed", "confirm", id, "action", action, "by", who[0])
	return res.Text
}

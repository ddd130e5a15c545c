package discord

import (
	"context"
	"github.com/bwmarrin/discordgo"
	"strings"
	"sync"

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

// confirmLane is the lane (Adapter.inOrder) of a press on a held call's
// button: the presses on one held call are decided one after the other,
// in the order the gateway gave them; ok is false for any other
// interaction.
func confirmLane(it *discordgo.Interaction) (lane string, ok bool) {
	data, isComponent := it.Data.(discordgo.MessageComponentInteractionData)
	rest, isConfirm := strings.CutPrefix(data.CustomID, confirmPrefix)
	if !isComponent || !isConfirm {
		return "", false
	}
	_, id, _ := strings.Cut(rest, ":")
	return confirmPrefix + id, true
}

// pressConfirm decides a press on a held call's button (custom_id after
// confirmPrefix) and answers it as soon as it is decided, then returns:
// the run it lets start goes on without holding the interaction's answer
// (due within 3 s) or the next press on the call (confirmLane).
func (a *Adapter) pressConfirm(ctx context.Context, it *discordgo.Interaction, data, user string, roles []string) {
	decided := make(chan struct{})
	var once sync.Once
	answer := func(text string) {
		once.Do(func() {
			a.respondNow(ctx, it, text)
			close(decided)
		})
	}
	if !a.spawn(func(ctx context.Context) { answer(a.onConfirm(ctx, data, user, roles, answer)) }) {
		return
	}
	<-decided
}

// onConfirm decides a press on a held call's button and says what came
// of it; decided is called with that as soon as it is decided.
func (a *Adapter) onConfirm(ctx context.Context, data string, user string, roles []string, decided func(string)) string {
	action, id, ok := strings.Cut(data, ":")
	if !ok {
		return "This button does nothing any more."
	}
	who := hub.Identities(&chat.Inbound{Platform: chat.Discord, UserID: user, RoleIDs: roles})
	res, err := a.hub.Confirm(ctx, hub.ConfirmPress{ID: id, Action: action, Identities: who, Decided: decided})
	if err != nil {
		a.log.Error("a press on a held call", "confirm", id, "err", err)
		return "⚠ " + err.Error()
	}
	a.log.Info("held call button pressed", "confirm", id, "action", action, "by", who[0])
	return res.Text
}

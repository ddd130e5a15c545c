package telegram

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/hub"
	"github.com/a6afc2ce/hermes-hub/outbox"
)

// confirmData prefixes the callback data of a held call's buttons:
// "cf:<action>:<id>" (Telegram allows 64 bytes; an id is 16 characters).
const confirmData = "cf:"

// confirmKeyboard is the inline keyboard of a held call's prompt (the last
// chunk of an entry whose meta names the held call): Run and Cancel for
// the asker, Approve and Reject for the approvers; "" for any other chunk.
func confirmKeyboard(e *outbox.Entry) string {
	id := e.Meta[hub.MetaConfirm]
	if id == "" || e.Index != e.Total-1 {
		return ""
	}
	yes, no := hub.ConfirmRun, hub.ConfirmCancel
	if e.Meta[hub.MetaConfirmStage] == hub.ConfirmStageApprove {
		yes, no = hub.ConfirmApprove, hub.ConfirmReject
	}
	button := func(action string) map[string]string {
		return map[string]string{"text": strings.ToUpper(action[:1]) + action[1:], "callback_data": confirmData + action + ":" + id}
	}
	kb, _ := json.Marshal(map[string]any{"inline_keyboard": [][]map[string]string{{button(yes), button(no)}}})
	return string(kb)
}

// onConfirm decides a press on a held call's button (data after
// confirmData): the hub says what came of it, shown as the press's toast.
func (a *Adapter) onConfirm(ctx context.Context, cq *rawCallback, data string, decided func(text string)) string {
	action, id, ok := strings.Cut(data, ":")
	if !ok || cq.From == nil {
		return "This button does nothing any more."
	}
	who := hub.Identities(&chat.Inbound{Platform: chat.Telegram, UserID: strconv.FormatInt(cq.From.ID, 10)})
	res, err := a.hub.Confirm(ctx, hub.ConfirmPress{ID: id, Action: action, Identities: who, Decided: decided})
	if err != nil {
		a.log.Error("telegram: a press on a held call", "confirm", id, "err", err)
		return "⚠ " + err.Error()
	}
	a.log.Info("telegram: held call button pressed", "confirm", id, "action", action, "by", who[0])
	return res.Text
}

// pressLane is the lane of a button press (poller.presses): the held
// call's id for its Run, Cancel, Approve and Reject; the data itself for
// any other button.
func pressLane(data string) string {
	if rest, ok := strings.CutPrefix(data, confirmData); ok {
		if _, id, ok := strings.Cut(rest, ":"); ok {
			return confirmData + id
		}
	}
	return data
}

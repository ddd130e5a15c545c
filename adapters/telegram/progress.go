package telegram

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/clock"
	"github.com/a6afc2ce/hermes-hub/hub"
)

// EditEvery is the least time between two progress edits of one message:
// Telegram limits how often a message may be edited, and a progress message
// that changes every few seconds is readable.
const EditEvery = 3 * time.Second

// finalEditGap is the least time between the last progress edit and the
// final one, which is never skipped.
const finalEditGap = time.Second

// cancelData prefixes the callback data of a progress message's Cancel
// button; the turn id follows (Telegram allows 64 bytes).
const cancelData = "cancel:"

// ProgressView shows the progress of calls from Telegram: one message per
// call, sent when the call has run a few seconds and edited in place (at
// most every EditEvery, waiting out a 429's retry_after) with the elapsed
// time, the last lines of output and a Cancel button. The final edit says
// how the call ended and drops the button; the result follows as the
// reply's chunks, new messages from the outbox, so a delivered chunk is
// never edited, repeated or reordered.
func (a *Adapter) ProgressView() hub.ProgressView { return a.progress }

type progressView struct {
	a *Adapter

	mu    sync.Mutex
	last  map[string]time.Time // "<chat>/<message>": its last edit (or send)
	until map[string]time.Time // "<chat>/<message>": no edit before (a 429)
}

func newProgressView(a *Adapter) *progressView {
	return &progressView{a: a, last: map[string]time.Time{}, until: map[string]time.Time{}}
}

// ShowProgress sends or edits the progress message of u.
func (v *progressView) ShowProgress(ctx context.Context, u hub.ProgressUpdate) (string, error) {
	if u.Target.Kind != chat.KindChat || u.Target.Platform != chat.Telegram {
		return "", fmt.Errorf("telegram: progress for %s is not for a Telegram chat", u.Target)
	}
	chatID := v.a.mig.resolve(u.Target.ChatID)
	p := tgbotapi.Params{"chat_id": chatID, "parse_mode": "HTML", "text": toHTML(u.Text)}
	if !u.Final() {
		kb, _ := json.Marshal(map[string]any{"inline_keyboard": [][]map[string]string{{{"text": "Cancel", "callback_data": cancelData + u.TurnID}}}})
		p["reply_markup"] = string(kb)
	}
	if u.MessageID == "" {
		if u.Final() {
			return "", nil // nothing was shown
		}
		if u.Target.ThreadID != "" {
			p["message_thread_id"] = u.Target.ThreadID
		}
		if to := u.Meta[MetaReplyTo]; to != "" && chatID == u.Target.ChatID {
			p["reply_to_message_id"] = to
			p["allow_sending_without_reply"] = "true"
		}
		raw, err := v.a.api.call(ctx, "sendMessage", p)
		var ae *APIError
		if errors.As(err, &ae) && ae.Code == http.StatusTooManyRequests && ae.RetryAfter > 0 {
			// The chat's sends wait too: the outbox's pacing hears of it.
			v.a.lim.penalize(u.Target.String(), chatID, ae.RetryAfter)
		}
		if err != nil {
			return "", err
		}
		id := messageID(raw)
		v.edited(chatID + "/" + id)
		return id, nil
	}
	key := chatID + "/" + u.MessageID
	p["message_id"] = u.MessageID
	for attempt := 0; ; attempt++ {
		wait := v.wait(key, u.Final())
		if wait > 0 {
			if !u.Final() {
				return u.MessageID, nil // skipped: the next update shows the latest
			}
			if !clock.Sleep(ctx, v.a.clk, wait) {
				return u.MessageID, ctx.Err()
			}
		}
		_, err := v.a.api.call(ctx, "editMessageText", p)
		var ae *APIError
		switch {
		case err == nil, errors.As(err, &ae) && strings.Contains(ae.Description, "message is not modified"):
			v.edited(key)
			if u.Final() {
				v.forget(key)
			}
			return u.MessageID, nil
		case errors.As(err, &ae) && ae.Code == http.StatusTooManyRequests && ae.RetryAfter > 0 && attempt < 3:
			v.limited(key, ae.RetryAfter)
			if !u.Final() {
				return u.MessageID, nil
			}
		case errors.As(err, &ae) && ae.Code == http.StatusBadRequest:
			// The message is gone or can no longer be edited: nothing to do.
			v.forget(key)
			if u.Final() {
				return u.MessageID, nil
			}
			return u.MessageID, err
		default:
			return u.MessageID, err
		}
	}
}

// wait is how long the message must wait for its next edit: a running
// update EditEvery after the last edit, a final one finalEditGap, and both
// until a 429's retry_after has passed.
func (v *progressView) wait(key string, final bool) time.Duration {
	v.mu.Lock()
	defer v.mu.Unlock()
	gap := EditEvery
	if final {
		gap = finalEditGap
	}
	var next time.Time
	if last, ok := v.last[key]; ok {
		next = last.Add(gap)
	}
	if u, ok := v.until[key]; ok && u.After(next) {
		next = u
	}
	if next.IsZero() {
		return 0
	}
	return next.Sub(v.a.clk.Now())
}

// edited records an edit of a message.
func (v *progressView) edited(key string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.last[key] = v.a.clk.Now()
}

// limited records a 429: no edit of the message before d has passed.
func (v *progressView) limited(key string, d time.Duration) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.until[key] = v.a.clk.Now().Add(d)
}

func (v *progressView) forget(key string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	delete(v.last, key)
	delete(v.until, key)
}

// onCallback answers a press on a button, as a toast: a progress
// message's Cancel (the hub stops the call if the presser may) or a held
// call's Run, Cancel, Approve or Reject (onConfirm). decided is called
// once the press is decided and answered, before a call it lets run has
// finished (poller.presses decides the next press of the button then).
func (a *Adapter) onCallback(ctx context.Context, cq *rawCallback, decided func()) {
	var once sync.Once
	answer := func(text string) {
		once.Do(func() {
			a.answerCallback(ctx, cq, text)
			decided()
		})
	}
	text := "This button does nothing any more."
	if data, ok := strings.CutPrefix(cq.Data, confirmData); ok {
		text = a.onConfirm(ctx, cq, data, answer)
	} else if turn, ok := strings.CutPrefix(cq.Data, cancelData); ok && cq.From != nil && cq.Message != nil {
		who := "telegram:" + strconv.FormatInt(cq.From.ID, 10)
		res := a.hub.Cancel(hub.CancelRequest{
			Chat:       chat.Key{Kind: chat.KindChat, Platform: chat.Telegram, ChatID: strconv.FormatInt(cq.Message.Chat.ID, 10)},
			TurnID:     turn,
			Identities: []string{who},
		})
		a.log.Info("telegram: cancel button pressed", "turn", turn, "by", who, "cancelled", len(res.Canceled))
		text = res.Text
	}
	answer(text)
}

// answerCallback shows text to the presser of cq, as a toast.
func (a *Adapter) answerCallback(ctx context.Context, cq *rawCallback, text string) {
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	if _, err := a.api.call(cctx, "answerCallbackQuery", tgbotapi.Params{"callback_query_id": cq.ID, "text": truncateUnits(text, 200)}); err != nil {
		a.log.Warn("telegram: answerCallbackQuery failed", "err", err)
	}
}

// isCancel reports whether a message is the /cancel command, which runs at
// once rather than after the chat's running turn it is meant to stop.
func isCancel(in *chat.Inbound) bool {
	f := strings.Fields(in.Text)
	if len(f) == 0 {
		return false
	}
	name, _, _ := strings.Cut(strings.ToLower(f[0]), "@")
	return name == "/cancel" || name == "/hub.cancel" || name == "/hub_cancel"
}

package discord

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/clock"
	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/hub"
	"github.com/bwmarrin/discordgo"
)

// progressOriginal is the message id the view reports for progress shown in
// an interaction's original (deferred) response; any other id is a message
// in the turn's channel.
const progressOriginal = "@original"

// cancelPrefix starts the custom_id of a progress message's Cancel button;
// the turn id follows (Discord allows 100 characters).
const cancelPrefix = "cancel:"

// maxContent is the most characters Discord accepts in a message.
const maxContent = 2000

// rateLimitAttempts bounds how often one update waits out a rate limit.
const rateLimitAttempts = 3

// handOverNote replaces the original response when the interaction's token
// is about to expire: later progress goes to a channel message.
const handOverNote = "⏳ %s is still running. Discord lets the hub edit this reply for 15 minutes only: its progress continues in a message in this channel, and its result follows there."

// Discord's message component types and button style.
const (
	componentActionRow = 1
	componentButton    = 2
	buttonDanger       = 4
)

// component is a message component: an action row holding a button.
type component struct {
	Type       int         `json:"type"`
	Style      int         `json:"style,omitempty"`
	Label      string      `json:"label,omitempty"`
	CustomID   string      `json:"custom_id,omitempty"`
	Components []component `json:"components,omitempty"`
}

// cancelRow is the Cancel button of a turn's progress message.
func cancelRow(turnID string) []component {
	return []component{{Type: componentActionRow, Components: []component{
		{Type: componentButton, Style: buttonDanger, Label: "Cancel", CustomID: cancelPrefix + turnID},
	}}}
}

// progressEdit is the body of a progress message's edit: the original
// response's (PATCH /webhooks/…/@original) or a channel message's (PATCH
// /channels/…/messages/…). Components is always sent: empty removes the
// button.
type progressEdit struct {
	Content         string          `json:"content"`
	AllowedMentions allowedMentions `json:"allowed_mentions"`
	Components      []component     `json:"components"`
}

// progressPost is the body of a new progress message in a channel.
type progressPost struct {
	Content          string            `json:"content"`
	Nonce            string            `json:"nonce"`
	EnforceNonce     bool              `json:"enforce_nonce"`
	AllowedMentions  allowedMentions   `json:"allowed_mentions"`
	MessageReference *messageReference `json:"message_reference,omitempty"`
	Components       []component       `json:"components"`
}

// ProgressView shows the progress of calls from Discord. A slash command's
// progress fills its deferred response (PATCH …/messages/@original); a
// channel message's is a new message replying to it. Either is edited in
// place with the elapsed time, the last lines of output and a Cancel
// button; a running update that a rate limit (a 429's retry_after, or a
// bucket Discord reported empty) forbids now is skipped, and the final one
// waits it out. Fourteen minutes after a slash command (its token lasts
// fifteen), progress moves to a channel message: the original response
// says so and the channel message carries on; the same happens when
// Discord no longer accepts the token. The final edit says how the call
// ended and removes the button; the result follows as the reply's chunks,
// follow-ups or channel messages from the outbox, so a delivered chunk is
// never edited, repeated or reordered.
func (a *Adapter) ProgressView() hub.ProgressView { return a.progress }

type progressView struct {
	a *Adapter

	mu    sync.Mutex
	until map[string]time.Time // route: no edit before (a rate limit)
}

func newProgressView(a *Adapter) *progressView {
	return &progressView{a: a, until: map[string]time.Time{}}
}

var _ hub.ProgressView = (*progressView)(nil)

// ShowProgress shows u and returns the message that holds it.
func (v *progressView) ShowProgress(ctx context.Context, u hub.ProgressUpdate) (string, error) {
	if u.Target.Kind != chat.KindChat || u.Target.Platform != chat.Discord {
		return "", fmt.Errorf("discord: progress for %s is not for a Discord channel", u.Target)
	}
	edit := progressEdit{Content: progressContent(u), AllowedMentions: noMentions, Components: []component{}}
	if !u.Final() {
		edit.Components = cancelRow(u.TurnID)
	}
	it, isInteraction := interactionOf(u.Meta, v.a.applicationID())
	now := v.a.clock.Now()
	switch {
	case u.MessageID == "" && u.Final():
		return "", nil // nothing was shown
	case u.MessageID == "" && isInteraction && tokenFresh(it, now):
		err := v.editOriginal(ctx, it, edit, false)
		if err != nil && tokenGone(err) {
			return v.post(ctx, u, edit)
		}
		if err != nil {
			return "", err
		}
		return progressOriginal, nil
	case u.MessageID == "":
		return v.post(ctx, u, edit)
	case u.MessageID == progressOriginal && !isInteraction:
		return "", fmt.Errorf("discord: progress of turn %s is in an interaction response, but its meta names no interaction", u.TurnID)
	case u.MessageID == progressOriginal && u.Final():
		if !it.Created.IsZero() && !now.Before(it.Created.Add(InteractionTokenTTL)) {
			return u.MessageID, nil // the token has expired: nothing can edit the response
		}
		if err := v.editOriginal(ctx, it, edit, true); err != nil && !tokenGone(err) {
			return u.MessageID, err
		}
		return u.MessageID, nil
	case u.MessageID == progressOriginal && tokenFresh(it, now):
		err := v.editOriginal(ctx, it, edit, false)
		if err != nil && tokenGone(err) {
			v.a.log.Info("interaction token no longer accepted; progress moves to the channel", "turn", u.TurnID)
			return v.post(ctx, u, edit)
		}
		return u.MessageID, err
	case u.MessageID == progressOriginal:
		// The token expires soon: say so while it still works, then go on
		// in the channel.
		note := progressEdit{Content: fmt.Sprintf(handOverNote, u.Verb), AllowedMentions: noMentions, Components: []component{}}
		if err := v.editOriginal(ctx, it, note, true); err != nil && !tokenGone(err) {
			v.a.log.Warn("progress hand-over note not shown", "turn", u.TurnID, "err", err)
		}
		return v.post(ctx, u, edit)
	}
	err := v.edit(ctx, request{Method: http.MethodPatch, Path: "/channels/" + u.Target.ChatID + "/messages/" + u.MessageID, Body: edit}, u.Final())
	if err != nil && u.Final() {
		if status, _, ok := apiCode(err); ok && status == http.StatusNotFound {
			return u.MessageID, nil // the message was deleted: nothing to finalise
		}
	}
	return u.MessageID, err
}

// tokenFresh reports whether an interaction's token may still be used for
// progress: until a minute before it expires, as for the reply's chunks.
func tokenFresh(it interactionRef, now time.Time) bool {
	return it.Created.IsZero() || now.Before(it.Created.Add(InteractionTokenTTL-tokenMargin))
}

// editOriginal edits the interaction's original response with the view's
// pacing.
func (v *progressView) editOriginal(ctx context.Context, it interactionRef, body progressEdit, final bool) error {
	return v.edit(ctx, request{Method: http.MethodPatch, Path: "/webhooks/" + it.AppID + "/" + it.Token + "/messages/@original", Body: body, Secret: it.Token}, final)
}

// post sends a new progress message to the turn's channel, replying to the
// message that asked, with a nonce derived from the turn so that a repeated
// post returns the message already created.
func (v *progressView) post(ctx context.Context, u hub.ProgressUpdate, edit progressEdit) (string, error) {
	if u.Final() {
		return "", nil
	}
	p := progressPost{Content: edit.Content, Nonce: Nonce("progress:" + u.TurnID), EnforceNonce: true, AllowedMentions: noMentions, Components: edit.Components}
	if to := u.Meta[MetaReplyTo]; to != "" {
		p.MessageReference = &messageReference{MessageID: to, FailIfNotExists: false}
	}
	body, err := v.a.call(ctx, request{Method: http.MethodPost, Path: "/channels/" + u.Target.ChatID + "/messages", Body: p})
	if err != nil {
		return "", err
	}
	id := messageID(body)
	if id == "" {
		return "", fmt.Errorf("discord: the progress message of turn %s was posted, but Discord's answer names no message", u.TurnID)
	}
	return id, nil
}

// edit makes one paced edit: while a rate limit holds the route, a running
// update is skipped (nil) and a final one waits, a few times at most.
func (v *progressView) edit(ctx context.Context, r request, final bool) error {
	key := r.Method + " " + r.Path
	for attempt := 0; ; attempt++ {
		if wait := v.wait(key); wait > 0 {
			if !final {
				return nil // skipped: the next update shows the latest
			}
			if !clock.Sleep(ctx, v.a.clock, wait) {
				return ctx.Err()
			}
		}
		_, err := v.a.call(ctx, r)
		var rl *rateLimited
		switch {
		case err == nil:
			v.forget(key)
			return nil
		case errors.As(err, &rl) && attempt < rateLimitAttempts:
			v.limited(key, rl.After)
			if !final {
				return nil
			}
		default:
			return err
		}
	}
}

// wait is how long the route must wait for its next edit.
func (v *progressView) wait(key string) time.Duration {
	v.mu.Lock()
	defer v.mu.Unlock()
	u, ok := v.until[key]
	if !ok {
		return 0
	}
	return u.Sub(v.a.clock.Now())
}

// limited records a rate limit: no edit on the route before d has passed.
func (v *progressView) limited(key string, d time.Duration) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.until[key] = v.a.clock.Now().Add(d)
}

func (v *progressView) forget(key string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	delete(v.until, key)
}

// cancelHint is how the hub's progress text says a call can be stopped,
// and discordCancelHint how it is done on Discord: the slash command is
// /hub cancel (a typed message needs the prefix).
const (
	cancelHint        = "(/cancel stops it)"
	discordCancelHint = "(/hub cancel or the button stops it)"
)

// progressContent is u's text for Discord, within a message's 2,000
// characters: the oldest lines of the tail go first.
func progressContent(u hub.ProgressUpdate) string {
	u.Text = strings.Replace(u.Text, cancelHint, discordCancelHint, 1)
	s := discordText(u.Text)
	if utf8.RuneCountInString(s) <= maxContent {
		return s
	}
	status, _, _ := strings.Cut(u.Text, "\n")
	lines := strings.Split(u.Tail, "\n")
	for len(lines) > 1 {
		lines = lines[1:]
		s = discordText(status + "\n" + executor.Fence(strings.Join(lines, "\n"), ""))
		if utf8.RuneCountInString(s) <= maxContent {
			return s
		}
	}
	return truncate(discordText(status), maxContent)
}

// onComponent answers a press on a progress message's Cancel button: the
// hub stops the call if the presser may (its caller, or an identity whose
// role grants admin.cancel), and the answer shows to the presser only.
func (a *Adapter) onComponent(ctx context.Context, it *discordgo.Interaction) {
	user := it.User
	var roles []string
	if it.Member != nil {
		if it.Member.User != nil {
			user = it.Member.User
		}
		roles = it.Member.Roles
	}
	data, ok := it.Data.(discordgo.MessageComponentInteractionData)
	turn, isCancel := strings.CutPrefix(data.CustomID, cancelPrefix)
	held, isConfirm := strings.CutPrefix(data.CustomID, confirmPrefix)
	switch {
	case user == nil:
		return
	case !a.allowedPlace(it.GuildID, it.ChannelID):
		a.respondNow(ctx, it, "This hub does not serve this server or channel.")
		return
	case ok && isConfirm:
		a.pressConfirm(ctx, it, held, user.ID, roles)
		return
	case !ok || !isCancel || turn == "":
		a.respondNow(ctx, it, "This button does nothing any more.")
		return
	}
	ids := hub.Identities(&chat.Inbound{Platform: chat.Discord, UserID: user.ID, RoleIDs: roles})
	res := a.hub.Cancel(hub.CancelRequest{Chat: chat.ChatKey(chat.Discord, it.ChannelID, ""), TurnID: turn, Identities: ids})
	a.log.Info("cancel button pressed", "turn", turn, "by", ids[0], "cancelled", len(res.Canceled))
	a.respondNow(ctx, it, res.Text)
}

// isCancel reports whether a turn is the cancel command (/cancel, or
// /hub cancel), which runs at once: never behind the call it stops, nor
// waiting for a turn slot.
func isCancel(in *chat.Inbound) bool {
	f := strings.Fields(in.Text)
	if len(f) == 0 {
		return false
	}
	name := strings.ToLower(f[0])
	return name == "/cancel" || name == "/hub.cancel" || name == "/hub_cancel"
}

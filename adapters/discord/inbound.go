package discord

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/clock"
	"github.com/a6afc2ce/hermes-hub/hub"
	"github.com/a6afc2ce/hermes-hub/outbox"
	"github.com/bwmarrin/discordgo"
)

// RestartNotice is what an interaction's deferred response says while its
// turn, accepted but cut short by the hub stopping, waits for the next
// start, whose answer replaces it.
const RestartNotice = "⚠ The hub is restarting; the command runs when it is back."

// directTimeout bounds a response the adapter sends itself, outside the
// outbox (an interaction it cannot hand to the hub).
const directTimeout = 5 * time.Second

// onInteraction runs on the gateway's event loop: it only checks the event
// and hands it to a goroutine, which defers first and then runs the turn.
func (a *Adapter) onInteraction(_ *discordgo.Session, ic *discordgo.InteractionCreate) {
	if ic != nil && ic.Interaction != nil && ic.Type == discordgo.InteractionMessageComponent && ic.ID != "" && ic.Token != "" {
		// A button: answered at once, never behind a turn.
		if a.recent.add("i:" + ic.ID) {
			it := ic.Interaction
			if lane, ok := confirmLane(it); ok {
				a.inOrder(lane, func(ctx context.Context) { a.onComponent(ctx, it) })
			} else {
				a.spawn(func(ctx context.Context) { a.onComponent(ctx, it) })
			}
		}
		return
	}
	if ic == nil || ic.Interaction == nil || ic.Type != discordgo.InteractionApplicationCommand {
		return
	}
	data, ok := ic.Data.(discordgo.ApplicationCommandInteractionData)
	if !ok || ic.ID == "" || ic.Token == "" {
		return
	}
	received := a.clock.Now()
	if !a.recent.add("i:" + ic.ID) {
		a.log.Debug("interaction delivered again; ignored", "interaction", ic.ID)
		return
	}
	it := ic.Interaction
	a.spawn(func(ctx context.Context) { a.handleInteraction(ctx, it, data, received) })
}

// handleInteraction defers the interaction (ephemeral when the answer will
// be a denial or a parse error), then runs the turn in a slot. The deferral
// never waits for a slot.
func (a *Adapter) handleInteraction(ctx context.Context, it *discordgo.Interaction, data discordgo.ApplicationCommandInteractionData, received time.Time) {
	user := it.User
	var roles []string
	if it.Member != nil {
		if it.Member.User != nil {
			user = it.Member.User
		}
		roles = it.Member.Roles
	}
	if user == nil {
		return
	}
	if !a.allowedPlace(it.GuildID, it.ChannelID) {
		a.respondNow(ctx, it, "This hub does not serve this server or channel.")
		return
	}
	inv, err := a.cmds.Load().invocation(data)
	if err != nil {
		a.respondNow(ctx, it, "⚠ "+err.Error())
		return
	}
	app := it.AppID
	if app == "" {
		app = a.applicationID()
	}
	in := &chat.Inbound{
		TurnID: "discord.i." + it.ID, Platform: chat.Discord, ChatID: it.ChannelID, MessageID: it.ID,
		UserID: user.ID, UserName: user.Username, RoleIDs: roles, GuildID: it.GuildID,
		ChatType: chat.ChatDM, ChatTitle: a.title(it.GuildID, it.ChannelID),
		Text: inv.Text, Time: received, Upload: inv.Upload,
		Meta: map[string]string{"command": inv.Display},
		ReplyMeta: map[string]string{
			MetaInteractionID: it.ID, MetaInteractionToken: it.Token, MetaApplicationID: app,
			MetaInteractionCreated: received.UTC().Format("2006-01-02T15:04:05.000Z07:00"),
		},
	}
	if it.GuildID != "" {
		in.ChatType = chat.ChatGuildText
	}
	ephemeral := a.hub.Preview(in).Private
	if ephemeral {
		in.ReplyMeta[MetaEphemeral] = "1"
	}
	ref := interactionRef{ID: it.ID, Token: it.Token, AppID: app, Created: received, Ephemeral: ephemeral}
	// Discord never delivers an interaction again: record it before the
	// acknowledgement, so a hub that stops before running it runs it at
	// its next start.
	if err := a.hub.Accept(ctx, in); err != nil {
		a.log.Error("interaction not recorded; not run", "interaction", it.ID, "err", err)
		a.respondNow(ctx, it, "⚠ The hub could not record this command; its log says why.")
		return
	}
	if err := a.deferInteraction(ctx, ref); err != nil && !runAfterDeferral(err) {
		// Discord refused the acknowledgement (the window passed, the
		// interaction is unknown, a rate limit outlasted the window): the
		// user saw a failure, so nothing runs, now or later.
		a.log.Warn("interaction not acknowledged; not run", "interaction", it.ID, "err", err)
		if err := a.hub.Abandon(in.TurnID); err != nil {
			a.log.Error("forget unacknowledged interaction", "interaction", it.ID, "err", err)
		}
		return
	} else if err != nil {
		a.log.Warn("interaction deferral uncertain; running it", "interaction", it.ID, "err", err)
	}
	res, ok := a.handle(ctx, in)
	switch {
	case !ok:
		// Recorded: the next start runs it and answers here.
		a.editNow(ctx, ref, RestartNotice)
	case res.Status == hub.StatusDenied && len(res.Outbox) == 0:
		// The stranger was told within the hour; close the deferral briefly.
		a.editNow(ctx, ref, "This hub does not know you ("+in.Identity()+").")
	case res.Status != hub.StatusDuplicate && len(res.Outbox) == 0:
		a.deleteNow(ctx, ref)
	}
}

// deferInteraction acknowledges the interaction with a deferred channel
// message (type 5), ephemeral (flags 64) when ref says so. A rate limit is
// waited out while Discord's 3-second window lasts.
func (a *Adapter) deferInteraction(ctx context.Context, ref interactionRef) error {
	ctx, cancel := context.WithTimeout(ctx, deferBudget)
	defer cancel()
	type data struct {
		Flags int `json:"flags,omitempty"`
	}
	body := struct {
		Type int   `json:"type"`
		Data *data `json:"data,omitempty"`
	}{Type: int(discordgo.InteractionResponseDeferredChannelMessageWithSource)}
	if ref.Ephemeral {
		body.Data = &data{Flags: flagEphemeral}
	}
	for {
		_, err := a.call(ctx, request{Method: http.MethodPost, Path: "/interactions/" + ref.ID + "/" + ref.Token + "/callback", Body: body, Secret: ref.Token})
		var rl *rateLimited
		if err == nil || !errors.As(err, &rl) {
			return err
		}
		if !clock.Sleep(ctx, a.clock, rl.After) {
			return err
		}
	}
}

// runAfterDeferral decides whether a turn runs after its deferral failed:
// yes when the interaction was already acknowledged (a repeated delivery,
// which the hub's ledger answers as a duplicate) or when the outcome is
// unknown (no answer, a 5xx), since Discord may have taken it; no when
// Discord refused it or the rate limit outlasted the window.
func runAfterDeferral(err error) bool {
	var rl *rateLimited
	if errors.As(err, &rl) {
		return false
	}
	if status, code, ok := apiCode(err); ok {
		return code == codeAlreadyAcknowledged || status >= 500
	}
	return true
}

// respondNow answers an interaction the hub never sees (not served here, a
// command the registry no longer has) with an ephemeral message.
func (a *Adapter) respondNow(ctx context.Context, it *discordgo.Interaction, text string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), directTimeout)
	defer cancel()
	body := struct {
		Type int            `json:"type"`
		Data webhookMessage `json:"data"`
	}{Type: int(discordgo.InteractionResponseChannelMessageWithSource), Data: webhookBody(message{Content: text}, flagEphemeral)}
	if _, err := a.call(ctx, request{Method: http.MethodPost, Path: "/interactions/" + it.ID + "/" + it.Token + "/callback", Body: body, Secret: it.Token}); err != nil {
		a.log.Warn("interaction response failed", "interaction", it.ID, "err", err)
	}
}

// editNow replaces a deferred response the outbox will not answer.
func (a *Adapter) editNow(ctx context.Context, ref interactionRef, text string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), directTimeout)
	defer cancel()
	if _, err := a.editOriginal(ctx, ref, message{Content: text}); err != nil {
		a.log.Warn("interaction response edit failed", "interaction", ref.ID, "err", err)
	}
}

// deleteNow removes a deferred response that gets no answer.
func (a *Adapter) deleteNow(ctx context.Context, ref interactionRef) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), directTimeout)
	defer cancel()
	if _, err := a.call(ctx, request{Method: http.MethodDelete, Path: "/webhooks/" + ref.AppID + "/" + ref.Token + "/messages/@original", Secret: ref.Token}); err != nil {
		a.log.Warn("interaction response delete failed", "interaction", ref.ID, "err", err)
	}
}

// onMessage runs on the gateway's event loop: a message that mentions the
// bot, starts with the prefix or comes in a direct message becomes a turn
// in the same chat grammar, run after the earlier turns of its channel.
func (a *Adapter) onMessage(_ *discordgo.Session, mc *discordgo.MessageCreate) {
	if mc == nil || mc.Message == nil {
		return
	}
	m := mc.Message
	if m.Author == nil || m.Author.Bot || m.WebhookID != "" || m.Author.ID == a.botUserID() {
		return
	}
	if m.Type != discordgo.MessageTypeDefault && m.Type != discordgo.MessageTypeReply {
		return
	}
	text, ok := a.triggered(m)
	if !ok || !a.allowedPlace(m.GuildID, m.ChannelID) {
		return
	}
	if !a.recent.add("m:" + m.ID) {
		return
	}
	in := a.messageInbound(m, text, a.clock.Now())
	// Gateway events are not replayed after a restart: record the message
	// before it waits for its turn, so a hub that stops first runs it at
	// its next start.
	if err := a.hub.Accept(context.Background(), in); err != nil {
		a.log.Error("message not recorded; not run", "message", m.ID, "err", err)
		return
	}
	if isCancel(in) {
		// /cancel must not wait behind the turn it stops.
		a.spawn(func(ctx context.Context) { a.handleMessage(ctx, in) })
		return
	}
	a.inOrder(m.ChannelID, func(ctx context.Context) { a.handleMessage(ctx, in) })
}

func (a *Adapter) handleMessage(ctx context.Context, in *chat.Inbound) {
	a.handle(ctx, in) // false: recorded, the next start runs it
}

// turnBackoff spaces the attempts at a turn the hub could not record.
var turnBackoff = outbox.Backoff{Base: time.Second, Max: 30 * time.Second}

// handle runs an accepted turn through the hub, one of at most
// discord.concurrency at a time (a cancel command takes no slot). When the hub cannot record it (its mirror
// or database failing), it tries again with backoff, as the Telegram
// adapter does, rather than tell the user it failed while the turn, still
// accepted, would run at the next start. It reports false when ctx ended
// first: the turn stays accepted and runs at the next start.
func (a *Adapter) handle(ctx context.Context, in *chat.Inbound) (*hub.TurnResult, bool) {
	slot := !isCancel(in) // /cancel never waits for a slot the calls it stops hold
	for attempt := 1; ; attempt++ {
		if slot && !a.acquire(ctx) {
			return nil, false
		}
		res, err := a.hub.Handle(ctx, in)
		if slot {
			a.release()
		}
		switch {
		case err == nil:
			return res, true
		case res != nil && len(res.Outbox) > 0:
			// The reply is in the outbox; only bookkeeping after it failed.
			a.log.Error("turn", "turn", in.TurnID, "err", err)
			return res, true
		}
		d := turnBackoff.Delay(attempt)
		a.board(hub.StateDegraded, "the hub could not record turn "+in.TurnID)
		a.log.Error("the hub could not record a turn; it is kept and retried", "turn", in.TurnID, "err", err, "retry_in", d)
		if !clock.Sleep(ctx, a.clock, d) {
			return nil, false
		}
		a.board(hub.StateRunning, "connected")
	}
}

// messageInbound normalises a channel message addressed to the hub.
func (a *Adapter) messageInbound(m *discordgo.Message, text string, received time.Time) *chat.Inbound {
	var roles []string
	if m.Member != nil {
		roles = m.Member.Roles
	}
	t := m.Timestamp
	if t.IsZero() {
		t = received
	}
	in := &chat.Inbound{
		TurnID: "discord." + m.ChannelID + "." + m.ID, Platform: chat.Discord, ChatID: m.ChannelID, MessageID: m.ID,
		UserID: m.Author.ID, UserName: m.Author.Username, RoleIDs: roles, GuildID: m.GuildID,
		ChatType: chat.ChatDM, ChatTitle: a.title(m.GuildID, m.ChannelID), Text: text, Time: t,
		ReplyMeta: map[string]string{MetaReplyTo: m.ID},
	}
	in.Upload, in.ExtraFiles = messageUpload(m)
	if m.GuildID != "" {
		in.ChatType = chat.ChatGuildText
	}
	return in
}

// triggered returns the command text of a message addressed to the hub:
// in a guild, one that mentions the bot (when discord.mention is on) or
// starts with discord.prefix; in a direct message, any. The mention or
// prefix is removed, and a bare "verb args" gets its slash. A message
// with a file keeps its text as it is: the file's caption (a path, or
// /upload PATH).
func (a *Adapter) triggered(m *discordgo.Message) (string, bool) {
	content := m.Content
	file := len(m.Attachments) > 0
	command := commandText
	if file {
		command = strings.TrimSpace
	}
	bot := a.botUserID()
	mentioned := bot != "" && (strings.Contains(content, "<@"+bot+">") || strings.Contains(content, "<@!"+bot+">"))
	if mentioned && (m.GuildID == "" || a.cfg.Mention == nil || *a.cfg.Mention) {
		return command(stripMention(content, bot)), true
	}
	if p := a.cfg.Prefix; p != "" && strings.HasPrefix(content, p) {
		return command(content[len(p):]), true
	}
	if m.GuildID == "" && file {
		return strings.TrimSpace(content), true
	}
	if m.GuildID == "" {
		return content, strings.TrimSpace(content) != ""
	}
	return "", false
}

func stripMention(s, bot string) string {
	s = strings.ReplaceAll(s, "<@!"+bot+">", "")
	return strings.ReplaceAll(s, "<@"+bot+">", "")
}

// commandText makes addressed text a command: "" asks for help, and text
// that is neither a /command nor an envelope gets its slash.
func commandText(s string) string {
	s = strings.TrimSpace(s)
	switch {
	case s == "":
		return "/help"
	case strings.HasPrefix(s, "/"), strings.HasPrefix(s, "{"), strings.HasPrefix(s, "verb:"), strings.HasPrefix(s, `"verb"`):
		return s
	}
	return "/" + s
}

package discord

import (
	"context"
	"crypto/sha256"
	"fmt"
	"math/big"
	"net/http"
	"time"

	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/hub"
	"github.com/a6afc2ce/hermes-hub/outbox"
)

// Reply meta keys: what the adapter puts on an interaction's inbound, which
// the hub copies onto every reply entry.
const (
	MetaInteractionID      = "interaction_id"
	MetaInteractionToken   = "interaction_token"
	MetaApplicationID      = "application_id"
	MetaInteractionCreated = "interaction_created" // RFC 3339 with milliseconds
	// MetaEphemeral is "1" when the interaction was deferred ephemeral, which
	// fixes the original response as visible to the asker only.
	MetaEphemeral = "ephemeral"
	// MetaReplyTo is the message a channel-message turn answers.
	MetaReplyTo = "reply_to_message_id"
)

// InteractionTokenTTL is how long Discord accepts an interaction's token.
const InteractionTokenTTL = 15 * time.Minute

// tokenMargin is how long before the token expires the sender stops using
// it: a chunk sent later goes to the channel as a normal message.
const tokenMargin = time.Minute

// privateNotice replaces a publicly deferred response whose answer turned
// out private (a verb that failed): the details follow, visible to the
// asker only.
const privateNotice = "⚠ The command failed; the details were sent only to you."

// flagEphemeral is Discord's message flag for "only you can see this".
const flagEphemeral = 1 << 6

// Sender delivers outbox entries to Discord; it is the adapter's
// outbox.Sender for "chat:discord" targets.
type Sender struct{ a *Adapter }

var _ outbox.Sender = (*Sender)(nil)

// allowedMentions with no parse types: output never pings anyone.
type allowedMentions struct {
	Parse []string `json:"parse"`
}

var noMentions = allowedMentions{Parse: []string{}}

type attachmentRef struct {
	ID       int    `json:"id"`
	Filename string `json:"filename"`
}

type messageReference struct {
	MessageID       string `json:"message_id"`
	FailIfNotExists bool   `json:"fail_if_not_exists"`
}

// channelMessage is the body of POST /channels/{id}/messages. discordgo's
// MessageSend has neither nonce nor enforce_nonce.
type channelMessage struct {
	Content          string            `json:"content,omitempty"`
	Nonce            string            `json:"nonce"`
	EnforceNonce     bool              `json:"enforce_nonce"`
	AllowedMentions  allowedMentions   `json:"allowed_mentions"`
	MessageReference *messageReference `json:"message_reference,omitempty"`
	Attachments      []attachmentRef   `json:"attachments,omitempty"`
	Components       []component       `json:"components,omitempty"`
}

// webhookMessage is the body of an interaction's original-response edit
// and of its follow-ups.
type webhookMessage struct {
	Content         string          `json:"content"`
	AllowedMentions allowedMentions `json:"allowed_mentions"`
	Flags           int             `json:"flags,omitempty"`
	Attachments     []attachmentRef `json:"attachments,omitempty"`
	Components      []component     `json:"components,omitempty"`
}

// interactionRef is what a reply entry says about its interaction.
type interactionRef struct {
	ID, Token, AppID string
	Created          time.Time // zero when unknown
	Ephemeral        bool
}

func interactionOf(meta map[string]string, fallbackApp string) (interactionRef, bool) {
	tok := meta[MetaInteractionToken]
	if tok == "" {
		return interactionRef{}, false
	}
	r := interactionRef{ID: meta[MetaInteractionID], Token: tok, AppID: meta[MetaApplicationID], Ephemeral: meta[MetaEphemeral] == "1"}
	if r.AppID == "" {
		r.AppID = fallbackApp
	}
	if t, err := time.Parse(time.RFC3339Nano, meta[MetaInteractionCreated]); err == nil {
		r.Created = t
	}
	return r, r.AppID != ""
}

// Nonce is the enforce_nonce value of an outbox entry's channel message: a
// deterministic function of its id, base 36 of the first 16 bytes of its
// SHA-256, at most 25 characters (Discord's limit).
func Nonce(outboxID string) string {
	sum := sha256.Sum256([]byte(outboxID))
	return new(big.Int).SetBytes(sum[:16]).Text(36)
}

// Send delivers one chunk. An interaction's first chunk edits the deferred
// response and the others follow it up; once the token has expired (or
// Discord no longer knows it) the chunk goes to the channel as a normal
// message, with a nonce so a resend never posts it twice.
func (s *Sender) Send(ctx context.Context, e *outbox.Entry) (outbox.Receipt, error) {
	a := s.a
	k := e.Target
	if k.Kind != chat.KindChat || k.Platform != chat.Discord {
		return outbox.Receipt{}, outbox.Permanent(fmt.Errorf("discord sender: target %q is not a Discord channel (accepted: chat:discord:<channel_id>)", k))
	}
	m := prepare(e)
	if err := loadFile(e, &m); err != nil {
		return outbox.Receipt{}, err
	}
	if it, ok := interactionOf(e.Meta, a.applicationID()); ok {
		if it.Created.IsZero() || a.clock.Now().Before(it.Created.Add(InteractionTokenTTL-tokenMargin)) {
			id, err := a.sendInteraction(ctx, e, it, m)
			if err == nil {
				return outbox.Receipt{MessageID: id}, nil
			}
			if !tokenGone(err) {
				return outbox.Receipt{}, classify(err)
			}
			a.log.Info("interaction token no longer accepted; sending to the channel", "outbox_id", e.ID, "err", err)
		}
	}
	id, err := a.sendChannel(ctx, e, k.ChatID, m)
	if err != nil {
		return outbox.Receipt{}, classify(err)
	}
	return outbox.Receipt{MessageID: id}, nil
}

// sendInteraction answers through the interaction's webhook. A private
// answer (an error) to a publicly deferred interaction replaces the
// deferred response with a neutral line and follows up, visible to the
// asker only, with the details. When the call's progress was shown in the
// original response, every chunk is a follow-up.
func (a *Adapter) sendInteraction(ctx context.Context, e *outbox.Entry, it interactionRef, m message) (string, error) {
	private := e.Meta[hub.MetaPrivate] == "1"
	// After progress, the original response holds the progress message's
	// final line: every chunk follows it up.
	if e.Index > 0 || e.Meta[hub.MetaProgress] == "1" {
		return a.followUp(ctx, it, m, private || it.Ephemeral)
	}
	if private && !it.Ephemeral {
		if _, err := a.editOriginal(ctx, it, message{Content: privateNotice}); err != nil {
			return "", err
		}
		return a.followUp(ctx, it, m, true)
	}
	return a.editOriginal(ctx, it, m)
}

func webhookBody(m message, flags int) webhookMessage {
	w := webhookMessage{Content: m.Content, AllowedMentions: noMentions, Flags: flags, Components: m.Components}
	if m.File != nil {
		w.Attachments = []attachmentRef{{ID: 0, Filename: m.File.Name}}
	}
	return w
}

// editOriginal edits the deferred response: PATCH
// /webhooks/{app}/{token}/messages/@original. Repeating it is harmless.
func (a *Adapter) editOriginal(ctx context.Context, it interactionRef, m message) (string, error) {
	body, err := a.call(ctx, request{
		Method: http.MethodPatch, Path: "/webhooks/" + it.AppID + "/" + it.Token + "/messages/@original",
		Body: webhookBody(m, 0), File: m.File, Secret: it.Token,
	})
	if err != nil {
		return "", err
	}
	return messageID(body), nil
}

// followUp posts a follow-up message: POST /webhooks/{app}/{token}?wait=true.
func (a *Adapter) followUp(ctx context.Context, it interactionRef, m message, ephemeral bool) (string, error) {
	flags := 0
	if ephemeral {
		flags = flagEphemeral
	}
	body, err := a.call(ctx, request{
		Method: http.MethodPost, Path: "/webhooks/" + it.AppID + "/" + it.Token, Query: "wait=true",
		Body: webhookBody(m, flags), File: m.File, Secret: it.Token,
	})
	if err != nil {
		return "", err
	}
	return messageID(body), nil
}

// sendChannel posts a normal message with the entry's nonce and
// enforce_nonce, so that Discord answers a resend with the message it
// already created. The first chunk of a channel-message turn replies to
// the message that asked.
func (a *Adapter) sendChannel(ctx context.Context, e *outbox.Entry, channelID string, m message) (string, error) {
	cm := channelMessage{Content: m.Content, Nonce: Nonce(e.ID), EnforceNonce: true, AllowedMentions: noMentions, Components: m.Components}
	if to := e.Meta[MetaReplyTo]; to != "" && e.Index == 0 {
		cm.MessageReference = &messageReference{MessageID: to, FailIfNotExists: false}
	}
	if m.File != nil {
		cm.Attachments = []attachmentRef{{ID: 0, Filename: m.File.Name}}
	}
	body, err := a.call(ctx, request{Method: http.MethodPost, Path: "/channels/" + channelID + "/messages", Body: cm, File: m.File})
	if err != nil {
		return "", err
	}
	return messageID(body), nil
}

// tokenGone reports whether Discord refused an interaction webhook because
// the token expired or the response is gone: the chunk goes to the channel.
func tokenGone(err error) bool {
	status, code, ok := apiCode(err)
	if !ok {
		return false
	}
	switch code {
	case codeUnknownWebhook, codeInvalidWebhookToken, codeUnknownMessage, codeUnknownInteraction:
		return true
	}
	return status == http.StatusUnauthorized && code == 0
}

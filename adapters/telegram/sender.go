package telegram

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/outbox"
)

// captionLimit is Telegram's limit on a document caption, in UTF-16 units.
const captionLimit = 1024

// errPaced is the cause of a RetryAfter the sender returns for its own
// pacing, before Telegram is asked at all.
var errPaced = errors.New("telegram: paced to stay within Telegram's rate limits")

// Sender is the outbox.Sender of chat:telegram targets: it delivers chunks
// to Telegram chats, within the rate limits, with migrations followed.
type Sender struct{ a *Adapter }

var _ outbox.Sender = (*Sender)(nil)

// Send delivers one chunk: sendMessage in HTML parse mode (the first chunk
// of a reply answers the command message; every chunk of a forum topic
// carries message_thread_id), or sendDocument for an overflow attachment.
// Errors are classified for the outbox: 429 waits exactly retry_after,
// a refused chat (blocked, not found, no rights) is permanent, and 5xx or a
// network failure is transient. Markup Telegram cannot parse is sent once
// more as plain text; a group that became a supergroup is recorded and the
// chunk goes to the new chat.
func (s *Sender) Send(ctx context.Context, e *outbox.Entry) (outbox.Receipt, error) {
	k := e.Target
	if k.Kind != chat.KindChat || k.Platform != chat.Telegram {
		return outbox.Receipt{}, outbox.Permanent(fmt.Errorf("telegram: target %q is not a chat:telegram:<chat_id>[:<thread_id>] key", k))
	}
	target := k.String() // the limiter's name of the target
	chatID := s.a.mig.resolve(k.ChatID)
	if d := s.a.lim.wait(target, chatID); d > 0 {
		return outbox.Receipt{}, outbox.RetryAfter(d, errPaced)
	}
	replyTo := ""
	if e.Index == 0 && chatID == k.ChatID {
		replyTo = e.Meta[MetaReplyTo]
	}
	id, err := s.deliver(ctx, e, chatID, k.ThreadID, replyTo)
	var ae *APIError
	if errors.As(err, &ae) && ae.MigrateTo != 0 {
		to := strconv.FormatInt(ae.MigrateTo, 10)
		s.a.applyMigration(migration{from: chatID, to: to})
		// Message ids do not carry over to the supergroup: no reply.
		chatID = to
		id, err = s.deliver(ctx, e, chatID, k.ThreadID, "")
	}
	if err != nil {
		return outbox.Receipt{}, s.classify(target, chatID, err)
	}
	return outbox.Receipt{MessageID: id}, nil
}

// deliver sends the chunk once in HTML and, if Telegram cannot parse the
// markup, once more as plain text.
func (s *Sender) deliver(ctx context.Context, e *outbox.Entry, chatID, threadID, replyTo string) (string, error) {
	id, err := s.sendOnce(ctx, e, chatID, threadID, replyTo, true)
	var ae *APIError
	if errors.As(err, &ae) && ae.cantParse() {
		s.a.log.Warn("telegram: Telegram could not parse the chunk's HTML; sending it as plain text", "id", e.ID, "err", err)
		id, err = s.sendOnce(ctx, e, chatID, threadID, replyTo, false)
	}
	return id, err
}

func (s *Sender) sendOnce(ctx context.Context, e *outbox.Entry, chatID, threadID, replyTo string, html bool) (string, error) {
	p := tgbotapi.Params{"chat_id": chatID}
	if threadID != "" {
		p["message_thread_id"] = threadID
	}
	if replyTo != "" {
		p["reply_to_message_id"] = replyTo
		p["allow_sending_without_reply"] = "true"
	}
	if html {
		p["parse_mode"] = "HTML"
	}
	if a := e.Attachment; a != nil {
		caption := truncateUnits(e.Text, captionLimit)
		if html {
			caption = toHTML(caption)
		} else {
			caption = plainText(caption)
		}
		if caption != "" {
			p["caption"] = caption
		}
		name := a.Name
		if name == "" {
			name = chat.DefaultAttachmentName
		}
		// The bytes come from the stored entry, or the state's files/, on
		// every attempt, so a retry sends the same document again.
		body, err := a.Reader()
		if err != nil {
			return "", outbox.Permanent(err)
		}
		defer body.Close()
		raw, err := s.a.api.upload(ctx, "sendDocument", p, "document", tgbotapi.FileReader{Name: name, Reader: body})
		if err != nil {
			return "", err
		}
		return messageID(raw), nil
	}
	if kb := confirmKeyboard(e); kb != "" {
		p["reply_markup"] = kb
	}
	if html {
		p["text"] = toHTML(e.Text)
	} else {
		p["text"] = plainText(e.Text)
	}
	raw, err := s.a.api.call(ctx, "sendMessage", p)
	if err != nil {
		return "", err
	}
	return messageID(raw), nil
}

// classify maps a failed send to the outbox's classes.
func (s *Sender) classify(target, chatID string, err error) error {
	var ae *APIError
	if !errors.As(err, &ae) {
		return outbox.Transient(err) // no answer: network, timeout
	}
	switch {
	case ae.Code == http.StatusTooManyRequests && ae.RetryAfter > 0:
		s.a.lim.penalize(target, chatID, ae.RetryAfter)
		return outbox.RetryAfter(ae.RetryAfter, err)
	case ae.Code == http.StatusBadRequest, ae.Code == http.StatusForbidden:
		// Bad request (chat not found, not enough rights, topic closed,
		// markup refused twice) or forbidden (blocked, kicked): sending the
		// same chunk again cannot succeed.
		return outbox.Permanent(err)
	default:
		// 5xx, a 429 without retry_after, 401/404 (a token or endpoint
		// problem, not the chunk's): retry with backoff.
		return outbox.Transient(err)
	}
}

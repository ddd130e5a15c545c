package chat

import (
	"strings"
	"time"
)

// Inbound is one message from a person or agent, normalised by an adapter.
// It is typed on purpose: platform specifics that the hub needs have a field;
// Meta holds only small, display-only extras.
type Inbound struct {
	// TurnID is deterministic from the platform event, such as
	// "telegram.<chat_id>.<message_id>"; it contains no ':'
	// (docs/architecture.md, "Glossary").
	TurnID   string
	Platform Platform
	// ChatID, ThreadID and MessageID are the platform's ids as decimal strings.
	ChatID    string
	ThreadID  string
	MessageID string
	// UserID and UserName identify the sender; RoleIDs are Discord role ids.
	UserID   string
	UserName string
	RoleIDs  []string
	// GuildID is the Discord server, empty elsewhere.
	GuildID string
	// ChatType is the platform's kind of chat.
	ChatType ChatType
	// ChatTitle and TopicTitle name the chat and forum topic for the directory.
	ChatTitle  string
	TopicTitle string
	Text       string
	Edited     bool
	Time       time.Time
	// Upload is the file that came with the message (a document, a photo,
	// an attachment, a file dropped in the panel); nil when none did.
	Upload *Upload
	// ExtraFiles counts the files beyond Upload that came with the
	// message: the hub saves one file per message and refuses the others.
	ExtraFiles int
	// Meta carries small, display-only platform extras that the mirrors
	// record.
	Meta map[string]string
	// ReplyMeta carries what the platform's sender needs to answer this
	// message (the message to reply to, an interaction's token). It is copied
	// onto the reply's outbox entries and never mirrored.
	ReplyMeta map[string]string
}

// Upload describes a file a person sent with a message, as the platform
// announced it: the hub fetches it through the platform's adapter when
// the turn saves it (docs/uploads.md).
type Upload struct {
	// Name is the file's name as the sender's client gave it, untrusted:
	// the verb that saves it cleans it.
	Name string
	// Size is the size the platform announced, in bytes; 0 when unknown.
	// The file is never taken larger than announced.
	Size int64
	// MIME is the media type the platform announced, if any.
	MIME string
	// Ref is how the platform's adapter fetches the file: a Telegram
	// file_id, a Discord attachment URL, the panel's id of the request
	// that carries it. It is never mirrored.
	Ref string
}

// Channel returns the channel-directory key of the chat the message came from.
func (in *Inbound) Channel() ChannelKey {
	return ChannelKey{Platform: in.Platform, ChatID: in.ChatID, ThreadID: in.ThreadID}
}

// ReplyKey returns the target key that replies to this message go to.
func (in *Inbound) ReplyKey() Key {
	if in.Platform == Web {
		return WebKey
	}
	return ChatKey(in.Platform, in.ChatID, in.ThreadID)
}

// Identity is the access-control identity of the sender: telegram:<user_id>,
// discord:<user_id> or web.
func (in *Inbound) Identity() string {
	if in.Platform == Web {
		return "web"
	}
	return string(in.Platform) + ":" + in.UserID
}

// Display is the channel directory's name for the chat: "Chat title / Topic".
func (in *Inbound) Display() string {
	parts := make([]string, 0, 2)
	if t := strings.TrimSpace(in.ChatTitle); t != "" {
		parts = append(parts, t)
	}
	if t := strings.TrimSpace(in.TopicTitle); t != "" {
		parts = append(parts, t)
	}
	if len(parts) == 0 {
		return in.Channel().String()
	}
	return strings.Join(parts, " / ")
}

// ChatType is a platform's kind of chat, as the platform names it.
type ChatType string

// Kinds of chat. Telegram sends private, group, supergroup and channel;
// the Discord adapter uses dm and guild_text; the web panel is web.
const (
	ChatPrivate    ChatType = "private"
	ChatGroup      ChatType = "group"
	ChatSupergroup ChatType = "supergroup"
	ChatChannel    ChatType = "channel"
	ChatDM         ChatType = "dm"
	ChatGuildText  ChatType = "guild_text"
	ChatWeb        ChatType = "web"
)

// Conversational reports whether plain text in this kind of chat is a
// conversation with the hub (a private chat, a DM, the web panel; an
// unknown kind counts as one), rather than a group where the hub speaks
// only when spoken to with a command.
func (t ChatType) Conversational() bool {
	switch t {
	case ChatPrivate, ChatDM, ChatWeb, "":
		return true
	}
	return false
}

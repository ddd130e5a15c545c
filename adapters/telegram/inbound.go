package telegram

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/a6afc2ce/hermes-hub/chat"
)

// rawUpdate is the part of a Bot API Update the hub reads. It is decoded
// from the raw JSON rather than through tgbotapi's types, whose release
// predates forum topics (message_thread_id, is_topic_message,
// forum_topic_created).
type rawUpdate struct {
	ID            int64        `json:"update_id"`
	Message       *rawMessage  `json:"message"`
	EditedMessage *rawMessage  `json:"edited_message"`
	CallbackQuery *rawCallback `json:"callback_query"`
}

// rawCallback is a press on an inline keyboard button (the Cancel button of
// a progress message).
type rawCallback struct {
	ID      string      `json:"id"`
	From    *rawUser    `json:"from"`
	Message *rawMessage `json:"message"`
	Data    string      `json:"data"`
}

type rawMessage struct {
	MessageID         int64       `json:"message_id"`
	MessageThreadID   int64       `json:"message_thread_id"`
	IsTopicMessage    bool        `json:"is_topic_message"`
	From              *rawUser    `json:"from"`
	Chat              rawChat     `json:"chat"`
	Date              int64       `json:"date"`
	EditDate          int64       `json:"edit_date"`
	Text              string      `json:"text"`
	Caption           string      `json:"caption"`
	ReplyTo           *rawMessage `json:"reply_to_message"`
	ForumTopicCreated *rawTopic   `json:"forum_topic_created"`
	ForumTopicEdited  *rawTopic   `json:"forum_topic_edited"`
	MigrateToChatID   int64       `json:"migrate_to_chat_id"`
	MigrateFromChatID int64       `json:"migrate_from_chat_id"`
	// The file a message may carry (one of them): files.go.
	Document  *rawFile  `json:"document"`
	Photo     []rawFile `json:"photo"`
	Audio     *rawFile  `json:"audio"`
	Video     *rawFile  `json:"video"`
	Voice     *rawFile  `json:"voice"`
	Animation *rawFile  `json:"animation"`
	VideoNote *rawFile  `json:"video_note"`
}

type rawUser struct {
	ID        int64  `json:"id"`
	IsBot     bool   `json:"is_bot"`
	FirstName string `json:"first_name"`
	LastName  string `json:"last_name"`
	Username  string `json:"username"`
}

type rawChat struct {
	ID        int64  `json:"id"`
	Type      string `json:"type"`
	Title     string `json:"title"`
	Username  string `json:"username"`
	FirstName string `json:"first_name"`
	LastName  string `json:"last_name"`
}

type rawTopic struct {
	Name string `json:"name"`
}

// decodeUpdate decodes one update. On error the returned update still
// carries its id when that much could be read, so the offset can move past
// an update the hub cannot understand.
func decodeUpdate(data []byte) (rawUpdate, error) {
	var u rawUpdate
	if err := json.Unmarshal(data, &u); err != nil {
		var id struct {
			ID int64 `json:"update_id"`
		}
		_ = json.Unmarshal(data, &id)
		return rawUpdate{ID: id.ID}, fmt.Errorf("telegram: unreadable update: %w", err)
	}
	return u, nil
}

// migration is a group that became a supergroup with a new chat id.
type migration struct{ from, to string }

// event is what one update means to the hub.
type event struct {
	// in is the message to hand to the hub; nil when the update is dropped.
	in *chat.Inbound
	// drop says why the update was dropped (for debug logs).
	drop string
	// migrate is set by the service messages of a group migration.
	migrate *migration
}

// normalizer turns raw updates into chat.Inbound. It remembers forum topic
// names per (chat, thread), so it is safe for concurrent use.
type normalizer struct {
	// botName is the bot's username, for /command@ThisBot.
	botName string

	mu     sync.Mutex
	topics map[string]string // "<chat_id>:<thread_id>" → topic name
}

// maxTopics bounds the topic-name memory; past it the memory starts over
// (names come back with the next message of each topic).
const maxTopics = 10000

func newNormalizer(botName string) *normalizer {
	return &normalizer{botName: botName, topics: map[string]string{}}
}

func (n *normalizer) rememberTopic(chatID, threadID, name string) {
	name = strings.TrimSpace(name)
	if name == "" || threadID == "" {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.topics) >= maxTopics {
		n.topics = map[string]string{}
	}
	n.topics[chatID+":"+threadID] = name
}

func (n *normalizer) topic(chatID, threadID string) string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.topics[chatID+":"+threadID]
}

// normalize turns one update into an event. It never fails: anything the
// hub cannot use is dropped with a reason, so the offset moves past it.
func (n *normalizer) normalize(u rawUpdate) event {
	m, edited := u.Message, false
	if m == nil {
		m, edited = u.EditedMessage, true
	}
	if m == nil {
		return event{drop: "not a message"}
	}
	if m.Chat.ID == 0 || m.MessageID <= 0 {
		return event{drop: "message without chat or message id"}
	}
	chatID := strconv.FormatInt(m.Chat.ID, 10)
	switch {
	case m.MigrateToChatID != 0:
		return event{drop: "group migrated", migrate: &migration{from: chatID, to: strconv.FormatInt(m.MigrateToChatID, 10)}}
	case m.MigrateFromChatID != 0:
		return event{drop: "group migrated", migrate: &migration{from: strconv.FormatInt(m.MigrateFromChatID, 10), to: chatID}}
	}

	threadID := ""
	if m.IsTopicMessage && m.MessageThreadID > 0 {
		threadID = strconv.FormatInt(m.MessageThreadID, 10)
	}
	// Topic names: from the service message that created or renamed the
	// topic, or from the creation message every topic message replies to.
	if m.ForumTopicCreated != nil {
		n.rememberTopic(chatID, threadID, m.ForumTopicCreated.Name)
	}
	if m.ForumTopicEdited != nil {
		n.rememberTopic(chatID, threadID, m.ForumTopicEdited.Name)
	}
	if r := m.ReplyTo; r != nil && r.ForumTopicCreated != nil && threadID != "" {
		n.rememberTopic(chatID, threadID, r.ForumTopicCreated.Name)
	}

	text := m.Text
	if text == "" {
		text = m.Caption
	}
	upload := m.upload()
	if strings.TrimSpace(text) == "" && upload == nil {
		return event{drop: "no text"}
	}
	if m.From == nil {
		return event{drop: "no sender"}
	}
	if m.From.IsBot {
		return event{drop: "sent by a bot"}
	}
	text, ok := n.addressed(text)
	if !ok {
		return event{drop: "command for another bot"}
	}

	msgID := strconv.FormatInt(m.MessageID, 10)
	turn := "telegram." + chatID + "." + msgID
	at := m.Date
	if edited {
		turn += ".e" + strconv.FormatInt(m.EditDate, 10)
		if m.EditDate != 0 {
			at = m.EditDate
		}
	}
	in := &chat.Inbound{
		TurnID:     turn,
		Platform:   chat.Telegram,
		ChatID:     chatID,
		ThreadID:   threadID,
		MessageID:  msgID,
		UserID:     strconv.FormatInt(m.From.ID, 10),
		UserName:   userName(m.From),
		ChatType:   chat.ChatType(m.Chat.Type),
		ChatTitle:  chatTitle(m.Chat),
		TopicTitle: n.topic(chatID, threadID),
		Text:       text,
		Edited:     edited,
		Upload:     upload,
		Time:       time.Unix(at, 0).UTC(),
		Meta:       map[string]string{"update_id": strconv.FormatInt(u.ID, 10)},
		ReplyMeta:  map[string]string{MetaReplyTo: msgID},
	}
	if in.ChatType == "" {
		in.ChatType = chat.ChatPrivate
		if m.Chat.ID < 0 {
			in.ChatType = chat.ChatGroup
		}
	}
	return event{in: in}
}

// MetaReplyTo is the reply meta key of the message a reply answers.
const MetaReplyTo = "reply_to_message_id"

// addressed strips "@ThisBot" from a leading "/command@ThisBot" and reports
// false for a command addressed to another bot. Other text passes unchanged.
func (n *normalizer) addressed(text string) (string, bool) {
	if !strings.HasPrefix(text, "/") {
		return text, true
	}
	end := strings.IndexFunc(text, unicode.IsSpace)
	if end < 0 {
		end = len(text)
	}
	cmd := text[:end]
	at := strings.IndexByte(cmd, '@')
	if at < 0 {
		return text, true
	}
	if n.botName == "" || !strings.EqualFold(cmd[at+1:], n.botName) {
		return "", false
	}
	return cmd[:at] + text[end:], true
}

func userName(u *rawUser) string {
	if u.Username != "" {
		return u.Username
	}
	return strings.TrimSpace(u.FirstName + " " + u.LastName)
}

func chatTitle(c rawChat) string {
	if c.Title != "" {
		return c.Title
	}
	if name := strings.TrimSpace(c.FirstName + " " + c.LastName); name != "" {
		return name
	}
	if c.Username != "" {
		return "@" + c.Username
	}
	return ""
}

package telegramtest

import (
	"encoding/json"
	"strconv"
	"sync/atomic"
	"time"
)

var updateSeq atomic.Int64

// NextUpdateID returns a fresh update id, increasing over the whole test
// binary (from 1001).
func NextUpdateID() int { return int(1000 + updateSeq.Add(1)) }

// MessageOption changes a message built by TextUpdate.
type MessageOption func(m map[string]any)

// TextUpdate is an update carrying a text message from user in chat (a
// private chat for a positive chat id, a supergroup "Ops" for a negative
// one).
func TextUpdate(id int, chatID int64, user int64, msgID int, text string, opts ...MessageOption) map[string]any {
	typ := "private"
	if chatID < 0 {
		typ = "supergroup"
	}
	m := map[string]any{
		"message_id": msgID,
		"from":       map[string]any{"id": user, "is_bot": false, "first_name": "User", "username": "user" + strconv.FormatInt(user, 10)},
		"chat":       map[string]any{"id": chatID, "type": typ, "title": "Ops"},
		"date":       time.Now().Unix(),
		"text":       text,
	}
	for _, o := range opts {
		o(m)
	}
	return map[string]any{"update_id": id, "message": m}
}

// InTopic makes a message a forum topic message under the topic created by
// message thread (whose creation message names it).
func InTopic(thread int, name string) MessageOption {
	return func(m map[string]any) {
		m["message_thread_id"] = thread
		m["is_topic_message"] = true
		m["reply_to_message"] = map[string]any{
			"message_id": thread, "date": 1, "chat": m["chat"],
			"forum_topic_created": map[string]any{"name": name, "icon_color": 7322096},
		}
	}
}

// CallbackUpdate is a press by user on an inline keyboard button with
// data, under the bot's message msgID in chatID.
func CallbackUpdate(id int, chatID, user int64, msgID int64, data string) map[string]any {
	typ := "private"
	if chatID < 0 {
		typ = "supergroup"
	}
	return map[string]any{"update_id": id, "callback_query": map[string]any{
		"id":      "cb" + strconv.Itoa(id),
		"from":    map[string]any{"id": user, "is_bot": false, "first_name": "User"},
		"message": map[string]any{"message_id": msgID, "date": time.Now().Unix(), "chat": map[string]any{"id": chatID, "type": typ}, "text": "progress"},
		"data":    data,
	}}
}

// WithDocument makes a message carry the document doc (Server.Document),
// its text becoming the caption.
func WithDocument(doc map[string]any) MessageOption {
	return func(m map[string]any) {
		m["document"] = doc
		if t, ok := m["text"].(string); ok {
			delete(m, "text")
			if t != "" {
				m["caption"] = t
			}
		}
	}
}

// WithPhoto makes a message carry a photo in two sizes, the larger one the
// file f of s, its text becoming the caption.
func (s *Server) WithPhoto(f File) MessageOption {
	small, large := s.AddFile(File{Data: []byte("thumbnail")}), s.AddFile(f)
	return func(m map[string]any) {
		m["photo"] = []any{
			map[string]any{"file_id": small, "file_unique_id": "u" + small, "width": 90, "height": 90, "file_size": 9},
			map[string]any{"file_id": large, "file_unique_id": "u" + large, "width": 1280, "height": 960, "file_size": f.declared()},
		}
		if t, ok := m["text"].(string); ok {
			delete(m, "text")
			if t != "" {
				m["caption"] = t
			}
		}
	}
}

// Button returns the callback data of the inline keyboard button labelled
// text on m (as the fake recorded the message's reply_markup); ok is false
// when m has no such button.
func Button(m Message, text string) (data string, ok bool) {
	var kb struct {
		InlineKeyboard [][]struct {
			Text         string `json:"text"`
			CallbackData string `json:"callback_data"`
		} `json:"inline_keyboard"`
	}
	if json.Unmarshal([]byte(m.ReplyMarkup), &kb) != nil {
		return "", false
	}
	for _, row := range kb.InlineKeyboard {
		for _, b := range row {
			if b.Text == text {
				return b.CallbackData, true
			}
		}
	}
	return "", false
}

// Press pushes a press by user on the button labelled text of the bot's
// message m, as Telegram sends it (a callback_query update); false when m
// has no such button.
func (s *Server) Press(m Message, text string, user int64) bool {
	data, ok := Button(m, text)
	if !ok {
		return false
	}
	chatID, err := strconv.ParseInt(m.ChatID, 10, 64)
	if err != nil {
		return false
	}
	s.Push(CallbackUpdate(NextUpdateID(), chatID, user, m.MessageID, data))
	return true
}

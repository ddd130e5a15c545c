package chat

import (
	"fmt"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// Platform names a chat platform.
type Platform string

// The platforms the hub speaks.
const (
	Telegram Platform = "telegram"
	Discord  Platform = "discord"
	Web      Platform = "web"
)

// Kind is the kind of a delivery target.
type Kind string

// Target kinds (docs/state.md, "delivery_targets.json").
const (
	KindWeb   Kind = "web"
	KindLocal Kind = "local"
	KindChat  Kind = "chat"
)

// Key is a delivery target: where a reply or fan-out chunk goes. Its string
// form is the canonical target key (docs/state.md, "Target keys"):
//
//	web
//	local:<path>
//	chat:telegram:<chat_id>[:<thread_id>]
//	chat:discord:<channel_id>
type Key struct {
	Kind     Kind
	Platform Platform // chat keys only
	ChatID   string   // chat keys only
	ThreadID string   // telegram chat keys only, optional
	Path     string   // local keys only
}

// AcceptedKeyForms is shown in every key parse error.
const AcceptedKeyForms = "accepted: web, local:<path>, chat:telegram:<chat_id>[:<thread_id>], chat:discord:<channel_id>"

// WebKey is the key of the web panel's conversation.
var WebKey = Key{Kind: KindWeb}

// LocalKey returns the key of a local JSONL file target.
func LocalKey(path string) Key { return Key{Kind: KindLocal, Path: path} }

// ChatKey returns the key of a chat on a platform.
func ChatKey(p Platform, chatID, threadID string) Key {
	return Key{Kind: KindChat, Platform: p, ChatID: chatID, ThreadID: threadID}
}

// String formats the canonical target key.
func (k Key) String() string {
	switch k.Kind {
	case KindWeb:
		return "web"
	case KindLocal:
		return "local:" + k.Path
	case KindChat:
		s := "chat:" + string(k.Platform) + ":" + k.ChatID
		if k.ThreadID != "" {
			s += ":" + k.ThreadID
		}
		return s
	}
	return ""
}

// Normalized returns k as delivery targets store it, so that a target is
// the same target however it was spelled: a local path is cleaned
// ("./pma/x.jsonl" and "pma//x.jsonl" are "pma/x.jsonl") and made relative
// to stateDir, where relative paths are taken from, when it names a place
// inside it. Other keys are returned as they are.
func (k Key) Normalized(stateDir string) Key {
	if k.Kind != KindLocal || k.Path == "" {
		return k
	}
	p := filepath.Clean(k.Path)
	if filepath.IsAbs(p) && stateDir != "" {
		if rel, err := filepath.Rel(filepath.Clean(stateDir), p); err == nil && rel != "." && filepath.IsLocal(rel) {
			p = rel
		}
	}
	return LocalKey(p)
}

// IsZero reports whether k is the zero Key.
func (k Key) IsZero() bool { return k == Key{} }

// Channel returns the channel-directory key of a chat target. ok is false for
// web and local targets.
func (k Key) Channel() (c ChannelKey, ok bool) {
	if k.Kind != KindChat {
		return ChannelKey{}, false
	}
	return ChannelKey{Platform: k.Platform, ChatID: k.ChatID, ThreadID: k.ThreadID}, true
}

// ParseKey parses a canonical target key. It accepts exactly what String
// produces, so ParseKey(k.String()) == k for every valid k.
func ParseKey(s string) (Key, error) {
	switch {
	case s == "web":
		return WebKey, nil
	case strings.HasPrefix(s, "local:"):
		p := s[len("local:"):]
		if err := validLocalPath(p); err != nil {
			return Key{}, fmt.Errorf("invalid target key %q: %v (%s)", s, err, AcceptedKeyForms)
		}
		return LocalKey(p), nil
	case strings.HasPrefix(s, "chat:"):
		c, err := parseChannel(s[len("chat:"):])
		if err != nil {
			return Key{}, fmt.Errorf("invalid target key %q: %v (%s)", s, err, AcceptedKeyForms)
		}
		return c.Target(), nil
	}
	return Key{}, fmt.Errorf("invalid target key %q (%s)", s, AcceptedKeyForms)
}

// ParseTarget parses a target as an operator types it: the canonical key, or
// the short forms `hub targets` takes (discord:<channel_id>,
// telegram:<chat_id>[:<thread_id>]; docs/state.md, "Target keys").
func ParseTarget(s string) (Key, error) {
	if strings.HasPrefix(s, "telegram:") || strings.HasPrefix(s, "discord:") {
		c, err := parseChannel(s)
		if err != nil {
			return Key{}, fmt.Errorf("invalid target %q: %v (accepted: web, local:<path>, telegram:<chat_id>[:<thread_id>], discord:<channel_id>, or a full chat:… key)", s, err)
		}
		return c.Target(), nil
	}
	k, err := ParseKey(s)
	if err != nil {
		return Key{}, fmt.Errorf("invalid target %q (accepted: web, local:<path>, telegram:<chat_id>[:<thread_id>], discord:<channel_id>, or a full chat:… key)", s)
	}
	return k, nil
}

func validLocalPath(p string) error {
	if p == "" {
		return fmt.Errorf("empty path")
	}
	for i := 0; i < len(p); i++ {
		if c := p[i]; c < 0x20 || c == 0x7f {
			return fmt.Errorf("control character at byte %d of the path", i)
		}
	}
	// Keys are stored as JSON strings, which cannot hold invalid UTF-8.
	if !utf8.ValidString(p) {
		return fmt.Errorf("path is not valid UTF-8")
	}
	return nil
}

// ChannelKey identifies a chat in the channel directory:
// <platform>:<chat_id>[:<thread_id>]. thread_id is a real thread (a Telegram
// forum topic), never platform metadata such as a Discord guild id.
type ChannelKey struct {
	Platform Platform
	ChatID   string
	ThreadID string
}

// AcceptedChannelForms is shown in every channel key parse error.
const AcceptedChannelForms = "accepted: telegram:<chat_id>[:<thread_id>], discord:<channel_id>"

// String formats the channel-directory key.
func (c ChannelKey) String() string {
	s := string(c.Platform) + ":" + c.ChatID
	if c.ThreadID != "" {
		s += ":" + c.ThreadID
	}
	return s
}

// Target returns the chat target key for this channel.
func (c ChannelKey) Target() Key { return ChatKey(c.Platform, c.ChatID, c.ThreadID) }

// ParseChannelKey parses a channel-directory key; it round-trips with String.
func ParseChannelKey(s string) (ChannelKey, error) {
	c, err := parseChannel(s)
	if err != nil {
		return ChannelKey{}, fmt.Errorf("invalid channel key %q: %v (%s)", s, err, AcceptedChannelForms)
	}
	return c, nil
}

func parseChannel(s string) (ChannelKey, error) {
	parts := strings.Split(s, ":")
	if len(parts) < 2 {
		return ChannelKey{}, fmt.Errorf("missing chat id")
	}
	c := ChannelKey{Platform: Platform(parts[0]), ChatID: parts[1]}
	switch c.Platform {
	case Telegram:
		if len(parts) > 3 {
			return ChannelKey{}, fmt.Errorf("too many parts")
		}
		if !isInt(c.ChatID, true) {
			return ChannelKey{}, fmt.Errorf("telegram chat id %q is not an integer", c.ChatID)
		}
		if len(parts) == 3 {
			c.ThreadID = parts[2]
			if !isInt(c.ThreadID, false) || c.ThreadID == "0" {
				return ChannelKey{}, fmt.Errorf("telegram thread id %q is not a positive integer", c.ThreadID)
			}
		}
	case Discord:
		if len(parts) > 2 {
			return ChannelKey{}, fmt.Errorf("discord keys have no thread part (a Discord thread is a channel of its own)")
		}
		if !isInt(c.ChatID, false) {
			return ChannelKey{}, fmt.Errorf("discord channel id %q is not a snowflake (digits only)", c.ChatID)
		}
	default:
		return ChannelKey{}, fmt.Errorf("unknown platform %q", parts[0])
	}
	return c, nil
}

// isInt reports whether s is a canonical decimal integer of at most 20 digits:
// no leading zeros, no plus sign, a minus sign only when signed.
func isInt(s string, signed bool) bool {
	if signed && strings.HasPrefix(s, "-") {
		s = s[1:]
		if s == "0" {
			return false
		}
	}
	if s == "" || len(s) > 20 || (len(s) > 1 && s[0] == '0') {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

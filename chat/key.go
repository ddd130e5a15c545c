package chat

import (
	"fmt"
	"path/filepath"
	"strings"
	"unicode/utf8"
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
//
// (chat:<platform>:<chat>, a chat spelled as its platform's Spec says).
// It is stored and shown as that string (MarshalText).
type Key struct {
	Kind     Kind
	Platform Platform // chat keys only
	ChatID   string   // chat keys only
	ThreadID string   // chat keys of platforms with threads only, optional
	Path     string   // local keys only
}

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

// Validate reports what is wrong with a key built from its parts (ChatKey,
// LocalKey): it must be one ParseKey accepts, in the canonical form.
func (k Key) Validate() error {
	s := k.String()
	if s == "" {
		return fmt.Errorf("empty target key (%s)", AcceptedKeyForms)
	}
	p, err := ParseKey(s)
	if err != nil {
		return err
	}
	if p != k {
		return fmt.Errorf("invalid target key %q: its parts are not canonical (ids are decimal digits, a thread only where the platform has threads; %s)", s, AcceptedKeyForms)
	}
	return nil
}

// Label names where a target's chunks go, for counters and metrics: its
// chat platform (telegram, discord), web or local; unknown for the zero
// Key.
func (k Key) Label() string {
	switch k.Kind {
	case KindWeb:
		return "web"
	case KindLocal:
		return "local"
	case KindChat:
		return string(k.Platform)
	}
	return "unknown"
}

// MarshalText writes the canonical key, so that a Key is stored and shown
// as its string form.
func (k Key) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// UnmarshalText parses a canonical key (ParseKey); the empty text is the
// zero Key.
func (k *Key) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*k = Key{}
		return nil
	}
	p, err := ParseKey(string(b))
	if err != nil {
		return err
	}
	*k = p
	return nil
}

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
// the short forms of the command line (discord:<channel_id>,
// telegram:<chat_id>[:<thread_id>]: a chat platform's channel key;
// docs/state.md, "Target keys").
func ParseTarget(s string) (Key, error) {
	if name, _, ok := strings.Cut(s, ":"); ok {
		if _, isChat := SpecOf(Platform(name)); isChat {
			c, err := parseChannel(s)
			if err != nil {
				return Key{}, fmt.Errorf("invalid target %q: %v (%s)", s, err, acceptedTargetForms)
			}
			return c.Target(), nil
		}
	}
	k, err := ParseKey(s)
	if err != nil {
		return Key{}, fmt.Errorf("invalid target %q (%s)", s, acceptedTargetForms)
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
	spec, ok := SpecOf(Platform(parts[0]))
	if !ok {
		return ChannelKey{}, fmt.Errorf("unknown platform %q", parts[0])
	}
	c := ChannelKey{Platform: spec.Name, ChatID: parts[1]}
	if err := spec.parse(&c, parts[1:]); err != nil {
		return ChannelKey{}, err
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

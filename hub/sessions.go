package hub

import (
	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/config"
)

// Workspace modes of sessions.mode, by_chat and by_role.
const (
	ModeHost    = "host"
	ModeSession = "session"
)

// SessionPolicy returns the Options.SessionFor of a configuration: for each
// turn, the session workspace it acts in ("" for the host workspace).
//
// The mode is decided in this order:
//  1. by_chat, by the chat's reply key (web, chat:telegram:<chat>[:<thread>],
//     chat:discord:<channel>); a key without a thread also covers the
//     chat's threads, and an exact entry for the thread wins over it;
//  2. by_role, over the turn's roles: if any of them says session the turn
//     is in a session (isolation wins a disagreement), else if any says host
//     it is in the host workspace;
//  3. the global mode.
//
// In session mode the session id is the chat's reply key, so every thread
// (and every person in a group chat) shares the chat's workspace, and two
// chats never share one. API callers name their session themselves
// (APIRequest.Session); this policy does not apply to them.
func SessionPolicy(cfg config.Sessions) func(in *chat.Inbound, roles []string) string {
	byChat := make(map[string]string, len(cfg.ByChat))
	for k, v := range cfg.ByChat {
		byChat[k] = v
	}
	byRole := make(map[string]string, len(cfg.ByRole))
	for k, v := range cfg.ByRole {
		byRole[k] = v
	}
	global := cfg.Mode
	return func(in *chat.Inbound, roles []string) string {
		key := in.ReplyKey()
		id := key.String()
		if sessionMode(byChat, byRole, global, key, roles) == ModeSession {
			return id
		}
		return ""
	}
}

// sessionMode applies SessionPolicy's order to one turn.
func sessionMode(byChat, byRole map[string]string, global string, key chat.Key, roles []string) string {
	if m, ok := byChat[key.String()]; ok {
		return m
	}
	if key.Kind == chat.KindChat && key.ThreadID != "" {
		if m, ok := byChat[chat.ChatKey(key.Platform, key.ChatID, "").String()]; ok {
			return m
		}
	}
	host := false
	for _, r := range roles {
		switch byRole[r] {
		case ModeSession:
			return ModeSession
		case ModeHost:
			host = true
		}
	}
	if host {
		return ModeHost
	}
	if global == ModeSession {
		return ModeSession
	}
	return ModeHost
}

// Package discordtest is an in-process fake of Discord for tests, in the
// manner of net/http/httptest: NewServer starts it on a loopback port, and
// APIBase is the discord.api_base to configure.
//
// REST: the bot user (GET /users/@me, token checked), interaction callbacks (deferrals), edits and deletes of the
// original response, follow-ups, channel messages with nonce and
// enforce_nonce (a repeated nonce answers the message already created) and
// their edits, buttons (components) on messages, and bulk overwrites of
// application commands; every request is recorded, and
// every message-producing call is kept as a Receipt. Rate-limit headers
// come with every answer.
//
// Gateway (websocket at /ws, found through GET /gateway/bot): Hello,
// Identify (token checked), Ready and a GUILD_CREATE, heartbeats and their
// ACKs, Resume with replay of the events the client missed, and Dispatch of
// any event, such as INTERACTION_CREATE (a command, or a button press:
// PressPayload) or MESSAGE_CREATE, to whichever
// client is connected. A client that identifies again (a restarted bot)
// starts a new session.
//
// Faults: one-shot faults for the next request matching a method and path
// prefix (FailNext), schedules answering every Nth matching request with a
// fault a number of times (AddRule): 429 with Discord's body and headers,
// 5xx bursts, slow answers, hung answers (held until the caller gives up)
// and dropped connections. Down takes REST and the gateway away, refusing
// connections or answering 503, until Up. DropConnection cuts the gateway
// connection as a network failure would.
package discordtest

// Package telegram is the hub's Telegram adapter. It receives messages by
// long polling getUpdates (or through a webhook on the web listener),
// normalises them into chat.Inbound, hands them to the hub and acknowledges
// Telegram only once a turn is recorded; and it is the outbox.Sender of
// chat:telegram:<chat_id>[:<thread_id>] targets, pacing itself so that
// Telegram rarely has to answer 429.
//
// The Bot API client is go-telegram-bot-api/v5 used as a transport only:
// its tagged release predates forum topics, so message_thread_id is sent as
// a raw request parameter and read from the raw update JSON, and its update
// channel (which sleeps blindly on errors) is replaced by a polling loop
// with capped, jittered backoff. The bot token is part of every request URL;
// errors are scrubbed so that it never reaches a log or a returned error.
package telegram

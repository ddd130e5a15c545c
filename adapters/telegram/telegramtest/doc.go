// Package telegramtest is an in-process fake of the Telegram Bot API for
// tests, in the manner of net/http/httptest: NewServer starts it on a
// loopback port and URL is the api_endpoint to configure.
//
// It serves getMe, getUpdates (long polling over a queue the test pushes
// updates into, with offsets confirming them as Telegram does), sendMessage,
// sendDocument (multipart), sendChatAction, setMyCommands, setWebhook and
// deleteWebhook. Every call is recorded, and every accepted message kept
// with the message id the fake gave it.
//
// Faults are injected per method: a queue of one-shot faults (Inject), and
// schedules that answer every Nth call with a fault a number of times
// (AddRule), such as 429 with retry_after, 5xx bursts, HTML error pages,
// slow answers, hung answers (held until the caller gives up) and dropped
// connections. Down takes the whole API away, refusing connections or
// answering 503, until Up. DuplicateUpdates makes getUpdates repeat what
// it returns. A strict mode answers 429 as Telegram does when a chat gets
// more than one message a second or the bot more than thirty a second.
package telegramtest

// Package discord is the hub's Discord adapter: a gateway session that turns
// slash commands and addressed channel messages into chat.Inbound turns, and
// an outbox.Sender that delivers their replies.
//
// Slash commands are derived from the verb registry (Commands): one
// top-level command per verb namespace (/fs, /proc, /sys) with a kebab-case
// subcommand per verb (/fs read-range path:… start-line:… end-line:…) whose
// options carry the argument types, required flags and descriptions, and
// /hub help|verbs|whoami|where|use|cancel. A list argument is a text option split like a
// shell command line and is never required (absent means empty, as in the
// chat grammar). An invocation reaches the hub as a JSON envelope
// {"verb", "arguments"}; the command as typed is kept in the inbound's Meta
// for the mirror.
//
// An interaction is acknowledged with a deferred response (ephemeral when
// the answer will be a denial or a parse error) before anything slow runs;
// then its turn runs in a bounded pool. Its first reply chunk edits the
// deferred response and the others follow it up; once the token has expired
// (15 minutes) a chunk goes to the channel as a normal message. A verb that
// fails after a public deferral turns the response into a neutral line and
// sends the error as an ephemeral follow-up. An interaction the hub never
// sees (a channel not served, a command the registry no longer has) gets an
// ephemeral answer directly.
//
// A call still running after verbs.progress_after shows its progress
// (ProgressView): the deferred response, or a reply to a channel message,
// edited with the elapsed time, the last lines of output and a Cancel
// button, then finalised before the result follows. The button, /hub
// cancel and a typed /cancel stop the caller's call at once, never behind
// it.
//
// Channel messages that mention the bot or start with discord.prefix, and
// every direct message, are turns in the same chat grammar, run in the
// order they were sent per channel. Their replies carry a nonce derived from
// the outbox id with enforce_nonce, so a resend after a crash returns the
// message already posted. Output never mentions anyone (allowed_mentions is
// empty), code blocks are rewritten to ``` fences that survive ``` in their
// content, and rate limits are left to the outbox: discordgo's own 429 sleep
// is turned off on every request and a bucket it would sleep on is reported
// as a retry-after instead.
package discord

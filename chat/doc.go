// Package chat holds the platform-neutral vocabulary of the hub: platforms,
// inbound messages, delivery target keys and channel-directory keys (parse and
// format, round-tripping exactly), and the chunker that splits rendered text
// into platform-sized pieces. It does no I/O.
package chat

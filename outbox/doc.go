// Package outbox is the durable queue of reply chunks: deterministic ids,
// per-target FIFO delivery with one chunk in flight per target, retry with
// backoff, retry-after, dead letters, and recovery after a crash. Platforms
// plug in as Senders; storage sits behind the Store interface.
package outbox

// Package outbox is the durable queue of reply chunks: deterministic ids,
// per-target FIFO delivery with one chunk in flight per target, retry with
// backoff, retry-after, dead letters, and recovery after a crash. Platforms
// plug in as Senders; storage sits behind the Store interface.
//
// The promise: an enqueued chunk is delivered or becomes a dead letter, and
// is never sent twice, except the one chunk per target that was in flight
// when the process died (the delivered mark is written after the send).
// Enqueueing an id the store already knows, in any state, is a no-op, which
// makes retries, replays and restarts safe.
//
// Memory is bounded by in-flight work: the dispatcher keeps only the set of
// targets with pending work, reads one queue head at a time, and a target
// waiting for its retry time holds a timer, not a worker.
package outbox

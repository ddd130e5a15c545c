// Package store owns the state root (DESIGN §3): opening hub.db with a lock
// timeout and versioned buckets, atomic JSON artefacts, the delivery targets
// file, the channel directory and the JSONL chat mirrors. It records what
// happened; it never decides what to deliver.
package store

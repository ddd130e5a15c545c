// Package store owns the state root: the state directory, opened once and
// reached only through that open directory (StateDir, an os.Root), hub.db
// with a lock timeout and versioned buckets, atomic JSON artefacts, the
// delivery targets file, the channel directory and the JSONL chat mirrors
// (docs/state.md). It records what happened; it never decides what to
// deliver.
package store

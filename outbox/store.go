package outbox

import (
	"context"
	"time"
)

// Store is the durable side of the outbox. The dispatcher uses only this
// interface, so a backend other than bbolt (a NATS JetStream stream per
// target, say) can replace BoltStore without touching dispatch semantics.
//
// A Store keeps, per target, a FIFO of pending entries in enqueue order, and
// remembers every id it has seen — pending, delivered (for the retention
// window) or dead — so that enqueueing a known id is a no-op. Marks (Defer,
// Delivered, Dead) must be durable when they return: the dispatcher sends a
// target's next chunk only after its previous one is marked (a
// RecordedSender's target: its next batch after the previous batch's marks).
type Store interface {
	// Enqueue appends entries to their targets' queues in one atomic step
	// (all or nothing), skipping ids the store already knows in any state
	// and repeats within the call. It returns the ids actually added, in
	// order.
	Enqueue(ctx context.Context, entries []Entry) (added []string, err error)
	// Head returns the oldest pending entry of target, and false if the
	// target has none.
	Head(ctx context.Context, target string) (Entry, bool, error)
	// PendingTargets returns up to limit targets with pending entries, in
	// ascending key order, starting strictly after the target after ("" for
	// the first page).
	PendingTargets(ctx context.Context, after string, limit int) ([]string, error)
	// Defer records a failed or rate-limited send of a pending entry: its
	// retry state and when it may be tried next.
	Defer(ctx context.Context, id string, r Retry) error
	// Delivered marks a pending entry delivered at at, removing it from its
	// queue and keeping its id for dedupe. Marking an already delivered id
	// is a no-op.
	Delivered(ctx context.Context, id string, rc Receipt, at time.Time) error
	// Dead moves a pending entry to the dead letters, keeping its text,
	// attachment and final retry state.
	Dead(ctx context.Context, id string, r Retry, at time.Time) error
	// Get returns an entry by id in any state (ErrNotFound if unknown). A
	// delivered entry carries only its id, target, state, time and platform
	// message id: its text is not kept.
	Get(ctx context.Context, id string) (Entry, error)
	// List returns the entries in f.State that match f, up to f.Limit.
	List(ctx context.Context, f Filter) ([]Entry, error)
	// Requeue turns a dead letter back into a pending entry at the tail of
	// its target's queue, with its attempts reset, and returns it.
	Requeue(ctx context.Context, id string) (Entry, error)
	// Purge deletes the dead letters that match f (f.State is ignored) and
	// returns how many. A purged id is forgotten and may be enqueued again.
	Purge(ctx context.Context, f Filter) (int, error)
	// Prune forgets delivered ids delivered before before and returns how
	// many.
	Prune(ctx context.Context, before time.Time) (int, error)
	// Counts returns the counters per platform (telegram, discord, web,
	// local), maintained with every change.
	Counts(ctx context.Context) (map[string]Counts, error)
}

// Retry is the retry state of a pending entry as the dispatcher records it.
type Retry struct {
	Attempts      int       // failed sends so far
	Throttled     int       // retry-after answers so far
	NextAttemptAt time.Time // not before this time (Defer only)
	LastError     string
}

// Filter selects entries for List and Purge. Empty fields match everything.
type Filter struct {
	State  State  // List: pending, delivered or dead; empty means dead
	Target string // exact canonical target key
	Kind   Kind
	TurnID string
	Limit  int // at most this many (List only); 0 means 1000
}

func (f *Filter) match(e *Entry) bool {
	return (f.Target == "" || e.Target.String() == f.Target) &&
		(f.Kind == "" || e.Kind == f.Kind) &&
		(f.TurnID == "" || e.TurnID == f.TurnID)
}

// Counts are the counters of one platform. Pending and Dead are current
// sizes; Delivered and Retried are running totals since the store was
// created (pruning forgets ids, not totals).
type Counts struct {
	Pending   int64 `json:"pending"`
	Delivered int64 `json:"delivered"`
	Dead      int64 `json:"dead"`
	Retried   int64 `json:"retried"`
}

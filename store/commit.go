package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	bolt "go.etcd.io/bbolt"
)

// DB is a bbolt database whose writers share commits (group commit): a
// write that arrives while a commit is in progress is committed with the
// others that arrived meanwhile in the next one, so concurrent writers share
// its fsyncs. Every writer of hub.db per turn (the ledger, the outbox) goes
// through the one DB of the state root (State.Database), so concurrent turns
// share fsyncs whichever part of the hub writes. Unlike bbolt's DB.Batch
// there is no fixed delay: a lone writer commits at once, which matters
// because a target's next chunk waits for its previous mark.
//
// As with DB.Batch, a function may run more than once (when another function
// in its batch fails, the batch is rolled back and retried without it), so
// functions must not change anything outside the transaction except by
// resetting it first. A function that fails or panics fails only its own
// Update: it runs again alone to report its error, and the rest of its batch
// is committed without it.
type DB struct {
	db       *bolt.DB
	maxBatch int

	mu      sync.Mutex
	queue   []*commitOp
	leading bool

	// commits and ops count the transactions committed and the functions
	// they carried (ops/commits is the mean batch; benchmarks report it).
	commits, ops atomic.Int64
}

type commitOp struct {
	fn   func(*bolt.Tx) error
	done chan error // buffered 1: the result, or errLead
}

// errLead hands leadership to a waiting caller.
var errLead = errors.New("lead the next commit")

// errAbortBatch rolls a batch back after one of its functions failed.
var errAbortBatch = errors.New("abort batch")

// DefaultMaxBatch bounds the functions one commit carries.
const DefaultMaxBatch = 1024

// NewDB returns db with a group commit. Make one per database and share it:
// writers that go through different DBs of the same file serialise on
// bbolt's writer lock without sharing fsyncs. The caller keeps ownership of
// db (closing it is the caller's).
func NewDB(db *bolt.DB) *DB { return &DB{db: db, maxBatch: DefaultMaxBatch} }

// Bolt is the underlying bbolt database.
func (d *DB) Bolt() *bolt.DB { return d.db }

// View runs fn in a read transaction.
func (d *DB) View(fn func(*bolt.Tx) error) error { return d.db.View(fn) }

// Update runs fn in a write transaction shared with concurrent callers and
// returns once that transaction is durable (or failed). fn's error is
// returned as it is; fn may run more than once (see DB).
func (d *DB) Update(fn func(*bolt.Tx) error) error {
	op := &commitOp{fn: fn, done: make(chan error, 1)}
	d.mu.Lock()
	d.queue = append(d.queue, op)
	if d.leading {
		d.mu.Unlock()
		if err := <-op.done; err != errLead {
			return err
		}
		d.mu.Lock() // we lead now; leading is still true
	} else {
		d.leading = true
	}
	n := min(len(d.queue), d.maxBatch)
	batch := d.queue[:n:n]
	d.queue = d.queue[n:]
	d.mu.Unlock()

	// Our own op is in this batch: the queue is FIFO and whoever leads takes
	// the head, which is the oldest op, ours or older.
	d.run(batch)

	d.mu.Lock()
	if len(d.queue) > 0 {
		d.queue[0].done <- errLead
	} else {
		d.leading = false
		d.queue = nil
	}
	d.mu.Unlock()
	return <-op.done
}

// Commits reports how many transactions Update has committed and how many
// functions they carried.
func (d *DB) Commits() (commits, ops int64) { return d.commits.Load(), d.ops.Load() }

// run commits batch in one transaction. If a function fails, the transaction
// is rolled back, that function runs alone to report its own error, and the
// rest are committed again without it.
func (d *DB) run(batch []*commitOp) {
	for len(batch) > 0 {
		failed := -1
		err := d.db.Update(func(tx *bolt.Tx) error {
			for i, op := range batch {
				if err := safely(op.fn, tx); err != nil {
					failed = i
					return errAbortBatch
				}
			}
			return nil
		})
		if failed < 0 {
			if err == nil {
				d.commits.Add(1)
				d.ops.Add(int64(len(batch)))
			}
			for _, op := range batch {
				op.done <- err
			}
			return
		}
		op := batch[failed]
		op.done <- d.db.Update(func(tx *bolt.Tx) error { return safely(op.fn, tx) })
		rest := make([]*commitOp, 0, len(batch)-1)
		rest = append(rest, batch[:failed]...)
		batch = append(rest, batch[failed+1:]...)
	}
}

// PanicError is what Update returns when its function panicked: the panic
// is the caller's error, not the batch's (the others commit without it).
type PanicError struct{ Value any }

func (e *PanicError) Error() string { return fmt.Sprintf("transaction function panicked: %v", e.Value) }

// safely runs fn, turning a panic into a *PanicError.
func safely(fn func(*bolt.Tx) error, tx *bolt.Tx) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &PanicError{Value: p}
		}
	}()
	return fn(tx)
}

// alsoKey carries a write to make with another one (WithAlso).
type alsoKey struct{}

type also struct {
	db *bolt.DB
	fn func(*bolt.Tx) error
}

// WithAlso returns ctx carrying fn, a write on db that a writer given the
// context may make in the transaction of its own change, after it, so that
// both are durable at once (outbox.BoltStore.Enqueue does). fn must leave
// the transaction as it found it when it returns an error, and may run more
// than once, like any function given to Update.
func WithAlso(ctx context.Context, db *DB, fn func(*bolt.Tx) error) context.Context {
	return context.WithValue(ctx, alsoKey{}, also{db: db.Bolt(), fn: fn})
}

// Also runs in tx the write ctx carries for tx's database (WithAlso), if
// any.
func Also(ctx context.Context, tx *bolt.Tx) error {
	a, ok := ctx.Value(alsoKey{}).(also)
	if !ok || a.db != tx.DB() {
		return nil
	}
	return a.fn(tx)
}

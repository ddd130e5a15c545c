package outbox

import (
	"errors"
	"sync"
	"sync/atomic"

	bolt "go.etcd.io/bbolt"
)

// committer runs write functions in shared transactions (group commit):
// callers that arrive while a commit is in progress are committed together in
// the next one, so concurrent callers share one fsync. Unlike bbolt's
// DB.Batch there is no fixed delay: a lone caller commits at once, which
// matters because a target's next chunk waits for its previous mark.
//
// As with DB.Batch, a function may run more than once (when another function
// in its batch fails, the batch is rolled back and retried without it), so
// functions must not change anything outside the transaction except by
// resetting it first.
type committer struct {
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

func newCommitter(db *bolt.DB) *committer { return &committer{db: db, maxBatch: 1024} }

// do runs fn in a write transaction shared with concurrent callers and
// returns once that transaction is durable (or failed).
func (c *committer) do(fn func(*bolt.Tx) error) error {
	op := &commitOp{fn: fn, done: make(chan error, 1)}
	c.mu.Lock()
	c.queue = append(c.queue, op)
	if c.leading {
		c.mu.Unlock()
		if err := <-op.done; err != errLead {
			return err
		}
		c.mu.Lock() // we lead now; leading is still true
	} else {
		c.leading = true
	}
	n := min(len(c.queue), c.maxBatch)
	batch := c.queue[:n:n]
	c.queue = c.queue[n:]
	c.mu.Unlock()

	// Our own op is in this batch: the queue is FIFO and whoever leads takes
	// the head, which is the oldest op, ours or older.
	c.run(batch)

	c.mu.Lock()
	if len(c.queue) > 0 {
		c.queue[0].done <- errLead
	} else {
		c.leading = false
		c.queue = nil
	}
	c.mu.Unlock()
	return <-op.done
}

// run commits batch in one transaction. If a function fails, the transaction
// is rolled back, that function runs alone to report its own error, and the
// rest are committed again without it.
func (c *committer) run(batch []*commitOp) {
	for len(batch) > 0 {
		failed := -1
		err := c.db.Update(func(tx *bolt.Tx) error {
			for i, op := range batch {
				if err := op.fn(tx); err != nil {
					failed = i
					return errAbortBatch
				}
			}
			return nil
		})
		if failed < 0 {
			if err == nil {
				c.commits.Add(1)
				c.ops.Add(int64(len(batch)))
			}
			for _, op := range batch {
				op.done <- err
			}
			return
		}
		op := batch[failed]
		op.done <- c.db.Update(op.fn)
		rest := make([]*commitOp, 0, len(batch)-1)
		rest = append(rest, batch[:failed]...)
		batch = append(rest, batch[failed+1:]...)
	}
}

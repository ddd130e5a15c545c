package store

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/a6afc2ce/hermes-hub/chat"
)

// Turn states in the ledger.
const (
	TurnReceived    = "received"    // accepted from a platform that will not redeliver it; not run yet
	TurnStarted     = "started"     // recorded before the verb runs
	TurnDone        = "done"        // reply enqueued
	TurnInterrupted = "interrupted" // the hub died while it ran; a notice was sent
)

const (
	ledgerBucket  = "turns"
	ledgerVersion = 1
	denialBucket  = "denials"
	denialVersion = 1
)

// TurnRecord is what the ledger remembers of a turn: enough to answer a
// duplicate without running anything, and to tell the chat after a crash
// that its command may or may not have completed.
type TurnRecord struct {
	TurnID    string            `json:"turn_id"`
	State     string            `json:"state"`
	Verb      string            `json:"verb,omitempty"`
	Identity  string            `json:"identity"`
	Reply     string            `json:"reply"` // reply target key
	ReplyMeta map[string]string `json:"reply_meta,omitempty"`
	Platform  string            `json:"platform"`
	Started   time.Time         `json:"started"`
	Finished  time.Time         `json:"finished,omitzero"`
	Outbox    []string          `json:"outbox,omitempty"` // ids enqueued for the reply
	Code      string            `json:"code,omitempty"`   // error code when the verb failed
	// Inbound is the whole message of a received turn, so that a turn
	// accepted before a stop runs at the next start.
	Inbound *chat.Inbound `json:"inbound,omitempty"`
	// Targets are the target keys a turn with no reply key (a schedule's
	// run, Platform "schedule") delivers to, and so where the notice of a
	// run cut short by a crash goes.
	Targets []string `json:"targets,omitempty"`
}

// Ledger records every turn in hub.db so that a duplicate inbound never runs
// twice and a turn cut short by a crash is noticed after restart. Its writes
// go through a group commit (DB), shared with the database's other writers
// when it was opened with OpenSharedLedger.
type Ledger struct {
	db *DB

	mu sync.Mutex
	// later are the finishes FinishLater holds until the next commit.
	later []laterFinish
}

// laterFinish is a Finish waiting for the ledger's next commit.
type laterFinish struct {
	turnID, state, code string
	at                  time.Time
}

// OpenLedger creates the ledger's buckets in db; its writes share commits
// among themselves only. The hub opens it with OpenSharedLedger.
func OpenLedger(db *bolt.DB) (*Ledger, error) { return OpenSharedLedger(NewDB(db)) }

// OpenSharedLedger creates the ledger's buckets in db; its writes share
// commits with every other writer of db.
func OpenSharedLedger(db *DB) (*Ledger, error) {
	err := db.Update(func(tx *bolt.Tx) error {
		if _, _, err := EnsureBucket(tx, ledgerBucket, ledgerVersion); err != nil {
			return err
		}
		_, _, err := EnsureBucket(tx, denialBucket, denialVersion)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("open turn ledger: %w", err)
	}
	return &Ledger{db: db}, nil
}

// update runs fn in a commit of the ledger's database, with the finishes
// FinishLater holds written first in the same transaction. When the
// commit fails they are kept for the next one.
func (l *Ledger) update(fn func(*bolt.Tx) error) error {
	l.mu.Lock()
	later := l.later
	l.later = nil
	l.mu.Unlock()
	err := l.db.Update(func(tx *bolt.Tx) error {
		for _, f := range later {
			// A finish that fails writes nothing (its record is gone or
			// corrupt): the turn stays as it was, and fn commits.
			_ = finish(tx, f.turnID, f.state, f.code, nil, f.at)
		}
		return fn(tx)
	})
	if err != nil && len(later) > 0 {
		l.mu.Lock()
		l.later = append(later, l.later...)
		l.mu.Unlock()
	}
	return err
}

// FinishLater is Finish (without outbox ids) written with the ledger's
// next commit, a Begin's or any other write's, or by Flush, instead of a
// commit of its own: the record of a turn after it ran is bookkeeping,
// which may wait, unlike Begin's record before it runs. Until then Get
// and Unfinished see the turn as started, and a crash leaves it so; a
// finish that cannot be made (its record gone) is dropped unreported.
func (l *Ledger) FinishLater(turnID, state, code string, at time.Time) {
	l.mu.Lock()
	l.later = append(l.later, laterFinish{turnID: turnID, state: state, code: code, at: at})
	l.mu.Unlock()
}

// Flush writes the finishes FinishLater holds, in one commit (none when
// it holds none).
func (l *Ledger) Flush() error {
	l.mu.Lock()
	n := len(l.later)
	l.mu.Unlock()
	if n == 0 {
		return nil
	}
	if err := l.update(func(*bolt.Tx) error { return nil }); err != nil {
		return fmt.Errorf("turn ledger: write finished turns: %w", err)
	}
	return nil
}

// Commits reports how many commits the ledger's database has made through
// its group commit and how many writes they carried (DB.Commits).
func (l *Ledger) Commits() (commits, ops int64) { return l.db.Commits() }

// Begin records rec as started unless the turn is already known (a turn
// received but never run counts as unknown: it starts now, and accepted
// reports it). It returns the existing record and began=false for a turn
// seen before. The record is on disk (fsynced) when Begin returns, before
// anything runs.
func (l *Ledger) Begin(rec TurnRecord) (prev *TurnRecord, began, accepted bool, err error) {
	err = l.update(func(tx *bolt.Tx) error {
		prev, began, accepted = nil, false, false // the function may run twice
		b := tx.Bucket([]byte(ledgerBucket))
		if v := b.Get([]byte(rec.TurnID)); v != nil {
			var p TurnRecord
			if err := json.Unmarshal(v, &p); err != nil {
				return fmt.Errorf("turn %s: corrupt ledger record: %w", rec.TurnID, err)
			}
			if p.State != TurnReceived {
				prev = &p
				return nil
			}
			accepted = true
		}
		rec.State = TurnStarted
		v, _ := json.Marshal(rec)
		began = true
		return b.Put([]byte(rec.TurnID), v)
	})
	return prev, began, accepted, err
}

// Unstart returns a turn that started but did not run to the received
// state with its inbound, so that a later start runs it.
func (l *Ledger) Unstart(in *chat.Inbound) error {
	return l.update(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte(ledgerBucket))
		v := b.Get([]byte(in.TurnID))
		if v == nil {
			return fmt.Errorf("turn %s: not in the ledger", in.TurnID)
		}
		var r TurnRecord
		if err := json.Unmarshal(v, &r); err != nil {
			return fmt.Errorf("turn %s: corrupt ledger record: %w", in.TurnID, err)
		}
		r.State, r.Inbound = TurnReceived, in
		nv, err := json.Marshal(r)
		if err != nil {
			return err
		}
		return b.Put([]byte(in.TurnID), nv)
	})
}

// Receive records a turn accepted from a platform that will not deliver it
// again, with the whole inbound, unless the turn is already known. It
// reports whether it was new.
func (l *Ledger) Receive(rec TurnRecord) (bool, error) {
	added := false
	err := l.update(func(tx *bolt.Tx) error {
		added = false // the function may run twice
		b := tx.Bucket([]byte(ledgerBucket))
		if b.Get([]byte(rec.TurnID)) != nil {
			return nil
		}
		rec.State = TurnReceived
		v, err := json.Marshal(rec)
		if err != nil {
			return fmt.Errorf("turn %s: %w", rec.TurnID, err)
		}
		added = true
		return b.Put([]byte(rec.TurnID), v)
	})
	return added, err
}

// Finish moves a turn to state (done or interrupted) with its outbox ids.
func (l *Ledger) Finish(turnID, state, code string, outboxIDs []string, at time.Time) error {
	return l.update(func(tx *bolt.Tx) error { return finish(tx, turnID, state, code, outboxIDs, at) })
}

// FinishWith returns ctx carrying the Finish of a turn (same arguments),
// for the outbox to make in the transaction that enqueues the turn's reply
// (store.WithAlso): the turn is then finished exactly when its reply is
// durable, in the same commit. Once that enqueue has returned without
// error, finished reports whether the turn was finished with it; when not
// (a store that does not honour the context, or a record Finish would
// refuse, which leaves the reply alone), call Finish, which reports the
// error as it always did.
func (l *Ledger) FinishWith(ctx context.Context, turnID, state, code string, outboxIDs []string, at time.Time) (_ context.Context, finished func() bool) {
	done := false
	ctx = WithAlso(ctx, l.db, func(tx *bolt.Tx) error {
		// A refusal is not the enqueue's failure: the reply is committed
		// and Finish, called after, reports it.
		done = finish(tx, turnID, state, code, outboxIDs, at) == nil
		return nil
	})
	return ctx, func() bool { return done }
}

// finish is Finish within tx. It writes nothing when it fails.
func finish(tx *bolt.Tx, turnID, state, code string, outboxIDs []string, at time.Time) error {
	b := tx.Bucket([]byte(ledgerBucket))
	v := b.Get([]byte(turnID))
	if v == nil {
		return fmt.Errorf("turn %s: not in the ledger", turnID)
	}
	var r TurnRecord
	if err := json.Unmarshal(v, &r); err != nil {
		return fmt.Errorf("turn %s: corrupt ledger record: %w", turnID, err)
	}
	r.State, r.Code, r.Finished = state, code, at
	if outboxIDs != nil {
		r.Outbox = outboxIDs
	}
	nv, _ := json.Marshal(r)
	return b.Put([]byte(turnID), nv)
}

// Forget removes a turn that never ran, so that its redelivery runs it.
func (l *Ledger) Forget(turnID string) error {
	return l.update(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte(ledgerBucket)).Delete([]byte(turnID))
	})
}

// Get returns a turn's record.
func (l *Ledger) Get(turnID string) (*TurnRecord, error) {
	var r *TurnRecord
	err := l.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket([]byte(ledgerBucket)).Get([]byte(turnID))
		if v == nil {
			return nil
		}
		r = &TurnRecord{}
		return json.Unmarshal(v, r)
	})
	return r, err
}

// Unfinished lists the turns a previous run left: started ones (it died
// while they ran) and received ones (accepted, never run).
func (l *Ledger) Unfinished() ([]TurnRecord, error) {
	var out []TurnRecord
	err := l.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte(ledgerBucket)).ForEach(func(k, v []byte) error {
			var r TurnRecord
			if err := json.Unmarshal(v, &r); err != nil {
				return nil // a corrupt record cannot be answered; skip it
			}
			if r.State == TurnStarted || r.State == TurnReceived {
				out = append(out, r)
			}
			return nil
		})
	})
	return out, err
}

// Prune forgets turns that finished (done or interrupted) before cutoff,
// and denial notices sent before it. Turns not finished are kept whatever
// their age: a received turn still has to run, a started one to be noticed.
// The platforms never deliver a turn again after days, so a cutoff at the
// outbox's retention keeps every duplicate answered.
//
// The old records are found in read transactions and deleted at most
// pruneBatch per commit, each checked again in its commit: a large ledger
// (a node's week of calls) is forgotten in many short commits, so that
// the turns and calls recorded meanwhile do not wait for one long one.
//
// It stops between commits, and every pruneCheck records of its scans,
// once ctx ends, with ctx's error: what it forgot by then stays forgotten.
func (l *Ledger) Prune(ctx context.Context, cutoff time.Time) (turns, denials int, err error) {
	turns, err = l.pruneBucket(ctx, ledgerBucket, func(v []byte) bool { return finishedBefore(v, cutoff) })
	if err != nil {
		return turns, 0, fmt.Errorf("prune the turn ledger: %w", err)
	}
	denials, err = l.pruneBucket(ctx, denialBucket, func(v []byte) bool {
		var last time.Time
		return last.UnmarshalText(v) != nil || last.Before(cutoff)
	})
	if err != nil {
		return turns, 0, fmt.Errorf("prune the turn ledger's denial notices: %w", err)
	}
	return turns, denials, nil
}

// pruneBatch is how many records one commit of Prune deletes at most;
// its scans look whether to stop every pruneCheck records.
const (
	pruneBatch = 1000
	pruneCheck = 4096
)

// pruneBucket deletes the records of bucket whose value old reports, in
// commits of at most pruneBatch, and returns how many it deleted (also
// when it fails: the commits before the failure stand).
func (l *Ledger) pruneBucket(ctx context.Context, bucket string, old func(v []byte) bool) (int, error) {
	total := 0
	var from []byte // the scan goes on after this key
	for {
		if err := ctx.Err(); err != nil {
			return total, err
		}
		var keys [][]byte
		more := false
		err := l.db.View(func(tx *bolt.Tx) error {
			c := tx.Bucket([]byte(bucket)).Cursor()
			var k, v []byte
			if from == nil {
				k, v = c.First()
			} else if k, v = c.Seek(from); k != nil && bytes.Equal(k, from) {
				k, v = c.Next()
			}
			for n := 1; k != nil; k, v = c.Next() {
				if n%pruneCheck == 0 && ctx.Err() != nil {
					return ctx.Err()
				}
				n++
				if !old(v) {
					continue
				}
				keys = append(keys, bytes.Clone(k))
				if len(keys) == pruneBatch {
					more = true
					return nil
				}
			}
			return nil
		})
		if err != nil || len(keys) == 0 {
			return total, err
		}
		deleted := 0
		err = l.update(func(tx *bolt.Tx) error {
			deleted = 0 // the function may run twice
			b := tx.Bucket([]byte(bucket))
			for _, k := range keys {
				// Checked again: a record may have changed since the scan.
				if v := b.Get(k); v == nil || !old(v) {
					continue
				}
				if err := b.Delete(k); err != nil {
					return err
				}
				deleted++
			}
			return nil
		})
		if err != nil {
			return total, err
		}
		total += deleted
		if !more {
			return total, nil
		}
		from = keys[len(keys)-1]
	}
}

// finishedBefore reports whether the ledger record v is of a turn that
// finished (done or interrupted) before cutoff. Only the two fields it
// needs are decoded.
func finishedBefore(v []byte, cutoff time.Time) bool {
	var r struct {
		State    string    `json:"state"`
		Finished time.Time `json:"finished"`
	}
	return json.Unmarshal(v, &r) == nil && (r.State == TurnDone || r.State == TurnInterrupted) &&
		!r.Finished.IsZero() && r.Finished.Before(cutoff)
}

// ShouldNotifyDenial reports whether identity may be told it was denied now,
// at most once per interval, and records the time when it may.
func (l *Ledger) ShouldNotifyDenial(identity string, now time.Time, interval time.Duration) (bool, error) {
	ok := false
	err := l.update(func(tx *bolt.Tx) error {
		ok = false // the function may run twice
		b := tx.Bucket([]byte(denialBucket))
		if v := b.Get([]byte(identity)); len(v) > 0 {
			var last time.Time
			if err := last.UnmarshalText(v); err == nil && now.Sub(last) < interval {
				return nil
			}
		}
		ok = true
		t, _ := now.UTC().MarshalText()
		return b.Put([]byte(identity), t)
	})
	return ok, err
}

package outbox

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/store"
)

// Bucket names and their schema version (store.EnsureBucket).
const (
	queueBucket     = "outbox.queue"     // target 0x00 seq(8, big endian) → entry JSON
	indexBucket     = "outbox.index"     // id → index record JSON: the dedupe set
	deadBucket      = "outbox.dead"      // id → entry JSON
	deliveredBucket = "outbox.delivered" // unix nanos(8, big endian) id → nil, oldest first
	countsBucket    = "outbox.counts"    // platform → 4 × int64 (pending, delivered, dead, retried)
	schemaVersion   = 1
)

var allBuckets = []string{queueBucket, indexBucket, deadBucket, deliveredBucket, countsBucket}

// pruneBatch bounds the ids one Prune transaction forgets.
const pruneBatch = 10000

// BoltStore is the Store on a bbolt database (the state root's hub.db).
// Per-target FIFO order is the key order of the queue bucket; the index
// bucket is the dedupe set; counters are kept in the same transactions as the
// changes they count, so start-up never scans the queue.
type BoltStore struct {
	db       *bolt.DB
	commit   *store.DB // the group commit, maybe shared with other writers of db
	useBatch bool      // use bolt's DB.Batch instead of the group commit (benchmarks compare)
}

var _ Store = (*BoltStore)(nil)

// NewBoltStore creates the outbox buckets in db if needed (schema version 1)
// and returns the store, whose writes share commits among themselves. The
// caller keeps ownership of db.
func NewBoltStore(db *bolt.DB) (*BoltStore, error) {
	if db == nil {
		return nil, fmt.Errorf("outbox store: nil database")
	}
	return NewSharedBoltStore(store.NewDB(db))
}

// NewSharedBoltStore is NewBoltStore on a database whose group commit the
// store shares with the database's other writers (the hub's turn ledger),
// so that their concurrent writes share fsyncs.
func NewSharedBoltStore(gc *store.DB) (*BoltStore, error) {
	if gc == nil {
		return nil, fmt.Errorf("outbox store: nil database")
	}
	db := gc.Bolt()
	err := db.Update(func(tx *bolt.Tx) error {
		for _, name := range allBuckets {
			if _, _, err := store.EnsureBucket(tx, name, schemaVersion); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("outbox store: %w", err)
	}
	return &BoltStore{db: db, commit: gc}, nil
}

func (s *BoltStore) update(fn func(*bolt.Tx) error) error {
	if s.useBatch {
		return s.db.Batch(fn)
	}
	return s.commit.Update(fn)
}

// write runs fn on the outbox buckets in a write transaction (through the
// group commit) unless ctx has ended; an error is wrapped with what was
// being done.
func (s *BoltStore) write(ctx context.Context, what string, fn func(buckets) error) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	err := s.update(func(tx *bolt.Tx) error {
		b, err := open(tx)
		if err != nil {
			return err
		}
		return fn(b)
	})
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// read runs fn on the outbox buckets in a read transaction, like write.
func (s *BoltStore) read(ctx context.Context, what string, fn func(buckets) error) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	err := s.db.View(func(tx *bolt.Tx) error {
		b, err := open(tx)
		if err != nil {
			return err
		}
		return fn(b)
	})
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// record is the stored form of an entry. It is separate from Entry so that
// the on-disk format is owned here and does not change with API types.
type record struct {
	ID            string            `json:"id"`
	Kind          Kind              `json:"kind"`
	TurnID        string            `json:"turn_id"`
	Target        string            `json:"target"`
	Index         int               `json:"index"`
	Total         int               `json:"total"`
	Text          string            `json:"text"`
	Attachment    *recordAttachment `json:"attachment,omitempty"`
	Meta          map[string]string `json:"meta,omitempty"`
	EnqueuedAt    time.Time         `json:"enqueued_at"`
	Attempts      int               `json:"attempts,omitempty"`
	Throttled     int               `json:"throttled,omitempty"`
	NextAttemptAt time.Time         `json:"next_attempt_at,omitzero"`
	LastError     string            `json:"last_error,omitempty"`
	DeadAt        time.Time         `json:"dead_at,omitzero"`
}

// recordAttachment is an entry's file: its bytes in Data, or, for a
// stored file (docs/uploads.md), its SHA-256 and size in the state's files/.
type recordAttachment struct {
	Name   string `json:"name"`
	MIME   string `json:"mime"`
	Data   []byte `json:"data,omitempty"`
	SHA256 string `json:"sha256,omitempty"`
	Size   int64  `json:"size,omitempty"`
}

func encodeRecord(e *Entry) ([]byte, error) {
	r := record{
		ID: e.ID, Kind: e.Kind, TurnID: e.TurnID, Target: e.Target.String(), Index: e.Index, Total: e.Total,
		Text: e.Text, Meta: e.Meta, EnqueuedAt: e.EnqueuedAt,
		Attempts: e.Attempts, Throttled: e.Throttled, NextAttemptAt: e.NextAttemptAt, LastError: e.LastError,
	}
	if a := e.Attachment; a != nil {
		r.Attachment = &recordAttachment{Name: a.Name, MIME: a.MIME, Data: a.Data, SHA256: a.SHA256, Size: a.Size}
	}
	if e.State == StateDead {
		r.DeadAt = e.DeliveredAt
	}
	b, err := json.Marshal(&r)
	if err != nil {
		return nil, fmt.Errorf("encode outbox entry %q: %w", e.ID, err)
	}
	return b, nil
}

func decodeRecord(b []byte, state State) (Entry, error) {
	var r record
	if err := json.Unmarshal(b, &r); err != nil {
		return Entry{}, fmt.Errorf("decode outbox entry: %w", err)
	}
	target, err := chat.ParseKey(r.Target)
	if err != nil {
		return Entry{}, fmt.Errorf("decode outbox entry %q: %w", r.ID, err)
	}
	e := Entry{
		ID: r.ID, Kind: r.Kind, TurnID: r.TurnID, Target: target, Index: r.Index, Total: r.Total,
		Text: r.Text, Meta: r.Meta, EnqueuedAt: r.EnqueuedAt,
		Attempts: r.Attempts, Throttled: r.Throttled, NextAttemptAt: r.NextAttemptAt, LastError: r.LastError,
		State: state, DeliveredAt: r.DeadAt,
	}
	if a := r.Attachment; a != nil {
		e.Attachment = &chat.Attachment{Name: a.Name, MIME: a.MIME, Data: a.Data, SHA256: a.SHA256, Size: a.Size}
	}
	return e, nil
}

// indexRecord is what the dedupe set knows about an id.
type indexRecord struct {
	State  State  `json:"s"`
	Target string `json:"t"`
	Seq    uint64 `json:"q,omitempty"` // pending: position in the target's queue
	At     int64  `json:"a,omitempty"` // delivered or dead: unix nanoseconds
	MsgID  string `json:"m,omitempty"` // delivered: the platform's message id
}

func getIndex(idx *bolt.Bucket, id string) (indexRecord, bool, error) {
	v := idx.Get([]byte(id))
	if v == nil {
		return indexRecord{}, false, nil
	}
	if r, ok := parseIndex(v); ok {
		return r, true, nil
	}
	var r indexRecord
	if err := json.Unmarshal(v, &r); err != nil {
		return indexRecord{}, false, fmt.Errorf("decode index record of %q: %w", id, err)
	}
	return r, true, nil
}

func putIndex(idx *bolt.Bucket, id string, r indexRecord) error {
	b, ok := appendIndex(make([]byte, 0, 64+len(r.Target)+len(r.MsgID)), &r)
	if !ok {
		var err error
		if b, err = json.Marshal(&r); err != nil {
			return fmt.Errorf("encode index record of %q: %w", id, err)
		}
	}
	if err := idx.Put([]byte(id), b); err != nil {
		return fmt.Errorf("write index record of %q: %w", id, err)
	}
	return nil
}

// appendIndex appends r as json.Marshal writes it, without reflection, and
// reports whether it could: its strings must be plain (plainJSON); if not,
// the caller uses json.Marshal. Index records are read and written for
// every enqueue and every mark.
func appendIndex(b []byte, r *indexRecord) ([]byte, bool) {
	if !plainJSON(string(r.State)) || !plainJSON(r.Target) || !plainJSON(r.MsgID) {
		return nil, false
	}
	b = append(b, `{"s":"`...)
	b = append(b, r.State...)
	b = append(b, `","t":"`...)
	b = append(b, r.Target...)
	b = append(b, '"')
	if r.Seq != 0 {
		b = strconv.AppendUint(append(b, `,"q":`...), r.Seq, 10)
	}
	if r.At != 0 {
		b = strconv.AppendInt(append(b, `,"a":`...), r.At, 10)
	}
	if r.MsgID != "" {
		b = append(append(append(b, `,"m":"`...), r.MsgID...), '"')
	}
	return append(b, '}'), true
}

// plainJSON reports whether encoding/json writes s as it is between quotes:
// printable ASCII other than the quote, the backslash and the characters it
// escapes for HTML (<, >, &).
func plainJSON[T string | []byte](s T) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20 || c > 0x7e, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return false
		}
	}
	return true
}

// parseIndex reads an index record in exactly the form appendIndex writes,
// and reports whether v was in that form; anything else (escapes, another
// field order, spaces) is left to json.Unmarshal. What it accepts,
// json.Unmarshal reads the same (FuzzIndexRecord).
func parseIndex(v []byte) (indexRecord, bool) {
	var r indexRecord
	rest, ok := bytes.CutPrefix(v, []byte(`{"s":`))
	if !ok {
		return r, false
	}
	var st string
	if st, rest, ok = cutPlainString(rest); !ok {
		return r, false
	}
	r.State = State(st)
	if rest, ok = bytes.CutPrefix(rest, []byte(`,"t":`)); !ok {
		return r, false
	}
	if r.Target, rest, ok = cutPlainString(rest); !ok {
		return r, false
	}
	if after, found := bytes.CutPrefix(rest, []byte(`,"q":`)); found {
		var n []byte
		if n, rest, ok = cutPositive(after); !ok {
			return r, false
		}
		seq, err := strconv.ParseUint(string(n), 10, 64)
		if err != nil {
			return r, false
		}
		r.Seq = seq
	}
	if after, found := bytes.CutPrefix(rest, []byte(`,"a":`)); found {
		var n []byte
		if n, rest, ok = cutPositive(after); !ok {
			return r, false
		}
		at, err := strconv.ParseInt(string(n), 10, 64)
		if err != nil {
			return r, false
		}
		r.At = at
	}
	if after, found := bytes.CutPrefix(rest, []byte(`,"m":`)); found {
		if r.MsgID, rest, ok = cutPlainString(after); !ok || r.MsgID == "" {
			return r, false
		}
	}
	return r, string(rest) == "}"
}

// cutPlainString cuts a JSON string of plain characters (plainJSON) from the
// start of b.
func cutPlainString(b []byte) (string, []byte, bool) {
	if len(b) == 0 || b[0] != '"' {
		return "", nil, false
	}
	end := bytes.IndexByte(b[1:], '"')
	if end < 0 || !plainJSON(b[1:1+end]) {
		return "", nil, false
	}
	return string(b[1 : 1+end]), b[2+end:], true
}

// cutPositive cuts the digits of a positive integer without leading zeros
// from the start of b.
func cutPositive(b []byte) ([]byte, []byte, bool) {
	n := 0
	for n < len(b) && b[n] >= '0' && b[n] <= '9' {
		n++
	}
	if n == 0 || b[0] == '0' {
		return nil, nil, false
	}
	return b[:n], b[n:], true
}

func queueKey(target string, seq uint64) []byte {
	k := make([]byte, 0, len(target)+9)
	k = append(k, target...)
	k = append(k, 0)
	return binary.BigEndian.AppendUint64(k, seq)
}

// targetOf returns the target part of a queue key. Target keys hold no NUL
// byte (chat.ParseKey refuses control characters), so the first NUL ends it.
func targetOf(k []byte) []byte {
	if i := bytes.IndexByte(k, 0); i >= 0 {
		return k[:i]
	}
	return k
}

func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return max(t.UnixNano(), 0)
}

func deliveredKey(at int64, id string) []byte {
	k := binary.BigEndian.AppendUint64(make([]byte, 0, 8+len(id)), uint64(at))
	return append(k, id...)
}

// countDelta accumulates counter changes per platform within a transaction.
type countDelta map[string]*[4]int64

const (
	cPending = iota
	cDelivered
	cDead
	cRetried
)

func (d countDelta) add(target string, field int, n int64) {
	p := platformOf(target)
	c := d[p]
	if c == nil {
		c = new([4]int64)
		d[p] = c
	}
	c[field] += n
}

func (d countDelta) apply(b *bolt.Bucket) error {
	for p, delta := range d {
		var cur [4]int64
		if v := b.Get([]byte(p)); len(v) == 32 {
			for i := range cur {
				cur[i] = int64(binary.BigEndian.Uint64(v[i*8:]))
			}
		}
		buf := make([]byte, 0, 32)
		for i := range cur {
			buf = binary.BigEndian.AppendUint64(buf, uint64(max(cur[i]+delta[i], 0)))
		}
		if err := b.Put([]byte(p), buf); err != nil {
			return fmt.Errorf("write counters of %s: %w", p, err)
		}
	}
	return nil
}

type buckets struct{ queue, index, dead, delivered, counts *bolt.Bucket }

func open(tx *bolt.Tx) (buckets, error) {
	b := buckets{
		queue: tx.Bucket([]byte(queueBucket)), index: tx.Bucket([]byte(indexBucket)),
		dead: tx.Bucket([]byte(deadBucket)), delivered: tx.Bucket([]byte(deliveredBucket)),
		counts: tx.Bucket([]byte(countsBucket)),
	}
	if b.queue == nil || b.index == nil || b.dead == nil || b.delivered == nil || b.counts == nil {
		return b, fmt.Errorf("outbox buckets are missing (was the database replaced while open?)")
	}
	return b, nil
}

// Enqueue implements Store. Entries are validated first; one invalid entry
// fails the whole call and nothing is written. A write ctx carries for this
// database (store.WithAlso) is made in the same transaction, after the
// entries.
func (s *BoltStore) Enqueue(ctx context.Context, entries []Entry) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("enqueue: %w", err)
	}
	if len(entries) == 0 {
		return nil, nil
	}
	recs := make([][]byte, len(entries))
	targets := make([]string, len(entries))
	for i := range entries {
		e := &entries[i]
		if err := e.validate(); err != nil {
			return nil, fmt.Errorf("enqueue: %w", err)
		}
		targets[i] = e.Target.String()
		b, err := encodeRecord(&Entry{
			ID: e.ID, Kind: e.Kind, TurnID: e.TurnID, Target: e.Target, Index: e.Index, Total: e.Total,
			Text: e.Text, Attachment: e.Attachment, Meta: e.Meta, EnqueuedAt: e.EnqueuedAt,
		})
		if err != nil {
			return nil, fmt.Errorf("enqueue: %w", err)
		}
		recs[i] = b
	}
	var added []string
	err := s.update(func(tx *bolt.Tx) error {
		added = added[:0] // the function may run twice
		b, err := open(tx)
		if err != nil {
			return err
		}
		delta := countDelta{}
		for i := range entries {
			e := &entries[i]
			if b.index.Get([]byte(e.ID)) != nil {
				continue
			}
			seq, err := b.queue.NextSequence()
			if err != nil {
				return fmt.Errorf("next sequence: %w", err)
			}
			if err := b.queue.Put(queueKey(targets[i], seq), recs[i]); err != nil {
				return fmt.Errorf("write %q: %w", e.ID, err)
			}
			if err := putIndex(b.index, e.ID, indexRecord{State: StatePending, Target: targets[i], Seq: seq}); err != nil {
				return err
			}
			delta.add(targets[i], cPending, 1)
			added = append(added, e.ID)
		}
		if err := delta.apply(b.counts); err != nil {
			return err
		}
		// What the caller makes durable with the entries (the turn
		// ledger's finish of the turn they answer), also when every id
		// was known already.
		return store.Also(ctx, tx)
	})
	if err != nil {
		return nil, fmt.Errorf("enqueue %d entries: %w", len(entries), err)
	}
	return added, nil
}

// Head implements Store.
func (s *BoltStore) Head(ctx context.Context, target string) (Entry, bool, error) {
	var (
		e     Entry
		found bool
	)
	err := s.read(ctx, "head of "+target, func(b buckets) error {
		prefix := append([]byte(target), 0)
		k, v := b.queue.Cursor().Seek(prefix)
		if k == nil || !bytes.HasPrefix(k, prefix) {
			return nil
		}
		var err error
		e, err = decodeRecord(v, StatePending)
		found = err == nil
		return err
	})
	if err != nil {
		return Entry{}, false, err
	}
	return e, found, nil
}

// heads returns up to n of target's oldest pending entries, in queue order,
// read in one transaction; it stops before an entry whose stored record
// would bring the total past maxBytes, but always returns the first one.
func (s *BoltStore) heads(ctx context.Context, target string, n, maxBytes int) ([]Entry, error) {
	var es []Entry
	err := s.read(ctx, "heads of "+target, func(b buckets) error {
		es = es[:0]
		size := 0
		prefix := append([]byte(target), 0)
		c := b.queue.Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix) && len(es) < n; k, v = c.Next() {
			size += len(v)
			if len(es) > 0 && size > maxBytes {
				break
			}
			e, err := decodeRecord(v, StatePending)
			if err != nil {
				return err
			}
			es = append(es, e)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return es, nil
}

// PendingTargets implements Store. It seeks from target to target, so a page
// costs one seek per target whatever the queue lengths.
func (s *BoltStore) PendingTargets(ctx context.Context, after string, limit int) ([]string, error) {
	if limit <= 0 {
		limit = 1000
	}
	var out []string
	err := s.read(ctx, "pending targets", func(b buckets) error {
		c := b.queue.Cursor()
		var k []byte
		if after == "" {
			k, _ = c.First()
		} else {
			k, _ = c.Seek(append([]byte(after), 1))
		}
		for k != nil && len(out) < limit {
			t := targetOf(k)
			out = append(out, string(t))
			k, _ = c.Seek(append(bytes.Clone(t), 1))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// pendingRecord loads the index record and queued entry of a pending id.
func pendingRecord(b buckets, id string) (indexRecord, []byte, Entry, error) {
	ir, ok, err := getIndex(b.index, id)
	if err != nil {
		return ir, nil, Entry{}, err
	}
	key, v, err := pendingKey(b, id, ir, ok)
	if err != nil {
		return ir, nil, Entry{}, err
	}
	e, err := decodeRecord(v, StatePending)
	return ir, key, e, err
}

// pendingKey checks that id, whose index record is ir (found: ok), is
// pending, and returns its queue key and stored value.
func pendingKey(b buckets, id string, ir indexRecord, ok bool) ([]byte, []byte, error) {
	if !ok {
		return nil, nil, fmt.Errorf("%q: %w", id, ErrNotFound)
	}
	if ir.State != StatePending {
		return nil, nil, fmt.Errorf("%q is %s, not pending: %w", id, ir.State, ErrWrongState)
	}
	key := queueKey(ir.Target, ir.Seq)
	v := b.queue.Get(key)
	if v == nil {
		return nil, nil, fmt.Errorf("%q: index says pending but the queue has no entry: %w", id, ErrNotFound)
	}
	return key, v, nil
}

// Defer implements Store.
func (s *BoltStore) Defer(ctx context.Context, id string, r Retry) error {
	return s.write(ctx, fmt.Sprintf("defer %q", id), func(b buckets) error {
		ir, key, e, err := pendingRecord(b, id)
		if err != nil {
			return err
		}
		e.Attempts, e.Throttled, e.NextAttemptAt, e.LastError = r.Attempts, r.Throttled, r.NextAttemptAt, r.LastError
		v, err := encodeRecord(&e)
		if err != nil {
			return err
		}
		if err := b.queue.Put(key, v); err != nil {
			return fmt.Errorf("write %q: %w", id, err)
		}
		delta := countDelta{}
		delta.add(ir.Target, cRetried, 1)
		return delta.apply(b.counts)
	})
}

// Delivered implements Store.
func (s *BoltStore) Delivered(ctx context.Context, id string, rc Receipt, at time.Time) error {
	return s.write(ctx, fmt.Sprintf("mark %q delivered", id), func(b buckets) error {
		ir, ok, err := getIndex(b.index, id)
		if err != nil {
			return err
		}
		if ok && ir.State == StateDelivered {
			return nil
		}
		// The entry itself is not decoded: only its key is needed.
		key, _, err := pendingKey(b, id, ir, ok)
		if err != nil {
			return err
		}
		if err := b.queue.Delete(key); err != nil {
			return fmt.Errorf("dequeue %q: %w", id, err)
		}
		t := nanos(at)
		if err := putIndex(b.index, id, indexRecord{State: StateDelivered, Target: ir.Target, At: t, MsgID: rc.MessageID}); err != nil {
			return err
		}
		if err := b.delivered.Put(deliveredKey(t, id), nil); err != nil {
			return fmt.Errorf("record delivery time of %q: %w", id, err)
		}
		delta := countDelta{}
		delta.add(ir.Target, cPending, -1)
		delta.add(ir.Target, cDelivered, 1)
		return delta.apply(b.counts)
	})
}

// delivery is one mark of a batch: the pending entry id, sent to target,
// delivered at at with receipt rc.
type delivery struct {
	id, target string
	rc         Receipt
	at         time.Time
}

// deliveryResult is what a batch learned of one mark: its own error (the
// mark was not made: ErrNotFound, ErrWrongState, a corrupt index record), and
// the stored record of its target's head after the whole batch (nil: the
// queue is empty), copied out of the transaction.
type deliveryResult struct {
	err  error
	head []byte
}

// deliveredBatch marks every delivery of ds delivered in one durable
// transaction, each exactly as Delivered would (a delivered id is a no-op;
// an id that is not pending is left alone and reported in its result), and
// reads in the same transaction the head of each target once all marks are
// made, so the dispatcher need not read it again. The error is the
// transaction's own: then nothing was marked and res is meaningless.
func (s *BoltStore) deliveredBatch(ctx context.Context, ds []delivery, res []deliveryResult) error {
	return s.write(ctx, fmt.Sprintf("mark %d entries delivered", len(ds)), func(b buckets) error {
		// The function may run twice (group commit): start afresh.
		clear(res)
		delta := countDelta{}
		for i := range ds {
			d := &ds[i]
			ir, ok, err := getIndex(b.index, d.id)
			if err != nil {
				res[i].err = err
				continue
			}
			if ok && ir.State == StateDelivered {
				continue
			}
			key, _, err := pendingKey(b, d.id, ir, ok)
			if err != nil {
				res[i].err = err
				continue
			}
			if err := b.queue.Delete(key); err != nil {
				return fmt.Errorf("dequeue %q: %w", d.id, err)
			}
			t := nanos(d.at)
			if err := putIndex(b.index, d.id, indexRecord{State: StateDelivered, Target: ir.Target, At: t, MsgID: d.rc.MessageID}); err != nil {
				return err
			}
			if err := b.delivered.Put(deliveredKey(t, d.id), nil); err != nil {
				return fmt.Errorf("record delivery time of %q: %w", d.id, err)
			}
			delta.add(ir.Target, cPending, -1)
			delta.add(ir.Target, cDelivered, 1)
		}
		if err := delta.apply(b.counts); err != nil {
			return err
		}
		c := b.queue.Cursor()
		var prefix []byte
		for i := range ds {
			if i > 0 && ds[i].target == ds[i-1].target {
				// The same target's head after the batch (a batch of one
				// target's chunks reads it once).
				res[i].head = res[i-1].head
				continue
			}
			prefix = append(append(prefix[:0], ds[i].target...), 0)
			if k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix) {
				res[i].head = bytes.Clone(v)
			}
		}
		return nil
	})
}

// Dead implements Store.
func (s *BoltStore) Dead(ctx context.Context, id string, r Retry, at time.Time) error {
	return s.write(ctx, fmt.Sprintf("dead-letter %q", id), func(b buckets) error {
		ir, key, e, err := pendingRecord(b, id)
		if err != nil {
			return err
		}
		e.Attempts, e.Throttled, e.LastError = r.Attempts, r.Throttled, r.LastError
		e.NextAttemptAt = time.Time{}
		e.State, e.DeliveredAt = StateDead, at
		v, err := encodeRecord(&e)
		if err != nil {
			return err
		}
		if err := b.dead.Put([]byte(id), v); err != nil {
			return fmt.Errorf("write dead letter %q: %w", id, err)
		}
		if err := b.queue.Delete(key); err != nil {
			return fmt.Errorf("dequeue %q: %w", id, err)
		}
		if err := putIndex(b.index, id, indexRecord{State: StateDead, Target: ir.Target, At: nanos(at)}); err != nil {
			return err
		}
		delta := countDelta{}
		delta.add(ir.Target, cPending, -1)
		delta.add(ir.Target, cDead, 1)
		return delta.apply(b.counts)
	})
}

// deliveredEntry rebuilds what is known of a delivered id: its parts, the
// target among them, come from the id (ParseID).
func deliveredEntry(id string, ir indexRecord) Entry {
	e := Entry{ID: id, State: StateDelivered, PlatformMessageID: ir.MsgID}
	if ir.At > 0 {
		e.DeliveredAt = time.Unix(0, ir.At).UTC()
	}
	if k, turn, target, i, err := ParseID(id); err == nil {
		e.Kind, e.TurnID, e.Target, e.Index = k, turn, target, i
	}
	return e
}

// Get implements Store.
func (s *BoltStore) Get(ctx context.Context, id string) (Entry, error) {
	var e Entry
	err := s.read(ctx, fmt.Sprintf("get %q", id), func(b buckets) error {
		ir, ok, err := getIndex(b.index, id)
		if err != nil {
			return err
		}
		if !ok {
			return ErrNotFound
		}
		switch ir.State {
		case StatePending:
			_, _, e, err = pendingRecord(b, id)
			return err
		case StateDelivered:
			e = deliveredEntry(id, ir)
			return nil
		case StateDead:
			v := b.dead.Get([]byte(id))
			if v == nil {
				return fmt.Errorf("index says dead but there is no dead letter: %w", ErrNotFound)
			}
			e, err = decodeRecord(v, StateDead)
			return err
		}
		return fmt.Errorf("unknown state %q in the index", ir.State)
	})
	if err != nil {
		return Entry{}, err
	}
	return e, nil
}

// List implements Store. Pending entries come in queue order (by target,
// then enqueue order), dead letters by id, delivered ids oldest first.
func (s *BoltStore) List(ctx context.Context, f Filter) ([]Entry, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = 1000
	}
	var out []Entry
	err := s.read(ctx, "list "+string(f.State), func(b buckets) error {
		switch f.State {
		case StatePending:
			var prefix []byte
			if f.Target != "" {
				prefix = append([]byte(f.Target), 0)
			}
			return scanRecords(b.queue, prefix, StatePending, f, limit, &out)
		case StateDead:
			return scanRecords(b.dead, nil, StateDead, f, limit, &out)
		case StateDelivered:
			c := b.delivered.Cursor()
			for k, _ := c.First(); k != nil && len(out) < limit; k, _ = c.Next() {
				if len(k) < 8 {
					continue
				}
				id := string(k[8:])
				ir, ok, err := getIndex(b.index, id)
				if err != nil {
					return err
				}
				if !ok || ir.State != StateDelivered {
					continue
				}
				e := deliveredEntry(id, ir)
				if f.match(&e) {
					out = append(out, e)
				}
			}
		default:
			return fmt.Errorf("unknown state %q (accepted: pending, delivered, dead)", f.State)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// scanRecords appends to out the records of bucket whose keys start with
// prefix, decoded in state, that f matches, until out holds limit entries.
func scanRecords(bucket *bolt.Bucket, prefix []byte, state State, f Filter, limit int, out *[]Entry) error {
	c := bucket.Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix) && len(*out) < limit; k, v = c.Next() {
		e, err := decodeRecord(v, state)
		if err != nil {
			return err
		}
		if f.match(&e) {
			*out = append(*out, e)
		}
	}
	return nil
}

// Requeue implements Store.
func (s *BoltStore) Requeue(ctx context.Context, id string) (Entry, error) {
	var e Entry
	err := s.write(ctx, fmt.Sprintf("requeue %q", id), func(b buckets) error {
		ir, ok, err := getIndex(b.index, id)
		if err != nil {
			return err
		}
		if !ok {
			return ErrNotFound
		}
		if ir.State != StateDead {
			return fmt.Errorf("it is %s; only dead letters can be retried: %w", ir.State, ErrWrongState)
		}
		v := b.dead.Get([]byte(id))
		if v == nil {
			return fmt.Errorf("index says dead but there is no dead letter: %w", ErrNotFound)
		}
		e, err = decodeRecord(v, StatePending)
		if err != nil {
			return err
		}
		e.Attempts, e.Throttled, e.NextAttemptAt, e.LastError, e.DeliveredAt = 0, 0, time.Time{}, "", time.Time{}
		nv, err := encodeRecord(&e)
		if err != nil {
			return err
		}
		seq, err := b.queue.NextSequence()
		if err != nil {
			return fmt.Errorf("next sequence: %w", err)
		}
		if err := b.queue.Put(queueKey(ir.Target, seq), nv); err != nil {
			return fmt.Errorf("write %q: %w", id, err)
		}
		if err := b.dead.Delete([]byte(id)); err != nil {
			return fmt.Errorf("delete dead letter %q: %w", id, err)
		}
		if err := putIndex(b.index, id, indexRecord{State: StatePending, Target: ir.Target, Seq: seq}); err != nil {
			return err
		}
		delta := countDelta{}
		delta.add(ir.Target, cDead, -1)
		delta.add(ir.Target, cPending, 1)
		return delta.apply(b.counts)
	})
	if err != nil {
		return Entry{}, err
	}
	return e, nil
}

// Purge implements Store.
func (s *BoltStore) Purge(ctx context.Context, f Filter) (int, error) {
	n := 0
	err := s.write(ctx, "purge dead letters", func(b buckets) error {
		n = 0
		var ids [][]byte
		delta := countDelta{}
		c := b.dead.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			e, err := decodeRecord(v, StateDead)
			if err != nil {
				return err
			}
			if f.match(&e) {
				ids = append(ids, bytes.Clone(k))
				delta.add(e.Target.String(), cDead, -1)
			}
		}
		for _, id := range ids {
			if err := b.dead.Delete(id); err != nil {
				return fmt.Errorf("delete dead letter %q: %w", id, err)
			}
			if err := b.index.Delete(id); err != nil {
				return fmt.Errorf("forget %q: %w", id, err)
			}
		}
		n = len(ids)
		return delta.apply(b.counts)
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// Prune implements Store. It walks the delivered-by-time bucket from the
// oldest and stops at the first id delivered at or after before, in
// transactions of at most pruneBatch ids.
func (s *BoltStore) Prune(ctx context.Context, before time.Time) (int, error) {
	cut := nanos(before)
	total := 0
	for {
		if err := ctx.Err(); err != nil {
			return total, fmt.Errorf("prune: %w", err)
		}
		// A read first, so an idle prune writes nothing.
		var more bool
		err := s.db.View(func(tx *bolt.Tx) error {
			b, err := open(tx)
			if err != nil {
				return err
			}
			k, _ := b.delivered.Cursor().First()
			more = len(k) >= 8 && int64(binary.BigEndian.Uint64(k)) < cut
			return nil
		})
		if err != nil || !more {
			if err != nil {
				err = fmt.Errorf("prune: %w", err)
			}
			return total, err
		}
		n := 0
		err = s.db.Update(func(tx *bolt.Tx) error {
			b, err := open(tx)
			if err != nil {
				return err
			}
			var keys [][]byte
			c := b.delivered.Cursor()
			for k, _ := c.First(); k != nil && len(keys) < pruneBatch; k, _ = c.Next() {
				if len(k) >= 8 && int64(binary.BigEndian.Uint64(k)) >= cut {
					break
				}
				keys = append(keys, bytes.Clone(k))
			}
			for _, k := range keys {
				if len(k) >= 8 {
					id := string(k[8:])
					ir, ok, err := getIndex(b.index, id)
					if err != nil {
						return err
					}
					if ok && ir.State == StateDelivered && ir.At == int64(binary.BigEndian.Uint64(k)) {
						if err := b.index.Delete([]byte(id)); err != nil {
							return fmt.Errorf("forget %q: %w", id, err)
						}
						n++
					}
				}
				if err := b.delivered.Delete(k); err != nil {
					return fmt.Errorf("delete delivery time: %w", err)
				}
			}
			return nil
		})
		if err != nil {
			return total, fmt.Errorf("prune: %w", err)
		}
		total += n
	}
}

// fileRefs lists the stored files that pending entries and dead letters
// carry: the files the outbox may still send (docs/uploads.md). Only records
// that name a SHA-256 are decoded.
func (s *BoltStore) fileRefs(ctx context.Context) (map[string]bool, error) {
	refs := map[string]bool{}
	marker := []byte(`"sha256":"`)
	err := s.read(ctx, "list stored files", func(b buckets) error {
		for _, bucket := range []*bolt.Bucket{b.queue, b.dead} {
			err := bucket.ForEach(func(k, v []byte) error {
				if len(k) == 0 || !bytes.Contains(v, marker) {
					return nil
				}
				var r record
				if err := json.Unmarshal(v, &r); err != nil {
					return fmt.Errorf("decode outbox entry: %w", err)
				}
				if a := r.Attachment; a != nil && a.SHA256 != "" {
					refs[a.SHA256] = true
				}
				return nil
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	return refs, err
}

// Counts implements Store.
func (s *BoltStore) Counts(ctx context.Context) (map[string]Counts, error) {
	out := map[string]Counts{}
	err := s.read(ctx, "counts", func(b buckets) error {
		return b.counts.ForEach(func(k, v []byte) error {
			if len(v) != 32 {
				return fmt.Errorf("counters of %s are corrupt (%d bytes)", k, len(v))
			}
			get := func(i int) int64 { return int64(binary.BigEndian.Uint64(v[i*8:])) }
			out[string(k)] = Counts{Pending: get(cPending), Delivered: get(cDelivered), Dead: get(cDead), Retried: get(cRetried)}
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

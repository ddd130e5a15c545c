package outbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/clock"
	"github.com/a6afc2ce/hermes-hub/store"
)

// Defaults for zero Options fields.
const (
	DefaultConcurrency   = 64
	DefaultMaxAttempts   = 10
	DefaultMaxRetryAfter = 50
	DefaultSendTimeout   = 30 * time.Second
	DefaultRetention     = 7 * 24 * time.Hour
	DefaultPruneEvery    = time.Hour
)

// burst is how many chunks a target sends before it yields its worker to the
// next ready target, so one long queue does not starve the others. With a
// store that marks in batches (BoltStore), a target whose mark another
// worker writes also gives up its worker until that mark is durable.
const burst = 4

// pageSize is how many targets one start-up scan page reads.
const pageSize = 1000

// maxMarkBatch bounds the delivered marks written in one transaction; a
// worker with a mark to hand over waits while that many are pending.
const maxMarkBatch = 1024

// Options tune the dispatcher. Zero fields take the defaults above.
type Options struct {
	// Concurrency is how many targets may have a send in flight at once.
	Concurrency int
	// MaxAttempts is how many failed sends make an entry a dead letter.
	MaxAttempts int
	// MaxRetryAfter caps retry-after answers per entry, which do not count
	// as failed attempts; one more makes the entry a dead letter.
	MaxRetryAfter int
	// Backoff spaces retries after transient failures.
	Backoff Backoff
	// SendTimeout bounds one Send.
	SendTimeout time.Duration
	// Retention is how long delivered ids are kept for dedupe.
	Retention time.Duration
	// PruneEvery is how often delivered ids past the retention are pruned.
	PruneEvery time.Duration
	// Clock drives retry timers and pruning; default clock.Real{}.
	Clock clock.Clock
	// Events is told about deliveries, dead letters and retries.
	Events Events
	// Logger receives warnings and errors; default slog.Default().
	Logger *slog.Logger
	// Files holds the bytes of the stored files entries carry
	// (docs/uploads.md): read when such an entry is sent, and swept of what
	// no pending or dead entry names once the retention has passed. Nil:
	// an entry with a stored file becomes a dead letter saying so.
	Files FileStore
}

// FileStore is the store of the files entries carry: the state's files/
// (store.Files).
type FileStore interface {
	Open(sha string) (io.ReadCloser, store.FileInfo, error)
	Stat(sha string) (store.FileInfo, error)
	Sweep(keep map[string]bool, before time.Time) (int, error)
}

func (o Options) withDefaults() Options {
	if o.Concurrency <= 0 {
		o.Concurrency = DefaultConcurrency
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = DefaultMaxAttempts
	}
	if o.MaxRetryAfter <= 0 {
		o.MaxRetryAfter = DefaultMaxRetryAfter
	}
	o.Backoff = o.Backoff.withDefaults()
	if o.SendTimeout <= 0 {
		o.SendTimeout = DefaultSendTimeout
	}
	if o.Retention <= 0 {
		o.Retention = DefaultRetention
	}
	if o.PruneEvery <= 0 {
		o.PruneEvery = DefaultPruneEvery
	}
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.Events == nil {
		o.Events = NopEvents{}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// Events hears what happens to entries. The dispatcher calls it from its
// workers, so implementations must be quick and safe for concurrent use.
// Delivered and Dead are called before the outcome is stored: a record an
// observer keeps is never missing for a delivered or dead chunk, and after a
// crash in between the chunk is sent, and reported, once more (the same
// window the outbox already has for the chunk itself). Retrying is called
// after the retry time is stored.
type Events interface {
	// Delivered: e was sent and marked delivered.
	Delivered(e *Entry, r Receipt)
	// Dead: e became a dead letter; e.LastError says why.
	Dead(e *Entry)
	// Retrying: e failed with err and will be tried again at next.
	Retrying(e *Entry, err error, next time.Time)
}

// NopEvents ignores every event; embed it to implement only some of Events.
type NopEvents struct{}

// Delivered does nothing.
func (NopEvents) Delivered(*Entry, Receipt) {}

// Dead does nothing.
func (NopEvents) Dead(*Entry) {}

// Retrying does nothing.
func (NopEvents) Retrying(*Entry, error, time.Time) {}

// Stats is a snapshot of the outbox.
type Stats struct {
	// Platforms maps telegram, discord, web and local to their counters.
	Platforms map[string]PlatformStats `json:"platforms"`
	// Targets is how many targets have pending work the dispatcher knows of;
	// Unroutable is how many of them wait for a sender to be configured.
	Targets    int `json:"targets"`
	Unroutable int `json:"unroutable"`
}

// PlatformStats are the counters of one platform. Pending includes the
// chunks in flight; Delivered and Retried are totals since the store was
// created.
type PlatformStats struct {
	Pending   int64 `json:"pending"`
	InFlight  int64 `json:"in_flight"`
	Delivered int64 `json:"delivered"`
	Retried   int64 `json:"retried"`
	Dead      int64 `json:"dead"`
}

type runState int

const (
	stateIdle runState = iota
	stateRunning
	stateStopping
	stateStopped
)

type targetState int

const (
	tQueued     targetState = iota // in the ready queue
	tRunning                       // owned by a worker
	tWaiting                       // waiting for its retry time; holds no worker
	tUnroutable                    // no sender for it; waits for one
	tMarking                       // sent; its delivered mark is being written; holds no worker
)

// target is the dispatcher's only per-target memory: a target with pending
// work and what it waits for.
type target struct {
	key   string
	state targetState
	dirty bool // woken while running: look at the queue again before leaving
	timer clock.Timer

	// wakes counts wake calls. A head read with a mark is kept only if no
	// wake came between the hand-over of the mark and its result: an entry
	// enqueued after the mark's transaction is always woken after it.
	wakes uint64
	// head is the target's queue head as the transaction of its last mark
	// read it (headKnown; nil head: the queue was empty). A wake forgets it;
	// next hands it to the worker (own, ownKnown), which uses it once
	// instead of reading the head from the store.
	head, own           []byte
	headKnown, ownKnown bool
}

// mark is a delivered mark handed over by a worker: the target, sent and in
// state tMarking, the mark, and the target's wakes at the hand-over.
type mark struct {
	t     *target
	d     delivery
	wakes uint64
}

// batchMarker is a Store that writes many delivered marks in one
// transaction and reads the targets' new heads in it (BoltStore). With any
// other Store, the worker marks each delivery itself with Delivered.
type batchMarker interface {
	deliveredBatch(ctx context.Context, ds []delivery, res []deliveryResult) error
}

// Outbox dispatches the entries of a Store to Senders: per target strictly
// in order with one chunk in flight, targets in parallel up to Concurrency,
// retries on timers, dead letters after permanent or repeated failures.
// With a BoltStore, a worker does not wait for its delivered mark: the
// marks of all targets are written together, as many in one transaction as
// are pending, and a target's next chunk is sent only once its previous
// mark is durable. A target whose sender is a RecordedSender (the web
// panel, whose delivery is the outbox's own record) sends its pending
// chunks in batches instead: in order, observers told of the batch, then
// its marks in one transaction, before the next batch.
// Create it with New, then call Run once.
type Outbox struct {
	st   Store
	mux  *Mux
	opts Options
	clk  clock.Clock
	ev   Events
	log  *slog.Logger

	mu         sync.Mutex
	cond       *sync.Cond // signals the ready queue and stopping
	state      runState
	targets    map[string]*target
	ready      []*target
	readyHead  int
	inFlight   map[string]int64
	unroutable int
	pruneTimer clock.Timer

	// Delivered marks waiting to be written (o.mu), when st is a
	// batchMarker. marking: a worker is writing marks and will take these
	// too. The spare slices are the writing worker's.
	batcher    batchMarker
	heads      headsStore // the batch path of RecordedSenders; nil: none
	marks      []mark
	marking    bool
	markRoom   *sync.Cond // the writing worker took the pending marks
	spareMarks []mark
	markDs     []delivery
	markRes    []deliveryResult

	runCtx    context.Context // cancelled at hard stop; sends and pruning use it
	cancelRun context.CancelFunc
	stopping  chan struct{} // closed when stopping starts
	done      chan struct{} // closed when Run returns
	recovered chan struct{} // closed when the start-up scan has found every pending target
	pruneKick chan struct{}
	marksCtx  context.Context // store marks: never cancelled, a mark after a send must land
	stopOnce  sync.Once
}

// New returns a dispatcher over st that sends through mux. A nil mux has no
// senders: every target stays pending.
func New(st Store, mux *Mux, opts Options) *Outbox {
	opts = opts.withDefaults()
	if mux == nil {
		mux = NewMux()
	}
	o := &Outbox{
		st: st, mux: mux, opts: opts, clk: opts.Clock, ev: opts.Events, log: opts.Logger,
		targets:   map[string]*target{},
		inFlight:  map[string]int64{},
		stopping:  make(chan struct{}),
		done:      make(chan struct{}),
		recovered: make(chan struct{}),
		pruneKick: make(chan struct{}, 1),
		marksCtx:  context.Background(),
	}
	o.cond = sync.NewCond(&o.mu)
	o.markRoom = sync.NewCond(&o.mu)
	o.batcher, _ = st.(batchMarker)
	o.heads, _ = st.(headsStore)
	return o
}

// Store returns the dispatcher's store, for listing and retrying entries.
func (o *Outbox) Store() Store { return o.st }

// Enqueue stores entries durably (all or nothing; ids already known are
// skipped) and wakes their targets at once. Entries without EnqueuedAt get
// the clock's time. It returns the ids actually added.
func (o *Outbox) Enqueue(ctx context.Context, entries []Entry) ([]string, error) {
	if o.st == nil {
		return nil, fmt.Errorf("outbox enqueue: no store")
	}
	if len(entries) == 0 {
		return nil, nil
	}
	now := o.clk.Now()
	prepared := make([]Entry, len(entries))
	for i, e := range entries {
		if err := e.validate(); err != nil {
			return nil, fmt.Errorf("outbox enqueue: %w", err)
		}
		if e.EnqueuedAt.IsZero() {
			e.EnqueuedAt = now
		}
		prepared[i] = e
	}
	added, err := o.st.Enqueue(ctx, prepared)
	if err != nil {
		return nil, fmt.Errorf("outbox %w", err)
	}
	// added is a subsequence of prepared's ids, in order.
	woken := map[chat.Key]bool{}
	j := 0
	for i := 0; i < len(prepared) && j < len(added); i++ {
		if prepared[i].ID != added[j] {
			continue
		}
		j++
		if t := prepared[i].Target; !woken[t] {
			woken[t] = true
			o.wake(t.String())
		}
	}
	return added, nil
}

// Requeue turns a dead letter back into a pending entry at the tail of its
// target and wakes the target.
func (o *Outbox) Requeue(ctx context.Context, id string) (Entry, error) {
	if o.st == nil {
		return Entry{}, fmt.Errorf("outbox requeue: no store")
	}
	e, err := o.st.Requeue(ctx, id)
	if err != nil {
		return Entry{}, fmt.Errorf("outbox %w", err)
	}
	o.wake(e.Target.String())
	return e, nil
}

// Run recovers the pending targets from the store and dispatches until ctx
// is done or Shutdown is called. It returns nil then, and an error if it
// cannot start or the store cannot be scanned. Run works once per Outbox.
func (o *Outbox) Run(ctx context.Context) error {
	if o.st == nil {
		return fmt.Errorf("outbox run: no store")
	}
	o.mu.Lock()
	switch o.state {
	case stateRunning:
		o.mu.Unlock()
		return fmt.Errorf("outbox run: already running")
	case stateStopping, stateStopped:
		o.mu.Unlock()
		return fmt.Errorf("outbox run: %w", ErrClosed)
	}
	o.state = stateRunning
	o.runCtx, o.cancelRun = context.WithCancel(context.WithoutCancel(ctx))
	o.mu.Unlock()

	var wg sync.WaitGroup
	for range o.opts.Concurrency {
		wg.Go(o.worker)
	}
	wg.Go(o.pruner)

	wg.Go(func() {
		select {
		case <-ctx.Done():
			o.beginStop()
			o.cancelRun() // a hard stop cancels in-flight sends
		case <-o.stopping:
		}
	})

	err := o.scan(ctx)
	if err != nil {
		o.beginStop()
		o.cancelRun()
	}
	<-o.stopping
	wg.Wait() // a worker writing marks returns once none is pending
	o.cancelRun()

	o.mu.Lock()
	for _, t := range o.targets {
		if t.timer != nil {
			t.timer.Stop()
			t.timer = nil
		}
	}
	if o.pruneTimer != nil {
		o.pruneTimer.Stop()
	}
	o.state = stateStopped
	o.mu.Unlock()
	close(o.done)
	return err
}

// Shutdown stops starting sends, waits for the in-flight ones and for Run to
// return. If ctx ends first, in-flight sends are cancelled (their chunks stay
// pending and are sent again on the next start) and ctx's error is returned.
func (o *Outbox) Shutdown(ctx context.Context) error {
	o.mu.Lock()
	st := o.state
	if st == stateIdle {
		o.state = stateStopped
	}
	o.mu.Unlock()
	if st == stateIdle {
		o.beginStop()
		return nil
	}
	o.beginStop()
	select {
	case <-o.done:
		return nil
	case <-ctx.Done():
		o.mu.Lock()
		if o.cancelRun != nil {
			o.cancelRun()
		}
		o.mu.Unlock()
		return fmt.Errorf("outbox shutdown: %w", ctx.Err())
	}
}

func (o *Outbox) beginStop() {
	o.stopOnce.Do(func() {
		o.mu.Lock()
		if o.state != stateStopped {
			o.state = stateStopping
		}
		close(o.stopping)
		o.cond.Broadcast()
		o.mu.Unlock()
	})
}

// scan walks the store's pending targets page by page and wakes each; a
// target's entries are read later, one head at a time.
func (o *Outbox) scan(ctx context.Context) error {
	after := ""
	n := 0
	for {
		select {
		case <-o.stopping:
			return nil
		default:
		}
		page, err := o.st.PendingTargets(ctx, after, pageSize)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("outbox recover: %w", err)
		}
		for _, t := range page {
			o.wake(t)
		}
		n += len(page)
		if len(page) < pageSize {
			break
		}
		after = page[len(page)-1]
	}
	if n > 0 {
		o.log.Info("outbox recovered pending targets", "targets", n)
	}
	close(o.recovered)
	return nil
}

// wake makes target ready unless it is already queued, running (then it
// looks again before leaving), or waiting for its retry time.
func (o *Outbox) wake(key string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.state == stateStopping || o.state == stateStopped {
		return
	}
	t := o.targets[key]
	if t == nil {
		t = &target{key: key}
		o.targets[key] = t
		o.push(t)
		return
	}
	t.wakes++
	t.head, t.headKnown = nil, false
	switch t.state {
	case tRunning, tMarking:
		t.dirty = true
	case tUnroutable:
		// A sender registered since then lets it go again.
		if _, ok := o.mux.Sender(key); ok {
			o.unroutable--
			o.push(t)
		}
	}
}

// push appends t to the ready queue; o.mu is held.
func (o *Outbox) push(t *target) {
	t.state = tQueued
	o.ready = append(o.ready, t)
	o.cond.Signal()
}

// next blocks until a target is ready and hands it to the calling worker;
// nil means stop.
func (o *Outbox) next() *target {
	o.mu.Lock()
	defer o.mu.Unlock()
	for {
		if o.state != stateRunning {
			return nil
		}
		if o.readyHead < len(o.ready) {
			t := o.ready[o.readyHead]
			o.ready[o.readyHead] = nil
			o.readyHead++
			if o.readyHead > 256 && o.readyHead*2 > len(o.ready) {
				o.ready = append(o.ready[:0], o.ready[o.readyHead:]...)
				o.readyHead = 0
			}
			t.state = tRunning
			t.dirty = false
			t.own, t.ownKnown = t.head, t.headKnown
			t.head, t.headKnown = nil, false
			return t
		}
		o.cond.Wait()
	}
}

func (o *Outbox) worker() {
	for {
		t := o.next()
		if t == nil {
			return
		}
		o.serve(t)
	}
}

// serve sends t's chunks in order until its queue is empty, it must wait,
// it has had its burst, or the dispatcher stops.
func (o *Outbox) serve(t *target) {
	for sent := 0; ; {
		if sent >= burst {
			o.yield(t)
			return
		}
		s, routed := o.mux.Sender(t.key)
		if routed && o.batchable(s) {
			n, goOn := o.serveBatch(t, s)
			if !goOn {
				return
			}
			sent += n
			continue
		}
		e, ok, err := o.head(t)
		if err != nil {
			o.log.Error("outbox: read queue head", "target", t.key, "err", err)
			o.park(t, o.clk.Now().Add(o.opts.Backoff.Base))
			return
		}
		if !ok {
			if o.finish(t) {
				return
			}
			continue
		}
		if now := o.clk.Now(); now.Before(e.NextAttemptAt) {
			o.park(t, e.NextAttemptAt)
			return
		}
		if !routed {
			o.setUnroutable(t)
			return
		}
		platform := platformOf(t.key)
		if !o.beginSend(platform) {
			return
		}
		rc, sendErr := o.send(s, &e)
		o.endSend(platform)
		if sendErr != nil && o.runCtx.Err() != nil {
			// Cancelled by a hard stop: not the platform's verdict. The chunk
			// stays pending as it was and goes out again on the next start.
			return
		}
		if sendErr == nil && o.batcher != nil {
			// The mark is written with those of other targets, and t goes
			// back to the ready queue once it is durable, unless this
			// worker wrote it and keeps t.
			if !o.handOver(t, &e, rc) {
				return
			}
			sent++
			continue
		}
		if !o.settle(t, &e, rc, sendErr) {
			return
		}
		sent++
	}
}

// head returns t's oldest pending entry: the one its last mark's
// transaction read if that was handed to the worker (own), else read from
// the store.
func (o *Outbox) head(t *target) (Entry, bool, error) {
	if t.ownKnown {
		raw := t.own
		t.own, t.ownKnown = nil, false
		if raw == nil {
			return Entry{}, false, nil
		}
		e, err := decodeRecord(raw, StatePending)
		if err != nil {
			return Entry{}, false, fmt.Errorf("head of %s: %w", t.key, err)
		}
		return e, true, nil
	}
	return o.st.Head(o.marksCtx, t.key)
}

func (o *Outbox) send(s Sender, e *Entry) (rc Receipt, err error) {
	cp := *e
	var changed *atomic.Bool
	if a := cp.Attachment; a != nil && a.Stored() {
		if cp.Attachment, changed, err = o.storedFile(a); err != nil {
			return Receipt{}, Permanent(err)
		}
	}
	ctx, cancel := context.WithTimeout(o.runCtx, o.opts.SendTimeout)
	defer cancel()
	defer func() {
		if p := recover(); p != nil {
			err = Transient(fmt.Errorf("sender panicked: %v", p))
		}
		if err != nil && changed != nil && changed.Load() {
			// The bytes are not those stored: no retry can mend that.
			err = Permanent(fmt.Errorf("file %s: %w: %w", cp.Attachment.Name, store.ErrFileChanged, err))
		}
	}()
	return s.Send(ctx, &cp)
}

// storedFile is a copy of the stored file a that its sender can read (Open
// checks the bytes against their SHA-256 as they are read, and changed
// turns true when they do not match), or why it cannot be sent: no store,
// or the file is gone.
func (o *Outbox) storedFile(a *chat.Attachment) (cp *chat.Attachment, changed *atomic.Bool, err error) {
	files := o.opts.Files
	if files == nil {
		return nil, nil, fmt.Errorf("file %s: this outbox keeps no files", a.Name)
	}
	if _, err := files.Stat(a.SHA256); err != nil {
		return nil, nil, fmt.Errorf("file %s is no longer in the state's files/ (%w): it cannot be sent", a.Name, err)
	}
	changed = new(atomic.Bool)
	c := *a
	c.Open = func() (io.ReadCloser, error) {
		r, _, err := files.Open(a.SHA256)
		if err != nil {
			return nil, err
		}
		return &watchedFile{ReadCloser: r, changed: changed}, nil
	}
	return &c, changed, nil
}

// watchedFile notes when a stored file's bytes fail their check.
type watchedFile struct {
	io.ReadCloser
	changed *atomic.Bool
}

func (w *watchedFile) Read(p []byte) (int, error) {
	n, err := w.ReadCloser.Read(p)
	if errors.Is(err, store.ErrFileChanged) {
		w.changed.Store(true)
	}
	return n, err
}

// settle records the outcome of a send. It reports whether the target may go
// on to its next chunk; when not, it has parked the target.
func (o *Outbox) settle(t *target, e *Entry, rc Receipt, sendErr error) bool {
	now := o.clk.Now()
	class := classify(sendErr)
	if class == classNone {
		// Observers hear of the delivery before it is marked, so a record
		// they keep (the outbound mirror) is never missing for a delivered
		// chunk; a crash in between resends the chunk and reports it again.
		e.State, e.DeliveredAt, e.PlatformMessageID = StateDelivered, now, rc.MessageID
		o.ev.Delivered(e, rc)
		if err := o.st.Delivered(o.marksCtx, e.ID, rc, now); err != nil {
			return o.markFailed(t, e, err)
		}
		return true
	}

	e.LastError = sendErr.Error()
	var next time.Time
	dead := false
	switch class {
	case classRetryAfter:
		d, _ := RetryAfterOf(sendErr)
		if d <= 0 {
			d = o.opts.Backoff.Base
		}
		e.Throttled++
		dead = e.Throttled > o.opts.MaxRetryAfter
		next = now.Add(d)
	case classPermanent:
		e.Attempts++
		dead = true
	default:
		e.Attempts++
		dead = e.Attempts >= o.opts.MaxAttempts
		next = now.Add(o.opts.Backoff.Delay(e.Attempts))
	}
	r := Retry{Attempts: e.Attempts, Throttled: e.Throttled, NextAttemptAt: next, LastError: e.LastError}

	if dead {
		e.State, e.DeliveredAt, e.NextAttemptAt = StateDead, now, time.Time{}
		o.ev.Dead(e) // before the mark, like Delivered
		if err := o.st.Dead(o.marksCtx, e.ID, r, now); err != nil {
			return o.markFailed(t, e, err)
		}
		o.log.Warn("outbox: dead letter", "id", e.ID, "attempts", e.Attempts, "throttled", e.Throttled, "err", e.LastError)
		return true
	}
	if err := o.st.Defer(o.marksCtx, e.ID, r); err != nil {
		return o.markFailed(t, e, err)
	}
	e.NextAttemptAt = next
	o.park(t, next)
	o.ev.Retrying(e, sendErr, next)
	return false
}

// handOver records e's successful send like settle does (observers first),
// then hands its mark over: t waits in tMarking, holding no worker, until
// the mark is durable. If no worker is writing marks, this one writes all
// that are pending, in one transaction, and those handed over meanwhile,
// until none is left (a lone target's mark is so written at once, by the
// worker that sent it); otherwise it leaves its mark to the writing worker
// and returns to serve another target. It reports whether the calling
// worker still holds t (it wrote t's mark, and t may go on).
func (o *Outbox) handOver(t *target, e *Entry, rc Receipt) bool {
	now := o.clk.Now()
	e.State, e.DeliveredAt, e.PlatformMessageID = StateDelivered, now, rc.MessageID
	o.ev.Delivered(e, rc)
	o.mu.Lock()
	for len(o.marks) >= maxMarkBatch {
		o.markRoom.Wait()
	}
	t.state = tMarking
	o.marks = append(o.marks, mark{t: t, d: delivery{id: e.ID, target: t.key, rc: rc, at: now}, wakes: t.wakes})
	if o.marking {
		o.mu.Unlock()
		return false
	}
	o.marking = true
	kept := false
	for len(o.marks) > 0 {
		// Swap the slices: other workers append to the spare one meanwhile.
		batch := o.marks
		o.marks = o.spareMarks[:0]
		o.markRoom.Broadcast()
		o.mu.Unlock()
		if o.writeMarks(batch, t) {
			kept = true
		}
		clear(batch)
		o.mu.Lock()
		o.spareMarks = batch[:0]
	}
	o.marking = false
	o.mu.Unlock()
	return kept
}

// writeMarks writes batch in one transaction and lets each target go on
// (marked). If the transaction fails, each mark is made on its own with
// Delivered, so each entry gets its own outcome as without batches. It
// reports whether own, the writing worker's target, was in batch and is
// kept by it.
func (o *Outbox) writeMarks(batch []mark, own *target) bool {
	ds, res := o.markDs[:0], o.markRes[:0]
	for _, m := range batch {
		ds = append(ds, m.d)
		res = append(res, deliveryResult{})
	}
	headsRead := true
	if err := o.batcher.deliveredBatch(o.marksCtx, ds, res); err != nil {
		headsRead = false
		o.log.Warn("outbox: batch of delivered marks failed; marking one by one", "marks", len(ds), "err", err)
		for i := range ds {
			res[i] = deliveryResult{err: o.st.Delivered(o.marksCtx, ds[i].id, ds[i].rc, ds[i].at)}
		}
	}
	kept := false
	o.mu.Lock()
	for i := range batch {
		if o.marked(&batch[i], res[i], headsRead, own) {
			kept = true
		}
	}
	o.mu.Unlock()
	clear(ds)
	clear(res)
	o.markDs, o.markRes = ds[:0], res[:0]
	return kept
}

// marked lets the target of m go on after its mark: back to the ready queue
// (with the head its mark's transaction read if headRead, unless a wake
// came since the hand-over), or parked if the mark failed. The target own
// is not queued but kept by the calling worker, which marked reports.
// o.mu is held.
func (o *Outbox) marked(m *mark, r deliveryResult, headRead bool, own *target) bool {
	t := m.t
	if r.err != nil {
		if errors.Is(r.err, ErrNotFound) || errors.Is(r.err, ErrWrongState) {
			o.log.Warn("outbox: entry changed while in flight", "id", m.d.id, "err", r.err)
		} else {
			o.log.Error("outbox: record send outcome", "id", m.d.id, "err", r.err)
			o.parkLocked(t, o.clk.Now().Add(o.opts.Backoff.Base))
			return false
		}
	}
	if o.state != stateRunning {
		return false
	}
	known := headRead && r.err == nil && t.wakes == m.wakes
	if t == own {
		// Like next, without the queue: dirty stays as a wake left it.
		t.state = tRunning
		t.own, t.ownKnown = nil, false
		if known {
			t.own, t.ownKnown = r.head, true
		}
		return true
	}
	if known {
		t.head, t.headKnown = r.head, true
	}
	o.push(t)
	return false
}

// markFailed handles a store error while recording an outcome. An entry that
// is no longer pending is left alone and the target goes on; any other error
// parks the target (the chunk will be sent again).
func (o *Outbox) markFailed(t *target, e *Entry, err error) bool {
	if errors.Is(err, ErrNotFound) || errors.Is(err, ErrWrongState) {
		o.log.Warn("outbox: entry changed while in flight", "id", e.ID, "err", err)
		return true
	}
	o.log.Error("outbox: record send outcome", "id", e.ID, "err", err)
	o.park(t, o.clk.Now().Add(o.opts.Backoff.Base))
	return false
}

// finish removes t once its queue is empty, unless it was woken meanwhile;
// it reports whether t is gone.
func (o *Outbox) finish(t *target) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if t.dirty {
		t.dirty = false
		return false
	}
	delete(o.targets, t.key)
	return true
}

// yield puts t at the back of the ready queue.
func (o *Outbox) yield(t *target) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.state == stateRunning {
		o.push(t)
	}
}

// park makes t wait until at without holding a worker.
func (o *Outbox) park(t *target, at time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.parkLocked(t, at)
}

// parkLocked is park with o.mu held.
func (o *Outbox) parkLocked(t *target, at time.Time) {
	if o.state != stateRunning {
		return
	}
	t.state = tWaiting
	t.timer = o.clk.AfterFunc(at.Sub(o.clk.Now()), func() {
		o.mu.Lock()
		defer o.mu.Unlock()
		if o.state == stateRunning && o.targets[t.key] == t && t.state == tWaiting {
			t.timer = nil
			o.push(t)
		}
	})
}

func (o *Outbox) setUnroutable(t *target) {
	o.mu.Lock()
	defer o.mu.Unlock()
	t.state = tUnroutable
	o.unroutable++
	o.log.Warn("outbox: no sender for target; its chunks stay pending until one is configured", "target", t.key, "platform", platformOf(t.key))
}

func (o *Outbox) beginSend(platform string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.state != stateRunning {
		return false
	}
	o.inFlight[platform]++
	return true
}

func (o *Outbox) endSend(platform string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.inFlight[platform]--
}

// pruner forgets delivered ids past the retention, at start and then every
// PruneEvery on the clock.
func (o *Outbox) pruner() {
	for {
		before := o.clk.Now().Add(-o.opts.Retention)
		if n, err := o.st.Prune(o.runCtx, before); err != nil {
			if o.runCtx.Err() == nil {
				o.log.Error("outbox: prune delivered ids", "err", err)
			}
		} else if n > 0 {
			o.log.Info("outbox: pruned delivered ids", "count", n, "before", before)
		}
		o.sweepFiles(before)
		o.mu.Lock()
		if o.state != stateRunning {
			o.mu.Unlock()
			return
		}
		o.pruneTimer = o.clk.AfterFunc(o.opts.PruneEvery, func() {
			select {
			case o.pruneKick <- struct{}{}:
			default:
			}
		})
		o.mu.Unlock()
		select {
		case <-o.stopping:
			return
		case <-o.pruneKick:
		}
	}
}

// fileRefs is a Store that lists the stored files its pending and dead
// entries carry (BoltStore).
type fileRefs interface {
	fileRefs(ctx context.Context) (map[string]bool, error)
}

// sweepFiles removes the stored files that no pending or dead entry
// carries and that were last stored before before: a delivered file is
// kept for the retention, like its id (the panel's download link works
// that long).
func (o *Outbox) sweepFiles(before time.Time) {
	fr, ok := o.st.(fileRefs)
	if o.opts.Files == nil || !ok {
		return
	}
	keep, err := fr.fileRefs(o.runCtx)
	if err != nil {
		if o.runCtx.Err() == nil {
			o.log.Error("outbox: list the stored files entries carry", "err", err)
		}
		return
	}
	n, err := o.opts.Files.Sweep(keep, before)
	if err != nil {
		o.log.Error("outbox: remove stored files no entry needs", "err", err)
	}
	if n > 0 {
		o.log.Info("outbox: removed stored files no entry needs", "count", n, "stored_before", before)
	}
}

// Stats returns the counters per platform, with the sends in flight now.
func (o *Outbox) Stats() Stats {
	s := Stats{Platforms: map[string]PlatformStats{}}
	if o.st != nil {
		counts, err := o.st.Counts(context.Background())
		if err != nil {
			o.log.Error("outbox: read counters", "err", err)
		}
		for p, c := range counts {
			s.Platforms[p] = PlatformStats{Pending: c.Pending, Delivered: c.Delivered, Retried: c.Retried, Dead: c.Dead}
		}
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for p, n := range o.inFlight {
		if n == 0 {
			continue
		}
		ps := s.Platforms[p]
		ps.InFlight = n
		s.Platforms[p] = ps
	}
	s.Targets = len(o.targets)
	s.Unroutable = o.unroutable
	return s
}

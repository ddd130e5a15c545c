package outbox

import (
	"context"
	"errors"
	"time"
)

// RecordedSender is a Sender whose delivery is the outbox's own record. Its
// Send delivers nothing: it only checks the chunk, and nothing leaves the
// process. Whoever shows the chunk (the web panel) learns of it from what the
// observers (Events) record of the delivery, keyed by the outbox id, so a
// chunk sent again after a crash shows once.
//
// For such a target the per-target rule "the next chunk is sent only once
// the previous one is marked" protects nothing, so the dispatcher takes up
// to recordedBatch of the target's pending chunks at once: it sends them in
// queue order (a failed send stops the batch there: the chunks before it are
// marked, it is settled like any failed send, the rest wait), tells the
// observers of all of them (BatchEvents.DeliveredBatch when they can hear
// of many at once), and then marks them all in one transaction, in queue
// order. A crash between the sends and the marks sends them again, as it
// does for the one chunk in flight of any other target.
//
// The batch path needs a store that reads several heads and writes many
// marks in one transaction (BoltStore); with any other store, and for every
// sender that is not a RecordedSender, the target sends one chunk at a time.
type RecordedSender interface {
	Sender
	// DeliveryIsRecord marks the sender; it is never called.
	DeliveryIsRecord()
}

// BatchEvents is an Events that hears of many deliveries of one target at
// once. DeliveredBatch is called, like Delivered, before the chunks are
// marked, and must return only once what it keeps of every one of them is
// as durable as Delivered makes it for one (the hub's outbound mirror waits
// for one fsync instead of one per chunk). Observers without it are told
// with one Delivered per chunk, in order.
type BatchEvents interface {
	Events
	// DeliveredBatch: es[i] was sent with receipt rs[i], in queue order,
	// and will be marked delivered.
	DeliveredBatch(es []*Entry, rs []Receipt)
}

// NotifyDelivered tells ev of the deliveries es (receipts rs), in order:
// with one DeliveredBatch if ev is a BatchEvents, else one Delivered each.
func NotifyDelivered(ev Events, es []*Entry, rs []Receipt) {
	if len(es) == 0 {
		return
	}
	if b, ok := ev.(BatchEvents); ok {
		b.DeliveredBatch(es, rs)
		return
	}
	for i, e := range es {
		ev.Delivered(e, rs[i])
	}
}

// recordedBatch and recordedBatchBytes bound the chunks of a
// RecordedSender's target one batch takes, and the size of their stored
// records (an overflow attachment is stored with its chunk); a batch always
// takes at least one chunk.
const (
	recordedBatch      = 256
	recordedBatchBytes = 4 << 20
)

// headsStore is a Store that reads a target's first pending entries in one
// transaction and marks many deliveries in another (BoltStore): what the
// batch path of a RecordedSender needs.
type headsStore interface {
	batchMarker
	heads(ctx context.Context, target string, n, maxBytes int) ([]Entry, error)
}

// batchable reports whether the batch path applies to a target whose
// sender is s: the store reads heads, and s is a RecordedSender.
func (o *Outbox) batchable(s Sender) bool {
	if o.heads == nil {
		return false
	}
	_, ok := s.(RecordedSender)
	return ok
}

// serveBatch sends the next pending chunks of t, whose sender s is a
// RecordedSender, in one batch. It returns how many chunks it sent or
// settled, and whether the worker may go on with t (it has not parked it,
// dropped it or stopped).
func (o *Outbox) serveBatch(t *target, s Sender) (int, bool) {
	t.own, t.ownKnown = nil, false // the batch reads the heads itself
	es, err := o.heads.heads(o.marksCtx, t.key, recordedBatch, recordedBatchBytes)
	if err != nil {
		o.log.Error("outbox: read queue heads", "target", t.key, "err", err)
		o.park(t, o.clk.Now().Add(o.opts.Backoff.Base))
		return 0, false
	}
	if len(es) == 0 {
		return 0, !o.finish(t)
	}
	platform := platformOf(t.key)
	now := o.clk.Now()
	sent := make([]*Entry, 0, len(es))
	rcs := make([]Receipt, 0, len(es))
	var (
		failed  *Entry
		sendErr error
		parkAt  time.Time
		stop    bool // stopping, or a hard stop cancelled a send
	)
	for i := range es {
		e := &es[i]
		if now.Before(e.NextAttemptAt) {
			parkAt = e.NextAttemptAt
			break
		}
		if !o.beginSend(platform) {
			stop = true
			break
		}
		rc, err := o.send(s, e)
		o.endSend(platform)
		if err != nil {
			if o.runCtx.Err() != nil {
				// Cancelled by a hard stop: this chunk stays pending as it was.
				stop = true
			} else {
				failed, sendErr = e, err
			}
			break
		}
		sent = append(sent, e)
		rcs = append(rcs, rc)
	}
	// The chunks sent are marked whatever comes next: Run returns only once
	// no sent chunk is unmarked. If their marks fail, t is parked and a
	// failed send is left as it was (pending, its attempt not counted): it
	// is sent again with them.
	if len(sent) > 0 && !o.markSent(t, sent, rcs) {
		return len(sent), false
	}
	switch {
	case failed != nil:
		return len(sent) + 1, o.settle(t, failed, Receipt{}, sendErr)
	case stop:
		return len(sent), false
	case !parkAt.IsZero():
		o.park(t, parkAt)
		return len(sent), false
	}
	return len(sent), true
}

// markSent records the deliveries of es (receipts rcs), sent in queue
// order: observers first, all at once, then the marks in one transaction.
// If that transaction fails, each is marked on its own with Delivered, in
// order, stopping at the first store error. It reports whether t may go
// on; when not, it has parked t (the chunks not marked are sent again).
func (o *Outbox) markSent(t *target, es []*Entry, rcs []Receipt) bool {
	now := o.clk.Now()
	for i, e := range es {
		e.State, e.DeliveredAt, e.PlatformMessageID = StateDelivered, now, rcs[i].MessageID
	}
	// Before the marks, as for one chunk: a record an observer keeps is
	// never missing for a marked chunk.
	NotifyDelivered(o.ev, es, rcs)

	ds := make([]delivery, len(es))
	res := make([]deliveryResult, len(es))
	for i, e := range es {
		ds[i] = delivery{id: e.ID, target: t.key, rc: rcs[i], at: now}
	}
	if err := o.heads.deliveredBatch(o.marksCtx, ds, res); err != nil {
		o.log.Warn("outbox: batch of delivered marks failed; marking one by one", "target", t.key, "marks", len(ds), "err", err)
		for i := range ds {
			if !o.markedOne(es[i], o.st.Delivered(o.marksCtx, ds[i].id, ds[i].rc, ds[i].at)) {
				o.park(t, o.clk.Now().Add(o.opts.Backoff.Base))
				return false
			}
		}
		return true
	}
	ok := true
	for i := range res {
		// One transaction made every mark it could: each is reported.
		if !o.markedOne(es[i], res[i].err) {
			ok = false
		}
	}
	if !ok {
		o.park(t, o.clk.Now().Add(o.opts.Backoff.Base))
	}
	return ok
}

// markedOne handles the result of one delivered mark like settle does: an
// entry no longer pending is left alone and the target goes on; any other
// error is logged and reported (the caller parks the target, and the chunk
// is sent again).
func (o *Outbox) markedOne(e *Entry, err error) bool {
	if err == nil {
		return true
	}
	if errors.Is(err, ErrNotFound) || errors.Is(err, ErrWrongState) {
		o.log.Warn("outbox: entry changed while in flight", "id", e.ID, "err", err)
		return true
	}
	o.log.Error("outbox: record send outcome", "id", e.ID, "err", err)
	return false
}

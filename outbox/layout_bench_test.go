package outbox

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/store"
)

// A queue layout measured by BenchmarkEnqueueLayout: how one chunk is
// written in a transaction of the group commit. Only the enqueue is
// written; the other operations of a layout are not (the benchmarks decide
// whether a layout is worth building;
// bench/results/outbox/2026-11-24-enqueue-layout.md
// has their figures and the decision).
type enqueueLayout struct {
	name string
	// noFreelistSync opens bbolt without writing the freelist at each
	// commit (it is rebuilt by scanning the file at open).
	noFreelistSync bool
	// put checks e's id against the index and writes e in tx, encoding it
	// there (unlike BoltStore.Enqueue, which encodes before: the same for
	// every layout); it returns what to do once the transaction is durable
	// (nil: nothing).
	put func(l *layoutState, tx *bolt.Tx, e *Entry) (func(), error)
}

// layoutState is one run's in-memory per-target index (the global layouts).
// Chunks committed together by different producers may be appended out of
// order here: the benchmark only measures its cost, it never reads it.
type layoutState struct {
	mu   sync.Mutex
	fifo map[string][]uint64 // target → global sequences, oldest first
}

const (
	lQueue = "outbox.queue"
	lIndex = "outbox.index"
	lCount = "outbox.counts"
	lOrder = "outbox.order" // global seq → target (append-only)
	lFIFO  = "outbox.fifo"  // target 0x00 seq → global seq
)

func enqueueLayouts() []enqueueLayout {
	today := func(l *layoutState, tx *bolt.Tx, e *Entry) (func(), error) {
		return nil, layoutToday(tx, e, encodeJSONForBench, false)
	}
	todayBinary := func(l *layoutState, tx *bolt.Tx, e *Entry) (func(), error) {
		return nil, layoutToday(tx, e, encodeBinaryForBench, true)
	}
	global := func(order, fifo, bin bool) func(*layoutState, *bolt.Tx, *Entry) (func(), error) {
		return func(l *layoutState, tx *bolt.Tx, e *Entry) (func(), error) {
			return layoutGlobal(l, tx, e, order, fifo, bin)
		}
	}
	return []enqueueLayout{
		{name: "a=today", put: today},
		{name: "b=global+memindex", put: global(false, false, false)},
		{name: "b=global+order", put: global(true, false, false)},
		{name: "b=global+fifobucket", put: global(false, true, false)},
		{name: "c=today+binary", put: todayBinary},
		{name: "c=global+order+binary", put: global(true, false, true)},
		{name: "c=today+nofreelistsync", put: today, noFreelistSync: true},
		{name: "c=global+order+binary+nofreelistsync", put: global(true, false, true), noFreelistSync: true},
	}
}

func encodeJSONForBench(e *Entry) ([]byte, error) { return encodeRecord(e) }

// encodeBinaryForBench is a length-prefixed binary form of an enqueued
// entry: what a smaller encoding than JSON would write.
func encodeBinaryForBench(e *Entry) ([]byte, error) {
	b := make([]byte, 0, 64+len(e.ID)+len(e.TurnID)+len(e.Text))
	str := func(s string) { b = binary.AppendUvarint(b, uint64(len(s))); b = append(b, s...) }
	b = append(b, 1) // format version
	str(e.ID)
	str(string(e.Kind))
	str(e.TurnID)
	str(e.Target.String())
	b = binary.AppendUvarint(b, uint64(e.Index))
	b = binary.AppendUvarint(b, uint64(e.Total))
	str(e.Text)
	b = binary.AppendVarint(b, nanos(e.EnqueuedAt))
	b = append(b, 0) // no attachment, no meta, no retry state
	return b, nil
}

// binaryIndex is a binary index record: state byte, seq, target.
func binaryIndex(state State, seq uint64, target string) []byte {
	b := make([]byte, 0, 12+len(target))
	b = append(b, state[0])
	b = binary.AppendUvarint(b, seq)
	return append(b, target...)
}

func addCount(tx *bolt.Tx, target string) error {
	c := tx.Bucket([]byte(lCount))
	d := countDelta{}
	d.add(target, cPending, 1)
	return d.apply(c)
}

// layoutToday writes e as BoltStore.Enqueue does: the queue keyed target
// 0x00 seq (one sequence for the bucket), the index keyed by id, the
// counters; with bin, the entry and the index record in binary instead of
// JSON.
func layoutToday(tx *bolt.Tx, e *Entry, enc func(*Entry) ([]byte, error), bin bool) error {
	q, idx := tx.Bucket([]byte(lQueue)), tx.Bucket([]byte(lIndex))
	if idx.Get([]byte(e.ID)) != nil {
		return nil
	}
	v, err := enc(e)
	if err != nil {
		return err
	}
	seq, err := q.NextSequence()
	if err != nil {
		return err
	}
	if err := q.Put(queueKey(e.Target.String(), seq), v); err != nil {
		return err
	}
	if bin {
		if err := idx.Put([]byte(e.ID), binaryIndex(StatePending, seq, e.Target.String())); err != nil {
			return err
		}
	} else if err := putIndex(idx, e.ID, indexRecord{State: StatePending, Target: e.Target.String(), Seq: seq}); err != nil {
		return err
	}
	return addCount(tx, e.Target.String())
}

// layoutGlobal writes e in an append-only queue keyed by the global
// sequence; per-target order is kept in memory, and durably either by an
// append-only order bucket (global seq → target, scanned at open) or by a
// per-target bucket (target 0x00 seq → global seq, sought at open).
func layoutGlobal(l *layoutState, tx *bolt.Tx, e *Entry, order, fifo, bin bool) (func(), error) {
	q, idx := tx.Bucket([]byte(lQueue)), tx.Bucket([]byte(lIndex))
	if idx.Get([]byte(e.ID)) != nil {
		return nil, nil
	}
	enc := encodeJSONForBench
	if bin {
		enc = encodeBinaryForBench
	}
	v, err := enc(e)
	if err != nil {
		return nil, err
	}
	seq, err := q.NextSequence()
	if err != nil {
		return nil, err
	}
	key := binary.BigEndian.AppendUint64(nil, seq)
	if err := q.Put(key, v); err != nil {
		return nil, err
	}
	if order {
		if err := tx.Bucket([]byte(lOrder)).Put(key, []byte(e.Target.String())); err != nil {
			return nil, err
		}
	}
	if fifo {
		if err := tx.Bucket([]byte(lFIFO)).Put(queueKey(e.Target.String(), seq), key); err != nil {
			return nil, err
		}
	}
	if bin {
		if err := idx.Put([]byte(e.ID), binaryIndex(StatePending, seq, e.Target.String())); err != nil {
			return nil, err
		}
	} else if err := putIndex(idx, e.ID, indexRecord{State: StatePending, Target: e.Target.String(), Seq: seq}); err != nil {
		return nil, err
	}
	if err := addCount(tx, e.Target.String()); err != nil {
		return nil, err
	}
	target := e.Target.String()
	return func() {
		l.mu.Lock()
		l.fifo[target] = append(l.fifo[target], seq)
		l.mu.Unlock()
	}, nil
}

// BenchmarkEnqueueLayout measures durable enqueues of one chunk per call
// from 64 producers over 100 targets (as BenchmarkEnqueue), each chunk
// written in one of several queue layouts through the group commit on a
// real bbolt file: pages written per commit (pwrites, meta page included),
// bytes written per commit, the disk's fdatasync rate in the same run and
// chunks per second.
func BenchmarkEnqueueLayout(b *testing.B) {
	for _, producers := range []int{1, 64} {
		for _, lay := range enqueueLayouts() {
			b.Run(fmt.Sprintf("producers=%d,%s", producers, lay.name), func(b *testing.B) {
				benchLayout(b, producers, lay)
			})
		}
	}
}

func benchLayout(b *testing.B, producers int, lay enqueueLayout) {
	dir := b.TempDir()
	fsyncs := fsyncRate(b, dir)
	db := openLayoutDB(b, dir, lay)
	gc := store.NewDB(db)
	l := &layoutState{fifo: map[string][]uint64{}}
	keys := make([]chat.Key, 100)
	for i := range keys {
		keys[i] = tg(fmt.Sprint(i + 1))
	}
	now := time.Unix(1_790_000_000, 0).UTC()
	var next atomic.Int64
	var wg sync.WaitGroup
	commits0, ops0 := gc.Commits()
	stats0 := db.Stats()
	b.ResetTimer()
	start := time.Now()
	for range producers {
		wg.Go(func() {
			for {
				n := int(next.Add(1)) - 1
				if n >= b.N {
					return
				}
				e := entries(KindReply, "bench."+strconv.Itoa(n), keys[n%len(keys)], 1)[0]
				e.EnqueuedAt = now
				if err := putLayout(gc, lay, l, &e); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	fsyncs = (fsyncs + fsyncRate(b, dir)) / 2
	commits1, ops1 := gc.Commits()
	stats := db.Stats()
	commits := float64(commits1 - commits0)
	rate := float64(b.N) / elapsed.Seconds()
	b.ReportMetric(rate, "chunks/s")
	b.ReportMetric(fsyncs, "fsyncs/s")
	b.ReportMetric(rate/fsyncs, "chunks/fsync")
	if commits > 0 {
		b.ReportMetric(float64(ops1-ops0)/commits, "chunks/commit")
		b.ReportMetric(float64(stats.TxStats.GetWrite()-stats0.TxStats.GetWrite())/commits, "pages/commit")
		// Allocated page bytes plus the meta page: what a commit writes.
		b.ReportMetric((float64(stats.TxStats.GetPageAlloc()-stats0.TxStats.GetPageAlloc())+4096*commits)/commits, "B/commit")
		b.ReportMetric(2*commits/elapsed.Seconds(), "syncs/s")
		// Time per commit, and the part of it bbolt spent writing pages and
		// the meta page and syncing them (the rest is waiting for the writer
		// lock, running the functions, spilling).
		b.ReportMetric(float64(elapsed.Microseconds())/commits, "µs/commit")
		b.ReportMetric(float64((stats.TxStats.GetWriteTime()-stats0.TxStats.GetWriteTime()).Microseconds())/commits, "write-µs/commit")
	}
	// The in-memory index of the global layouts holds every chunk, in
	// order per target when one producer writes.
	total := 0
	for _, seqs := range l.fifo {
		if producers == 1 && !slices.IsSorted(seqs) {
			b.Fatal("in-memory index out of order")
		}
		total += len(seqs)
	}
	if total != 0 && total != b.N {
		b.Fatalf("in-memory index holds %d chunks, want %d", total, b.N)
	}
}

// layoutRun is one layout's database in BenchmarkEnqueueLayoutPaired.
type layoutRun struct {
	lay   enqueueLayout
	db    *bolt.DB
	gc    *store.DB
	l     *layoutState
	next  int // the next chunk number
	keys  []chat.Key
	total struct {
		elapsed           time.Duration
		chunks, commits   int64
		writes, pageBytes int64
		writeTime         time.Duration
	}
}

func openLayoutRun(b *testing.B, lay enqueueLayout) *layoutRun {
	b.Helper()
	db := openLayoutDB(b, b.TempDir(), lay)
	r := &layoutRun{lay: lay, db: db, gc: store.NewDB(db), l: &layoutState{fifo: map[string][]uint64{}}}
	r.keys = make([]chat.Key, 100)
	for i := range r.keys {
		r.keys[i] = tg(fmt.Sprint(i + 1))
	}
	return r
}

func (r *layoutRun) entry(n int) Entry {
	e := entries(KindReply, "bench."+strconv.Itoa(n), r.keys[n%len(r.keys)], 1)[0]
	e.EnqueuedAt = time.Unix(1_790_000_000, 0).UTC()
	return e
}

// fill writes n chunks in transactions of 1000 (not measured).
func (r *layoutRun) fill(b *testing.B, n int) {
	for r.next < n {
		var afters []func()
		err := r.db.Update(func(tx *bolt.Tx) error {
			for i := 0; i < 1000 && r.next < n; i++ {
				e := r.entry(r.next)
				r.next++
				after, err := r.lay.put(r.l, tx, &e)
				if err != nil {
					return err
				}
				if after != nil {
					afters = append(afters, after)
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		for _, f := range afters {
			f()
		}
	}
}

// burst enqueues n chunks from producers goroutines, one per Update, and
// adds what it cost to r.total.
func (r *layoutRun) burst(b *testing.B, producers, n int) {
	var next atomic.Int64
	first := r.next
	r.next += n
	commits0, ops0 := r.gc.Commits()
	stats0 := r.db.Stats()
	var wg sync.WaitGroup
	start := time.Now()
	for range producers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				e := r.entry(first + i)
				if err := putLayout(r.gc, r.lay, r.l, &e); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	r.total.elapsed += time.Since(start)
	commits1, ops1 := r.gc.Commits()
	stats := r.db.Stats()
	r.total.chunks += ops1 - ops0
	r.total.commits += commits1 - commits0
	r.total.writes += stats.TxStats.GetWrite() - stats0.TxStats.GetWrite()
	r.total.pageBytes += stats.TxStats.GetPageAlloc() - stats0.TxStats.GetPageAlloc()
	r.total.writeTime += stats.TxStats.GetWriteTime() - stats0.TxStats.GetWriteTime()
}

// BenchmarkEnqueueLayoutPaired compares the layouts of enqueueLayouts under
// the same disk conditions: each layout's database is filled with 30,000
// chunks, then bursts of 2,000 chunks from 64 producers go to each layout in
// turn (the order rotating), 10 rounds per iteration, so that every layout
// sees the same load on the shared disk. It reports each layout's chunks/s,
// pages and bytes per commit, and its chunks/s as a multiple of today's
// layout's (x-today) over the same rounds.
func BenchmarkEnqueueLayoutPaired(b *testing.B) {
	const (
		filled    = 30_000
		burst     = 2_000
		rounds    = 10
		producers = 64
	)
	var runs []*layoutRun
	for _, lay := range enqueueLayouts() {
		r := openLayoutRun(b, lay)
		r.fill(b, filled)
		runs = append(runs, r)
	}
	dir := b.TempDir()
	fsyncs := fsyncRate(b, dir)
	b.ResetTimer()
	for range b.N {
		for round := range rounds {
			for i := range runs {
				runs[(i+round)%len(runs)].burst(b, producers, burst)
			}
		}
	}
	b.StopTimer()
	fsyncs = (fsyncs + fsyncRate(b, dir)) / 2
	b.ReportMetric(fsyncs, "fsyncs/s")
	rate := func(r *layoutRun) float64 { return float64(r.total.chunks) / r.total.elapsed.Seconds() }
	for _, r := range runs {
		c := float64(r.total.commits)
		name := r.lay.name
		b.ReportMetric(rate(r), name+"-chunks/s")
		b.ReportMetric(rate(r)/rate(runs[0]), name+"-x-today")
		b.ReportMetric(float64(r.total.writes)/c, name+"-pages/commit")
		b.ReportMetric((float64(r.total.pageBytes)+4096*c)/c, name+"-B/commit")
		b.ReportMetric(float64(r.total.chunks)/c, name+"-chunks/commit")
		b.ReportMetric(float64(r.total.writeTime.Microseconds())/c, name+"-write-µs/commit")
		b.ReportMetric(float64(r.total.elapsed.Microseconds())/c, name+"-µs/commit")
	}
}

// BenchmarkRawCommit measures, without bbolt, what the disk charges for a
// bbolt-shaped commit (pages 4 KiB pages written, fdatasync, one meta page
// written, fdatasync) when the pages overwrite blocks the file already has
// (reused: a database whose freelist is reused) or land past the blocks
// written so far (fresh: a growing database; bbolt grows its file with
// ftruncate, so those blocks are allocated at the fdatasync). The variants
// take turns in rounds of 50 commits, so they see the same disk load.
func BenchmarkRawCommit(b *testing.B) {
	type variant struct {
		pages int
		fresh bool
		f     *os.File
		end   int64 // fresh: the next page
		n     int
		took  time.Duration
	}
	var vs []*variant
	for _, pages := range []int{1, 15, 57} {
		for _, fresh := range []bool{false, true} {
			f, err := os.Create(filepath.Join(b.TempDir(), "raw.db"))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { f.Close() })
			const span = 4096 // pages
			if fresh {
				err = f.Truncate(1 << 30)
			} else {
				_, err = f.WriteAt(make([]byte, span*4096), 0)
			}
			if err == nil {
				err = f.Sync()
			}
			if err != nil {
				b.Fatal(err)
			}
			vs = append(vs, &variant{pages: pages, fresh: fresh, f: f, end: 1})
		}
	}
	block := make([]byte, 4096)
	fsyncs := fsyncRate(b, b.TempDir())
	b.ResetTimer()
	for i := range b.N {
		for j := range vs {
			v := vs[(i+j)%len(vs)]
			start := time.Now()
			for range 50 {
				for p := range v.pages {
					block[0] = byte(v.n)
					off := int64(1+(v.n*v.pages+p)*7919%4095) * 4096
					if v.fresh {
						off = v.end * 4096
						v.end++
					}
					if _, err := v.f.WriteAt(block, off); err != nil {
						b.Fatal(err)
					}
				}
				if err := fdatasync(v.f); err != nil {
					b.Fatal(err)
				}
				if _, err := v.f.WriteAt(block, 0); err != nil {
					b.Fatal(err)
				}
				if err := fdatasync(v.f); err != nil {
					b.Fatal(err)
				}
				v.n++
			}
			v.took += time.Since(start)
		}
	}
	b.StopTimer()
	b.ReportMetric((fsyncs+fsyncRate(b, b.TempDir()))/2, "fsyncs/s")
	for _, v := range vs {
		name := fmt.Sprintf("pages=%d,", v.pages)
		if v.fresh {
			name += "fresh"
		} else {
			name += "reused"
		}
		b.ReportMetric(float64(v.took.Microseconds())/float64(v.n), name+"-µs/commit")
	}
}

// BenchmarkLayoutOpenScan measures what the global layout with an
// outbox.order bucket (global seq → target) would cost at every open: a
// scan of the whole bucket into the in-memory per-target index, for
// 1,000,000 pending chunks over 1,000 targets (BenchmarkRecovery's large
// case). It reports the bucket's size and the index's heap.
func BenchmarkLayoutOpenScan(b *testing.B) {
	const n, targets = 1_000_000, 1000
	path := filepath.Join(b.TempDir(), store.DBFile)
	db, err := bolt.Open(path, 0o600, &bolt.Options{FreelistType: bolt.FreelistMapType, NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	names := make([]string, targets)
	for i := range names {
		names[i] = tg(strconv.Itoa(1_000_000 + i)).String()
	}
	for start := 0; start < n; start += 100_000 {
		err := db.Update(func(tx *bolt.Tx) error {
			o, err := tx.CreateBucketIfNotExists([]byte(lOrder))
			if err != nil {
				return err
			}
			o.FillPercent = 1 // appended in key order
			for seq := start + 1; seq <= start+100_000; seq++ {
				if err := o.Put(binary.BigEndian.AppendUint64(nil, uint64(seq)), []byte(names[seq%targets])); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	var bucketBytes int
	if err := db.View(func(tx *bolt.Tx) error {
		s := tx.Bucket([]byte(lOrder)).Stats()
		bucketBytes = (s.BranchPageN + s.LeafPageN + s.LeafOverflowN) * 4096
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	var heap uint64
	b.ResetTimer()
	for range b.N {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		fifo := map[string][]uint64{}
		err := db.View(func(tx *bolt.Tx) error {
			return tx.Bucket([]byte(lOrder)).ForEach(func(k, v []byte) error {
				fifo[string(v)] = append(fifo[string(v)], binary.BigEndian.Uint64(k))
				return nil
			})
		})
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		runtime.GC()
		runtime.ReadMemStats(&after)
		heap = after.HeapAlloc - before.HeapAlloc
		if len(fifo) != targets {
			b.Fatalf("%d targets, want %d", len(fifo), targets)
		}
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(float64(bucketBytes)/(1<<20), "bucket-MB")
	b.ReportMetric(float64(heap)/(1<<20), "index-heap-MB")
}

// putLayout enqueues e with lay in one transaction of gc's group commit and
// runs what the layout does once it is committed.
func putLayout(gc *store.DB, lay enqueueLayout, l *layoutState, e *Entry) error {
	var after func()
	err := gc.Update(func(tx *bolt.Tx) error {
		var err error
		after, err = lay.put(l, tx, e)
		return err
	})
	if err == nil && after != nil {
		after()
	}
	return err
}

// openLayoutDB opens a bbolt file in dir as the hub opens hub.db (lay may
// drop the freelist's sync) with every layout's buckets, closed when the
// benchmark ends.
func openLayoutDB(b *testing.B, dir string, lay enqueueLayout) *bolt.DB {
	b.Helper()
	db, err := bolt.Open(filepath.Join(dir, store.DBFile), 0o600, &bolt.Options{
		FreelistType: bolt.FreelistMapType, NoFreelistSync: lay.noFreelistSync,
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	err = db.Update(func(tx *bolt.Tx) error {
		for _, name := range []string{lQueue, lIndex, lCount, lOrder, lFIFO} {
			if _, err := tx.CreateBucketIfNotExists([]byte(name)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return db
}

package outbox

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/a6afc2ce/hermes-hub/internal/testkit"

	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/store"
)

// BenchmarkEnqueue measures durable enqueues (fsync on) of one chunk per
// call from concurrent producers. The commit=dbbatch variants use bbolt's
// DB.Batch instead of the group committer, for comparison; the
// bolt=nofreelistsync variants open the database without writing the
// freelist at each commit (and with its file and map allocated ahead), an
// alternative measured, not used by the hub.
func BenchmarkEnqueue(b *testing.B) {
	for _, tc := range []struct {
		producers int
		dbBatch   bool
		tuned     bool
	}{{1, false, false}, {64, false, false}, {1, true, false}, {64, true, false}, {1, false, true}, {64, false, true}} {
		name := fmt.Sprintf("producers=%d", tc.producers)
		if tc.dbBatch {
			name += ",commit=dbbatch"
		}
		if tc.tuned {
			name += ",bolt=nofreelistsync"
		}
		b.Run(name, func(b *testing.B) {
			dir := b.TempDir()
			fsyncs := fsyncRate(b, dir)
			var s *BoltStore
			if tc.tuned {
				s = openTunedBolt(b, dir)
			} else {
				st, bs := openBolt(b, dir)
				defer st.Close()
				s = bs
			}
			s.useBatch = tc.dbBatch
			o := New(s, nil, Options{Logger: testkit.Discard()})
			keys := make([]chat.Key, 100)
			for i := range keys {
				keys[i] = tg(fmt.Sprint(i + 1))
			}
			var next atomic.Int64
			var wg sync.WaitGroup
			commits0, ops0 := s.commit.Commits()
			stats0 := s.db.Stats()
			b.ResetTimer()
			start := time.Now()
			for range tc.producers {
				wg.Go(func() {
					for {
						n := int(next.Add(1)) - 1
						if n >= b.N {
							return
						}
						e := entries(KindReply, "bench."+strconv.Itoa(n), keys[n%len(keys)], 1)
						if _, err := o.Enqueue(context.Background(), e); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			elapsed := time.Since(start)
			b.StopTimer()
			fsyncs = (fsyncs + fsyncRate(b, dir)) / 2 // before and after: the disk is shared
			rate := float64(b.N) / elapsed.Seconds()
			b.ReportMetric(rate, "chunks/s")
			b.ReportMetric(fsyncs, "fsyncs/s")
			b.ReportMetric(rate/fsyncs, "chunks/fsync")
			commits1, ops1 := s.commit.Commits()
			if commits := commits1 - commits0; commits > 0 && !tc.dbBatch {
				b.ReportMetric(float64(ops1-ops0)/float64(commits), "chunks/commit")
				stats := s.db.Stats()
				pages := float64(stats.TxStats.GetWrite()-stats0.TxStats.GetWrite()) / float64(commits)
				b.ReportMetric(pages, "pages/commit")
				// The same commits made with plain system calls: the disk's
				// bound for commits of that many pages.
				var span int64
				if err := s.db.View(func(tx *bolt.Tx) error { span = tx.Size() / 4096; return nil }); err != nil {
					b.Fatal(err)
				}
				raw := rawCommitRate(b, dir, max(int(pages+0.5)-1, 1), int(span))
				b.ReportMetric(float64(commits)/elapsed.Seconds()/raw, "x-rawcommit")
			}
		})
	}
}

// openTunedBolt opens a bbolt database in dir with the options measured by
// the bolt=nofreelistsync variants: no freelist page written per commit
// (it is rebuilt by a scan at open instead), 64 MiB mapped and allocated at
// a time so the file does not grow during the run.
func openTunedBolt(b *testing.B, dir string) *BoltStore {
	b.Helper()
	db, err := bolt.Open(filepath.Join(dir, "tuned.db"), 0o600, &bolt.Options{
		FreelistType: bolt.FreelistMapType, NoFreelistSync: true, InitialMmapSize: 64 << 20,
	})
	if err != nil {
		b.Fatal(err)
	}
	db.AllocSize = 64 << 20
	b.Cleanup(func() { db.Close() })
	s, err := NewBoltStore(db)
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// fsyncRate measures this disk's serial durable writes per second in dir
// (a 4 KiB block rewritten in place, then fdatasync, 2000 times or for
// 200 ms; the benchmarks take the mean of a measure before and one after), the bound of every fsync-bound figure: a bbolt commit takes two.
// The benchmarks report their rates also as a multiple of it, measured
// in the same run.
func fsyncRate(b *testing.B, dir string) float64 {
	b.Helper()
	f, err := os.CreateTemp(dir, "fsync-rate-")
	if err != nil {
		b.Fatal(err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	block := make([]byte, 4096)
	if _, err := f.Write(block); err != nil {
		b.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	n := 0
	for ; n < 2000 && (n < 50 || time.Since(start) < 200*time.Millisecond); n++ {
		block[0] = byte(n)
		if _, err := f.WriteAt(block, 0); err != nil {
			b.Fatal(err)
		}
		if err := fdatasync(f); err != nil {
			b.Fatal(err)
		}
	}
	return float64(n) / time.Since(start).Seconds()
}

// rawCommitRate measures, in dir, what a bbolt commit of pages pages costs
// the disk without bbolt: pages 4 KiB pages written at scattered offsets of
// a file of span pages (the database's size), fdatasync, one page written
// at the start, fdatasync; as commits per second (200 commits or 200 ms,
// whichever ends later).
func rawCommitRate(b *testing.B, dir string, pages, span int) float64 {
	b.Helper()
	f, err := os.CreateTemp(dir, "raw-commit-")
	if err != nil {
		b.Fatal(err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	span = max(span, 2*pages+2)
	block := make([]byte, 4096)
	if _, err := f.WriteAt(make([]byte, span*4096), 0); err != nil {
		b.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	n := 0
	for ; n < 200 || time.Since(start) < 200*time.Millisecond; n++ {
		for p := range pages {
			block[0] = byte(n)
			if _, err := f.WriteAt(block, int64(1+(n*pages+p)*7919%(span-1))*4096); err != nil {
				b.Fatal(err)
			}
		}
		if err := fdatasync(f); err != nil {
			b.Fatal(err)
		}
		if _, err := f.WriteAt(block, 0); err != nil {
			b.Fatal(err)
		}
		if err := fdatasync(f); err != nil {
			b.Fatal(err)
		}
	}
	return float64(n) / time.Since(start).Seconds()
}

// countingEvents counts deliveries and closes done at want.
type countingEvents struct {
	NopEvents
	n    atomic.Int64
	want int64
	done chan struct{}
}

func (c *countingEvents) Delivered(*Entry, Receipt) {
	if c.n.Add(1) == c.want {
		close(c.done)
	}
}

// BenchmarkDispatch measures delivery to a no-op sender, delivered marks
// durable (fsync on): the entries are enqueued before the timer starts, and
// the timer runs until all are delivered.
func BenchmarkDispatch(b *testing.B) {
	for _, tc := range []struct {
		targets, perTarget int
		dbBatch            bool
	}{{1, 2000, false}, {100, 50, false}, {10000, 2, false}, {1, 200, true}, {100, 50, true}} {
		name := fmt.Sprintf("targets=%d", tc.targets)
		if tc.dbBatch {
			name += ",commit=dbbatch"
		}
		b.Run(name, func(b *testing.B) {
			total := tc.targets * tc.perTarget
			noop := SenderFunc(func(context.Context, *Entry) (Receipt, error) { return Receipt{}, nil })
			var elapsed time.Duration
			var commits int64 // only the delivered marks commit once the entries are in
			fsyncs := fsyncRate(b, b.TempDir())
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				st, s := openBolt(b, b.TempDir())
				s.useBatch = tc.dbBatch
				var batch []Entry
				flush := func() {
					if _, err := s.Enqueue(context.Background(), batch); err != nil {
						b.Fatal(err)
					}
					batch = batch[:0]
				}
				for c := range tc.perTarget {
					for t := range tc.targets {
						batch = append(batch, entries(KindReply, "bench."+strconv.Itoa(c), tg(strconv.Itoa(t+1)), 1)...)
						if len(batch) == 5000 {
							flush()
						}
					}
				}
				flush()
				ev := &countingEvents{want: int64(total), done: make(chan struct{})}
				o := New(s, muxFor(b, noop), Options{Events: ev, Logger: testkit.Discard()})
				errc := make(chan error, 1)
				commits0, _ := s.commit.Commits()
				b.StartTimer()
				start := time.Now()
				go func() { errc <- o.Run(context.Background()) }()
				<-ev.done
				elapsed += time.Since(start)
				b.StopTimer()
				if err := o.Shutdown(context.Background()); err != nil {
					b.Fatal(err)
				}
				if err := <-errc; err != nil {
					b.Fatal(err)
				}
				commits1, _ := s.commit.Commits()
				commits += commits1 - commits0 // Run returns once every mark is written
				st.Close()
			}
			fsyncs = (fsyncs + fsyncRate(b, b.TempDir())) / 2 // before and after: the disk is shared
			rate := float64(total*b.N) / elapsed.Seconds()
			b.ReportMetric(rate, "chunks/s")
			b.ReportMetric(fsyncs, "fsyncs/s")
			b.ReportMetric(rate/fsyncs, "chunks/fsync")
			if commits > 0 && !tc.dbBatch {
				// How many delivered marks share one transaction (and its
				// two fdatasyncs), on average.
				b.ReportMetric(float64(total*b.N)/float64(commits), "marks/commit")
				b.ReportMetric(float64(commits)/elapsed.Seconds(), "commits/s")
			}
		})
	}
}

// recoveryCacheVersion names the cached recovery databases; change it when
// the layout or the setup changes.
const recoveryCacheVersion = "outbox-recovery-v1"

const (
	recoveryEnvDir   = "OUTBOX_RECOVERY_CHILD_DIR"
	recoveryMarkerOK = ".complete"
)

// BenchmarkRecovery measures a start with many pending entries: open the
// database, find every pending target, hand the first chunk to a sender. It
// runs in a fresh child process so that rss-MB is the recovering process's
// own (rss-file-MB is the part that is mapped database pages, rss-anon-MB
// the process's own memory). The same 1,000 targets hold 100,000 or
// 1,000,000 entries: memory must not grow with the entries; the
// 100,000-target case shows the cost per target.
func BenchmarkRecovery(b *testing.B) {
	for _, tc := range []struct{ entries, targets int }{
		{100_000, 1000}, {1_000_000, 1000}, {1_000_000, 100_000},
	} {
		b.Run(fmt.Sprintf("entries=%d,targets=%d", tc.entries, tc.targets), func(b *testing.B) {
			dir := recoveryDB(b, tc.entries, tc.targets)
			fi, err := os.Stat(filepath.Join(dir, store.DBFile))
			if err != nil {
				b.Fatal(err)
			}
			var res recoveryResult
			b.ResetTimer()
			for range b.N {
				cmd := exec.Command(os.Args[0], "-test.run=^TestRecoveryBenchChild$", "-test.count=1", "-test.v")
				cmd.Env = append(os.Environ(), recoveryEnvDir+"="+dir)
				out, err := cmd.CombinedOutput()
				if err != nil {
					b.Fatalf("child: %v\n%s", err, out)
				}
				res = parseRecovery(b, out)
			}
			b.StopTimer()
			b.ReportMetric(res.StartupMS, "startup-ms")
			b.ReportMetric(res.ScanMS, "scan-ms")
			b.ReportMetric(res.RSSMB, "rss-MB")
			b.ReportMetric(res.RSSAnonMB, "rss-anon-MB")
			b.ReportMetric(res.RSSFileMB, "rss-file-MB")
			b.ReportMetric(res.HeapMB, "heap-MB")
			b.ReportMetric(float64(res.Targets), "targets")
			b.ReportMetric(float64(fi.Size())/(1<<20), "db-MB")
		})
	}
}

type recoveryResult struct {
	StartupMS float64 `json:"startup_ms"`
	ScanMS    float64 `json:"scan_ms"`
	RSSMB     float64 `json:"rss_mb"`
	RSSAnonMB float64 `json:"rss_anon_mb"`
	RSSFileMB float64 `json:"rss_file_mb"`
	HeapMB    float64 `json:"heap_mb"`
	Targets   int     `json:"targets"`
}

func parseRecovery(b *testing.B, out []byte) recoveryResult {
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "RECOVERY "); ok {
			var r recoveryResult
			if err := json.Unmarshal([]byte(rest), &r); err != nil {
				b.Fatal(err)
			}
			return r
		}
	}
	b.Fatalf("no RECOVERY line in the child's output:\n%s", out)
	return recoveryResult{}
}

// recoveryDB returns a state directory holding n pending entries over
// targets targets, built once and cached in os.TempDir().
func recoveryDB(b *testing.B, n, targets int) string {
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("hermes-%s-%d-%d", recoveryCacheVersion, n, targets))
	if _, err := os.Stat(filepath.Join(dir, recoveryMarkerOK)); err == nil {
		return dir
	}
	start := time.Now()
	if err := os.RemoveAll(dir); err != nil {
		b.Fatal(err)
	}
	st, err := store.Open(dir, store.Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	s, err := NewBoltStore(st.DB())
	if err != nil {
		b.Fatal(err)
	}
	perTarget := n / targets
	batch := make([]Entry, 0, 20000)
	for c := range perTarget {
		for t := range targets {
			k := tg(strconv.Itoa(1_000_000 + t))
			batch = append(batch, Entry{
				ID: ID(KindReply, "recovery", k, c), Kind: KindReply, TurnID: "recovery", Target: k,
				Index: c, Total: perTarget, Text: fmt.Sprintf("pending chunk %d of target %d, a line of ordinary length", c, t),
				EnqueuedAt: time.Unix(1_790_000_000, 0).UTC(),
			})
		}
		if len(batch) >= 20000 || c == perTarget-1 {
			if _, err := s.Enqueue(context.Background(), batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	if err := st.DB().Sync(); err != nil {
		b.Fatal(err)
	}
	if err := st.Close(); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, recoveryMarkerOK), nil, 0o600); err != nil {
		b.Fatal(err)
	}
	b.Logf("built %d pending entries in %s (cached in %s)", n, time.Since(start).Round(time.Millisecond), dir)
	return dir
}

// TestRecoveryBenchChild is the child side of BenchmarkRecovery. Its sender
// blocks until shutdown and the shutdown cancels it, so the cached database
// keeps all its entries pending for the next run.
func TestRecoveryBenchChild(t *testing.T) {
	dir := os.Getenv(recoveryEnvDir)
	if dir == "" {
		return // a helper process: it only does work as the child of BenchmarkRecovery
	}
	start := time.Now()
	st, err := store.Open(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s, err := NewBoltStore(st.DB())
	if err != nil {
		t.Fatal(err)
	}
	first := make(chan struct{})
	var once sync.Once
	sender := SenderFunc(func(ctx context.Context, e *Entry) (Receipt, error) {
		once.Do(func() { close(first) })
		<-ctx.Done()
		return Receipt{}, ctx.Err()
	})
	o := New(s, muxFor(t, sender), Options{Logger: testkit.Discard()})
	errc := make(chan error, 1)
	go func() { errc <- o.Run(context.Background()) }()
	<-o.recovered
	scan := time.Since(start)
	<-first
	startup := time.Since(start)
	if scan > startup {
		startup = scan
	}

	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	res := recoveryResult{
		StartupMS: float64(startup.Microseconds()) / 1000, ScanMS: float64(scan.Microseconds()) / 1000,
		RSSMB: float64(procStatus(t, "VmRSS")) / 1024, RSSAnonMB: float64(procStatus(t, "RssAnon")) / 1024,
		RSSFileMB: float64(procStatus(t, "RssFile")) / 1024, HeapMB: float64(ms.HeapInuse) / (1 << 20), Targets: o.Stats().Targets,
	}
	line, _ := json.Marshal(res)
	fmt.Printf("RECOVERY %s\n", line)

	ctx, cancel := context.WithCancel(context.Background())
	cancel() // cancel the blocked sends: their entries stay pending
	o.Shutdown(ctx)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

// procStatus reads a size in KiB (VmRSS, RssAnon, RssFile) from
// /proc/self/status.
func procStatus(t testing.TB, field string) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb
		}
	}
	t.Fatalf("no %s in /proc/self/status", field)
	return 0
}

package outbox

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/internal/testkit"
)

// The crash test of the batch path: a child process (this test binary,
// re-executed) delivers the chunks of the web target through a
// RecordedSender, with an observer that appends what it hears of to a file
// (as the hub's outbound mirror does) before the marks; the parent SIGKILLs
// it at random moments and restarts it.
const (
	recCrashEnvDir  = "OUTBOX_REC_CRASH_CHILD_DIR"
	recCrashEnvRun  = "OUTBOX_REC_CRASH_CHILD_RUN"
	recCrashTurns   = 30
	recCrashChunks  = 100 // per turn: 3,000 in all
	recCrashKills   = 15
	recCrashLinger  = 3 * time.Millisecond // before and after the observer's record
	recCrashLogName = "observed.log"
	// recCrashEnd ends every record: a kill can cut a write(2) to a regular
	// file short, and the cut line ("3 reply:web.c1:web:1" of
	// "…:web:12") must not read as a record.
	recCrashEnd = " ."
)

func recCrashIDs() []string {
	var ids []string
	for turn := range recCrashTurns {
		for c := range recCrashChunks {
			ids = append(ids, ID(KindReply, "web.c"+strconv.Itoa(turn), chat.WebKey, c))
		}
	}
	return ids
}

// readObserved returns the ids of the observer's file in order, with the
// run that wrote each.
func readObserved(t *testing.T, dir string) (ids []string, runs []int) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, recCrashLogName))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line, whole := strings.CutSuffix(sc.Text(), recCrashEnd)
		run, id, ok := strings.Cut(line, " ")
		if !whole || !ok {
			continue // a line cut short by the kill
		}
		r, _ := strconv.Atoi(run)
		ids = append(ids, id)
		runs = append(runs, r)
	}
	return ids, runs
}

func TestRecordedCrashRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test skipped in short mode")
	}
	dir := t.TempDir()
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 0))
	t.Logf("seed %d", seed)
	want := recCrashIDs()

	var logs bytes.Buffer
	runs := 0
	start := func() (*exec.Cmd, chan error) {
		runs++
		cmd := exec.Command(os.Args[0], "-test.run=^TestRecordedCrashChild$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), recCrashEnvDir+"="+dir, recCrashEnvRun+"="+strconv.Itoa(runs))
		cmd.Stdout, cmd.Stderr = &logs, &logs
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		return cmd, exited
	}
	// checkMarkedObserved: every chunk the store has marked delivered is in
	// the observer's file (the observers come before the mark, also across
	// a kill).
	checkMarkedObserved := func() {
		t.Helper()
		observed, _ := readObserved(t, dir)
		seen := map[string]bool{}
		for _, id := range observed {
			seen[id] = true
		}
		st, s := openBolt(t, dir)
		defer st.Close()
		for _, id := range want {
			e, err := s.Get(context.Background(), id)
			if err == nil && e.State == StateDelivered && !seen[id] {
				t.Fatalf("%s is marked delivered but its observer never heard of it", id)
			}
		}
	}

	kills := 0
	for kills < recCrashKills {
		cmd, exited := start()
		select {
		case err := <-exited:
			if err != nil {
				t.Fatalf("child failed: %v\n%s", err, lastLines(logs.String(), 60))
			}
		case <-time.After(time.Duration(5+rng.IntN(200)) * time.Millisecond):
			if err := cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			<-exited
			kills++
			checkMarkedObserved()
			continue
		}
		break // finished by itself
	}
	cmd, exited := start()
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("final child run failed: %v\n%s", err, lastLines(logs.String(), 60))
		}
	case <-time.After(crashChildLimit):
		cmd.Process.Kill()
		<-exited
		t.Fatalf("final child run did not finish\n%s", lastLines(logs.String(), 60))
	}
	checkMarkedObserved()

	observed, obsRuns := readObserved(t, dir)
	var firsts []string
	seen := map[string]bool{}
	perRun := map[int]map[string]bool{}
	resent := map[int]int{} // run → chunks an earlier run had told
	for i, id := range observed {
		r := obsRuns[i]
		if perRun[r] == nil {
			perRun[r] = map[string]bool{}
		}
		if perRun[r][id] {
			t.Errorf("%s told twice by run %d", id, r)
		}
		perRun[r][id] = true
		if seen[id] {
			resent[r]++
			continue
		}
		seen[id] = true
		firsts = append(firsts, id)
	}
	// What the panel shows (the first record of each outbox id) is the
	// queue order, with nothing missing.
	if !slices.Equal(firsts, want) {
		t.Errorf("first tellings: %d ids, not the %d in queue order", len(firsts), len(want))
	}
	for r, n := range resent {
		if n > recordedBatch {
			t.Errorf("run %d told again %d chunks, more than one batch (%d)", r, n, recordedBatch)
		}
	}
	st, s := openBolt(t, dir)
	defer st.Close()
	counts, err := s.Counts(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if c := counts["web"]; c.Pending != 0 || c.Dead != 0 || c.Delivered != int64(len(want)) {
		t.Errorf("store counters after the crash test: %+v", c)
	}
	t.Logf("%d kills, %d tellings, %d again", kills, len(observed), len(observed)-len(firsts))
}

// fileEvents appends each chunk it hears of to a file, fsynced before it
// returns, like the hub's outbound mirror.
type fileEvents struct {
	NopEvents
	f   *os.File
	run string
	t   *testing.T
}

func (f *fileEvents) DeliveredBatch(es []*Entry, _ []Receipt) {
	// Linger before the record too: a kill there finds the chunks neither
	// recorded nor marked (or, if the marks came first, marked and not
	// recorded, which the parent catches).
	time.Sleep(recCrashLinger)
	var b bytes.Buffer
	for _, e := range es {
		fmt.Fprintf(&b, "%s %s%s\n", f.run, e.ID, recCrashEnd)
	}
	if _, err := f.f.Write(b.Bytes()); err != nil {
		f.t.Error(err)
	}
	if err := f.f.Sync(); err != nil {
		f.t.Error(err)
	}
	// Linger between the record and the marks, so that kills land there.
	time.Sleep(recCrashLinger)
}

func (f *fileEvents) Delivered(e *Entry, r Receipt) { f.DeliveredBatch([]*Entry{e}, []Receipt{r}) }

// TestRecordedCrashChild is the child side of TestRecordedCrashRecovery; it
// does nothing unless started by it.
func TestRecordedCrashChild(t *testing.T) {
	dir := os.Getenv(recCrashEnvDir)
	if dir == "" {
		return // a helper process: it only does work as the child of TestRecordedCrashRecovery
	}
	s := openChildStore(t, dir)
	f, err := os.OpenFile(filepath.Join(dir, recCrashLogName), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// A line cut short by a kill is finished, so the next starts afresh.
	if _, err := f.WriteString("\n"); err != nil {
		t.Fatal(err)
	}
	sender := recordedFunc{func(ctx context.Context, e *Entry) (Receipt, error) { return Receipt{}, ctx.Err() }}
	o := New(s, muxFor(t, sender, "web"), Options{Events: &fileEvents{f: f, run: os.Getenv(recCrashEnvRun), t: t}, Logger: testkit.Discard()})
	errc := make(chan error, 1)
	go func() { errc <- o.Run(context.Background()) }()

	// Enqueue every turn again, one at a time: deterministic ids make it a
	// no-op for what an earlier run already stored.
	for turn := range recCrashTurns {
		turnID := "web.c" + strconv.Itoa(turn)
		es := make([]Entry, recCrashChunks)
		for c := range es {
			es[c] = Entry{ID: ID(KindReply, turnID, chat.WebKey, c), Kind: KindReply, TurnID: turnID,
				Target: chat.WebKey, Index: c, Total: recCrashChunks, Text: fmt.Sprintf("chunk %d", c)}
		}
		if _, err := o.Enqueue(context.Background(), es); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond) // turns come one after the other
	}
	drainAndStop(t, o, s, "web", errc)
}

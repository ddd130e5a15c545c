package outbox

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/internal/testkit"

	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/store"
)

// The crash test: a child process (this test binary, re-executed) delivers
// thousands of chunks to an HTTP server in the parent, which SIGKILLs it at
// random moments and restarts it.
const (
	crashEnvDir     = "OUTBOX_CRASH_CHILD_DIR"
	crashEnvURL     = "OUTBOX_CRASH_CHILD_URL"
	crashEnvRun     = "OUTBOX_CRASH_CHILD_RUN"
	crashTargets    = 50
	crashChunks     = 60 // per target: 3,000 in all
	crashKills      = 20
	crashSendSleep  = 4 * time.Millisecond
	crashWorkers    = 8
	crashTurnID     = "crash.1"
	crashChildLimit = 90 * time.Second
)

func crashTarget(i int) chat.Key { return dc(fmt.Sprint(1000 + i)) }

// arrivals is the parent's record of what reached the server.
type arrivals struct {
	mu       sync.Mutex
	byTarget map[string][]int // chunk indexes in arrival order
	seen     map[string]int   // id → times arrived
	runs     map[string][]int // id → the child runs it arrived from
	signal   chan struct{}
}

func (a *arrivals) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "read body", http.StatusBadRequest)
		return
	}
	id := string(body)
	_, _, target, index, err := ParseID(id)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	a.mu.Lock()
	a.byTarget[target.String()] = append(a.byTarget[target.String()], index)
	a.seen[id]++
	run, _ := strconv.Atoi(r.Header.Get("X-Run"))
	a.runs[id] = append(a.runs[id], run)
	a.mu.Unlock()
	select {
	case a.signal <- struct{}{}:
	default:
	}
	w.WriteHeader(http.StatusOK)
}

func TestCrashRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test skipped in short mode")
	}
	dir := t.TempDir()
	arr := &arrivals{byTarget: map[string][]int{}, seen: map[string]int{}, runs: map[string][]int{}, signal: make(chan struct{}, 1)}
	srv := httptest.NewServer(arr)
	defer srv.Close()

	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 0))
	t.Logf("seed %d", seed)

	var logs bytes.Buffer
	runs := 0
	start := func() (*exec.Cmd, chan error) {
		runs++
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), crashEnvDir+"="+dir, crashEnvURL+"="+srv.URL, crashEnvRun+"="+strconv.Itoa(runs))
		cmd.Stdout, cmd.Stderr = &logs, &logs
		select { // forget arrivals of the previous run
		case <-arr.signal:
		default:
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		return cmd, exited
	}

	kills := 0
	for kills < crashKills {
		cmd, exited := start()
		select {
		case <-arr.signal: // it is delivering
		case err := <-exited:
			if err != nil {
				t.Fatalf("child failed before delivering: %v\n%s", err, logs.String())
			}
		}
		if cmd.ProcessState != nil {
			break // finished everything before we could kill it
		}
		select {
		case err := <-exited:
			if err != nil {
				t.Fatalf("child failed: %v\n%s", err, logs.String())
			}
		case <-time.After(time.Duration(3+rng.IntN(298)) * time.Millisecond):
			if err := cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			<-exited
			kills++
			continue
		}
		break // exited by itself: done
	}

	// Let it finish.
	cmd, exited := start()
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("final child run failed: %v\n%s", err, logs.String())
		}
	case <-time.After(crashChildLimit):
		cmd.Process.Kill()
		<-exited
		t.Fatalf("final child run did not finish\n%s", logs.String())
	}

	arr.mu.Lock()
	defer arr.mu.Unlock()
	missing, dupTotal := 0, 0
	for i := range crashTargets {
		k := crashTarget(i)
		for c := range crashChunks {
			if arr.seen[ID(KindReply, crashTurnID, k, c)] == 0 {
				missing++
			}
		}
		got := arr.byTarget[k.String()]
		var first []int
		firstSeen := map[int]bool{}
		for _, c := range got {
			if !firstSeen[c] {
				firstSeen[c] = true
				first = append(first, c)
			}
		}
		for j, c := range first {
			if c != j {
				t.Errorf("%s: first arrivals out of order at %d: %v", k, j, first)
				break
			}
		}
		dups := len(got) - len(first)
		dupTotal += dups
		if dups > kills {
			t.Errorf("%s: %d duplicate arrivals after %d kills (at most one per kill)", k, dups, kills)
		}
		if dups > 0 {
			t.Logf("%s: %d duplicate(s): %v", k, dups, dupIndexes(got))
		}
	}
	// The exact promise: a run re-sends at most one chunk per target (the one
	// in flight when the previous run died) and never repeats one itself.
	resent := map[[2]int]int{} // (run, target) → chunks that an earlier run had sent
	for id, rs := range arr.runs {
		_, _, k, _, _ := ParseID(id)
		ti := 0
		fmt.Sscan(strings.TrimPrefix(k.String(), "chat:discord:"), &ti)
		perRun := map[int]int{}
		for _, r := range rs {
			perRun[r]++
		}
		first := slices.Min(rs)
		for r, n := range perRun {
			if n > 1 {
				t.Errorf("%s arrived %d times from run %d", id, n, r)
			}
			if r > first {
				resent[[2]int{r, ti}]++
			}
		}
	}
	for rt, n := range resent {
		if n > 1 {
			t.Errorf("run %d re-sent %d chunks of chat:discord:%d, at most 1 may have been in flight", rt[0], n, rt[1])
		}
	}
	if missing > 0 {
		t.Errorf("%d chunks never arrived", missing)
	}
	if dupTotal > kills*crashTargets {
		t.Errorf("%d duplicates in all, more than kills × targets = %d", dupTotal, kills*crashTargets)
	}
	t.Logf("%d kills, %d arrivals, %d duplicates in all", kills, len(arr.seen)+dupTotal, dupTotal)

	// The store agrees: everything delivered exactly once by its own count.
	st, s := openBolt(t, dir)
	defer st.Close()
	counts, err := s.Counts(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if c := counts["discord"]; c.Pending != 0 || c.Dead != 0 || c.Delivered != crashTargets*crashChunks {
		t.Errorf("store counters after the crash test: %+v", c)
	}
	if t.Failed() {
		t.Logf("child output:\n%s", lastLines(logs.String(), 60))
	}
}

func dupIndexes(got []int) []int {
	seen := map[int]bool{}
	var out []int
	for _, c := range got {
		if seen[c] {
			out = append(out, c)
		}
		seen[c] = true
	}
	return out
}

func lastLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// TestCrashChild is the child side of TestCrashRecovery; it does nothing
// unless started by it.
func TestCrashChild(t *testing.T) {
	dir, url := os.Getenv(crashEnvDir), os.Getenv(crashEnvURL)
	if dir == "" || url == "" {
		return // a helper process: it only does work as the child of TestCrashRecovery
	}
	s := openChildStore(t, dir)
	client := &http.Client{Timeout: 10 * time.Second}
	run := os.Getenv(crashEnvRun)
	sender := SenderFunc(func(ctx context.Context, e *Entry) (Receipt, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(e.ID))
		if err != nil {
			return Receipt{}, Permanent(err)
		}
		req.Header.Set("X-Run", run)
		resp, err := client.Do(req)
		if err != nil {
			return Receipt{}, err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return Receipt{}, Permanent(fmt.Errorf("status %s", resp.Status))
		}
		// Linger between the send and its delivered mark, so that kills
		// land there too.
		time.Sleep(crashSendSleep)
		return Receipt{MessageID: e.ID}, nil
	})
	mux := NewMux()
	if err := mux.Handle("chat:discord", sender); err != nil {
		t.Fatal(err)
	}
	o := New(s, mux, Options{Concurrency: crashWorkers, Logger: testkit.Discard()})
	errc := make(chan error, 1)
	go func() { errc <- o.Run(context.Background()) }()

	// Enqueue every turn again: deterministic ids make it a no-op for what
	// an earlier run already stored.
	for i := range crashTargets {
		k := crashTarget(i)
		es := make([]Entry, crashChunks)
		for c := range es {
			es[c] = Entry{ID: ID(KindReply, crashTurnID, k, c), Kind: KindReply, TurnID: crashTurnID,
				Target: k, Index: c, Total: crashChunks, Text: fmt.Sprintf("chunk %d", c)}
		}
		if _, err := o.Enqueue(context.Background(), es); err != nil {
			t.Fatal(err)
		}
	}
	drainAndStop(t, o, s, "discord", errc)
}

// drainAndStop is the end of a crash child that was not killed: it waits
// until platform has nothing pending, then shuts the outbox down and checks
// that Run (whose result errc carries) ended cleanly.
func drainAndStop(t *testing.T, o *Outbox, s Store, platform string, errc <-chan error) {
	t.Helper()
	for {
		counts, err := s.Counts(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if c := counts[platform]; c.Pending == 0 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := o.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

// openChildStore opens the outbox in the state directory dir as a crash
// test's child process does, waiting for the lock its killed predecessor
// held; the state is closed when the test ends.
func openChildStore(t *testing.T, dir string) *BoltStore {
	t.Helper()
	st, err := store.Open(dir, store.Options{LockTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	s, err := NewBoltStore(st.DB())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

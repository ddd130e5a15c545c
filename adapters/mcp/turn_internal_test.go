package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/verbs"
)

// turnCaller answers direct calls of the tool "t" at once, and of "hold"
// when the test lets them go (or their context ends).
type turnCaller struct {
	c       *stdioConn
	release chan struct{}
}

func (f *turnCaller) directTool(name string, _ bool) (executor.Info, bool) {
	return executor.Info{Name: "fs.exists"}, name == "t" || name == "hold" || name == "big"
}

func (f *turnCaller) callDirect(ctx context.Context, _ executor.Info, args json.RawMessage, _ string) (*executor.Outcome, error) {
	if strings.Contains(string(args), "big") {
		// An answer written in parts (over partsFrom).
		return readOutcome("big.txt", strings.Repeat("a large answer\n", partsFrom/8), verbs.EncodingUTF8), nil
	}
	if strings.Contains(string(args), "hold") {
		select {
		case <-f.release:
		case <-ctx.Done():
		}
	}
	return &executor.Outcome{Verb: "fs.exists", Err: executor.Errorf(executor.CodeNotFound, "answered")}, nil
}

// openTurns serves a connection whose direct calls go to a turnCaller,
// initialised as far as the direct path needs, whose calls keep the
// reading turn for keep before they hand it on.
func openTurns(t *testing.T, keep time.Duration) (f *turnCaller, w io.WriteCloser, answers *bufio.Reader) {
	t.Helper()
	cr, sw := io.Pipe()
	sr, cw := io.Pipe()
	f = &turnCaller{release: make(chan struct{})}
	f.c = newStdioConn(sr, sw, 0, 0, f)
	f.c.keepTurn = keep // before any call: the reader reads it after the first line
	f.c.ready.Store(true)
	t.Cleanup(func() {
		go io.Copy(io.Discard, cr)
		cw.Close()
		f.c.Close()
		cr.Close()
	})
	return f, cw, bufio.NewReader(cr)
}

func call(id int, tool string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":{"path":%q}}}`+"\n", id, tool, tool)
}

// A call that ends soon keeps the reading turn with the goroutine that
// ran it: a client sending one call at a time, or many at once, wakes no
// other goroutine for each.
func TestQuickCallsKeepTheReadingTurn(t *testing.T) {
	// A second, so that no quick call outlasts it however slow the
	// machine (with 50 µs, a goroutine stopped by a busy machine hands
	// the turn on, as it should).
	f, w, answers := openTurns(t, time.Second)
	const calls = 200
	for i := range calls {
		if _, err := io.WriteString(w, call(i, "t")); err != nil {
			t.Fatal(err)
		}
		line, err := answers.ReadString('\n')
		if err != nil || !strings.Contains(line, fmt.Sprintf(`"id":%d,`, i)) {
			t.Fatalf("answer %d: %q %v", i, line, err)
		}
	}
	if n := f.c.handed.Load(); n != 0 {
		t.Errorf("the turn was handed on %d times for %d quick calls, one at a time", n, calls)
	}
	// Written at once (the pipe takes them in pieces as they are read).
	before := f.c.handed.Load()
	var batch strings.Builder
	for i := range calls {
		batch.WriteString(call(calls+i, "t"))
	}
	go io.WriteString(w, batch.String())
	seen := map[int]bool{}
	for range calls {
		var a struct{ ID int }
		line, err := answers.ReadString('\n')
		if err != nil || json.Unmarshal([]byte(line), &a) != nil || a.ID < calls || a.ID >= 2*calls || seen[a.ID] {
			t.Fatalf("an answer of the batch (%d answered before): %q %v", len(seen), line, err)
		}
		seen[a.ID] = true // in any order: a call handed the turn on runs beside the next
	}
	if n := f.c.handed.Load() - before; n != 0 {
		t.Errorf("the turn was handed on %d times for %d quick calls written at once", n, calls)
	}
}

// The turn is handed on while a call outlasts keepTurnFor: a further call
// written with it, and others after it, are answered while it is held.
func TestLongCallsHandTheReadingTurnOn(t *testing.T) {
	f, w, answers := openTurns(t, keepTurnFor)
	// The held call and the next written at once.
	if _, err := io.WriteString(w, call(1, "hold")+call(2, "t")); err != nil {
		t.Fatal(err)
	}
	line, err := answers.ReadString('\n')
	if err != nil || !strings.Contains(line, `"id":2,`) {
		t.Fatalf("the call written after a held one: %q %v", line, err)
	}
	if f.c.handed.Load() == 0 {
		t.Errorf("a call was answered while another was held, and the turn was never handed on")
	}
	close(f.release)
	if line, err := answers.ReadString('\n'); err != nil || !strings.Contains(line, `"id":1,`) {
		t.Fatalf("the held call's answer: %q %v", line, err)
	}
	// A held call alone, then calls one at a time.
	f.release = make(chan struct{})
	if _, err := io.WriteString(w, call(3, "hold")); err != nil {
		t.Fatal(err)
	}
	for i := 4; i < 7; i++ {
		if _, err := io.WriteString(w, call(i, "t")); err != nil {
			t.Fatal(err)
		}
		if line, err := answers.ReadString('\n'); err != nil || !strings.Contains(line, fmt.Sprintf(`"id":%d,`, i)) {
			t.Fatalf("call %d while one is held: %q %v", i, line, err)
		}
	}
	close(f.release)
	if line, err := answers.ReadString('\n'); err != nil || !strings.Contains(line, `"id":3,`) {
		t.Fatalf("the second held call's answer: %q %v", line, err)
	}
}

// Calls written at once are answered together, and every answer goes
// out: the last of a burst, those held before a call that is held up,
// and those of a client that stops reading end nothing but its own
// connection.
func TestHeldAnswersGoOut(t *testing.T) {
	f, w, answers := openTurns(t, keepTurnFor)
	readIDs := func(n int) map[int]bool {
		t.Helper()
		seen := map[int]bool{}
		for range n {
			var a struct{ ID int }
			line, err := answers.ReadString('\n')
			if err != nil || json.Unmarshal([]byte(line), &a) != nil || seen[a.ID] {
				t.Fatalf("an answer (%d read before): %q %v", len(seen), line, err)
			}
			seen[a.ID] = true
		}
		return seen
	}
	var burst strings.Builder
	for i := range 100 {
		burst.WriteString(call(i, "t"))
	}
	go io.WriteString(w, burst.String())
	if seen := readIDs(100); len(seen) != 100 || !seen[0] || !seen[99] {
		t.Fatalf("answers of a burst of 100: %v", seen)
	}
	// Ten quick calls, then one held up: the ten are answered while it is.
	burst.Reset()
	for i := range 10 {
		burst.WriteString(call(200+i, "t"))
	}
	burst.WriteString(call(300, "hold"))
	go io.WriteString(w, burst.String())
	if seen := readIDs(10); seen[300] {
		t.Fatalf("the held call was answered before it was let go: %v", seen)
	}
	close(f.release)
	if seen := readIDs(1); !seen[300] {
		t.Fatalf("the held call's answer: %v", seen)
	}
}

// A client that writes a burst of calls and reads none of the answers,
// then leaves: the connection ends (its reading is not held by an answer
// it does not read). Fewer calls than the messages that may be in
// progress: each may wait in its write, holding its place, as when
// answers are not held; a client that writes more and reads nothing
// stops the reading when the places are taken, by design.
func TestBurstUnreadEnds(t *testing.T) {
	for name, tail := range map[string]string{"calls": "", "then a blank line": "\n"} {
		t.Run(name, func(t *testing.T) { burstUnreadEnds(t, tail, "t") })
	}
	t.Run("large answers", func(t *testing.T) { burstUnreadEnds(t, "", "big") })
}

func burstUnreadEnds(t *testing.T, tail, tool string) {
	f, w, _ := openTurns(t, keepTurnFor) // the answers are never read
	var burst strings.Builder
	for i := range DefaultMaxPending - 2 {
		burst.WriteString(call(i, tool))
	}
	if _, err := io.WriteString(w, burst.String()+tail); err != nil {
		t.Fatal(err)
	}
	w.Close()
	// The input's end reaches Read (the SDK's side) although no answer
	// was read: the pipe takes none until the client reads.
	done := make(chan error, 1)
	go func() {
		for {
			if _, err := f.c.Read(context.Background()); err != nil {
				done <- err
				return
			}
		}
	}()
	select {
	case err := <-done:
		if !errors.Is(err, io.EOF) {
			t.Errorf("Read ended with %v, want the input's end", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the input's end was not read 30 s after the client left, its answers unread")
	}
}

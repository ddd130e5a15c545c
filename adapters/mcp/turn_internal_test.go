package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/a6afc2ce/hermes-hub/executor"
)

// turnCaller answers direct calls of the tool "t" at once, and of "hold"
// when the test lets them go (or their context ends).
type turnCaller struct {
	c       *stdioConn
	release chan struct{}
}

func (f *turnCaller) directTool(name string, _ bool) (executor.Info, bool) {
	return executor.Info{Name: "fs.exists"}, name == "t" || name == "hold"
}

func (f *turnCaller) callDirect(ctx context.Context, _ executor.Info, args json.RawMessage, _ string) (*executor.Outcome, error) {
	if strings.Contains(string(args), "hold") {
		select {
		case <-f.release:
		case <-ctx.Done():
		}
	}
	return &executor.Outcome{Verb: "fs.exists", Err: executor.Errorf(executor.CodeNotFound, "answered")}, nil
}

// openTurns serves a connection whose direct calls go to a turnCaller,
// initialised as far as the direct path needs.
func openTurns(t *testing.T) (f *turnCaller, w io.WriteCloser, answers *bufio.Reader) {
	t.Helper()
	cr, sw := io.Pipe()
	sr, cw := io.Pipe()
	f = &turnCaller{release: make(chan struct{})}
	f.c = newStdioConn(sr, sw, 0, 0, f)
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
	f, w, answers := openTurns(t)
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
	// A call outlasts keepTurnFor only when the machine stops this
	// goroutine meanwhile; before, every call handed the turn on.
	if n := f.c.handed.Load(); n > calls/2 {
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
	if n := f.c.handed.Load() - before; n > calls/2 {
		t.Errorf("the turn was handed on %d times for %d quick calls written at once", n, calls)
	}
}

// The turn is handed on while a call outlasts keepTurnFor: a further call
// written with it, and others after it, are answered while it is held.
func TestLongCallsHandTheReadingTurnOn(t *testing.T) {
	f, w, answers := openTurns(t)
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

package mcp_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	mcpsurface "github.com/a6afc2ce/hermes-hub/adapters/mcp"
	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/hub/hubtest"
	"github.com/a6afc2ce/hermes-hub/internal/testkit"
)

// lineConn is `hub mcp` served over pipes and spoken to one JSON line at a
// time, to see the bytes of each answer and which path gave them.
type lineConn struct {
	t    *testing.T
	env  *hubtest.Env
	srv  *mcpsurface.Server
	w    io.WriteCloser
	r    *bufio.Reader
	done chan error
}

// openLines serves a hub runtime with access acc (nil: every verb for
// agent:local) over stdio; the client has not initialised yet.
func openLines(t *testing.T, acc *config.Access) *lineConn {
	t.Helper()
	cfg := hubtest.Config(t, "", "")
	cfg.Access = config.Access{
		Roles:  map[string]config.Role{"admin": {Verbs: []string{"*"}}},
		Grants: map[string][]string{"agent:local": {"admin"}},
	}
	if acc != nil {
		cfg.Access = *acc
	}
	env := hubtest.Open(t, cfg, hubtest.Options{})
	srv, err := mcpsurface.New(mcpsurface.Options{Intake: env.Runtime.Hub, Version: "test", Logger: testkit.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	cr, sw := io.Pipe()
	sr, cw := io.Pipe()
	c := &lineConn{t: t, env: env, srv: srv, w: cw, r: bufio.NewReaderSize(cr, 4<<20), done: make(chan error, 1)}
	go func() { c.done <- srv.RunStdio(context.Background(), sr, sw) }()
	t.Cleanup(func() {
		// The client reads on as it leaves: what the SDK sends as the
		// connection ends (the cancellation of a request of its own) finds a
		// reader, as it would in a pipe's buffer.
		go io.Copy(io.Discard, cr)
		cw.Close()
		if err := waitServed(t, c.done); err != nil {
			t.Errorf("RunStdio: %v", err)
		}
		cr.Close()
	})
	return c
}

func (c *lineConn) send(line string) {
	c.t.Helper()
	if _, err := io.WriteString(c.w, line+"\n"); err != nil {
		c.t.Fatal(err)
	}
}

// lineAnswer is one answer line: its id, and its result or error as sent.
type lineAnswer struct {
	ID     any             `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// answer reads lines until an answer (skipping the server's notifications).
func (c *lineConn) answer() lineAnswer {
	c.t.Helper()
	for {
		line, err := c.r.ReadBytes('\n')
		if err != nil {
			c.t.Fatal(err)
		}
		var a lineAnswer
		if err := json.Unmarshal(line, &a); err != nil {
			c.t.Fatalf("%q: %v", line, err)
		}
		if a.Method == "" {
			return a
		}
	}
}

// initialize does the handshake with the client capabilities caps (JSON).
func (c *lineConn) initialize(caps string) {
	c.t.Helper()
	c.send(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":` + caps + `,"clientInfo":{"name":"t","version":"1"}}}`)
	if a := c.answer(); a.Error != nil {
		c.t.Fatalf("initialize: %+v", a.Error)
	}
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

func (c *lineConn) direct() uint64 { return mcpsurface.DirectCalls(c.srv) }

// ended waits until RunStdio has returned without an error, within the
// given time of the client's leaving.
func (c *lineConn) ended(within time.Duration) {
	c.t.Helper()
	select {
	case err := <-c.done:
		if err != nil {
			c.t.Fatalf("RunStdio: %v", err)
		}
		c.done <- nil // for the cleanup
	case <-time.After(within):
		c.t.Fatalf("RunStdio still runs %v after the client left", within)
	}
}

// startLong sends the call "long", a proc_run of sh that touches started
// and then runs script, and waits until its program runs.
func (c *lineConn) startLong(script string) {
	c.t.Helper()
	c.send(`{"jsonrpc":"2.0","id":"long","method":"tools/call","params":{"name":"proc_run","arguments":{"executable":"sh","arguments":["-c","touch started; ` + script + `"]}}}`)
	testkit.WaitFor(c.t, "the call to start its program", func() bool {
		_, err := os.Stat(filepath.Join(c.env.Config.Workspace, "started"))
		return err == nil
	})
}

// TestDirectCallAnswersAsTheSDK: a plain tools/call is answered on the
// direct path with the JSON the SDK gives for the same call (sent once
// with a _meta, which only the SDK takes): text and structured content,
// HTML characters, non-ASCII text, invalid UTF-8, a failed verb, invalid
// arguments, string and number ids.
func TestDirectCallAnswersAsTheSDK(t *testing.T) {
	c := openLines(t, nil)
	c.env.WriteFile(t, "a.txt", "hello\n")
	c.env.WriteFile(t, "html.txt", "<b>&\"quoted\"</b> é ✓ \u2028 tab\there\n")
	c.env.WriteFile(t, "bad.txt", "ok \xff\xfe then more\n")
	c.initialize(`{}`)
	for i, call := range []string{
		`"name":"fs_exists","arguments":{"path":"a.txt"}`,
		`"name":"fs_readFile","arguments":{"path":"html.txt"}`,
		`"name":"fs_readFile","arguments":{"path":"bad.txt"}`,
		`"name":"fs_readFile","arguments":{"path":"missing.txt"}`,
		`"name":"fs_exists","arguments":{}`,
		`"name":"fs_exists"`,
		`"name":"fs_listDir","arguments":{"path":"."}`,
	} {
		for _, id := range []string{fmt.Sprint(100 + i), fmt.Sprintf(`"s-%d-é"`, i)} {
			before := c.direct()
			c.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{` + call + `}}`)
			direct := c.answer()
			if c.direct() != before+1 {
				t.Fatalf("%s: not answered on the direct path", call)
			}
			c.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{` + call + `,"_meta":{"client/x":1}}}`)
			sdk := c.answer()
			if c.direct() != before+1 {
				t.Fatalf("%s with _meta: answered on the direct path", call)
			}
			if direct.Error != nil || sdk.Error != nil {
				t.Fatalf("%s: errors %+v / %+v", call, direct.Error, sdk.Error)
			}
			if fmt.Sprint(direct.ID) != fmt.Sprint(sdk.ID) {
				t.Fatalf("%s: ids %v and %v", call, direct.ID, sdk.ID)
			}
			// The same JSON: the SDK escapes <, > and & as \u003c and so
			// on, the direct path writes them as they are.
			var dv, sv any
			if json.Unmarshal(direct.Result, &dv) != nil || json.Unmarshal(sdk.Result, &sv) != nil || !reflect.DeepEqual(dv, sv) {
				t.Fatalf("%s:\ndirect %s\nSDK    %s", call, direct.Result, sdk.Result)
			}
		}
	}
}

// TestDirectCallLeavesTheRestToTheSDK: what the direct path cannot serve
// exactly as the SDK would goes to the SDK, and is answered by it.
func TestDirectCallLeavesTheRestToTheSDK(t *testing.T) {
	c := openLines(t, nil)
	c.env.WriteFile(t, "a.txt", "hello\n")
	// Before initialize: the SDK refuses.
	c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"fs_exists","arguments":{"path":"a.txt"}}}`)
	if a := c.answer(); a.Error == nil || !strings.Contains(a.Error.Message, "invalid during session initialization") {
		t.Fatalf("a call before initialize: %+v %s", a.Error, a.Result)
	}
	c.initialize(`{}`)
	for _, tc := range []struct{ name, params, want string }{
		{"unknown tool", `{"name":"fs_nope","arguments":{}}`, `unknown tool "fs_nope"`},
		{"progress token", `{"name":"fs_exists","arguments":{"path":"a.txt"},"_meta":{"progressToken":"p1"}}`, `"exists":true`},
		{"input responses", `{"name":"fs_exists","arguments":{"path":"a.txt"},"inputResponses":{}}`, `"exists":true`},
		{"params not an object", `[1]`, `invalid`},
	} {
		before := c.direct()
		c.send(`{"jsonrpc":"2.0","id":"x","method":"tools/call","params":` + tc.params + `}`)
		a := c.answer()
		got := string(a.Result)
		if a.Error != nil {
			got = a.Error.Message
		}
		if !strings.Contains(got, tc.want) {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
		if c.direct() != before {
			t.Errorf("%s: taken by the direct path", tc.name)
		}
	}
	// A fractional id: the SDK reads it (as a number it rounds); the direct
	// path copies only the ids it can write back as the SDK does.
	before := c.direct()
	c.send(`{"jsonrpc":"2.0","id":2.5,"method":"tools/call","params":{"name":"fs_exists","arguments":{"path":"a.txt"}}}`)
	c.answer()
	if c.direct() != before {
		t.Error("a fractional id: taken by the direct path")
	}
}

// TestDirectCallAndConfirmation: a client that can answer an elicitation
// has the calls its role holds for confirmation asked by the SDK (never
// run on the direct path); its other calls, and every call of a client
// without elicitation (refused with the setting), are direct.
func TestDirectCallAndConfirmation(t *testing.T) {
	acc := &config.Access{
		Roles:  map[string]config.Role{"deleter": {Verbs: []string{"fs.*"}, Confirm: []string{"fs.deleteFile"}}},
		Grants: map[string][]string{"agent:local": {"deleter"}},
	}
	t.Run("elicitation", func(t *testing.T) {
		c := openLines(t, acc)
		c.env.WriteFile(t, "old.log", "x")
		c.initialize(`{"elicitation":{}}`)
		before := c.direct()
		c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"fs_exists","arguments":{"path":"old.log"}}}`)
		if a := c.answer(); !strings.Contains(string(a.Result), `"exists":true`) || c.direct() != before+1 {
			t.Fatalf("a call no role holds: %s, direct %d", a.Result, c.direct()-before)
		}
		c.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"fs_deleteFile","arguments":{"path":"old.log"}}}`)
		// The SDK asks the client (an elicitation request of the server's).
		line, err := c.r.ReadBytes('\n')
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(line, []byte(`"method":"elicitation/create"`)) || !bytes.Contains(line, []byte("Run fs.deleteFile")) {
			t.Fatalf("a held call from a client with elicitation: %s", line)
		}
		if c.direct() != before+1 {
			t.Fatal("the held call was taken by the direct path")
		}
	})
	t.Run("no elicitation", func(t *testing.T) {
		c := openLines(t, acc)
		c.env.WriteFile(t, "old.log", "x")
		c.initialize(`{}`)
		before := c.direct()
		c.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"fs_deleteFile","arguments":{"path":"old.log"}}}`)
		a := c.answer()
		if !strings.Contains(string(a.Result), "access.roles.deleter.confirm lists it") || c.direct() != before+1 {
			t.Fatalf("a held call from a client without elicitation: %s, direct %d", a.Result, c.direct()-before)
		}
		if _, err := os.Stat(filepath.Join(c.env.Config.Workspace, "old.log")); err != nil {
			t.Fatalf("the held call ran: %v", err)
		}
	})
}

// TestDirectCallCancelled: notifications/cancelled ends a direct call in
// progress (the program is stopped) and the call is answered as canceled;
// an id in use by a direct call is refused for another request.
func TestDirectCallCancelled(t *testing.T) {
	c := openLines(t, nil)
	c.initialize(`{}`)
	ws := c.env.Config.Workspace
	c.startLong("sleep 60; touch finished")
	if c.direct() != 1 {
		t.Fatalf("direct calls %d, want 1", c.direct())
	}
	c.send(`{"jsonrpc":"2.0","id":"long","method":"tools/call","params":{"name":"fs_exists","arguments":{"path":"started"}}}`)
	if a := c.answer(); a.Error == nil || a.Error.Code != -32600 || !strings.Contains(a.Error.Message, "already in use") {
		t.Fatalf("a second request with the id of a direct call in progress: %+v %s", a.Error, a.Result)
	}
	c.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"long","reason":"user"}}`)
	a := c.answer()
	if a.ID != "long" || !strings.Contains(string(a.Result), `"isError":true`) || !strings.Contains(string(a.Result), `"errorCode":"cancelled"`) {
		t.Fatalf("the cancelled call's answer: %v %s %+v", a.ID, a.Result, a.Error)
	}
	if _, err := os.Stat(filepath.Join(ws, "finished")); err == nil {
		t.Fatal("the cancelled program ran to its end")
	}
}

// TestDirectCallsInParallel: calls written before any answer is read run
// at once on the direct path, each answered once under its own id, with
// more calls than the bound of messages in progress.
func TestDirectCallsInParallel(t *testing.T) {
	c := openLines(t, nil)
	for i := range 10 {
		c.env.WriteFile(t, fmt.Sprintf("f%d.txt", i), strings.Repeat(fmt.Sprint(i), 1000))
	}
	c.initialize(`{}`)
	const n = 3 * mcpsurface.DefaultMaxPending
	go func() {
		var b strings.Builder
		for i := range n {
			switch i % 3 {
			case 0:
				fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"fs_readFile","arguments":{"path":"f%d.txt"}}}`+"\n", i, i%10)
			case 1:
				fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"fs_writeFile","arguments":{"path":"w/%d.txt","content":"%d"}}}`+"\n", i, i, i)
			default:
				fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"fs_exists","arguments":{"path":"f%d.txt"}}}`+"\n", i, i%10)
			}
		}
		io.WriteString(c.w, b.String())
	}()
	seen := map[int]bool{}
	for range n {
		a := c.answer()
		id := int(a.ID.(float64))
		if seen[id] {
			t.Fatalf("id %d answered twice", id)
		}
		seen[id] = true
		var r struct {
			StructuredContent struct {
				Succeeded bool   `json:"succeeded"`
				Content   string `json:"content"`
			} `json:"structuredContent"`
		}
		if err := json.Unmarshal(a.Result, &r); err != nil || !r.StructuredContent.Succeeded {
			t.Fatalf("id %d: %s %v", id, a.Result, err)
		}
		if id%3 == 0 && r.StructuredContent.Content != strings.Repeat(fmt.Sprint(id%10), 1000) {
			t.Fatalf("id %d read %.40q", id, r.StructuredContent.Content)
		}
	}
	if c.direct() != n {
		t.Fatalf("direct calls %d, want %d", c.direct(), n)
	}
	for i := 1; i < n; i += 3 {
		if b, err := os.ReadFile(filepath.Join(c.env.Config.Workspace, "w", fmt.Sprintf("%d.txt", i))); err != nil || string(b) != fmt.Sprint(i) {
			t.Fatalf("w/%d.txt: %q %v", i, b, err)
		}
	}
}

// TestDirectCallClientGone: the client hanging up while a direct call runs
// ends `hub mcp` normally and soon: the call is cancelled, as the SDK
// cancels its own calls when the input ends.
func TestDirectCallClientGone(t *testing.T) {
	c := openLines(t, nil)
	c.initialize(`{}`)
	ws := c.env.Config.Workspace
	c.startLong("sleep 60; touch finished")
	c.w.Close()
	c.ended(20 * time.Second)
	if _, err := os.Stat(filepath.Join(ws, "finished")); err == nil {
		t.Fatal("the program ran to its end")
	}
}

// TestStdioClientStopsReading: a client that stops reading while an
// answer is being written (on the direct path, or by the SDK), then closes
// its end, still ends `hub mcp`: its output is closed under the waiting
// write.
func TestStdioClientStopsReading(t *testing.T) {
	for _, tc := range []struct{ name, line string }{
		{"direct call", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"fs_exists","arguments":{"path":"."}}}`},
		{"SDK request", `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := openLines(t, nil) // the pipes are unbuffered: a write waits until the client reads
			c.initialize(`{}`)
			c.send(tc.line)
			time.Sleep(200 * time.Millisecond) // its answer now waits in the pipe
			c.w.Close()                        // the client leaves without reading it
			c.ended(30 * time.Second)
		})
	}
}

// TestReadingGoesOnDuringACall: a direct call runs in the goroutine that
// read it, which hands the reading to another first: while a long call
// runs, a ping, other direct calls and the long call's cancellation are
// read and answered; once the input ended, no goroutine of the
// connection's reading is left.
func TestReadingGoesOnDuringACall(t *testing.T) {
	c := openLines(t, nil)
	c.initialize(`{}`)
	c.startLong("sleep 60")
	for i := range 5 {
		c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"fs_exists","arguments":{"path":"started"}}}`, i))
		if a := c.answer(); a.ID != float64(i) || !strings.Contains(string(a.Result), `"exists":true`) {
			t.Fatalf("call %d while a long one runs: %v %s %+v", i, a.ID, a.Result, a.Error)
		}
	}
	c.send(`{"jsonrpc":"2.0","id":"p","method":"ping"}`)
	if a := c.answer(); a.ID != "p" || a.Error != nil {
		t.Fatalf("ping while a long call runs: %v %+v", a.ID, a.Error)
	}
	if c.direct() != 6 {
		t.Fatalf("direct calls %d, want 6", c.direct())
	}
	c.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"long","reason":"user"}}`)
	if a := c.answer(); a.ID != "long" || !strings.Contains(string(a.Result), `"errorCode":"cancelled"`) {
		t.Fatalf("the cancelled call's answer: %v %s %+v", a.ID, a.Result, a.Error)
	}
	go io.Copy(io.Discard, c.r)
	c.w.Close()
	testkit.WaitFor(t, "the connection's readers to end with its input", func() bool {
		return !strings.Contains(stacks(), "stdioConn).reader")
	})
}

// TestBurstOfBothPaths: direct calls and messages for the SDK written in
// one go (answers of direct calls are held to go out together) are all
// answered, each once.
func TestBurstOfBothPaths(t *testing.T) {
	c := openLines(t, nil)
	c.initialize(`{}`)
	var burst strings.Builder
	want := map[string]bool{}
	for i := range 41 {
		id := fmt.Sprint(i)
		switch i % 10 {
		case 5:
			fmt.Fprintf(&burst, `{"jsonrpc":"2.0","id":"%s","method":"ping"}`+"\n", id)
		case 7:
			fmt.Fprintf(&burst, `{"jsonrpc":"2.0","id":"%s","method":"tools/list"}`+"\n", id)
		default:
			fmt.Fprintf(&burst, `{"jsonrpc":"2.0","id":"%s","method":"tools/call","params":{"name":"fs_exists","arguments":{"path":"."}}}`+"\n", id)
		}
		want[id] = true
	}
	go io.WriteString(c.w, burst.String())
	for range len(want) {
		a := c.answer()
		id, _ := a.ID.(string)
		if !want[id] || a.Error != nil {
			t.Fatalf("answer %v (error %+v): not one of the burst's, or twice", a.ID, a.Error)
		}
		delete(want, id)
	}
	if c.direct() != 33 {
		t.Errorf("direct calls %d, want 33", c.direct())
	}
}

// stacks are the stacks of every goroutine.
func stacks() string {
	var b strings.Builder
	_ = pprof.Lookup("goroutine").WriteTo(&b, 1)
	return b.String()
}

// TestLargeReadsEachTheirOwn: large files read one after another and
// written at once, whose answers go out in parts and whose buffers are
// given back for the next reads: each answer holds its own file whole, in
// its text and its structured content.
func TestLargeReadsEachTheirOwn(t *testing.T) {
	c := openLines(t, nil)
	var files []string
	for i := range 5 {
		content := strings.Repeat(fmt.Sprintf("file %d line\n", i), (70<<10)*(i+1)/12)
		files = append(files, content)
		c.env.WriteFile(t, fmt.Sprintf("f%d.txt", i), content)
	}
	c.initialize(`{}`)
	check := func(a lineAnswer, want string) {
		t.Helper()
		var r struct {
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
			Structured struct {
				Content string `json:"content"`
			} `json:"structuredContent"`
		}
		if a.Error != nil || json.Unmarshal(a.Result, &r) != nil || len(r.Content) != 1 {
			t.Fatalf("answer %v: %.300s", a.ID, a.Result)
		}
		if r.Structured.Content != want || !strings.Contains(r.Content[0].Text, strings.TrimRight(want, "\n")) {
			t.Fatalf("answer %v: structured content of %d bytes, text of %d, not its file's %d", a.ID, len(r.Structured.Content), len(r.Content[0].Text), len(want))
		}
	}
	order := []int{0, 3, 1, 4, 2, 0, 0, 4, 3, 1}
	before := c.direct()
	for i, f := range order {
		c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"fs_readFile","arguments":{"path":"f%d.txt"}}}`, i, f))
		check(c.answer(), files[f])
	}
	var burst strings.Builder
	for i := range 30 {
		fmt.Fprintf(&burst, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"fs_readFile","arguments":{"path":"f%d.txt"}}}`+"\n", 100+i, order[i%len(order)])
	}
	go io.WriteString(c.w, burst.String())
	for range 30 {
		a := c.answer()
		id, _ := a.ID.(float64)
		check(a, files[order[(int(id)-100)%len(order)]])
	}
	if got := c.direct() - before; got != 40 {
		t.Fatalf("%d calls on the direct path, want 40", got)
	}
}

package mcp

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/a6afc2ce/hermes-hub/hub"
)

// The bounds of `hub mcp` (docs/mcp.md): what one line may hold and how far
// the hub reads ahead of its answers.
const (
	// DefaultMaxLineBytes bounds one line, one message, when Options names
	// no bound (the SDK's bound of a request body over HTTP).
	DefaultMaxLineBytes = mcp.DefaultMaxRequestBodyBytes
	// DefaultMaxPending bounds the messages read and not yet done (a
	// request until it is answered, a notification until it was handled)
	// when Options names no bound. Past it no line is read until one is
	// done: the client's writes wait in the pipe.
	DefaultMaxPending = 32
	// StdioReadAhead is the most the hub reads of its input beyond the
	// lines it has taken (its read buffer).
	StdioReadAhead = 16 << 10
)

// RunStdio serves one MCP connection over in and out, one JSON-RPC message
// per line (`hub mcp`), until the client hangs up or ctx ends. Its calls
// are turns of the session stdio-<random>. A line that is not a JSON-RPC
// message is answered with an error and skipped; at most
// Options.MaxPending messages are in progress at once.
func (s *Server) RunStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	var b [6]byte
	_, _ = rand.Read(b[:])
	s.stdio.Store("stdio-" + hex.EncodeToString(b[:]))
	s.report(hub.StateRunning, "stdio")
	conn := newStdioConn(in, out, s.opts.MaxLineBytes, s.opts.MaxPending, s)
	finished := make(chan struct{})
	go conn.unblockAtEnd(ctx, finished)
	err := s.srv.Run(ctx, stdioTransport{conn})
	conn.stopDirect()
	close(finished)
	s.Close()
	s.report(hub.StateStopped, "")
	if clientGone(err) {
		return nil
	}
	return err
}

// clientGone reports whether err only says the connection ended: ctx
// ended, the client closed its end (EOF on the input), or it stopped
// reading while the hub wrote (a notification sent as it hung up).
func clientGone(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrClosedPipe) || errors.Is(err, syscall.EPIPE)
}

func (s *Server) report(state hub.State, detail string) {
	if s.opts.Status != nil {
		s.opts.Status.Report(state, detail)
	}
}

// stdioTransport hands the SDK its one connection.
type stdioTransport struct{ c *stdioConn }

func (t stdioTransport) Connect(context.Context) (mcp.Connection, error) { return t.c, nil }

// stdioConn is the line framing of `hub mcp`, in place of the SDK's
// (which ends the connection on the first line that does not decode, and
// reads ahead without bound):
//
//   - a line that is not JSON is answered with a parse error (-32700, id
//     null), one that is JSON but not a JSON-RPC message, a batch or a line
//     over the bound with an invalid-request error (-32600, with the
//     request's id when it has one), and the next line is read;
//   - a line is read only while fewer than maxPending messages are in
//     progress: a request is in progress until its answer is written, a
//     notification until the handler queue has passed it (a ping of the
//     hub's own, a fence, follows each notification and its answer, never
//     written out, marks it done);
//   - each tools/call's JSON-RPC id is handed to the tool handler in the
//     params' _meta;
//   - a plain tools/call is answered here, on the direct path
//     (fastcall.go), the others go to the SDK.
//
// The hub asks the client nothing (no sampling, elicitation or roots), so
// no request in progress waits on a line the bound keeps unread.
type stdioConn struct {
	out     io.Writer
	wmu     sync.Mutex // one message per write
	held    []byte     // answers written with the next write (tryHold)
	maxLine int

	in     *bufio.Reader // read by the goroutine that has the reading turn
	turn   chan struct{} // hands the reading turn to an idle goroutine
	handed atomic.Int64  // how many times the turn was handed on
	// keepTurn is keepTurnFor (a test's own value where it counts turns)
	keepTurn time.Duration
	msgs     chan msgOrErr // the reader's messages for the SDK (Read)
	slots    chan struct{} // a token per message in progress
	closed   chan struct{}
	once     sync.Once

	fenceBase string
	mu        sync.Mutex
	pending   map[jsonrpc.ID]bool // requests handed on and unanswered: true for a fence
	fence     *jsonrpc.Request    // the fence to hand on at the next Read
	fences    uint64

	// The direct path (fastcall.go): nil direct turns it off. ready is set
	// once initialize was answered with a result, canElicit from its
	// params; cancels holds the direct calls in progress, calls counts
	// the goroutines running one, base is the calls' context (ended with
	// the input), stopped is set when the connection ends.
	direct    directCaller
	stopped   bool
	initID    *jsonrpc.ID
	ready     atomic.Bool
	canElicit atomic.Bool
	cancels   map[jsonrpc.ID]context.CancelFunc
	calls     sync.WaitGroup
	base      context.Context
	endCalls  context.CancelFunc
}

// msgOrErr is what the reader hands Read: a message for the SDK, marked
// when it is a notification (a fence follows it), or the error that ended
// the input.
type msgOrErr struct {
	msg          jsonrpc.Message
	notification bool
	err          error
}

// newStdioConn starts reading in; direct runs the direct calls (nil: every
// message goes to the SDK).
func newStdioConn(in io.Reader, out io.Writer, maxLine, maxPending int, direct directCaller) *stdioConn {
	if maxLine <= 0 {
		maxLine = DefaultMaxLineBytes
	}
	if maxPending <= 0 {
		maxPending = DefaultMaxPending
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	c := &stdioConn{
		out: out, maxLine: maxLine, in: bufio.NewReaderSize(in, StdioReadAhead),
		turn: make(chan struct{}), msgs: make(chan msgOrErr),
		slots: make(chan struct{}, maxPending), closed: make(chan struct{}),
		fenceBase: "hub-fence-" + hex.EncodeToString(b[:]) + "-", pending: map[jsonrpc.ID]bool{},
		cancels: map[jsonrpc.ID]context.CancelFunc{}, direct: direct, keepTurn: keepTurnFor,
	}
	c.base, c.endCalls = context.WithCancel(context.Background())
	go c.reader()
	return c
}

// The reading turn: one goroutine at a time reads the input, one line
// per free place among the messages in progress (slots), so the hub reads
// no further ahead of its answers than the read buffer (StdioReadAhead).
// A message for the SDK it hands to Read. A direct call it runs itself:
// the goroutine woken by the line's arrival answers it, with no hand-off
// between reading a call and running it. When the call outlasts
// keepTurnFor, the turn goes to an idle goroutine (or a new one), so that
// the next line is read while it runs (runKeepingTurn). The goroutines
// stay, idle between their turns and calls (at most one per message that
// may be in progress), so a call does not grow a fresh stack to the depth
// of a turn.

// reader takes reading turns and runs the direct calls it reads, until
// the input ends or the connection closes (a read blocked on the input
// ends with the process, as with any stdin reader).
func (c *stdioConn) reader() {
	for {
		j, ok := c.readUntilDirect()
		if !ok {
			return
		}
		if c.runKeepingTurn(j, c.lineWaiting()) {
			continue
		}
		select {
		case <-c.turn:
		case <-c.base.Done(): // the input ended: no turn will come
			return
		case <-c.closed:
			return
		}
	}
}

// keepTurnFor is how long a direct call runs before the goroutine running
// it hands the reading turn on: most calls end sooner, and then the turn
// stays with it, with no other goroutine woken for the next line (nor,
// for a client that writes several calls at once, for each of them).
const keepTurnFor = 50 * time.Microsecond

// runKeepingTurn runs j, handing the reading turn on if j still runs
// after keepTurnFor (with the answers held so far: they go out then);
// true when the call ended first and this goroutine kept the turn. When
// the client had written more than j (more: a whole line was read in
// behind it), j's answer is held, to go out with those of the next calls
// in one write, if that needs no wait; else the turn goes on before the
// answer is written, so that a write the client does not read holds no
// reading.
func (c *stdioConn) runKeepingTurn(j directJob, more bool) bool {
	const running, handed, kept = 0, 1, 2
	var state atomic.Int32
	t := time.AfterFunc(c.keepTurn, func() {
		if state.CompareAndSwap(running, handed) {
			c.passTurn()
			c.flushHeld()
		}
	})
	c.runDirect(j, func(parts [][]byte) bool {
		if !more || !state.CompareAndSwap(running, kept) {
			return false
		}
		if len(parts) == 1 && c.tryHold(parts[0]) {
			return true
		}
		state.Store(handed)
		c.passTurn()
		return false
	})
	t.Stop()
	return state.Load() == kept || state.CompareAndSwap(running, kept)
}

// lineWaiting reports whether a whole line is read in and waits: the
// next read returns without waiting for the client. Only the goroutine
// with the reading turn may ask.
func (c *stdioConn) lineWaiting() bool {
	b, _ := c.in.Peek(c.in.Buffered())
	return bytes.IndexByte(b, '\n') >= 0
}

// passTurn hands the reading turn to an idle goroutine, or a new one.
func (c *stdioConn) passTurn() {
	c.handed.Add(1)
	select {
	case c.turn <- struct{}{}:
	default:
		go c.reader()
	}
}

// readUntilDirect reads lines, handing their messages to Read and
// answering those that hold none, until it reads a direct call it may run
// (true) or the reading ends (false).
func (c *stdioConn) readUntilDirect() (directJob, bool) {
	for {
		// Answers held for the next write go out before anything that
		// may wait: a read of a line not yet sent, a free place, Read.
		if !c.lineWaiting() {
			c.sendHeld()
		}
		select {
		case c.slots <- struct{}{}:
		case <-c.closed:
			c.sendHeld() // the answers of calls that ended before
			return directJob{}, false
		}
		line, err := readLine(c.in, c.maxLine)
		if err != nil && !errors.Is(err, errLineTooLong) {
			c.done()
			// As the SDK does with its own calls when the reading ends: no
			// cancellation can come any more, nor can an answer be wanted.
			c.endCalls()
			c.hand(msgOrErr{err: err})
			return directJob{}, false
		}
		m, j, keep := c.admit(line, err)
		if j != nil {
			return *j, true
		}
		if !keep {
			c.done()
		}
		if m.msg != nil {
			c.sendHeld()
			if !c.hand(m) {
				return directJob{}, false
			}
		}
	}
}

// hand gives Read a message, false if the connection closed first.
func (c *stdioConn) hand(m msgOrErr) bool {
	select {
	case c.msgs <- m:
		return true
	case <-c.closed:
		return false
	}
}

// errLineTooLong is a line over the bound; the rest of it was skipped.
var errLineTooLong = errors.New("line too long")

// readLine returns the next line without its end (\n or \r\n). A line
// longer than maxLine is read to its end and dropped: errLineTooLong. A
// last line without a newline is returned with a nil error; io.EOF comes
// after it.
func readLine(r *bufio.Reader, maxLine int) ([]byte, error) {
	var line []byte
	over := false
	for {
		chunk, err := r.ReadSlice('\n')
		if !over && len(line)+len(chunk) > maxLine+2 { // room for \r\n
			over, line = true, nil
		}
		if !over {
			line = append(line, chunk...)
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err != nil && (len(line) == 0 && !over || !errors.Is(err, io.EOF)):
			return nil, err
		}
		if over {
			return nil, errLineTooLong
		}
		line = bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
		if len(line) > maxLine {
			return nil, errLineTooLong
		}
		return line, nil
	}
}

// Read hands the SDK the next message: the fence due after a notification,
// or the next message the reader read.
func (c *stdioConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	if f := c.takeFence(); f != nil {
		return f, nil
	}
	select {
	case m := <-c.msgs:
		if m.notification {
			c.setFence()
		}
		return m.msg, m.err
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.closed:
		return nil, io.EOF
	}
}

// admit decodes a line and returns the message to hand on (none when
// m.msg is nil), or the direct call to run (j), and whether the line
// stays in progress. A line that holds no message is answered here.
func (c *stdioConn) admit(line []byte, readErr error) (m msgOrErr, j *directJob, keep bool) {
	if readErr != nil {
		c.refuse(nil, jsonrpc.CodeInvalidRequest, fmt.Sprintf("invalid request: the line is longer than %d bytes, the most one message may hold (web.max_body_bytes)", c.maxLine))
		return m, nil, false
	}
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return m, nil, false
	}
	if !json.Valid(line) {
		c.refuse(nil, jsonrpc.CodeParseError, "parse error: the line is not JSON; send one JSON-RPC 2.0 message per line")
		return m, nil, false
	}
	switch line[0] {
	case '{':
	case '[':
		c.refuse(nil, jsonrpc.CodeInvalidRequest, "invalid request: batches are not accepted over stdio; send one JSON-RPC 2.0 message per line")
		return m, nil, false
	default:
		c.refuse(nil, jsonrpc.CodeInvalidRequest, "invalid request: a message is a JSON object; send one JSON-RPC 2.0 message per line")
		return m, nil, false
	}
	if handled, j := c.admitDirect(line); handled {
		return m, j, j != nil
	}
	msg, err := jsonrpc.DecodeMessage(line)
	if err != nil {
		c.refuse(idOf(line), jsonrpc.CodeInvalidRequest, "invalid request: "+err.Error()+`; a line must be one JSON-RPC 2.0 request, notification or response ({"jsonrpc":"2.0",...})`)
		return m, nil, false
	}
	m.msg = msg
	req, ok := msg.(*jsonrpc.Request)
	if !ok {
		return m, nil, false // an answer to a request of the hub's: nothing waits on it
	}
	if !req.IsCall() {
		if req.Method == "notifications/cancelled" {
			c.cancelDirect(req.Params)
		}
		m.notification = true // Read sets the fence that follows it
		return m, nil, true
	}
	if !c.claim(req.ID) {
		return msgOrErr{}, nil, false
	}
	switch req.Method {
	case "tools/call":
		if p, ok := withRequestID(req.Params, req.ID.Raw()); ok {
			req.Params = p
		}
	case "initialize":
		c.initializing(req)
	}
	return m, nil, true
}

// claim takes id for a request in progress; false, the line refused,
// when a request in progress has it already.
func (c *stdioConn) claim(id jsonrpc.ID) bool {
	c.mu.Lock()
	_, dup := c.pending[id]
	if !dup {
		c.pending[id] = false
	}
	c.mu.Unlock()
	if dup {
		c.refuse(&id, jsonrpc.CodeInvalidRequest, fmt.Sprintf("invalid request: id %v is already in use by a request in progress", id.Raw()))
	}
	return !dup
}

// initializing notes the initialize request: its id, to know when it is
// answered (the direct path opens then), and whether the client can
// answer an elicitation (elicits, as canElicit reads the SDK's copy).
func (c *stdioConn) initializing(req *jsonrpc.Request) {
	var p mcp.InitializeParams
	if json.Unmarshal(req.Params, &p) == nil { // the SDK answers params it cannot read
		c.canElicit.Store(elicits(&p))
	}
	id := req.ID
	c.mu.Lock()
	c.initID = &id
	c.mu.Unlock()
}

// stopDirect ends the direct calls in progress and waits for them (their
// turns are recorded before the connection's end returns).
func (c *stdioConn) stopDirect() {
	c.mu.Lock()
	c.stopped = true
	c.mu.Unlock()
	c.endCalls()
	c.calls.Wait()
}

// unblockAtEnd closes the output when the connection is ending (its input
// ended, or ctx) and has not finished stopGrace later: an answer is then
// being written to a client that stopped reading before it closed its end
// (a pipe that stays full), and ending the output ends that write, as
// nothing more will be written. finished is closed once RunStdio is done.
func (c *stdioConn) unblockAtEnd(ctx context.Context, finished <-chan struct{}) {
	select {
	case <-c.base.Done(): // the input ended (the reader), or the connection stops
	case <-ctx.Done():
	case <-finished:
		return
	}
	select {
	case <-finished:
	case <-time.After(stopGrace):
		if cl, ok := c.out.(io.Closer); ok {
			_ = cl.Close()
		}
	}
}

// stopGrace is how long the end of `hub mcp` waits for its last writes
// before it closes its output under one that waits for a client gone.
const stopGrace = 2 * time.Second

// setFence makes the next Read hand on a fence: a ping of the hub's own,
// answered once the SDK's handler queue has passed the notification before
// it (notifications are handled one at a time, in order).
func (c *stdioConn) setFence() {
	c.mu.Lock()
	defer c.mu.Unlock()
	var id jsonrpc.ID
	for {
		c.fences++
		id, _ = jsonrpc.MakeID(fmt.Sprint(c.fenceBase, c.fences))
		if _, taken := c.pending[id]; !taken {
			break
		}
	}
	c.pending[id] = true
	c.fence = &jsonrpc.Request{ID: id, Method: "ping"}
}

func (c *stdioConn) takeFence() *jsonrpc.Request {
	c.mu.Lock()
	defer c.mu.Unlock()
	f := c.fence
	c.fence = nil
	return f
}

// done frees the place of a message in progress.
func (c *stdioConn) done() { <-c.slots }

// Write sends a message on its own line. The answer to a request frees its
// place once written; the answer to a fence frees the place of the
// notification before it and is not written.
func (c *stdioConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	resp, isResp := msg.(*jsonrpc.Response)
	var fence, answers bool
	if isResp {
		c.mu.Lock()
		fence, answers = c.pending[resp.ID]
		delete(c.pending, resp.ID)
		initialized := c.initID != nil && *c.initID == resp.ID && resp.Error == nil
		c.mu.Unlock()
		if initialized {
			c.ready.Store(true)
		}
	}
	if fence {
		c.done()
		return nil
	}
	data, err := encodeLine(msg)
	if err == nil {
		err = c.writeParts(data)
	} else {
		err = fmt.Errorf("encode a message: %w", err)
	}
	if answers {
		c.done()
	}
	return err
}

// maxHeld bounds the answers held for one write.
const maxHeld = 64 << 10

// writeParts writes a message, each part ending where the next begins and
// the last with its newline, after the answers held (in one write with
// the first part), with no other write between them.
func (c *stdioConn) writeParts(parts ...[]byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if len(c.held) > 0 {
		first := c.held
		if len(parts) > 0 {
			first, parts = append(first, parts[0]...), parts[1:]
		}
		c.held = c.held[:0]
		if _, err := c.out.Write(first); err != nil {
			return err
		}
	}
	for _, p := range parts {
		if _, err := c.out.Write(p); err != nil {
			return err
		}
	}
	return nil
}

// tryHold keeps data, which ends with its newline, for the next write,
// unless a write is in progress or the answers held would pass maxHeld.
func (c *stdioConn) tryHold(data []byte) bool {
	if !c.wmu.TryLock() {
		return false
	}
	defer c.wmu.Unlock()
	if len(c.held)+len(data) > maxHeld {
		return false
	}
	c.held = append(c.held, data...)
	return true
}

// sendHeld has the answers held written by a goroutine of their own
// (flushHeld), if there are any: the goroutine with the reading turn never
// waits on a client that does not read (it would then not read the
// input's end).
func (c *stdioConn) sendHeld() {
	if c.wmu.TryLock() {
		none := len(c.held) == 0
		c.wmu.Unlock()
		if none {
			return
		}
	}
	go c.flushHeld()
}

// flushHeld writes the answers held. A failed write ends the connection,
// as a failed answer does.
func (c *stdioConn) flushHeld() {
	if c.writeParts() != nil {
		c.Close()
	}
}

// encodeLine is a message as jsonrpc.EncodeMessage encodes it, with its
// newline. An answer's result, JSON the SDK has just encoded (compact,
// HTML characters unescaped, as EncodeMessage leaves them), is copied as
// it is instead of being compacted once more: the same bytes, one pass
// fewer over a large result (a 1 MB file read is 2 MB of it).
func encodeLine(msg jsonrpc.Message) ([]byte, error) {
	resp, ok := msg.(*jsonrpc.Response)
	if !ok || resp.Error != nil || len(resp.Result) == 0 || !resp.ID.IsValid() {
		data, err := jsonrpc.EncodeMessage(msg)
		return append(data, '\n'), err
	}
	var id bytes.Buffer
	enc := json.NewEncoder(&id)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(resp.ID.Raw()); err != nil {
		return nil, err
	}
	const head, mid = `{"jsonrpc":"2.0","id":`, `,"result":`
	b := make([]byte, 0, len(head)+id.Len()+len(mid)+len(resp.Result)+2)
	b = append(b, head...)
	b = append(b, bytes.TrimSuffix(id.Bytes(), []byte("\n"))...)
	b = append(b, mid...)
	b = append(b, resp.Result...)
	return append(b, '}', '\n'), nil
}

// refuse answers a line that holds no message: code and message, with the
// request's id or null.
func (c *stdioConn) refuse(id *jsonrpc.ID, code int64, message string) {
	var raw any
	if id != nil {
		raw = id.Raw()
	}
	data, err := json.Marshal(errorAnswer{Version: "2.0", ID: raw, Error: jsonrpc.Error{Code: code, Message: message}})
	if err == nil {
		_ = c.writeParts(append(data, '\n')) // a broken output ends the connection at its next answer
	}
}

// errorAnswer is a JSON-RPC error response whose id may be null (the SDK's
// encoding leaves a missing id out).
type errorAnswer struct {
	Version string        `json:"jsonrpc"`
	ID      any           `json:"id"`
	Error   jsonrpc.Error `json:"error"`
}

// idOf is the id of a JSON object that is not a valid message, when it has
// a valid one.
func idOf(line []byte) *jsonrpc.ID {
	var m struct {
		ID any `json:"id"`
	}
	if json.Unmarshal(line, &m) != nil || m.ID == nil {
		return nil
	}
	id, err := jsonrpc.MakeID(m.ID)
	if err != nil || !id.IsValid() {
		return nil
	}
	return &id
}

// Close ends the connection: Read returns io.EOF.
func (c *stdioConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return nil
}

// SessionID is empty: the stdio session is named by the Server.
func (c *stdioConn) SessionID() string { return "" }

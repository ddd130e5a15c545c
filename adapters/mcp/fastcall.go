package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/a6afc2ce/hermes-hub/executor"
)

// The direct path of tools/call over stdio (docs/mcp.md, "Per-call cost: the direct path of `hub mcp`").
// The SDK stays the protocol implementation: it answers initialize, lists,
// resources, prompts, completions, notifications and every call it alone
// can serve. A plain tools/call (a known tool, params of name and arguments
// only, after the session is initialised) is what an agent sends most, and
// through the SDK it cost about 20 times the verb itself, most of it the
// SDK decoding each value with a fresh JSON decoder and encoding the result
// twice. The stdio connection answers such a call itself: its params
// decoded once, the verb run through the same Execute as the SDK's handler
// (access, confirmation, mirror: one decision path), the result encoded
// once, as the SDK would encode it. A call the direct path cannot serve
// exactly as the SDK would goes to the SDK unchanged:
//
//   - params with anything besides name and arguments (_meta with a
//     progress token or the newer protocol's keys, input responses);
//   - a tool the server does not list (the SDK's "unknown tool" error);
//   - a call that may be held for confirmation from a client that can
//     answer an elicitation (the SDK asks it).

// directParams are the params of a tools/call the direct path serves.
type directParams struct {
	Name      string                     `json:"name"`
	Arguments json.RawMessage            `json:"arguments"`
	Meta      map[string]json.RawMessage `json:"_meta"`
}

// directCaller runs the verbs of direct calls; *Server is one.
type directCaller interface {
	// directTool is the verb of a tool the direct path may run for a
	// client that can (or cannot) elicit; false: the SDK takes the call.
	directTool(name string, canElicit bool) (executor.Info, bool)
	// callDirect runs the verb as the call's turn, request its JSON-RPC id.
	callDirect(ctx context.Context, info executor.Info, args json.RawMessage, request string) (*executor.Outcome, error)
}

// directTool implements directCaller.
func (s *Server) directTool(name string, canElicit bool) (executor.Info, bool) {
	tools := s.direct.Load()
	if tools == nil {
		return executor.Info{}, false
	}
	info, ok := (*tools)[name]
	if !ok {
		return executor.Info{}, false
	}
	if canElicit {
		h, can := s.opts.Intake.(holder)
		if !can || h.MayHold([]string{s.opts.Identity}, info) {
			return executor.Info{}, false
		}
	}
	return info, true
}

// holder is the hub's answer to whether a call may be held for
// confirmation (*hub.Hub); an Intake without it is taken to hold any.
type holder interface {
	MayHold(ids []string, info executor.Info) bool
}

// callDirect implements directCaller: the tool handler's call, without
// progress (a progress token goes to the SDK) and without an elicited
// confirmation (idem).
func (s *Server) callDirect(ctx context.Context, info executor.Info, args json.RawMessage, request string) (*executor.Outcome, error) {
	s.directCalls.Add(1)
	return s.execute(ctx, s.opts.Identity, s.turnID(nil, request), info, args, false)
}

// directRequest is a line that may be a tools/call the direct path
// serves: decoded in one pass, anything unexpected an error.
type directRequest struct {
	Version string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  *directParams   `json:"params"`
}

// decodeDirect reads a tools/call line of any shape encoding/json
// reads; false when it holds a key the direct path does not know.
func decodeDirect(line []byte) (r directRequest, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	return r, dec.Decode(&r) == nil
}

// admitDirect takes line, a JSON object, for the direct path when it is a
// call the path serves (handled): the job to run, counted among the calls
// the connection's end waits for, whose answer is written and whose place
// is freed when the verb is done; or none, when its id is already in use
// (the line is refused here) or the connection has ended (no one waits for
// an answer). A line it does not handle goes the SDK's way, untouched.
func (c *stdioConn) admitDirect(line []byte) (handled bool, j *directJob) {
	if c.direct == nil || !c.ready.Load() || !bytes.Contains(line, []byte(`"tools/call"`)) {
		return false, nil
	}
	r, ok := scanDirect(line)
	if !ok {
		r, ok = decodeDirect(line)
	}
	if !ok || r.Version != "2.0" || r.Method != "tools/call" || r.Params == nil || len(r.Params.Meta) > 0 {
		return false, nil
	}
	id, ok := directID(r.ID)
	if !ok {
		return false, nil
	}
	info, ok := c.direct.directTool(r.Params.Name, c.canElicit.Load())
	if !ok {
		return false, nil
	}
	if !c.claim(id) {
		return true, nil
	}
	ctx, cancel := context.WithCancel(c.base)
	c.mu.Lock()
	stopped := c.stopped
	if stopped {
		delete(c.pending, id)
	} else {
		c.cancels[id] = cancel
		c.calls.Add(1)
	}
	c.mu.Unlock()
	if stopped {
		cancel()
		return true, nil
	}
	return true, &directJob{ctx: ctx, cancel: cancel, id: id, info: info, args: r.Params.Arguments}
}

// directJob is a direct call to run.
type directJob struct {
	ctx    context.Context
	cancel context.CancelFunc
	id     jsonrpc.ID
	info   executor.Info
	args   json.RawMessage
}

// runDirect runs a direct call and writes its answer, unless hold, given
// the answer's parts once the call has ended, keeps them for a later
// write.
func (c *stdioConn) runDirect(j directJob, hold func(parts [][]byte) bool) {
	ctx, id := j.ctx, j.id
	defer j.cancel()
	out, err := c.direct.callDirect(ctx, j.info, j.args, fmt.Sprint(id.Raw()))
	parts, err := answerParts(id, out, err)
	c.mu.Lock()
	delete(c.cancels, id)
	delete(c.pending, id)
	c.mu.Unlock()
	// Once the input has ended no answer is written, as the SDK writes
	// none while its connection shuts down: the client is gone, and a
	// pipe it no longer reads could hold the write for ever.
	if err == nil && c.base.Err() == nil {
		if !hold(parts) {
			err = c.writeParts(parts...)
		}
	}
	if len(parts) == 1 {
		answerBuffers.Put(parts[0]) // written, or held as a copy
	}
	if out != nil {
		// The answer is written or held (a copy): nothing reads the
		// outcome any more.
		out.Release()
	}
	c.done()
	c.calls.Done()
	if err != nil {
		// The client stopped reading: nothing more can be answered.
		c.Close()
	}
}

// directID is the id of a direct call: a JSON string or integer, which
// the answer carries back as the SDK writes it; false for any other.
func directID(raw json.RawMessage) (jsonrpc.ID, bool) {
	var v any
	switch {
	case len(raw) > 0 && raw[0] == '"':
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return jsonrpc.ID{}, false
		}
		v = s
	default:
		// An integer the SDK reads exactly (it reads numbers as float64).
		n, err := strconv.ParseInt(string(raw), 10, 64)
		if err != nil || n > 1<<53 || n < -(1<<53) {
			return jsonrpc.ID{}, false
		}
		v = float64(n)
	}
	id, err := jsonrpc.MakeID(v)
	return id, err == nil && id.IsValid()
}

// cancelDirect ends the direct call whose id a notifications/cancelled
// names (the SDK, which also gets the notification, knows no such call).
func (c *stdioConn) cancelDirect(params json.RawMessage) {
	var p struct {
		RequestID any `json:"requestId"`
	}
	if json.Unmarshal(params, &p) != nil || p.RequestID == nil {
		return
	}
	id, err := jsonrpc.MakeID(p.RequestID)
	if err != nil {
		return
	}
	c.mu.Lock()
	cancel := c.cancels[id]
	c.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// partsFrom is the size of a result from which its answer is written in
// parts (answerParts): under it, one buffer, which a held answer needs.
const partsFrom = 64 << 10

// answerBuffers are the buffers of answers in one part, given back once
// written or held (a copy): a client making small calls one after
// another then writes each answer from memory the last one used.
var answerBuffers = executor.Pool[byte]{Max: 4 * partsFrom}

// answerParts is the JSON-RPC answer to a direct call, with its newline,
// in parts written one after another: the outcome as the tool handler's
// result (resultOf) encoded as the SDK encodes a CallToolResult, or, when
// the call could not be recorded (callErr), an internal error as the SDK's
// handler answers. When its text holds a string the result's encoding
// (out.Encoded, made for the mirror) holds escaped (a file's content,
// executor.BodyRenderer), that string is taken from the encoding instead
// of being escaped again. A result of partsFrom bytes or more is not
// copied: its encoding, and that string, are parts of their own. Under
// partsFrom, one part, in a buffer to give back (answerBuffers).
func answerParts(id jsonrpc.ID, out *executor.Outcome, callErr error) ([][]byte, error) {
	if callErr != nil {
		line, err := encodeLine(&jsonrpc.Response{ID: id, Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: callErr.Error()}})
		return [][]byte{line}, err
	}
	enc := out.EncodedJSON()
	one := len(enc) < partsFrom
	var b []byte
	if one {
		b = answerBuffers.Get(2*len(enc) + 512)
	} else {
		b = make([]byte, 0, 512)
	}
	b = answerHead(b, id)
	if br, ok := out.Value.(executor.BodyRenderer); ok && out.Succeeded() {
		if before, after, start, end, ok := br.RenderBody(out.Args, enc); ok {
			// The text's string is opened by before's part and closed by
			// after's: the three are escaped apart, which gives the same
			// bytes, since before ends and after begins with a line end.
			b = executor.AppendJSONString(b, before)
			b = b[:len(b)-1]
			body := enc[start:end]
			if one {
				b = append(b, body...)
				b = appendOpen(b, after+executor.NotesText(out.Notes))
				return [][]byte{answerTail(append(answerMiddle(b), enc...), out)}, nil
			}
			rest := appendOpen(make([]byte, 0, len(after)+64), after+executor.NotesText(out.Notes))
			return [][]byte{b, body, answerMiddle(rest), enc, answerTail(nil, out)}, nil
		}
	}
	text := executor.RenderText(out, false)
	b = answerMiddle(executor.AppendJSONString(slices.Grow(b, len(text)+len(text)/8+64), text))
	if one {
		return [][]byte{answerTail(append(b, enc...), out)}, nil
	}
	return [][]byte{b, enc, answerTail(nil, out)}, nil
}

// appendOpen appends s as a JSON string without its opening quote: the
// end of a string another part began.
func appendOpen(b []byte, s string) []byte {
	n := len(b)
	b = executor.AppendJSONString(b, s)
	return append(b[:n], b[n+1:]...)
}

// answerHead appends the answer's beginning, up to its text's string.
func answerHead(b []byte, id jsonrpc.ID) []byte {
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	switch v := id.Raw().(type) {
	case string:
		b = executor.AppendJSONString(b, v)
	case int64:
		b = strconv.AppendInt(b, v, 10)
	}
	return append(b, `,"result":{"content":[{"type":"text","text":`...)
}

// answerMiddle appends what comes between the text's string and the
// structured content.
func answerMiddle(b []byte) []byte { return append(b, `}],"structuredContent":`...) }

// answerTail appends what follows the structured content, to the
// newline.
func answerTail(b []byte, out *executor.Outcome) []byte {
	if !out.Succeeded() {
		b = append(b, `,"isError":true`...)
	}
	return append(b, "}}\n"...)
}

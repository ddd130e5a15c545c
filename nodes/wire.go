package nodes

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/executor"
)

// Request is one call the hub sends to a node.
type Request struct {
	TurnID    string
	CallIndex int
	// Workspace names one of the node's workspaces; empty means its
	// default.
	Workspace string
	Identity  string
	Session   string
	// Envelope is the envelope JSON ({verb, arguments}).
	Envelope []byte
	// Timeout shortens the wait below the call timeout (the hub's verb
	// timeout); 0 or more than the call timeout means the call timeout.
	Timeout time.Duration
}

// Status of a node's answer.
const (
	StatusDone        = "done"        // the verb ran; Result is its outcome
	StatusInterrupted = "interrupted" // a redelivery of a call the node had started: not run again
	StatusExpired     = "expired"     // the call reached the node after its deadline: not run
	StatusRejected    = "rejected"    // the node could not take the call (unknown workspace, bad request): not run
	// StatusDropped is set by the hub, never by a node: the answer was
	// over the size limit and dropped unread; Result says so.
	StatusDropped = "dropped"
)

// Response is a node's answer to a call.
type Response struct {
	// Result is the executor's outcome JSON, exactly as a local call's.
	Result []byte
	// Verb is the verb the node says it ran (Outcome names the verb the
	// hub sent instead); Notes are the verb's remarks for people (not in
	// Result).
	Verb   string
	Notes  []string
	Status string
	// Node is the node that answered (from the subject the server
	// authorised), NodeVersion its version (checked by Version).
	Node        string
	NodeVersion string
	Duration    time.Duration
	// Timing is the node's account of where the call's time went on it
	// (zero from a node that sends none).
	Timing NodeTiming
}

// NodeTiming is where a call's time went on its node, measured on the
// node's clock: recording it in the ledger (the commit the call waited
// for), waiting for a free slot, and running it. The rest of a round
// trip is transit: the queues, the server and the hops between.
type NodeTiming struct {
	Ledger, Slot, Run time.Duration
}

// Reported reports whether the node sent its timing.
func (t NodeTiming) Reported() bool { return t != NodeTiming{} }

// Statuses of a call the hub ends without an answer, for CallStats.
const (
	CallNoAnswer = "no_answer" // the wait ran out (the call timeout, or the caller's)
	CallFull     = "full"      // the node's queue refused the call: it did not run
	CallCanceled = "canceled"  // the caller gave up first
	CallOther    = "other"     // an answer whose status the hub does not know
)

// CallStats is one call to a configured node as the hub saw it, for
// HubOptions.OnCall.
type CallStats struct {
	// Call is the call's id (CallID), Node the node it went to.
	Call, Node string
	// Status is the answer's (a Status* constant) or, without one, a
	// Call* constant; a status the hub does not know is CallOther.
	Status string
	// RoundTrip is from the call's first publish to its answer, or to the
	// end of the wait for a call that got none.
	RoundTrip time.Duration
	// Timing is the node's account of the call (zero without an answer).
	Timing NodeTiming
}

// Answered reports whether an answer came: its Status is a Status*
// constant or CallOther, not one of the hub's for a call without one.
func (s CallStats) Answered() bool {
	switch s.Status {
	case CallNoAnswer, CallFull, CallCanceled:
		return false
	}
	return true
}

// Outcome rebuilds the executor outcome of a call of verb with args from
// the response with reg, so a remote call renders exactly as a local one.
// The verb is the one the hub sent (its registered name, or "" when reg
// does not know it), never the node's claim, and an error code outside
// executor.Codes is internal: nothing the node writes becomes a verb name
// or an error code the hub does not know.
func (r Response) Outcome(reg *executor.Registry, verb string, args json.RawMessage) *executor.Outcome {
	name := ""
	if info, ok := reg.Lookup(verb); ok {
		name = info.Name
	}
	if res, ok := resultSummary(r.Result); ok && !res.Succeeded {
		return &executor.Outcome{Verb: name, Err: &executor.Error{Code: knownCode(res.ErrorCode), Message: res.ErrorMessage}, Notes: r.Notes, Duration: r.Duration}
	}
	out, err := reg.DecodeOutcome(verb, args, r.Result)
	if err != nil {
		return &executor.Outcome{Verb: name, Err: executor.ErrorFrom(err), Notes: r.Notes, Duration: r.Duration}
	}
	if out.Err != nil {
		out.Err.Code = knownCode(out.Err.Code)
	}
	out.Verb, out.Notes, out.Duration = name, r.Notes, r.Duration
	return out
}

// knownCode is code when the executor defines it, else internal.
func knownCode(code executor.ErrorCode) executor.ErrorCode {
	if !code.Known() {
		return executor.CodeInternal
	}
	return code
}

// resultSummary reads the members every result has (succeeded, errorCode,
// errorMessage) in one pass over the result, however large, without
// decoding the rest; ok is false when it is not one JSON object or one of
// them is not of its type (the verb's decoding then says what is wrong).
// One without succeeded did not succeed.
func resultSummary(raw []byte) (res executor.Result, ok bool) {
	err := readMembers(raw, []member{{"succeeded", &res.Succeeded}, {"errorCode", &res.ErrorCode}, {"errorMessage", &res.ErrorMessage}})
	return res, err == nil
}

// member is where readMembers puts the member of an object named key.
type member struct {
	key  string
	into any
}

// readMembers reads the object data in one pass (executor.ObjectMembers:
// valid JSON throughout, no key twice, no deeper than maxResultDepth),
// each member named in into (by its exact name; others are ignored) with
// json.Unmarshal, but a *json.RawMessage, which keeps the bytes of data
// it was checked in, however large.
func readMembers(data []byte, into []member) error {
	return executor.ObjectMembers(data, maxResultDepth, func(key, value []byte) error {
		for _, m := range into {
			if m.key != string(key) {
				continue
			}
			if raw, ok := m.into.(*json.RawMessage); ok {
				*raw = value
				return nil
			}
			return json.Unmarshal(value, m.into)
		}
		return nil
	})
}

// requestMsg is a Request on the wire.
type requestMsg struct {
	CallID    string          `json:"call_id"`
	TurnID    string          `json:"turn_id"`
	CallIndex int             `json:"call_index"`
	Node      string          `json:"node"`
	Workspace string          `json:"workspace,omitempty"`
	Identity  string          `json:"identity"`
	Session   string          `json:"session,omitempty"`
	Envelope  json.RawMessage `json:"envelope"`
	// Deadline is when the hub stops waiting: a node never starts the
	// call after it.
	Deadline time.Time `json:"deadline"`
}

// resultMsg is a node's answer on the wire.
type resultMsg struct {
	CallID      string          `json:"call_id"`
	Node        string          `json:"node"`
	NodeVersion string          `json:"node_version"`
	Status      string          `json:"status"`
	Verb        string          `json:"verb,omitempty"`
	Result      json.RawMessage `json:"result"`
	Notes       []string        `json:"notes,omitempty"`
	DurationMS  int64           `json:"duration_ms"`
	Timing      *wireTiming     `json:"timing,omitempty"`

	// code is the error code of the outcome in Result ("" when it
	// succeeded), for the node's ledger: never sent.
	code executor.ErrorCode
}

// resultHead and resultTail are the members of a resultMsg before and
// after its result, in its order (marshalResult).
type resultHead struct {
	CallID      string `json:"call_id"`
	Node        string `json:"node"`
	NodeVersion string `json:"node_version"`
	Status      string `json:"status"`
	Verb        string `json:"verb,omitempty"`
}

type resultTail struct {
	Notes      []string    `json:"notes,omitempty"`
	DurationMS int64       `json:"duration_ms"`
	Timing     *wireTiming `json:"timing,omitempty"`
}

// marshalResult is json.Marshal(res) without the pass encoding/json
// makes over a RawMessage to check, compact and escape it: a node's
// Result is its executor's encoding, compact already, and may be
// megabytes (a file read whole). It goes out as the executor wrote it,
// so <, > and & in its strings are as they are, where json.Marshal would
// write \u003c, \u003e and \u0026: the same JSON.
func marshalResult(res resultMsg) ([]byte, error) {
	head, err := json.Marshal(resultHead{CallID: res.CallID, Node: res.Node, NodeVersion: res.NodeVersion, Status: res.Status, Verb: res.Verb})
	if err != nil {
		return nil, err
	}
	tail, err := json.Marshal(resultTail{Notes: res.Notes, DurationMS: res.DurationMS, Timing: res.Timing})
	if err != nil {
		return nil, err
	}
	result := []byte(res.Result)
	if len(result) == 0 {
		result = []byte("null")
	}
	b := make([]byte, 0, len(head)+len(`,"result":`)+len(result)+len(tail))
	b = append(b, head[:len(head)-1]...)
	b = append(b, `,"result":`...)
	b = append(b, result...)
	b = append(b, ',')
	return append(b, tail[1:]...), nil
}

// maxResultDepth bounds the nesting of a node's answer (its result's
// objects and arrays within it): deeper than any verb's result.
const maxResultDepth = 64

// unmarshalResult reads a node's answer in one pass over it, however
// large its result, which it keeps as the raw bytes of data it checked
// (readMembers). The answer is a stranger's: anything else is an error.
func unmarshalResult(data []byte) (resultMsg, error) {
	var r resultMsg
	err := readMembers(data, []member{
		{"call_id", &r.CallID}, {"node", &r.Node}, {"node_version", &r.NodeVersion}, {"status", &r.Status},
		{"verb", &r.Verb}, {"result", &r.Result}, {"notes", &r.Notes}, {"duration_ms", &r.DurationMS}, {"timing", &r.Timing},
	})
	return r, err
}

// wireTiming is NodeTiming on the wire, in microseconds.
type wireTiming struct {
	LedgerUS int64 `json:"ledger_us"`
	SlotUS   int64 `json:"slot_us,omitempty"`
	RunUS    int64 `json:"run_us,omitempty"`
}

// timing is the node's account t carries; a negative figure (a node's
// clock stepped back, or a node that lies) counts as none.
func (t *wireTiming) timing() NodeTiming {
	if t == nil || t.LedgerUS < 0 || t.SlotUS < 0 || t.RunUS < 0 {
		return NodeTiming{}
	}
	us := func(n int64) time.Duration {
		return time.Duration(min(n, int64(maxTiming/time.Microsecond))) * time.Microsecond
	}
	return NodeTiming{Ledger: us(t.LedgerUS), Slot: us(t.SlotUS), Run: us(t.RunUS)}
}

// maxTiming bounds each figure a node reports: no call lasts longer.
const maxTiming = 30 * 24 * time.Hour

// Heartbeat is what a node writes to the status bucket at every beat.
type Heartbeat struct {
	Name       string     `json:"name"`
	Version    string     `json:"version"`
	Started    time.Time  `json:"started"`
	LastSeen   time.Time  `json:"last_seen"`
	Workspaces []string   `json:"workspaces"`
	Load       [3]float64 `json:"load"`
	Running    int        `json:"running"`
}

// What the hub keeps of a node's own words (its version, its workspaces'
// names): bounded and checked, as they reach chats, mirrors and the panel.
const (
	maxVersionLen = 64
	maxWorkspaces = 256
	// unknownVersion stands for a version that is empty or not a version.
	unknownVersion = "unknown"
)

// Version is a node's version as the hub shows and records it: its first
// 64 characters when they are letters, digits and . + - _ ~ (as `hub
// version` prints), else "unknown".
func Version(v string) string {
	if len(v) > maxVersionLen {
		v = v[:maxVersionLen]
	}
	if v == "" {
		return unknownVersion
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte(".+-_~", c) >= 0) {
			return unknownVersion
		}
	}
	return v
}

// bounded is the heartbeat as the hub shows it: its version checked, and
// at most maxWorkspaces workspace names, each a valid name.
func (hb Heartbeat) bounded() Heartbeat {
	hb.Version = Version(hb.Version)
	ws := make([]string, 0, min(len(hb.Workspaces), maxWorkspaces))
	for _, w := range hb.Workspaces {
		if len(ws) == maxWorkspaces {
			break
		}
		if config.ValidNodeName(w) == nil {
			ws = append(ws, w)
		}
	}
	hb.Workspaces = ws
	return hb
}

// clip bounds a string a node wrote for a log line.
func clip(s string) string {
	const n = 128
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// failure is the result JSON of a call that did not run (or whose fate is
// unknown), in the executor's shape.
func failure(code executor.ErrorCode, msg string) json.RawMessage {
	return (&executor.Outcome{Err: executor.Errorf(code, "%s", msg)}).JSON()
}

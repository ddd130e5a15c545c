package nodes

import (
	"encoding/json"
	"time"

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
)

// Response is a node's answer to a call.
type Response struct {
	// Result is the executor's outcome JSON, exactly as a local call's.
	Result []byte
	// Verb is the canonical verb name ("" when unknown); Notes are the
	// verb's remarks for people (not in Result).
	Verb   string
	Notes  []string
	Status string
	// Node is the node that answered (from the subject the server
	// authorised), NodeVersion its version.
	Node        string
	NodeVersion string
	Duration    time.Duration
}

// Outcome rebuilds the executor outcome from the response with reg, so a
// remote call renders exactly as a local one.
func (r Response) Outcome(reg *executor.Registry, args json.RawMessage) *executor.Outcome {
	var res executor.Result
	if json.Unmarshal(r.Result, &res) == nil && !res.Succeeded {
		return &executor.Outcome{Verb: r.Verb, Err: &executor.Error{Code: res.ErrorCode, Message: res.ErrorMessage}, Notes: r.Notes, Duration: r.Duration}
	}
	out, err := reg.DecodeOutcome(r.Verb, args, r.Result)
	if err != nil {
		return &executor.Outcome{Verb: r.Verb, Err: executor.ErrorFrom(err), Notes: r.Notes, Duration: r.Duration}
	}
	out.Notes, out.Duration = r.Notes, r.Duration
	return out
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
}

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

// failure is the result JSON of a call that did not run (or whose fate is
// unknown), in the executor's shape.
func failure(code executor.ErrorCode, msg string) json.RawMessage {
	return (&executor.Outcome{Err: executor.Errorf(code, "%s", msg)}).JSON()
}

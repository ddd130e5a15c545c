package nodes

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nkeys"

	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/internal/testkit"
)

type echoArgs struct {
	Text string `json:"text"`
}

type echoResult struct {
	executor.Result
	Text string `json:"text"`
}

type blockArgs struct {
	Key string `json:"key"`
}

// rig is a hub with its embedded server and the keys of its nodes.
type rig struct {
	t    *testing.T
	dir  string
	hub  *Hub
	keys map[string]nkeys.KeyPair
	reg  *executor.Registry
	x    *executor.Executor
	logs *logBuffer

	mu    sync.Mutex
	runs  map[string]int
	gate  chan struct{}
	holds map[string]chan struct{}
}

// logBuffer collects log lines safely.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func newRig(t *testing.T, names []string, mod func(*HubOptions)) *rig {
	t.Helper()
	r := newVerbRig(t, names)
	opts := HubOptions{StateDir: r.dir, Embedded: true, Listen: "127.0.0.1:0", Nodes: r.publicKeys()}
	if mod != nil {
		mod(&opts)
	}
	r.open(opts)
	return r
}

// newVerbRig is a rig without its hub yet: the test verbs (test.echo,
// test.block, test.hold) and a key for each node.
func newVerbRig(t *testing.T, names []string) *rig {
	t.Helper()
	r := &rig{t: t, dir: t.TempDir(), keys: map[string]nkeys.KeyPair{}, runs: map[string]int{}, gate: make(chan struct{}), holds: map[string]chan struct{}{}, logs: &logBuffer{}}
	r.reg = executor.NewRegistry()
	executor.MustRegister(r.reg, executor.Info{Name: "test.echo", ReadOnly: true}, executor.VerbFunc[echoArgs, echoResult](
		func(ctx context.Context, a echoArgs) (echoResult, error) {
			r.count(a.Text)
			return echoResult{Text: a.Text}, nil
		}))
	executor.MustRegister(r.reg, executor.Info{Name: "test.block"}, executor.VerbFunc[blockArgs, echoResult](
		func(ctx context.Context, a blockArgs) (echoResult, error) {
			r.count(a.Key)
			select {
			case <-r.gate:
				return echoResult{Text: a.Key}, nil
			case <-ctx.Done():
				return echoResult{}, ctx.Err()
			}
		}))
	executor.MustRegister(r.reg, executor.Info{Name: "test.hold"}, executor.VerbFunc[blockArgs, echoResult](
		func(ctx context.Context, a blockArgs) (echoResult, error) {
			r.count(a.Key)
			select {
			case <-r.hold(a.Key):
				return echoResult{Text: a.Key}, nil
			case <-ctx.Done():
				return echoResult{}, ctx.Err()
			}
		}))
	r.x = executor.New(r.reg, executor.Options{Logger: testkit.Discard()})
	for _, n := range names {
		kp, err := nkeys.CreateUser()
		if err != nil {
			t.Fatal(err)
		}
		r.keys[n] = kp
	}
	return r
}

func (r *rig) publicKeys() map[string]string {
	pubs := map[string]string{}
	for n, kp := range r.keys {
		pubs[n], _ = kp.PublicKey()
	}
	return pubs
}

// open opens the rig's hub with opts, logging into r.logs.
func (r *rig) open(opts HubOptions) {
	r.t.Helper()
	opts.Logger = slog.New(slog.NewTextHandler(r.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	h, err := OpenHub(r.t.Context(), opts)
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { h.Close() })
	r.hub = h
}

// hold is the gate of test.hold calls with key: release opens it.
func (r *rig) hold(key string) chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	ch, ok := r.holds[key]
	if !ok {
		ch = make(chan struct{})
		r.holds[key] = ch
	}
	return ch
}

func (r *rig) release(key string) { close(r.hold(key)) }

func holdEnv(key string) []byte {
	b, _ := json.Marshal(map[string]any{"verb": "test.hold", "arguments": map[string]string{"key": key}})
	return b
}

func (r *rig) count(key string) {
	r.mu.Lock()
	r.runs[key]++
	r.mu.Unlock()
}

func (r *rig) ran(key string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.runs[key]
}

func (r *rig) nodeOptions(name string, key nkeys.KeyPair, stateDir string) NodeOptions {
	return NodeOptions{Name: name, URL: r.hub.ClientURL(), Key: key, StateDir: stateDir,
		Workspaces: map[string]*executor.Executor{"main": r.x}, Default: "main", Version: "test",
		Heartbeat: 100 * time.Millisecond, Logger: testkit.Discard()}
}

// startNode runs a node until the returned stop is called (or the test ends).
func (r *rig) startNode(opts NodeOptions) (stop func()) {
	_, stop = r.runNode(opts)
	return stop
}

// runNode is startNode that also returns the node, for the tests that
// look into it (its ledger).
func (r *rig) runNode(opts NodeOptions) (n *Node, stop func()) {
	r.t.Helper()
	n, err := StartNode(r.t.Context(), opts)
	if err != nil {
		r.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- n.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				r.t.Errorf("node %s: %v", opts.Name, err)
			}
		})
	}
	r.t.Cleanup(stop)
	return n, stop
}

func echo(text string) []byte {
	b, _ := json.Marshal(map[string]any{"verb": "test.echo", "arguments": map[string]string{"text": text}})
	return b
}

func block(key string) []byte {
	b, _ := json.Marshal(map[string]any{"verb": "test.block", "arguments": map[string]string{"key": key}})
	return b
}

type callResult struct {
	resp Response
	err  error
}

func (r *rig) callAsync(node string, req Request) <-chan callResult {
	ch := make(chan callResult, 1)
	go func() {
		resp, err := r.hub.Call(context.Background(), node, req)
		ch <- callResult{resp, err}
	}()
	return ch
}

func wait(t *testing.T, ch <-chan callResult) callResult {
	t.Helper()
	select {
	case c := <-ch:
		return c
	case <-time.After(testkit.Wait):
		t.Fatal("timed out waiting for the call")
		return callResult{}
	}
}

func TestCallRoundTrip(t *testing.T) {
	r := newRig(t, []string{"db-1"}, nil)
	r.startNode(r.nodeOptions("db-1", r.keys["db-1"], t.TempDir()))
	tests := []struct {
		name, workspace string
		env             []byte
		status, text    string
		code            executor.ErrorCode
	}{
		{"echo", "", echo("hello"), StatusDone, "hello", ""},
		{"named workspace", "main", echo("again"), StatusDone, "again", ""},
		{"unknown workspace", "nope", echo("x"), StatusRejected, "", executor.CodeInvalidArguments},
		{"unknown verb", "", []byte(`{"verb":"fs.nothing"}`), StatusDone, "", executor.CodeUnknownVerb},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := r.hub.Call(t.Context(), "db-1", Request{TurnID: "t.round", CallIndex: i, Workspace: tc.workspace, Identity: "web", Envelope: tc.env})
			if err != nil {
				t.Fatal(err)
			}
			if resp.Node != "db-1" || resp.NodeVersion != "test" || resp.Status != tc.status {
				t.Fatalf("response = %+v", resp)
			}
			var res echoResult
			if err := json.Unmarshal(resp.Result, &res); err != nil {
				t.Fatal(err)
			}
			if res.Text != tc.text || res.ErrorCode != tc.code {
				t.Fatalf("result = %s", resp.Result)
			}
			if tc.code == "" {
				out := resp.Outcome(r.reg, "test.echo", json.RawMessage(`{"text":"`+tc.text+`"}`))
				if !out.Succeeded() || out.Value.(*echoResult).Text != tc.text {
					t.Fatalf("outcome = %+v", out)
				}
			}
		})
	}
	// The same call again is deduplicated: it does not run twice.
	before := r.ran("hello")
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	// The request is dropped as a duplicate: nothing answers it.
	if _, err := r.hub.Call(ctx, "db-1", Request{TurnID: "t.round", CallIndex: 0, Envelope: echo("hello")}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a duplicate call: err = %v, want the context's deadline", err)
	}
	if got := r.ran("hello"); got != before {
		t.Fatalf("a duplicate ran: %d runs, want %d", got, before)
	}
}

// ListStatus says why it could not read the nodes' status: the hint of a
// hub that never ran with nats only when the bucket is missing, the cause
// as it is otherwise (a server too slow to answer in time).
func TestListStatusSaysWhy(t *testing.T) {
	r := newRig(t, []string{"db-1"}, nil)
	expired, cancel := context.WithTimeout(t.Context(), -time.Second)
	defer cancel()
	_, err := ListStatus(expired, r.hub.nc, []string{"db-1"})
	if err == nil || !errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "hub serve") {
		t.Errorf("a read out of time: %v", err)
	}
	if err := r.hub.js.DeleteKeyValue(t.Context(), statusBucket); err != nil {
		t.Fatal(err)
	}
	_, err = ListStatus(t.Context(), r.hub.nc, []string{"db-1"})
	if err == nil || !strings.Contains(err.Error(), "has `hub serve` run with nats enabled?") {
		t.Errorf("no bucket: %v", err)
	}
}

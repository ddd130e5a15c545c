package nodes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/a6afc2ce/hermes-hub/clock"
	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/internal/testkit"
)

// hostile is a client holding a node's key that speaks for the node
// itself: it takes the node's calls and publishes whatever it likes.
type hostile struct {
	t    *testing.T
	node string
	nc   *nats.Conn
	js   jetstream.JetStream
}

func (r *rig) hostile(node string) *hostile {
	r.t.Helper()
	nc, _ := permissionErrors(r.t, r, r.keys[node], inboxPrefix(node))
	js, err := jetstream.New(nc)
	if err != nil {
		r.t.Fatal(err)
	}
	return &hostile{t: r.t, node: node, nc: nc, js: js}
}

// nextCall takes the node's next call off its queue and returns its id.
func (h *hostile) nextCall() string {
	h.t.Helper()
	cons, err := h.js.Consumer(h.t.Context(), nodeStream(h.node), workConsumer)
	if err != nil {
		h.t.Fatal(err)
	}
	m, err := cons.Next(jetstream.FetchMaxWait(testkit.Wait))
	if err != nil {
		h.t.Fatal(err)
	}
	var rq requestMsg
	if err := json.Unmarshal(m.Data(), &rq); err != nil {
		h.t.Fatal(err)
	}
	if err := m.Ack(); err != nil {
		h.t.Fatal(err)
	}
	return rq.CallID
}

// publish publishes data as the node's result with the message id id.
func (h *hostile) publish(id string, data []byte) error {
	_, err := h.js.Publish(h.t.Context(), resultSubject(h.node), data, jetstream.WithMsgID(id))
	return err
}

// result is a done result of call id whose text is text.
func result(id, text string) []byte {
	data, _ := json.Marshal(resultMsg{CallID: id, Node: "db-1", NodeVersion: "test", Status: StatusDone, Verb: "test.echo",
		Result: json.RawMessage(fmt.Sprintf(`{"succeeded":true,"text":%q}`, text))})
	return data
}

func small(o *HubOptions) {
	o.Limits = config.NodeLimits{MaxResultBytes: 64 << 10, MaxStreamBytes: 1 << 20, MaxStreamMessages: 100, MaxConnections: 2, MaxSubscriptions: 16}
}

// A node publishing answers as fast as it can: its results stream refuses
// what is beyond its bytes, and the hub reading the backlog holds a
// bounded part of it at once, whatever the node sent.
func TestResultsFloodIsBounded(t *testing.T) {
	const maxResult, stream = 1 << 20, 16 << 20
	r := newRig(t, []string{"db-1"}, func(o *HubOptions) {
		o.Limits = config.NodeLimits{MaxResultBytes: maxResult, MaxStreamBytes: stream}
	})
	// The hub stops reading: the flood stays in the stream.
	for _, cc := range r.hub.cc {
		cc.Stop()
	}
	const size, count = maxResult - 1024, 256 // 256 MiB
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	before := ms.HeapSys
	h := r.hostile("db-1")
	data := result("flood", strings.Repeat("x", size))
	stored, refused := 0, 0
	for i := range count {
		err := h.publish(fmt.Sprint("flood#", i), data)
		switch {
		case err == nil:
			stored++
		case strings.Contains(err.Error(), "maximum bytes exceeded"):
			refused++
		default:
			t.Fatalf("publish %d: %v", i, err)
		}
	}
	if s, err := r.hub.js.Stream(t.Context(), resultsStream("db-1")); err != nil || s.CachedInfo().State.Bytes > stream {
		t.Fatalf("the results stream holds %+v (%v), over its %d bytes", s.CachedInfo().State, err, stream)
	}
	if stored*size > stream || refused == 0 {
		t.Fatalf("%d answers of %d bytes stored, %d refused: the stream holds %d bytes at most", stored, size, refused, stream)
	}
	// The hub reads the backlog again; it drops every answer (no call
	// waits for them) and holds at most two answers' worth at once.
	cc, err := r.hub.consume(t.Context(), "db-1")
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Stop()
	testkit.WaitFor(t, "the backlog read", func() bool {
		s, err := r.hub.js.Stream(t.Context(), resultsStream("db-1"))
		return err == nil && s.CachedInfo().State.Msgs == 0
	})
	runtime.ReadMemStats(&ms)
	// The heap the process took from the system during the flood and the
	// read (HeapSys never shrinks), against the flood's 256 MiB.
	grew := ms.HeapSys - before
	t.Logf("%d answers stored, %d refused; the heap grew by %d MiB", stored, refused, grew>>20)
	if grew > 128<<20 {
		t.Fatalf("the heap grew by %d MiB during a flood of %d MiB", grew>>20, size*count>>20)
	}
}

// An answer over max_result_bytes is not decoded: the call it names
// fails with too_large, saying how large it was.
func TestOversizedResultDroppedUnread(t *testing.T) {
	r := newRig(t, []string{"db-1"}, small)
	ch := r.callAsync("db-1", Request{TurnID: "t.big", Identity: "web", Envelope: echo("x")})
	h := r.hostile("db-1")
	id := h.nextCall()
	data := result(id, strings.Repeat("y", 64<<10))
	if err := h.publish(id, data); err != nil {
		t.Fatal(err)
	}
	c := wait(t, ch)
	if c.err != nil {
		t.Fatal(c.err)
	}
	want := fmt.Sprintf("node db-1's answer was %d bytes, over nats.node_limits.max_result_bytes (64KiB): the hub dropped it unread", len(data))
	out := c.resp.Outcome(r.reg, "test.echo", nil)
	if c.resp.Status != StatusDropped || out.Succeeded() || out.Err.Code != executor.CodeTooLarge || !strings.Contains(out.Err.Message, want) {
		t.Fatalf("response %s, %d bytes (%.200s), want too_large %q", c.resp.Status, len(c.resp.Result), c.resp.Result, want)
	}
	if strings.Contains(string(c.resp.Result), "yyyy") {
		t.Fatal("the oversized answer reached the call")
	}
}

// A result larger than the hub takes is replaced by the node with a
// too_large failure that says so, instead of being retried until the
// deadline.
func TestNodeReplacesAnswerTooLargeForTheHub(t *testing.T) {
	r := newRig(t, []string{"db-1"}, small)
	r.startNode(r.nodeOptions("db-1", r.keys["db-1"], t.TempDir()))
	c := wait(t, r.callAsync("db-1", Request{TurnID: "t.large", Identity: "web", Envelope: echo(strings.Repeat("z", 100<<10))}))
	if c.err != nil {
		t.Fatal(c.err)
	}
	out := c.resp.Outcome(r.reg, "test.echo", nil)
	if out.Succeeded() || out.Err.Code != executor.CodeTooLarge || !strings.Contains(out.Err.Message, "over the 65536 bytes the hub takes from it (nats.node_limits.max_result_bytes)") {
		t.Fatalf("outcome %+v", out.Err)
	}
}

// A node's account on the embedded server is bounded: connections,
// subscriptions per connection, and the size of what it publishes.
func TestNodeAccountLimits(t *testing.T) {
	r := newRig(t, []string{"db-1"}, small)
	pub, _ := r.keys["db-1"].PublicKey()
	errs := make(chan error, 64)
	connect := func() (*nats.Conn, error) {
		return nats.Connect(r.hub.ClientURL(), nats.Nkey(pub, r.keys["db-1"].Sign), nats.NoReconnect(),
			nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { errs <- err }))
	}
	var conns []*nats.Conn
	defer func() {
		for _, nc := range conns {
			nc.Close()
		}
	}()
	for i := range 2 {
		nc, err := connect()
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		conns = append(conns, nc)
	}
	if nc, err := connect(); err == nil {
		nc.Close()
		t.Fatal("a third connection of the node was accepted (max_connections 2)")
	} else if !strings.Contains(strings.ToLower(err.Error()), "maximum account active connections exceeded") {
		t.Fatalf("a third connection: %v", err)
	}
	nc := conns[0]
	// The server tells the account's max payload in an INFO it sends once
	// the connection is authenticated, after the one the client connected
	// with: the client knows it a moment after Connect returns.
	want := int64(64<<10 + headerRoom)
	deadline := time.Now().Add(10 * time.Second)
	for nc.MaxPayload() != want && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := nc.MaxPayload(); got != want {
		t.Fatalf("the node's max payload is %d, want %d", got, want)
	}
	if err := nc.Publish(resultSubject("db-1"), make([]byte, 65<<10+headerRoom)); !errors.Is(err, nats.ErrMaxPayload) {
		t.Fatalf("publish over the max payload: %v", err)
	}
	// Subscriptions beyond the limit are refused by the server.
	for i := range 20 {
		if _, err := nc.SubscribeSync(fmt.Sprintf("%s.%d", inboxPrefix("db-1"), i)); err != nil {
			break
		}
	}
	nc.Flush()
	select {
	case err := <-errs:
		if !strings.Contains(strings.ToLower(err.Error()), "maximum subscriptions exceeded") {
			t.Fatalf("err = %v", err)
		}
	case <-time.After(testkit.Wait):
		t.Fatal("20 subscriptions were accepted (max_subscriptions 16)")
	}
}

// A node's queue that is full refuses a new call at once, and the caller
// is told so.
func TestFullQueueRefusesCall(t *testing.T) {
	r := newRig(t, []string{"db-1"}, func(o *HubOptions) { small(o); o.Limits.MaxStreamMessages = 2 })
	for i := range 2 {
		r.callAsync("db-1", Request{TurnID: "t.full", CallIndex: i, Envelope: echo("x")})
	}
	testkit.WaitFor(t, "two calls queued", func() bool {
		s, err := r.hub.js.Stream(t.Context(), nodeStream("db-1"))
		return err == nil && s.CachedInfo().State.Msgs == 2
	})
	ctx, cancel := context.WithTimeout(t.Context(), testkit.Wait)
	defer cancel()
	_, err := r.hub.Call(ctx, "db-1", Request{TurnID: "t.full", CallIndex: 2, Envelope: echo("x")})
	if err == nil || !strings.Contains(err.Error(), "node db-1: its queue is full") || !strings.Contains(err.Error(), "the call did not run") {
		t.Fatalf("err = %v", err)
	}
}

// A heartbeat's version and workspaces reach /nodes, the panel and `hub
// nodes list`: they are checked and bounded, and an oversized heartbeat is
// refused by the bucket.
func TestHostileHeartbeatBounded(t *testing.T) {
	r := newRig(t, []string{"db-1"}, nil)
	h := r.hostile("db-1")
	ws := []string{"logs", "../etc", strings.Repeat("w", 100), "BAD"}
	for i := range 400 {
		ws = append(ws, fmt.Sprint("w", i))
	}
	beat := func(version string, ws []string) error {
		data, _ := json.Marshal(Heartbeat{Version: version, Workspaces: ws, LastSeen: clock.Real{}.Now()})
		_, err := h.js.Publish(t.Context(), statusSubject("db-1"), data)
		return err
	}
	if err := beat("v1.2.3\x1b[31m<script>"+strings.Repeat("v", 1000), ws); err != nil {
		t.Fatal(err)
	}
	l, err := r.hub.List(t.Context())
	if err != nil || len(l) != 1 || l[0].Heartbeat == nil {
		t.Fatalf("list = %+v, %v", l, err)
	}
	hb := l[0].Heartbeat
	if hb.Version != "unknown" || len(hb.Workspaces) != maxWorkspaces || hb.Workspaces[0] != "logs" || hb.Workspaces[1] != "w0" {
		t.Fatalf("heartbeat version %q, %d workspaces from %v", hb.Version, len(hb.Workspaces), hb.Workspaces[:2])
	}
	if err := beat("v1", []string{strings.Repeat("w", 100<<10)}); err == nil || !strings.Contains(err.Error(), "exceeds maximum") {
		t.Fatalf("a 100 KiB heartbeat: %v", err)
	}
}

func TestVersion(t *testing.T) {
	tests := []struct{ in, want string }{
		{"v1.2.3", "v1.2.3"},
		{"v0.0.0-20260101120000-abcdef123456+dirty", "v0.0.0-20260101120000-abcdef123456+dirty"},
		{"dev", "dev"},
		{"", "unknown"},
		{"1.0 (beta)", "unknown"},
		{"v1\n", "unknown"},
		{strings.Repeat("a", 100), strings.Repeat("a", 64)},
	}
	for _, tc := range tests {
		if got := Version(tc.in); got != tc.want {
			t.Errorf("Version(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// A node's answer names neither the verb nor an error code the hub does
// not know: the verb is the one the hub sent, an unknown code is internal.
func TestOutcomeTakesNoNamesFromTheNode(t *testing.T) {
	r := newRig(t, nil, nil)
	hostile := strings.Repeat("h", 300)
	tests := []struct {
		name, result, verb string
		code               executor.ErrorCode
	}{
		{"success", `{"succeeded":true,"text":"ok"}`, "test.echo", ""},
		{"unknown code", `{"succeeded":false,"errorCode":"` + hostile + `","errorMessage":"m"}`, "test.echo", executor.CodeInternal},
		{"known code", `{"succeeded":false,"errorCode":"not_found","errorMessage":"m"}`, "test.echo", executor.CodeNotFound},
		// Names in another case, which encoding/json reads as the same.
		{"unknown code, other case", `{"Succeeded":false,"ErrorCode":"` + hostile + `","ErrorMessage":"m"}`, "test.echo", executor.CodeInternal},
		{"failure after success", `{"succeeded":true,"SUCCEEDED":false,"errorCode":"` + hostile + `"}`, "test.echo", executor.CodeInternal},
		{"not JSON", `{"succeeded":false,`, "test.echo", executor.CodeInvalidEnvelope},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := Response{Verb: hostile, Result: []byte(tc.result)}.Outcome(r.reg, "test.echo", json.RawMessage(`{"text":"ok"}`))
			if out.Verb != tc.verb {
				t.Fatalf("verb %q, want %q", out.Verb, tc.verb)
			}
			if code := executor.ErrorCode(""); out.Err != nil {
				code = out.Err.Code
				if code != tc.code {
					t.Fatalf("code %q, want %q", code, tc.code)
				}
			} else if tc.code != "" {
				t.Fatalf("succeeded, want %q", tc.code)
			}
		})
	}
	if out := (Response{Result: []byte(`{"succeeded":true}`)}).Outcome(r.reg, hostile, nil); out.Verb != "" {
		t.Fatalf("an unknown verb is named %q", out.Verb)
	}
}

// The streams earlier versions kept in the server's global account are
// removed at start: nothing reads them any more.
func TestLegacyStorageRemoved(t *testing.T) {
	var legacy string
	r := newRig(t, []string{"db-1"}, func(o *HubOptions) {
		legacy = filepath.Join(o.StateDir, "nats", server.JetStreamStoreDir, server.DEFAULT_GLOBAL_ACCOUNT)
		if err := os.MkdirAll(filepath.Join(legacy, "streams", "HUB_NODE_db-1"), 0o700); err != nil {
			t.Fatal(err)
		}
	})
	if _, err := os.Stat(legacy); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the legacy storage is still there: %v", err)
	}
	if !strings.Contains(r.logs.String(), "removed the streams of an earlier version") {
		t.Fatalf("logs: %s", r.logs.String())
	}
}

// TestStreamsTheServerCannotStoreSaySo: when the server cannot reserve a
// node's streams in its store (here eight nodes' streams ask for 1TiB
// each, 16TiB, more than a disk has free), the hub's start fails saying
// which setting reserves them, how much the configured nodes reserve, and
// what to do, with the server's own words.
func TestStreamsTheServerCannotStoreSaySo(t *testing.T) {
	names := []string{"db-1", "db-2", "db-3", "db-4", "db-5", "db-6", "db-7", "db-8"}
	r := newVerbRig(t, names)
	limits := config.NodeLimits{MaxStreamBytes: 1 << 40}.WithDefaults()
	h, err := OpenHub(t.Context(), HubOptions{StateDir: r.dir, Embedded: true, Listen: "127.0.0.1:0", Nodes: r.publicKeys(), Limits: limits, Logger: testkit.Discard()})
	if err == nil {
		h.Close()
		t.Fatal("the server reserved 16TiB for eight nodes' streams")
	}
	if !strings.Contains(err.Error(), "stream of node db-") {
		t.Errorf("the error does not name the node: %v", err)
	}
	for _, want := range []string{"cannot reserve its 1024GiB", "nats.node_limits.max_stream_bytes", "16384GiB for the 8 configured nodes", "free disk space", "insufficient storage resources available"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q:\n%v", want, err)
		}
	}
}

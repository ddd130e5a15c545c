package nodes

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/internal/testkit"
)

// calls collects what HubOptions.OnCall is told.
type calls struct {
	mu  sync.Mutex
	got []CallStats
}

func (c *calls) add(s CallStats) {
	c.mu.Lock()
	c.got = append(c.got, s)
	c.mu.Unlock()
}

// nth waits for the n-th account and returns it.
func (c *calls) nth(t *testing.T, n int) CallStats {
	t.Helper()
	testkit.WaitFor(t, fmt.Sprint("account ", n), func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return len(c.got) >= n
	})
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.got[n-1]
}

func hold(key string) []byte {
	b, _ := json.Marshal(map[string]any{"verb": "test.hold", "arguments": map[string]string{"key": key}})
	return b
}

// Every call to a node is accounted for once it ends: its status, and for
// an answered call its round trip and the node's own account of where the
// time went (recording it, waiting for a slot, running it), each within
// the round trip the hub measured around it.
func TestOnCallAccount(t *testing.T) {
	var c calls
	r := newRig(t, []string{"db-1", "db-2"}, func(o *HubOptions) { o.OnCall = c.add })
	opts := r.nodeOptions("db-1", r.keys["db-1"], t.TempDir())
	opts.Concurrency = 1
	n, _ := r.runNode(opts)

	// A call that holds the node's one slot, and one that waits for it:
	// recorded in the node's ledger, it goes for the slot (a moment more
	// for it to get there).
	first := r.callAsync("db-1", Request{TurnID: "t.acct", CallIndex: 0, Envelope: hold("a")})
	testkit.WaitFor(t, "the first call to run", func() bool { return r.ran("a") == 1 })
	ran := time.Now()
	second := r.callAsync("db-1", Request{TurnID: "t.acct", CallIndex: 1, Envelope: echo("b")})
	testkit.WaitFor(t, "the second call recorded", func() bool {
		rec, err := n.ledger.Get(CallID("t.acct", 1))
		return err == nil && rec != nil
	})
	time.Sleep(50 * time.Millisecond)
	r.release("a")
	released := time.Since(ran).Truncate(time.Microsecond) // as the node reports
	for _, ch := range []<-chan callResult{first, second} {
		if res := wait(t, ch); res.err != nil || res.resp.Status != StatusDone {
			t.Fatalf("call: %+v", res)
		}
	}
	byCall := map[string]CallStats{}
	for i := 1; i <= 2; i++ {
		s := c.nth(t, i)
		byCall[s.Call] = s
	}
	held, waited := byCall[CallID("t.acct", 0)], byCall[CallID("t.acct", 1)]
	for name, s := range map[string]CallStats{"held": held, "waited": waited} {
		tm := s.Timing
		if s.Node != "db-1" || s.Status != StatusDone || !s.Answered() || !tm.Reported() || tm.Ledger <= 0 {
			t.Fatalf("%s call: %+v", name, s)
		}
		if on := tm.Ledger + tm.Slot + tm.Run; on > s.RoundTrip {
			t.Errorf("%s call: the node's account %v is more than the round trip %v around it", name, on, s.RoundTrip)
		}
	}
	// The held call ran at least as long as it was held; the other waited
	// for its slot meanwhile.
	if held.Timing.Run < released || waited.Timing.Slot <= 0 {
		t.Errorf("held %+v (held for %v), waited %+v", held.Timing, released, waited.Timing)
	}

	// An answer that says the node could not take the call: recorded, not run.
	if res, err := r.hub.Call(t.Context(), "db-1", Request{TurnID: "t.acct", CallIndex: 2, Workspace: "nope", Envelope: echo("x")}); err != nil || res.Status != StatusRejected {
		t.Fatalf("rejected call: %+v %v", res, err)
	}
	if s := c.nth(t, 3); s.Status != StatusRejected || !s.Answered() || s.Timing.Ledger <= 0 || s.Timing.Run != 0 {
		t.Errorf("rejected call: %+v", s)
	}

	// No answer: db-2 never runs. Within the call's own timeout, then
	// when the caller gives up first.
	if _, err := r.hub.Call(t.Context(), "db-2", Request{TurnID: "t.acct", CallIndex: 3, Envelope: echo("x"), Timeout: 200 * time.Millisecond}); err == nil {
		t.Fatal("a call to a stopped node was answered")
	}
	if s := c.nth(t, 4); s.Node != "db-2" || s.Status != CallNoAnswer || s.Answered() || s.Timing.Reported() || s.RoundTrip < 200*time.Millisecond {
		t.Errorf("unanswered call: %+v", s)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	if _, err := r.hub.Call(ctx, "db-2", Request{TurnID: "t.acct", CallIndex: 4, Envelope: echo("x")}); err == nil {
		t.Fatal("a call to a stopped node was answered")
	}
	if s := c.nth(t, 5); s.Status != CallCanceled || s.Answered() {
		t.Errorf("canceled call: %+v", s)
	}
	// A call to a node the hub does not know is no call to a node: not
	// accounted (a name from anywhere never becomes a label).
	if _, err := r.hub.Call(t.Context(), "nobody", Request{TurnID: "t.acct", CallIndex: 5, Envelope: echo("x")}); err == nil {
		t.Fatal("a call to an unknown node")
	}
	c.mu.Lock() // OnCall is told before Call returns
	got := len(c.got)
	c.mu.Unlock()
	if got != 5 {
		t.Errorf("%d accounts after a call to an unknown node, want 5", got)
	}
}

// A node's words reach the account only as known values: a status the
// hub does not know is "other", and a timing that cannot be (negative)
// counts as none; one that is too large is bounded.
func TestOnCallTakesKnownValuesOnly(t *testing.T) {
	var c calls
	r := newRig(t, []string{"db-1"}, func(o *HubOptions) { o.OnCall = c.add })
	h := r.hostile("db-1")
	answer := func(index int, status, timing string) {
		ch := r.callAsync("db-1", Request{TurnID: "t.words", CallIndex: index, Envelope: echo("x")})
		id := h.nextCall()
		st, _ := json.Marshal(status)
		data := fmt.Appendf(nil, `{"call_id":%q,"node":"db-1","node_version":"test","status":%s,"result":{"succeeded":true},"duration_ms":1,"timing":%s}`, id, st, timing)
		if err := h.publish(id, data); err != nil {
			t.Fatal(err)
		}
		if res := wait(t, ch); res.err != nil {
			t.Fatal(res.err)
		}
	}
	answer(0, "done\x1b[2J"+strings.Repeat("x", 4096), `{"ledger_us":-1,"slot_us":5,"run_us":5}`)
	if s := c.nth(t, 1); s.Status != CallOther || !s.Answered() || s.Timing.Reported() {
		t.Errorf("hostile status and timing: %+v", s)
	}
	answer(1, StatusDone, `{"ledger_us":9223372036854775807,"run_us":3}`)
	if s := c.nth(t, 2); s.Status != StatusDone || s.Timing.Ledger != maxTiming || s.Timing.Run != 3*time.Microsecond {
		t.Errorf("huge timing: %+v", s)
	}
	answer(2, StatusDone, `null`)
	if s := c.nth(t, 3); s.Status != StatusDone || s.Timing.Reported() {
		t.Errorf("no timing: %+v", s)
	}
}

// A call its node's full queue refuses is accounted as such.
func TestOnCallFullQueue(t *testing.T) {
	var c calls
	r := newRig(t, []string{"db-1"}, func(o *HubOptions) { small(o); o.Limits.MaxStreamMessages = 1; o.OnCall = c.add })
	r.callAsync("db-1", Request{TurnID: "t.full", CallIndex: 0, Envelope: echo("x")})
	testkit.WaitFor(t, "a call queued", func() bool {
		s, err := r.hub.js.Stream(t.Context(), nodeStream("db-1"))
		return err == nil && s.CachedInfo().State.Msgs == 1
	})
	if _, err := r.hub.Call(t.Context(), "db-1", Request{TurnID: "t.full", CallIndex: 1, Envelope: echo("x")}); err == nil {
		t.Fatal("a call past a full queue")
	}
	if s := c.nth(t, 1); s.Status != CallFull || s.Answered() {
		t.Errorf("full queue: %+v", s)
	}
}

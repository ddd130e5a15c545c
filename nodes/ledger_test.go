package nodes

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/a6afc2ce/hermes-hub/clock"
	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/internal/testkit"
	"github.com/a6afc2ce/hermes-hub/store"
)

// runNodeOnFakeClock runs node db-1 of a new rig, on a fake clock, for
// the tests that look into its ledger.
func runNodeOnFakeClock(t *testing.T) (*rig, *Node, *clock.Fake) {
	t.Helper()
	r := newRig(t, []string{"db-1"}, nil)
	clk := newFakeClock()
	opts := r.nodeOptions("db-1", r.keys["db-1"], t.TempDir())
	opts.Clock = clk
	n, _ := r.runNode(opts)
	return r, n, clk
}

// TestNodeLedgerOneCommitPerCall: a call costs the node's ledger one
// commit, the record before it runs; the record after it runs rides on a
// later call's commit, and the last ones are written within finishEvery,
// in one commit.
func TestNodeLedgerOneCommitPerCall(t *testing.T) {
	r, n, clk := runNodeOnFakeClock(t)
	base, _ := n.ledger.Commits()
	const calls = 10
	for i := range calls {
		resp, err := r.hub.Call(t.Context(), "db-1", Request{TurnID: "t.commit", CallIndex: i, Envelope: echo(fmt.Sprint("c", i))})
		if err != nil || resp.Status != StatusDone {
			t.Fatalf("call %d: %v %+v", i, err, resp)
		}
	}
	// The last call's record is on its way (FinishLater happens after its
	// answer): wait for the last ack.
	testkit.WaitFor(t, "the last request acked", func() bool {
		c, err := r.hub.js.Consumer(t.Context(), nodeStream("db-1"), workConsumer)
		return err == nil && c.CachedInfo().NumAckPending == 0
	})
	if c, _ := n.ledger.Commits(); c-base != calls {
		t.Fatalf("%d calls made %d ledger commits, want one each", calls, c-base)
	}
	state := func(i int) string {
		rec, err := n.ledger.Get(CallID("t.commit", i))
		if err != nil || rec == nil {
			t.Fatalf("record of call %d: %v %v", i, rec, err)
		}
		return rec.State
	}
	if s := state(calls - 1); s != store.TurnStarted {
		t.Fatalf("the last call is %s before any further commit, want started", s)
	}
	clk.Advance(finishEvery)
	// (The commit is counted once it returns, after its records show.)
	testkit.WaitFor(t, "every call's record written done by one more commit", func() bool {
		for i := range calls {
			if state(i) != store.TurnDone {
				return false
			}
		}
		c, _ := n.ledger.Commits()
		return c-base == calls+1
	})
}

// TestRedeliveryOfARunningCallIsLeftToItsRun: when the server hands out
// again a call the node still runs (its renewals did not arrive: here the
// node's clock never ticks), the node neither runs it again nor answers
// it "may or may not have completed": the run answers.
func TestRedeliveryOfARunningCallIsLeftToItsRun(t *testing.T) {
	r := newRig(t, []string{"db-1"}, func(o *HubOptions) { o.AckWait = time.Second })
	opts := r.nodeOptions("db-1", r.keys["db-1"], t.TempDir())
	opts.Clock, opts.Logger = newFakeClock(), r.hub.log
	r.startNode(opts)
	ch := r.callAsync("db-1", Request{TurnID: "t.redeliver", Envelope: block("slow")})
	testkit.WaitFor(t, "the call to run", func() bool { return r.ran("slow") == 1 })
	var c callResult
	answered := false
	testkit.WaitFor(t, "the server to hand the call out again (or an answer)", func() bool {
		select {
		case c = <-ch:
			answered = true
			return true
		default:
		}
		return strings.Contains(r.logs.String(), "redelivered request left to its run")
	})
	close(r.gate)
	if !answered {
		c = wait(t, ch)
	}
	if c.err != nil || c.resp.Status != StatusDone || !strings.Contains(string(c.resp.Result), `"slow"`) {
		t.Fatalf("answer = %v, status %s: %s", c.err, c.resp.Status, c.resp.Result)
	}
	if n := r.ran("slow"); n != 1 {
		t.Fatalf("the call ran %d times", n)
	}
}

// TestNodeRecordsCallsWaitingForASlot: a node takes and records more
// calls than it runs at once (takeAhead per slot), so that quick calls
// share the ledger's commits; the calls waiting for a slot do not run
// until one is free, and then each runs once.
func TestNodeRecordsCallsWaitingForASlot(t *testing.T) {
	r := newRig(t, []string{"db-1"}, nil)
	opts := r.nodeOptions("db-1", r.keys["db-1"], t.TempDir())
	opts.Concurrency = 1
	n, _ := r.runNode(opts)
	held := r.callAsync("db-1", Request{TurnID: "t.slot", CallIndex: 0, Envelope: holdEnv("slot-held")})
	testkit.WaitFor(t, "the held call to run", func() bool { return r.ran("slot-held") == 1 })
	waiting := takeAhead - 1
	var calls []<-chan callResult
	for i := 1; i <= waiting; i++ {
		calls = append(calls, r.callAsync("db-1", Request{TurnID: "t.slot", CallIndex: i, Envelope: echo(fmt.Sprint("slot-", i))}))
	}
	testkit.WaitFor(t, "the calls behind the held one recorded in the ledger", func() bool {
		for i := 1; i <= waiting; i++ {
			if rec, err := n.ledger.Get(CallID("t.slot", i)); err != nil || rec == nil {
				return false
			}
		}
		return true
	})
	for i := 1; i <= waiting; i++ {
		if k := r.ran(fmt.Sprint("slot-", i)); k != 0 {
			t.Fatalf("call %d ran %d times while the node's one slot was taken", i, k)
		}
	}
	r.release("slot-held")
	if c := wait(t, held); c.err != nil || c.resp.Status != StatusDone {
		t.Fatalf("the held call: %v %+v", c.err, c.resp)
	}
	for i, ch := range calls {
		key := fmt.Sprint("slot-", i+1)
		c := wait(t, ch)
		if c.err != nil || c.resp.Status != StatusDone || !strings.Contains(string(c.resp.Result), `"`+key+`"`) {
			t.Fatalf("call %d: %v %+v", i+1, c.err, c.resp)
		}
		if k := r.ran(key); k != 1 {
			t.Fatalf("call %d ran %d times", i+1, k)
		}
	}
}

// TestCallDeliveredManyTimesUnackedIsStillAnswered: a call handed out
// again and again without an ack (to pulls of a node that died, which a
// cluster may still serve for a while) stays in the node's queue until a
// node takes it: the server never gives up on it, and the call is
// answered once the node runs.
func TestCallDeliveredManyTimesUnackedIsStillAnswered(t *testing.T) {
	r := newRig(t, []string{"db-1"}, func(o *HubOptions) { o.AckWait = time.Second })
	ch := r.callAsync("db-1", Request{TurnID: "t.unacked", Envelope: echo("unacked"), Timeout: 2 * time.Minute})
	h := r.hostile("db-1")
	cons, err := h.js.Consumer(t.Context(), nodeStream("db-1"), workConsumer)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 8; i++ {
		m, err := cons.Next(jetstream.FetchMaxWait(testkit.Wait))
		if err != nil {
			t.Fatalf("delivery %d: %v", i, err)
		}
		if md, err := m.Metadata(); err != nil || md.NumDelivered != uint64(i) {
			t.Fatalf("delivery %d: metadata %+v %v", i, md, err)
		}
	}
	h.nc.Close()
	r.startNode(r.nodeOptions("db-1", r.keys["db-1"], t.TempDir()))
	c := wait(t, ch)
	if c.err != nil || c.resp.Status != StatusDone || !strings.Contains(string(c.resp.Result), `"unacked"`) {
		t.Fatalf("answer: %v %+v", c.err, c.resp)
	}
	if n := r.ran("unacked"); n != 1 {
		t.Fatalf("the call ran %d times", n)
	}
}

// TestNodeLedgerRecordsTheOutcome: the record of a finished call holds
// the error code of its outcome (none when it succeeded), whatever
// answered it: the verb, the envelope's decoding, or the node.
func TestNodeLedgerRecordsTheOutcome(t *testing.T) {
	r, n, clk := runNodeOnFakeClock(t)
	calls := []struct {
		workspace string
		env       []byte
		code      executor.ErrorCode
	}{
		{"", echo("fine"), ""},
		{"", []byte(`{"verb":"fs.nothing"}`), executor.CodeUnknownVerb},
		{"", []byte(`{"verb":"test.echo","arguments":{"text":7}}`), executor.CodeInvalidArguments},
		{"nope", echo("x"), executor.CodeInvalidArguments},
	}
	for i, c := range calls {
		if _, err := r.hub.Call(t.Context(), "db-1", Request{TurnID: "t.outcome", CallIndex: i, Workspace: c.workspace, Envelope: c.env}); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	testkit.WaitFor(t, "the last request acked", func() bool {
		c, err := r.hub.js.Consumer(t.Context(), nodeStream("db-1"), workConsumer)
		return err == nil && c.CachedInfo().NumAckPending == 0
	})
	clk.Advance(finishEvery)
	testkit.WaitFor(t, "every call recorded done", func() bool {
		for i := range calls {
			if rec, err := n.ledger.Get(CallID("t.outcome", i)); err != nil || rec == nil || rec.State != store.TurnDone {
				return false
			}
		}
		return true
	})
	for i, c := range calls {
		if rec, _ := n.ledger.Get(CallID("t.outcome", i)); rec.Code != string(c.code) {
			t.Errorf("call %d recorded with code %q, want %q", i, rec.Code, c.code)
		}
	}
}

// TestNodeForgetsOldCalls: a running node forgets, at every
// ledgerPruneEvery, the calls that finished more than ledgerKeep ago (and
// only those): a call that finished since, and one that never finished,
// stay.
func TestNodeForgetsOldCalls(t *testing.T) {
	_, n, clk := runNodeOnFakeClock(t)
	t0 := clk.Now()
	for id, finished := range map[string]time.Time{"old": t0, "young": t0.Add(6 * 24 * time.Hour), "unfinished": {}} {
		if _, began, _, err := n.ledger.Begin(store.TurnRecord{TurnID: id, Platform: "node", Started: t0}); err != nil || !began {
			t.Fatalf("begin %s: %v %v", id, began, err)
		}
		if !finished.IsZero() {
			if err := n.ledger.Finish(id, store.TurnDone, "", nil, finished); err != nil {
				t.Fatal(err)
			}
		}
	}
	kept := func(id string) bool {
		rec, err := n.ledger.Get(id)
		if err != nil {
			t.Fatal(err)
		}
		return rec != nil
	}
	testkit.WaitFor(t, "the old call forgotten", func() bool {
		clk.Advance(ledgerPruneEvery)
		return !kept("old")
	})
	if age := clk.Now().Sub(t0); age <= ledgerKeep {
		t.Fatalf("a call was forgotten %s after it finished, within ledgerKeep (%s)", age, ledgerKeep)
	}
	for _, id := range []string{"young", "unfinished"} {
		if !kept(id) {
			t.Errorf("%s was forgotten", id)
		}
	}
}

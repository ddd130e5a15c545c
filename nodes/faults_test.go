package nodes

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/internal/testkit"
)

func TestNodeRestartedWithCallsQueued(t *testing.T) {
	r := newRig(t, []string{"db-1"}, nil)
	state := t.TempDir()
	stop := r.startNode(r.nodeOptions("db-1", r.keys["db-1"], state))
	stop() // the node is down while calls are queued
	var chs []<-chan callResult
	for i := range 5 {
		chs = append(chs, r.callAsync("db-1", Request{TurnID: "t.queued", CallIndex: i, Envelope: echo(fmt.Sprint("q", i))}))
	}
	testkit.WaitFor(t, "five calls queued", func() bool {
		r.hub.mu.Lock()
		defer r.hub.mu.Unlock()
		return len(r.hub.pending) == 5
	})
	r.startNode(r.nodeOptions("db-1", r.keys["db-1"], state))
	for i, ch := range chs {
		c := wait(t, ch)
		if c.err != nil || c.resp.Status != StatusDone || !strings.Contains(string(c.resp.Result), fmt.Sprintf(`"q%d"`, i)) {
			t.Fatalf("call %d = %+v %s", i, c.err, c.resp.Result)
		}
		if n := r.ran(fmt.Sprint("q", i)); n != 1 {
			t.Fatalf("call %d ran %d times", i, n)
		}
	}
}

func TestEmbeddedServerRestartedWithCallsInFlight(t *testing.T) {
	r := newRig(t, []string{"db-1"}, nil)
	r.startNode(r.nodeOptions("db-1", r.keys["db-1"], t.TempDir()))
	running := r.callAsync("db-1", Request{TurnID: "t.restart", Envelope: block("running")})
	testkit.WaitFor(t, "the call to run", func() bool { return r.ran("running") == 1 })
	r.hub.srv.shutdown()
	// A call made while the server is down is queued once it is back.
	queued := r.callAsync("db-1", Request{TurnID: "t.restart", CallIndex: 1, Envelope: echo("queued")})
	if err := r.hub.srv.start(); err != nil {
		t.Fatal(err)
	}
	close(r.gate)
	for name, ch := range map[string]<-chan callResult{"running": running, "queued": queued} {
		c := wait(t, ch)
		if c.err != nil || c.resp.Status != StatusDone || !strings.Contains(string(c.resp.Result), `"`+name+`"`) {
			t.Fatalf("%s: %v %+v %s", name, c.err, c.resp, c.resp.Result)
		}
		if n := r.ran(name); n != 1 {
			t.Fatalf("%s ran %d times", name, n)
		}
	}
}

func TestPartitionedNodeDoesNotRunExpiredCalls(t *testing.T) {
	hubClock := newFakeClock()
	r := newRig(t, []string{"db-1"}, func(o *HubOptions) { o.Clock = hubClock; o.CallTimeout = time.Minute })
	ch := r.callAsync("db-1", Request{TurnID: "t.partition", Envelope: echo("late")})
	testkit.WaitFor(t, "the call to wait", func() bool { return hubClock.Pending() > 0 })
	hubClock.Advance(time.Minute)
	if c := wait(t, ch); c.err == nil {
		t.Fatalf("call answered: %+v", c.resp)
	}
	// The node comes back (its clock past the call's deadline): the
	// request is still queued, and it must not run.
	nodeClock := newFakeClock()
	nodeClock.Advance(2 * time.Minute)
	opts := r.nodeOptions("db-1", r.keys["db-1"], t.TempDir())
	opts.Clock = nodeClock
	opts.Logger = r.hub.log
	r.startNode(opts)
	testkit.WaitFor(t, "the expired request to be refused", func() bool {
		return strings.Contains(r.logs.String(), "expired request not run")
	})
	if n := r.ran("late"); n != 0 {
		t.Fatalf("an expired call ran %d times", n)
	}
	testkit.WaitFor(t, "its expired answer to be dropped", func() bool {
		return strings.Contains(r.logs.String(), "status=expired")
	})
}

func TestListShowsLiveness(t *testing.T) {
	r := newRig(t, []string{"db-1", "db-2"}, nil)
	stop := r.startNode(r.nodeOptions("db-1", r.keys["db-1"], t.TempDir()))
	testkit.WaitFor(t, "db-1 online", func() bool {
		l, err := r.hub.List(t.Context())
		return err == nil && l[0].Online && !l[1].Online
	})
	l, _ := r.hub.List(t.Context())
	hb := l[0].Heartbeat
	if hb == nil || hb.Name != "db-1" || hb.Version != "test" || len(hb.Workspaces) != 1 || hb.Workspaces[0] != "main" {
		t.Fatalf("heartbeat = %+v", hb)
	}
	stop()
	testkit.WaitFor(t, "db-1 offline", func() bool {
		l, err := r.hub.List(t.Context())
		return err == nil && !l[0].Online
	})
}

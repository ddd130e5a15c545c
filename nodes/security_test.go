package nodes

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"

	"github.com/a6afc2ce/hermes-hub/internal/testkit"
)

func TestUnknownKeyRefused(t *testing.T) {
	r := newRig(t, []string{"db-1"}, nil)
	stranger, _ := nkeys.CreateUser()
	_, err := StartNode(t.Context(), r.nodeOptions("db-1", stranger, t.TempDir()))
	if err == nil || !strings.Contains(err.Error(), "does not know this node's key") {
		t.Fatalf("err = %v, want the key refused", err)
	}
}

func TestNodeClaimingAnotherName(t *testing.T) {
	r := newRig(t, []string{"db-1", "db-2"}, nil)
	n, err := StartNode(t.Context(), r.nodeOptions("db-2", r.keys["db-1"], t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Run(t.Context()); !errors.Is(err, ErrNotAllowed) {
		t.Fatalf("Run = %v, want ErrNotAllowed", err)
	}
}

// permissionErrors connects with key (as a node would) and collects the
// server's permission violations.
func permissionErrors(t *testing.T, r *rig, key nkeys.KeyPair, prefix string) (*nats.Conn, func() []string) {
	t.Helper()
	var mu sync.Mutex
	var errs []string
	pub, _ := key.PublicKey()
	nc, err := nats.Connect(r.hub.ClientURL(), nats.Nkey(pub, key.Sign), nats.CustomInboxPrefix(prefix),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			mu.Lock()
			errs = append(errs, err.Error())
			mu.Unlock()
		}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), errs...)
	}
}

// expectViolation subscribes to subject (or publishes to it) on nc and
// waits for the server to report a permissions violation for it.
func expectViolation(t *testing.T, nc *nats.Conn, errs func() []string, subject string, subscribe bool) {
	t.Helper()
	var err error
	if subscribe {
		_, err = nc.SubscribeSync(subject)
	} else {
		err = nc.Publish(subject, []byte(`{}`))
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "a permissions violation for "+subject, func() bool {
		for _, e := range errs() {
			if strings.Contains(e, "Permissions Violation") && strings.Contains(e, `"`+subject+`"`) {
				return true
			}
		}
		return false
	})
}

func TestNodeConfinedToItsSubjects(t *testing.T) {
	r := newRig(t, []string{"db-1", "db-2"}, nil)
	nc, errs := permissionErrors(t, r, r.keys["db-1"], inboxPrefix("db-1"))
	tests := []struct {
		name, subject string
		subscribe     bool
	}{
		{"another node's requests", requestSubject("db-2"), true},
		{"its own raw subject (only through the consumer)", requestSubject("db-1"), true},
		{"every inbox", "_INBOX.>", true},
		{"another node's inbox", inboxPrefix("db-2") + ".>", true},
		{"the results", resultSubject("db-2"), true},
		{"results as another node", resultSubject("db-2"), false},
		{"another node's heartbeat", statusSubject("db-2"), false},
		{"another node's consumer", "$JS.API.CONSUMER.MSG.NEXT.HUB_NODE_db-2.work", false},
		{"the JetStream API", "$JS.API.STREAM.DELETE.HUB_RESULTS", false},
		{"the hub's account info", jsAccountInfo, false},
		{"the hub's requests", requestSubject("db-1"), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { expectViolation(t, nc, errs, tc.subject, tc.subscribe) })
	}
}

// Each node's account on the embedded server has no JetStream and imports
// only its own services from the hub's account, and no JetStream API from
// the system account, which would answer the node's requests "not
// enabled" in a race with the hub's.
func TestNodeAccountsImportOnlyTheirOwnServices(t *testing.T) {
	names := []string{"db-1", "db-2", "db-3"}
	r := newRig(t, names, nil)
	for _, n := range names {
		az, err := r.hub.srv.current().Accountz(&server.AccountzOptions{Account: nodeAccount(n)})
		if err != nil || az.Account == nil {
			t.Fatalf("account of %s: %v", n, err)
		}
		want := map[string]bool{jsAccountInfo: true}
		for _, s := range nodeServices(n) {
			want[s.subject] = true
		}
		got := map[string]bool{}
		for _, imp := range az.Account.Imports {
			switch {
			case imp.Account == hubAccount && !imp.Invalid:
				got[string(imp.Subject)] = true
			case strings.HasPrefix(string(imp.Subject), "$JS."):
				// (The server's own account-scoped $SYS services stay;
				// the node's permissions do not let it send to them.)
				t.Errorf("%s imports %s from %s (invalid %v)", n, imp.Subject, imp.Account, imp.Invalid)
			}
		}
		if az.Account.JetStream || !maps.Equal(got, want) {
			t.Errorf("%s: jetstream %v, imports %v, want %v", n, az.Account.JetStream, got, want)
		}
	}
}

func TestForeignResultsDropped(t *testing.T) {
	r := newRig(t, []string{"db-1", "db-2"}, nil)
	// db-2 answers a call sent to db-1, and db-1 a call nobody sent.
	ch := r.callAsync("db-1", Request{TurnID: "t.foreign", Envelope: echo("real")})
	testkit.WaitFor(t, "the call to wait", func() bool {
		r.hub.mu.Lock()
		defer r.hub.mu.Unlock()
		return r.hub.pending[CallID("t.foreign", 0)] != nil
	})
	publish := func(node string, res resultMsg) {
		nc, _ := permissionErrors(t, r, r.keys[node], inboxPrefix(node))
		js, _ := jetstream.New(nc)
		data, _ := json.Marshal(res)
		if _, err := js.Publish(t.Context(), resultSubject(node), data); err != nil {
			t.Fatal(err)
		}
	}
	publish("db-2", resultMsg{CallID: CallID("t.foreign", 0), Node: "db-1", Status: StatusDone, Result: json.RawMessage(`{"succeeded":true,"text":"forged"}`)})
	publish("db-1", resultMsg{CallID: "never#0", Node: "db-1", Status: StatusDone, Result: json.RawMessage(`{"succeeded":true}`)})
	testkit.WaitFor(t, "both results dropped and logged", func() bool {
		l := r.logs.String()
		return strings.Contains(l, "it came from another node than the call was sent to") && strings.Contains(l, "call=never#0")
	})
	select {
	case c := <-ch:
		t.Fatalf("the call took a foreign result: %+v", c)
	default:
	}
	r.startNode(r.nodeOptions("db-1", r.keys["db-1"], t.TempDir()))
	c := wait(t, ch)
	if c.err != nil || c.resp.Node != "db-1" || !strings.Contains(string(c.resp.Result), `"real"`) {
		t.Fatalf("call = %+v, %s", c, c.resp.Result)
	}
}

func TestEmbeddedListensOnLoopbackOnly(t *testing.T) {
	r := newRig(t, []string{"db-1"}, nil)
	host, _, err := net.SplitHostPort(strings.TrimPrefix(r.hub.ClientURL(), "nats://"))
	if err != nil || host != "127.0.0.1" {
		t.Fatalf("client URL %s, want 127.0.0.1", r.hub.ClientURL())
	}
	_, err = OpenHub(t.Context(), HubOptions{StateDir: t.TempDir(), Embedded: true, Listen: "0.0.0.0:0", Logger: testkit.Discard()})
	if err == nil || !strings.Contains(err.Error(), "not a loopback address") {
		t.Fatalf("err = %v, want a non-loopback listen refused", err)
	}
}

func TestOfflineNodeAnswersAfterDeadline(t *testing.T) {
	fake := newFakeClock()
	r := newRig(t, []string{"db-1"}, func(o *HubOptions) { o.Clock = fake; o.CallTimeout = time.Minute })
	ch := r.callAsync("db-1", Request{TurnID: "t.offline", Envelope: echo("x")})
	testkit.WaitFor(t, "the call to wait", func() bool { return fake.Pending() > 0 })
	fake.Advance(time.Minute)
	c := wait(t, ch)
	var na *NoAnswerError
	if !errors.As(c.err, &na) || c.err.Error() != "node db-1 is offline; the call did not run (or may not have): no answer within 1m0s" {
		t.Fatalf("err = %v", c.err)
	}
	if _, err := r.hub.Call(context.Background(), "db-9", Request{TurnID: "t.x", Envelope: echo("x")}); err == nil || !strings.Contains(err.Error(), `node "db-9" is not configured`) {
		t.Fatalf("unknown node: err = %v", err)
	}
}

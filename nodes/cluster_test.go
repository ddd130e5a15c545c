package nodes

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/internal/natstest"
	"github.com/a6afc2ce/hermes-hub/internal/testkit"
)

// The tests of this file run the hub and its nodes on a real NATS
// cluster: three nats-server processes (internal/natstest) routed on
// loopback, each with its own storage, configured by ServerConfig with
// the accounts of the hub and its nodes, the streams and the status bucket
// replicated on all three. LAB_CLUSTER_LONG=1 makes more calls around
// each fault.

// clusterRig is a rig whose hub and nodes use a three-server cluster.
type clusterRig struct {
	*rig
	cluster *natstest.Cluster
}

// tlsFiles are the certificate files of a cluster with TLS for clients.
type tlsFiles struct{ ca, cert, key string }

// newClusterRig starts the cluster and the hub on it; mods change the
// hub's options once the cluster runs.
func newClusterRig(t *testing.T, names []string, tf *tlsFiles, mods ...func(*natstest.Cluster, *HubOptions)) *clusterRig {
	t.Helper()
	r := newVerbRig(t, names)
	hubKey, err := HubKey(r.dir)
	if err != nil {
		t.Fatal(err)
	}
	c, err := natstest.NewCluster(t.TempDir(), 3)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	a := Accounts{HubKey: hubKey, Nodes: r.publicKeys(), Limits: config.NodeLimits{}.WithDefaults(), Replicas: 3}
	for _, s := range c.Servers {
		srv := Server{Name: s.Name, Listen: s.Listen(), StoreDir: s.StoreDir(), ClusterName: natstest.ClusterName,
			ClusterListen: s.ClusterListen(), Routes: c.Routes(s)}
		if tf != nil {
			srv.CertFile, srv.KeyFile = tf.cert, tf.key
			srv.RouteCertFile, srv.RouteKeyFile, srv.RouteCAFile = tf.cert, tf.key, tf.ca
		}
		var conf strings.Builder
		if err := ServerConfig(&conf, a, srv); err != nil {
			t.Fatal(err)
		}
		if err := s.Configure(conf.String()); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	opts := HubOptions{StateDir: r.dir, URL: c.URLs("nats"), Replicas: 3, Nodes: r.publicKeys(), CallTimeout: 5 * time.Minute}
	if tf != nil {
		opts.URL, opts.CAFile = c.URLs("tls"), tf.ca
	}
	for _, mod := range mods {
		mod(c, &opts)
	}
	r.open(opts)
	return &clusterRig{rig: r, cluster: c}
}

// long reports whether the long version of the cluster tests runs.
func long() bool { return os.Getenv("LAB_CLUSTER_LONG") == "1" }

// TestClusterRoundTripReplicated: on a three-server cluster each node's
// two streams, their consumers and the status bucket have three replicas,
// calls run once and are answered, and a node's key is confined to its
// subjects as on the embedded server.
func TestClusterRoundTripReplicated(t *testing.T) {
	r := newClusterRig(t, []string{"db-1", "db-2"}, nil)
	r.startNode(r.nodeOptions("db-1", r.keys["db-1"], t.TempDir()))
	for i := range 5 {
		resp, err := r.hub.Call(t.Context(), "db-1", Request{TurnID: "t.cluster", CallIndex: i, Envelope: echo(fmt.Sprint("r", i))})
		if err != nil || resp.Status != StatusDone || !strings.Contains(string(resp.Result), fmt.Sprintf(`"r%d"`, i)) {
			t.Fatalf("call %d: %v %+v", i, err, resp)
		}
		if n := r.ran(fmt.Sprint("r", i)); n != 1 {
			t.Fatalf("call %d ran %d times", i, n)
		}
	}
	for _, name := range []string{nodeStream("db-1"), resultsStream("db-1"), nodeStream("db-2"), "KV_" + statusBucket} {
		s, err := r.hub.js.Stream(t.Context(), name)
		if err != nil {
			t.Fatal(err)
		}
		info := s.CachedInfo()
		if info.Config.Replicas != 3 || info.Cluster == nil || len(info.Cluster.Replicas) != 2 {
			t.Fatalf("stream %s: replicas %d, cluster %+v", name, info.Config.Replicas, info.Cluster)
		}
	}
	for stream, consumer := range map[string]string{nodeStream("db-1"): workConsumer, resultsStream("db-1"): resultsConsumer} {
		c, err := r.hub.js.Consumer(t.Context(), stream, consumer)
		if err != nil {
			t.Fatal(err)
		}
		if ci := c.CachedInfo(); ci.Cluster == nil || len(ci.Cluster.Replicas) != 2 {
			t.Fatalf("consumer %s of %s: cluster %+v", consumer, stream, ci.Cluster)
		}
	}
	testkit.WaitFor(t, "db-1 online in the replicated bucket", func() bool {
		l, err := r.hub.List(t.Context())
		return err == nil && l[0].Online && !l[1].Online
	})
	nc, errs := permissionErrors(t, r.rig, r.keys["db-1"], inboxPrefix("db-1"))
	for _, tc := range []struct {
		subject   string
		subscribe bool
	}{
		{requestSubject("db-2"), true},
		{resultSubject("db-2"), false},
		{statusSubject("db-2"), false},
		{"$JS.API.CONSUMER.MSG.NEXT.HUB_NODE_db-2.work", false},
		{"$JS.API.STREAM.DELETE." + nodeStream("db-1"), false},
	} {
		expectViolation(t, nc, errs, tc.subject, tc.subscribe)
	}
}

// TestClusterTLS: the cluster's servers speak TLS to clients and to each
// other with certificates of a CA made in the test: the hub
// (nats.ca_file) and a node (node.ca_file) that trust it connect and a
// call runs; a client that does not trust it is refused, and so is a
// server that tries to join without TLS.
func TestClusterTLS(t *testing.T) {
	dir := t.TempDir()
	ca, cert, key := writeTestCert(t, dir)
	r := newClusterRig(t, []string{"db-1"}, &tlsFiles{ca: ca, cert: cert, key: key})
	opts := r.nodeOptions("db-1", r.keys["db-1"], t.TempDir())
	if !strings.HasPrefix(opts.URL, "tls://") {
		t.Fatalf("the node connects to %s", opts.URL)
	}
	untrusted := opts
	untrusted.StateDir = t.TempDir()
	if _, err := StartNode(t.Context(), untrusted); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("a node that does not trust the CA: %v", err)
	}
	opts.CAFile = ca
	r.startNode(opts)
	resp, err := r.hub.Call(t.Context(), "db-1", Request{TurnID: "t.tls", Envelope: echo("over tls")})
	if err != nil || resp.Status != StatusDone || !strings.Contains(string(resp.Result), "over tls") {
		t.Fatalf("call over TLS: %v %+v", err, resp)
	}
	if _, err := nats.Connect(r.cluster.URLs("nats"), nats.Timeout(2*time.Second)); err == nil {
		t.Fatal("a plain connection to a TLS cluster succeeded")
	}
	intruderJoins(t, r.cluster)
}

// intruderJoins starts a server that routes to the cluster's first server
// without TLS and checks that it is refused: the first server reports the
// handshake failing, and neither lists a route to the other.
func intruderJoins(t *testing.T, c *natstest.Cluster) {
	t.Helper()
	ic, err := natstest.NewCluster(t.TempDir(), 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ic.Close)
	in, s1 := ic.Servers[0], c.Servers[0]
	if err := in.Configure(fmt.Sprintf("server_name: intruder\nlisten: %q\ncluster: {name: %s, listen: %q, routes: [%q]}\n",
		in.Listen(), natstest.ClusterName, in.ClusterListen(), fmt.Sprintf("nats://127.0.0.1:%d", s1.ClusterPort))); err != nil {
		t.Fatal(err)
	}
	if err := in.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	routes := func(s *natstest.Server) []string {
		var rz struct {
			Routes []struct {
				Name string `json:"remote_name"`
			} `json:"routes"`
		}
		if err := s.Monitor(t.Context(), "/routez", &rz); err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, r := range rz.Routes {
			names = append(names, r.Name)
		}
		return names
	}
	testkit.WaitFor(t, "the intruder's route refused", func() bool {
		data, _ := os.ReadFile(s1.LogFile())
		return strings.Contains(string(data), "TLS route handshake error") || len(routes(in)) > 0
	})
	if got := routes(in); len(got) > 0 {
		t.Fatalf("a server without TLS joined the cluster: routes %v", got)
	}
	for _, name := range routes(s1) {
		if name == "intruder" {
			t.Fatalf("%s lists a route to the intruder", s1.Name)
		}
	}
}

// loadCall is one call of a load: when it was sent and answered, and how.
type loadCall struct {
	key            string
	sent, answered time.Time
	resp           Response
	err            error
}

// load makes calls of test.echo, each with a key of its own, from a few
// callers at once, until stop.
type load struct {
	r       *clusterRig
	node    string
	prefix  string
	mu      sync.Mutex
	calls   []loadCall
	stopped chan struct{}
	done    sync.WaitGroup
}

func (r *clusterRig) startLoad(node, prefix string, callers int) *load {
	l := &load{r: r, node: node, prefix: prefix, stopped: make(chan struct{})}
	var seq int
	var seqMu sync.Mutex
	for range callers {
		l.done.Go(func() {
			for {
				select {
				case <-l.stopped:
					return
				default:
				}
				seqMu.Lock()
				seq++
				i := seq
				seqMu.Unlock()
				c := loadCall{key: fmt.Sprintf("%s-%d", prefix, i), sent: time.Now()}
				c.resp, c.err = r.hub.Call(context.Background(), node, Request{TurnID: "t." + prefix, CallIndex: i, Envelope: echo(c.key)})
				c.answered = time.Now()
				l.mu.Lock()
				l.calls = append(l.calls, c)
				l.mu.Unlock()
			}
		})
	}
	return l
}

// answeredAfter counts the calls sent after t0 that ran and were answered.
func (l *load) answeredAfter(t0 time.Time) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, c := range l.calls {
		if !c.sent.Before(t0) && c.err == nil && c.resp.Status == StatusDone {
			n++
		}
	}
	return n
}

// stop ends the load and returns its calls, each answered.
func (l *load) stop() []loadCall {
	close(l.stopped)
	l.done.Wait()
	return l.calls
}

// firstAnswerAfter is how long after t0 the first call sent at or after t0
// was answered with its result.
func firstAnswerAfter(calls []loadCall, t0 time.Time) time.Duration {
	best := time.Duration(-1)
	for _, c := range calls {
		if c.sent.Before(t0) || c.err != nil || c.resp.Status != StatusDone {
			continue
		}
		if d := c.answered.Sub(t0); best < 0 || d < best {
			best = d
		}
	}
	return best
}

// checkOnce checks what must hold whatever the fault: every call was
// answered (a call's Call returned once, without error), ran at most
// once, ran exactly once when answered with its result, and when not, was
// answered that it may or may not have completed. It returns how many
// were answered each way.
func (r *clusterRig) checkOnce(t *testing.T, calls []loadCall) (done, unsure int) {
	t.Helper()
	for _, c := range calls {
		n := r.ran(c.key)
		switch {
		case c.err != nil:
			t.Errorf("call %s was not answered: %v", c.key, c.err)
		case n > 1:
			t.Errorf("call %s ran %d times", c.key, n)
		case c.resp.Status == StatusDone:
			if n != 1 || !strings.Contains(string(c.resp.Result), `"`+c.key+`"`) {
				t.Errorf("call %s answered %s but ran %d times", c.key, c.resp.Result, n)
			}
			done++
		case c.resp.Status == StatusInterrupted && strings.Contains(string(c.resp.Result), "may or may not have completed"):
			unsure++
		default:
			t.Errorf("call %s answered %s: %s", c.key, c.resp.Status, c.resp.Result)
		}
	}
	return done, unsure
}

// waitAnswered waits until n calls sent after t0 ran and were answered.
func waitAnswered(t *testing.T, l *load, t0 time.Time, n int) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for l.answeredAfter(t0) < n {
		if time.Now().After(deadline) {
			t.Fatalf("only %d calls sent after %s were answered in 2m", l.answeredAfter(t0), t0.Format(time.StampMilli))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// leader is the server leading node's queue.
func (r *clusterRig) leader(t *testing.T, node string) *natstest.Server {
	t.Helper()
	var s *natstest.Server
	testkit.WaitFor(t, "a leader of "+nodeStream(node), func() bool {
		var err error
		s, err = r.cluster.StreamLeader(t.Context(), hubAccount, nodeStream(node))
		return err == nil
	})
	return s
}

// group is one replicated group of a node: a stream, or a consumer of
// one; each has a leader of its own.
type group struct{ stream, consumer string }

func (g group) String() string {
	if g.consumer == "" {
		return g.stream
	}
	return g.stream + "/" + g.consumer
}

func groups(node string) []group {
	return []group{{stream: nodeStream(node)}, {stream: nodeStream(node), consumer: workConsumer},
		{stream: resultsStream(node)}, {stream: resultsStream(node), consumer: resultsConsumer}, {stream: "KV_" + statusBucket}}
}

// groupLeader is the server that leads g ("" when unknown).
func (r *clusterRig) groupLeader(ctx context.Context, g group) string {
	if g.consumer == "" {
		if s, err := r.hub.js.Stream(ctx, g.stream); err == nil && s.CachedInfo().Cluster != nil {
			return s.CachedInfo().Cluster.Leader
		}
		return ""
	}
	if c, err := r.hub.js.Consumer(ctx, g.stream, g.consumer); err == nil && c.CachedInfo().Cluster != nil {
		return c.CachedInfo().Cluster.Leader
	}
	return ""
}

// leaders names the servers leading node's groups, and the one the hub
// is connected to: a server that leads one of them costs an election
// when it fails.
func (r *clusterRig) leaders(t *testing.T, node string) string {
	t.Helper()
	var parts []string
	for _, g := range groups(node) {
		parts = append(parts, g.String()+" "+r.groupLeader(t.Context(), g))
	}
	return "leaders: " + strings.Join(parts, ", ") + "; metadata " + r.cluster.MetaLeader(t.Context()) +
		"; the hub is connected to " + r.hub.nc.ConnectedServerName() + ", node " + node + " to " + r.serverOf(t, "hub node "+node)
}

// serverOf names the server a client connection of that name is on, or
// "none".
func (r *clusterRig) serverOf(t *testing.T, name string) string {
	t.Helper()
	conns, err := r.cluster.Connections(t.Context())
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	for _, c := range conns {
		if c.Name == name {
			return c.Server
		}
	}
	return "none"
}

// follower returns the server node is connected to, once it leads none
// of node's groups, asking the leaders on it to step down (the hub's
// account may) until it leads none: the follower whose loss the node
// feels most, as its client must reconnect elsewhere, and send again what
// it was publishing when its connection broke.
func (r *clusterRig) follower(t *testing.T, node string) *natstest.Server {
	t.Helper()
	s := r.cluster.Server(r.serverOf(t, "hub node "+node))
	if s == nil {
		s = r.cluster.Servers[0]
	}
	testkit.WaitFor(t, s.Name+" to lead none of the node's groups", func() bool {
		free := true
		for _, g := range groups(node) {
			if r.groupLeader(t.Context(), g) != s.Name {
				continue
			}
			free = false
			subject := "$JS.API.STREAM.LEADER.STEPDOWN." + g.stream
			if g.consumer != "" {
				subject = "$JS.API.CONSUMER.LEADER.STEPDOWN." + g.stream + "." + g.consumer
			}
			_, _ = r.hub.nc.Request(subject, nil, 5*time.Second)
			time.Sleep(100 * time.Millisecond)
		}
		return free
	})
	return s
}

func (r *clusterRig) start(t *testing.T, s *natstest.Server) {
	t.Helper()
	if err := s.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// TestClusterFaults runs one cluster through four faults in turn, each
// with calls flowing to a node from four callers, and checks after each
// that every call was answered once, none ran twice, and any not answered
// with its result was answered "may or may not have completed"; it logs
// how long each took to answer the first call sent after the fault.
func TestClusterFaults(t *testing.T) {
	r := newClusterRig(t, []string{"db-1"}, nil)
	r.startNode(r.nodeOptions("db-1", r.keys["db-1"], t.TempDir()))
	calls := 10
	if long() {
		calls = 200
	}
	t.Run("FollowerKilled", func(t *testing.T) {
		follower := r.follower(t, "db-1")
		t.Log(r.leaders(t, "db-1"))
		l := r.startLoad("db-1", "follower", 4)
		waitAnswered(t, l, time.Time{}, calls)
		killed := time.Now()
		if err := follower.Kill(); err != nil {
			t.Fatal(err)
		}
		waitAnswered(t, l, killed, calls)
		all := l.stop()
		done, unsure := r.checkOnce(t, all)
		t.Logf("follower %s killed: %d calls answered with their result, %d may or may not have completed; first call after the kill answered in %s",
			follower.Name, done, unsure, firstAnswerAfter(all, killed))
		r.start(t, follower)
	})
	t.Run("LeaderKilledMidCalls", func(t *testing.T) {
		leader := r.leader(t, "db-1")
		t.Log(r.leaders(t, "db-1"))
		held := r.callAsync("db-1", Request{TurnID: "t.leader", CallIndex: 0, Envelope: holdEnv("leader-held")})
		testkit.WaitFor(t, "the held call to run", func() bool { return r.ran("leader-held") == 1 })
		l := r.startLoad("db-1", "leader", 4)
		waitAnswered(t, l, time.Time{}, calls)
		killed := time.Now()
		if err := leader.Kill(); err != nil {
			t.Fatal(err)
		}
		waitAnswered(t, l, killed, calls)
		r.release("leader-held")
		all := append(l.stop(), loadCall{key: "leader-held"})
		c := wait(t, held)
		all[len(all)-1].resp, all[len(all)-1].err = c.resp, c.err
		done, unsure := r.checkOnce(t, all)
		t.Logf("leader %s killed: failover (kill to the first call sent after it answered) %s; %d calls answered with their result, %d may or may not have completed; the call running at the kill: %s",
			leader.Name, firstAnswerAfter(all, killed), done, unsure, c.resp.Status)
		r.start(t, leader)
	})
	t.Run("ServerPartitioned", func(t *testing.T) {
		// One server stops (its clients move to the others) while calls
		// flow, and starts again: it catches up with what it missed, so
		// that it can stand for another that fails next.
		leader := r.leader(t, "db-1")
		var cut, other *natstest.Server
		for _, s := range r.cluster.Servers {
			switch {
			case s == leader:
			case cut == nil:
				cut = s
			default:
				other = s
			}
		}
		l := r.startLoad("db-1", "partition", 4)
		waitAnswered(t, l, time.Time{}, calls)
		stopped := time.Now()
		if err := cut.Stop(); err != nil {
			t.Fatal(err)
		}
		waitAnswered(t, l, stopped, calls)
		back := time.Now()
		r.start(t, cut) // ready once current with the cluster
		waitAnswered(t, l, back, calls)
		if err := other.Kill(); err != nil {
			t.Fatal(err)
		}
		lost := time.Now()
		waitAnswered(t, l, lost, calls)
		all := l.stop()
		done, unsure := r.checkOnce(t, all)
		t.Logf("%s stopped and started again, then %s killed: %d calls answered with their result, %d may or may not have completed; first call after the stop answered in %s, after the kill in %s",
			cut.Name, other.Name, done, unsure, firstAnswerAfter(all, stopped), firstAnswerAfter(all, lost))
		r.start(t, other)
	})
	t.Run("AllRestarted", func(t *testing.T) {
		held := r.callAsync("db-1", Request{TurnID: "t.all", CallIndex: 0, Envelope: holdEnv("all-held")})
		testkit.WaitFor(t, "the held call to run", func() bool { return r.ran("all-held") == 1 })
		l := r.startLoad("db-1", "all", 4)
		waitAnswered(t, l, time.Time{}, calls)
		killed := time.Now()
		for _, s := range r.cluster.Servers {
			if err := s.Kill(); err != nil {
				t.Fatal(err)
			}
		}
		if err := r.cluster.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		up := time.Now()
		waitAnswered(t, l, killed, calls)
		r.release("all-held")
		all := append(l.stop(), loadCall{key: "all-held"})
		c := wait(t, held)
		all[len(all)-1].resp, all[len(all)-1].err = c.resp, c.err
		done, unsure := r.checkOnce(t, all)
		t.Logf("all three killed and started again (%s until every server was ready): first call sent after the kill answered %s after it; %d calls answered with their result, %d may or may not have completed; the call running at the kill: %s",
			up.Sub(killed).Round(time.Millisecond), firstAnswerAfter(all, killed), done, unsure, c.resp.Status)
	})
	keys := []string{}
	r.mu.Lock()
	for k, n := range r.runs {
		if n > 1 {
			keys = append(keys, k)
		}
	}
	r.mu.Unlock()
	sort.Strings(keys)
	if len(keys) > 0 {
		t.Errorf("calls that ran more than once: %v", keys)
	}
}

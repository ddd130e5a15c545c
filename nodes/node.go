package nodes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"
	bolt "go.etcd.io/bbolt"

	"github.com/a6afc2ce/hermes-hub/clock"
	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/store"
)

// NodeOptions configure `hub node`.
type NodeOptions struct {
	Name string
	// URL is the hub's NATS (nats:// or tls://); CAFile verifies its
	// certificate when the system does not.
	URL, CAFile string
	Key         nkeys.KeyPair
	// StateDir holds the node's ledger (node.db).
	StateDir string
	// Workspaces are the executors by workspace name; Default serves
	// requests that name none.
	Workspaces map[string]*executor.Executor
	Default    string
	Version    string
	// Concurrency is how many calls run at once (default 4).
	Concurrency int
	// Heartbeat is the liveness interval (default 5s).
	Heartbeat time.Duration
	Clock     clock.Clock
	Logger    *slog.Logger
}

// Node is a running `hub node`.
type Node struct {
	opts    NodeOptions
	log     *slog.Logger
	clk     clock.Clock
	db      *bolt.DB
	ledger  *store.Ledger
	nc      *nats.Conn
	js      jetstream.JetStream
	started time.Time
	ackWait time.Duration
	running atomic.Int32
	permErr atomic.Value // error: the last permissions violation
	// reconnected is signalled when the connection is back after a break
	// (resetAfterReconnect).
	reconnected chan struct{}

	mu sync.Mutex
	// inflight are the calls this process handles now, by call id.
	inflight map[string]bool
	// answering bounds the answers being published in the background
	// (complete), answers waits for them.
	answering chan struct{}
	answers   sync.WaitGroup
	// slots bound the calls that run at once (Concurrency).
	slots chan struct{}
}

// takeAhead is how many calls a node takes and records per call it may
// run at once: the records of the calls waiting for a slot share the
// ledger's commits, so that a stream of quick calls pays a sync for many
// rather than for Concurrency at most.
const takeAhead = 4

// finishEvery is how often the ledger writes the finished calls no
// call's record has carried since (Ledger.FinishLater).
const finishEvery = time.Second

// ErrNotAllowed is returned when the server refuses the node's subjects:
// its key is not the one the hub configured for its name.
var ErrNotAllowed = errors.New("the hub's NATS refuses this node's subjects")

// StartNode opens the node's ledger, connects with its key and checks it
// may consume its own queue. Run serves it.
func StartNode(ctx context.Context, opts NodeOptions) (*Node, error) {
	if err := config.ValidNodeName(opts.Name); err != nil {
		return nil, fmt.Errorf("node.name: %w", err)
	}
	if opts.Key == nil {
		return nil, errors.New("node: no nkey")
	}
	if _, ok := opts.Workspaces[opts.Default]; !ok {
		return nil, fmt.Errorf("node: the default workspace %q is not one of its workspaces", opts.Default)
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = 4
	}
	if opts.Heartbeat <= 0 {
		opts.Heartbeat = 5 * time.Second
	}
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	n := &Node{opts: opts, log: opts.Logger.With("node", opts.Name), clk: opts.Clock, inflight: map[string]bool{},
		answering: make(chan struct{}, takeAhead*opts.Concurrency), slots: make(chan struct{}, opts.Concurrency),
		reconnected: make(chan struct{}, 1)}
	n.started = n.clk.Now()
	db, err := openNodeDB(opts.StateDir)
	if err != nil {
		return nil, err
	}
	n.db = db
	if n.ledger, err = store.OpenLedger(db); err != nil {
		db.Close()
		return nil, err
	}
	pub, _ := opts.Key.PublicKey()
	copts := []nats.Option{
		nats.Name("hub node " + opts.Name),
		nats.Nkey(pub, opts.Key.Sign),
		nats.CustomInboxPrefix(inboxPrefix(opts.Name)),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond),
		nats.Timeout(5 * time.Second),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			if errors.Is(err, nats.ErrPermissionViolation) {
				n.permErr.Store(err)
			}
			n.log.Warn("nats", "err", err.Error())
		}),
		nats.ReconnectHandler(func(*nats.Conn) { signal(n.reconnected) }),
	}
	if opts.CAFile != "" {
		copts = append(copts, nats.RootCAs(opts.CAFile))
	}
	n.nc, err = nats.Connect(opts.URL, copts...)
	if err != nil {
		db.Close()
		if errors.Is(err, nats.ErrAuthorization) {
			return nil, fmt.Errorf("connect to %s: the hub does not know this node's key (add the block `hub node init` printed under nodes: in the hub's configuration): %w", opts.URL, err)
		}
		return nil, fmt.Errorf("connect to %s: %w", opts.URL, err)
	}
	n.js, err = newJetStream(n.nc)
	if err != nil {
		n.close()
		return nil, err
	}
	return n, nil
}

func (n *Node) close() {
	if n.nc != nil {
		n.nc.Close()
	}
	n.db.Close()
}

// Run consumes the node's queue until ctx ends, then closes the node.
func (n *Node) Run(ctx context.Context) error {
	defer n.close()
	// A cluster still electing the consumer's leader, or too busy to
	// answer in time, is waited for (placementWait), as the hub waits for
	// it to place the streams; a server that refused the request is not.
	cons, err := whenReady(ctx, placementWait, func() (jetstream.Consumer, error) {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		c, err := n.js.Consumer(cctx, nodeStream(n.opts.Name), workConsumer)
		if pe, ok := n.permErr.Load().(error); ok && err != nil {
			return nil, pe
		}
		return c, err
	})
	if err != nil && ctx.Err() != nil {
		return nil // stopped while starting
	}
	if err != nil {
		if pe, ok := n.permErr.Load().(error); ok {
			return fmt.Errorf("node %s: %w (is node.name the name the hub gave this key?): %v", n.opts.Name, ErrNotAllowed, pe)
		}
		return fmt.Errorf("node %s: its queue is not reachable (is it configured under the hub's nodes:?): %w", n.opts.Name, err)
	}
	n.ackWait = config.DefaultAckWait
	if ci := cons.CachedInfo(); ci != nil && ci.Config.AckWait > 0 {
		n.ackWait = ci.Config.AckWait
	}
	n.log.Info("node ready", "url", n.nc.ConnectedUrlRedacted(), "workspaces", n.workspaceNames())
	var wg sync.WaitGroup
	wg.Go(func() { n.beat(ctx) })
	wg.Go(func() { n.flushEvery(ctx) })
	wg.Go(func() { n.pruneEvery(ctx) })
	wg.Go(func() { n.resetAfterReconnect(ctx) })
	takers := takeAhead * n.opts.Concurrency
	it, err := cons.Messages(jetstream.PullMaxMessages(takers), jetstream.PullHeartbeat(pullHeartbeat), jetstream.PullExpiry(pullExpiry))
	if err != nil {
		return fmt.Errorf("consume: %w", err)
	}
	for range takers {
		wg.Go(func() {
			for {
				m, err := it.Next()
				if err != nil {
					if errors.Is(err, jetstream.ErrMsgIteratorClosed) {
						return
					}
					n.log.Debug("next request", "err", err.Error())
					continue
				}
				n.handle(ctx, m)
			}
		})
	}
	<-ctx.Done()
	it.Stop()
	wg.Wait()
	n.answers.Wait()
	n.flush()
	return nil
}

// flushEvery writes the ledger's finished calls at every finishEvery
// until ctx ends: under load each call's record carries those before it,
// and this writes the last ones.
func (n *Node) flushEvery(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-after(n.clk, finishEvery):
			n.flush()
		}
	}
}

// resetAfterReconnect has the server hand out again, after each reconnection,
// the calls of the node's queue not acknowledged yet (handOutAgain in
// reset.go): a call handed out as the connection broke never reached the
// node. Of the copies, those of calls the node runs now are left to their
// run and those it ran already are answered from the ledger, never run
// again (handle, take); the rest are the lost ones, now run.
func (n *Node) resetAfterReconnect(ctx context.Context) {
	onEachReconnect(ctx, n.reconnected, func() {
		handOutAgain(ctx, n.js, n.clk, n.log, nodeStream(n.opts.Name), workConsumer, n.ackWait)
	})
}

// ledgerKeep is how long the node's ledger keeps a finished call: far
// longer than a copy of it can be handed out again (the queue keeps a
// call for the call timeout and a grace, and a call past its deadline is
// not run), so that even a node whose clock is off never runs one twice.
const ledgerKeep = 7 * 24 * time.Hour

// ledgerPruneEvery is how often a running node forgets the calls that
// finished more than ledgerKeep ago (and once as it starts).
const ledgerPruneEvery = time.Hour

// pruneEvery forgets the ledger's old calls now and at every
// ledgerPruneEvery until ctx ends, so that the ledger of a node that runs
// for months holds a week of calls, not all of them.
func (n *Node) pruneEvery(ctx context.Context) {
	for {
		n.prune(ctx)
		select {
		case <-ctx.Done():
			return
		case <-after(n.clk, ledgerPruneEvery):
		}
	}
}

// prune forgets the ledger's old calls, stopping early when ctx ends (the
// node stops; the rest is forgotten at its next start).
func (n *Node) prune(ctx context.Context) {
	cutoff := n.clk.Now().Add(-ledgerKeep)
	calls, _, err := n.ledger.Prune(ctx, cutoff)
	switch {
	case err != nil && ctx.Err() != nil:
		// Stopped, not failed: nothing to say.
	case err != nil:
		n.log.Warn("prune ledger", "err", err.Error())
	case calls > 0:
		n.log.Info("ledger: forgot old calls", "calls", calls, "finished_before", cutoff.UTC().Format(time.RFC3339))
	}
}

func (n *Node) flush() {
	if err := n.ledger.Flush(); err != nil {
		n.log.Error("ledger", "err", err.Error())
	}
}

// claim marks a call as handled by this process; false when it already
// is (a redelivery of a call that runs now).
func (n *Node) claim(id string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.inflight[id] {
		return false
	}
	n.inflight[id] = true
	return true
}

func (n *Node) release(id string) {
	n.mu.Lock()
	delete(n.inflight, id)
	n.mu.Unlock()
}

func (n *Node) workspaceNames() []string {
	out := make([]string, 0, len(n.opts.Workspaces))
	for k := range n.opts.Workspaces {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// handle runs one request at most once. It returns once the call ran:
// its answer is published in the background (complete), so that the
// worker takes its next call meanwhile, and the ledger records of the
// calls it takes share commits.
func (n *Node) handle(ctx context.Context, m jetstream.Msg) {
	var rq requestMsg
	if err := json.Unmarshal(m.Data(), &rq); err != nil || rq.CallID == "" || rq.Node != n.opts.Name {
		n.log.Warn("malformed request dropped", "bytes", len(m.Data()))
		m.Term()
		return
	}
	log := n.log.With("call", rq.CallID)
	if !n.claim(rq.CallID) {
		// The server handed out again a call this process runs now: its
		// renewals did not reach the server in time (a cluster failing
		// over, a pause). The run answers it and acks; this copy only
		// renews.
		log.Info("redelivered request left to its run")
		m.InProgress()
		return
	}
	res, ran := n.take(ctx, m, rq, log)
	if !ran {
		n.release(rq.CallID)
		return
	}
	n.answering <- struct{}{}
	n.answers.Go(func() {
		defer func() { <-n.answering }()
		defer n.release(rq.CallID)
		n.complete(ctx, m, rq, res)
	})
}

// take records the call in the ledger and runs it, unless it expired or
// the node took it before (both answered here). ran reports whether res
// is the call's own answer, for complete.
func (n *Node) take(ctx context.Context, m jetstream.Msg, rq requestMsg, log *slog.Logger) (res resultMsg, ran bool) {
	now := n.clk.Now()
	if !now.Before(rq.Deadline) {
		// The hub has given up on it: running it now would act for
		// nobody (a node partitioned and back, a node long stopped).
		log.Warn("expired request not run", "deadline", rq.Deadline)
		n.answer(ctx, rq, resultMsg{Status: StatusExpired, Result: failure(executor.CodeTimeout,
			fmt.Sprintf("node %s received this call after its deadline (%s); it did not run", n.opts.Name, rq.Deadline.UTC().Format(time.RFC3339)))})
		m.Term()
		return res, false
	}
	env, derr := n.opts.Workspaces[n.opts.Default].DecodeEnvelope(rq.Envelope)
	recording := n.clk.Now()
	prev, began, _, err := n.ledger.Begin(store.TurnRecord{TurnID: rq.CallID, Verb: env.Verb, Identity: rq.Identity, Platform: "node", Started: now})
	tm := &wireTiming{LedgerUS: n.clk.Now().Sub(recording).Microseconds()}
	if err != nil {
		log.Error("ledger", "err", err.Error())
		m.NakWithDelay(time.Second)
		return res, false
	}
	if !began {
		// A redelivery: the node took this call before (and died, or its
		// ack was lost). It is never run again. When the result was
		// published, this answer carries the same message id and is
		// dropped by the results stream as a duplicate.
		log.Warn("redelivered request not run again", "state", prev.State)
		n.answer(ctx, rq, resultMsg{Status: StatusInterrupted, Verb: prev.Verb, Result: failure(executor.CodeInternal,
			fmt.Sprintf("node %s was interrupted while it ran this call; it may or may not have completed, and it is not run again", n.opts.Name))})
		m.Ack()
		return res, false
	}
	x, ok := n.opts.Workspaces[rq.Workspace]
	if rq.Workspace == "" {
		x, ok = n.opts.Workspaces[n.opts.Default], true
	}
	switch {
	case !ok:
		return resultMsg{Status: StatusRejected, Timing: tm, code: executor.CodeInvalidArguments, Result: failure(executor.CodeInvalidArguments,
			fmt.Sprintf("node %s has no workspace %q (it has: %s)", n.opts.Name, rq.Workspace, strings.Join(n.workspaceNames(), ", ")))}, true
	case derr != nil:
		out := &executor.Outcome{Err: executor.ErrorFrom(derr)}
		return resultMsg{Status: StatusDone, Timing: tm, code: out.Err.Code, Result: out.JSON()}, true
	}
	res = n.run(ctx, m, x, rq, env, tm)
	res.Timing = tm
	return res, true
}

// complete publishes a call's answer, then acks the request and has the
// ledger record the call finished. An answer that cannot be published
// leaves the request unacked: the ledger answers its redelivery.
func (n *Node) complete(ctx context.Context, m jetstream.Msg, rq requestMsg, res resultMsg) {
	if !n.answer(ctx, rq, res) {
		return
	}
	// Only the record before the run guards "at most once"; this one is
	// written with the next commit (the next call's, or flushEvery's).
	n.ledger.FinishLater(rq.CallID, store.TurnDone, string(res.code), n.clk.Now())
	m.Ack()
}

// run executes the envelope once a slot is free, bounded by the call's
// deadline, telling the server the call is in progress (also while it
// waits for its slot) so that it is not redelivered meanwhile. It notes
// in tm how long the call waited for its slot and ran.
func (n *Node) run(ctx context.Context, m jetstream.Msg, x *executor.Executor, rq requestMsg, env executor.Envelope, tm *wireTiming) resultMsg {
	waiting := n.clk.Now()
	rctx, cancel := context.WithTimeout(ctx, rq.Deadline.Sub(n.clk.Now()))
	defer cancel()
	var mu sync.Mutex
	var t clock.Timer
	var tick func()
	tick = func() {
		mu.Lock()
		defer mu.Unlock()
		if rctx.Err() != nil {
			return
		}
		m.InProgress()
		t = n.clk.AfterFunc(n.ackWait/3, tick)
	}
	mu.Lock()
	t = n.clk.AfterFunc(n.ackWait/3, tick)
	mu.Unlock()
	defer func() { mu.Lock(); t.Stop(); mu.Unlock() }()
	select {
	case n.slots <- struct{}{}:
	case <-rctx.Done():
		tm.SlotUS = n.clk.Now().Sub(waiting).Microseconds()
		return resultMsg{Status: StatusExpired, code: executor.CodeTimeout, Result: failure(executor.CodeTimeout,
			fmt.Sprintf("node %s had no free slot for this call before its deadline or its stop; it did not run", n.opts.Name))}
	}
	defer func() { <-n.slots }()
	n.running.Add(1)
	defer n.running.Add(-1)
	rctx = executor.WithCall(rctx, executor.Call{TurnID: rq.TurnID, Session: rq.Session, Identity: rq.Identity})
	running := n.clk.Now()
	tm.SlotUS = running.Sub(waiting).Microseconds()
	out := x.Run(rctx, env)
	tm.RunUS = n.clk.Now().Sub(running).Microseconds()
	res := resultMsg{Status: StatusDone, Verb: out.Verb, Result: out.JSON(), Notes: out.Notes, DurationMS: out.Duration.Milliseconds()}
	if out.Err != nil {
		res.code = out.Err.Code
	}
	return res
}

// answer publishes a result with the call id as message id, retrying
// while NATS is unreachable, until the call's deadline (a little after:
// the hub may still take it) or the node stops.
func (n *Node) answer(ctx context.Context, rq requestMsg, res resultMsg) bool {
	data, err := n.encode(rq, res)
	if err != nil {
		n.log.Error("encode result", "call", rq.CallID, "err", err.Error())
		return false
	}
	giveUp := rq.Deadline.Add(retentionGrace)
	for {
		// An attempt under way is not given up when the node stops: its
		// answer may still reach the stream (publishWait bounds it).
		err := publishAcked(context.WithoutCancel(ctx), n.js, resultSubject(n.opts.Name), data, jetstream.WithMsgID(rq.CallID))
		if err == nil {
			return true
		}
		n.log.Warn("publish result", "call", rq.CallID, "err", err.Error())
		if ctx.Err() != nil || !n.clk.Now().Before(giveUp) {
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-after(n.clk, 250*time.Millisecond):
		}
	}
}

// encode writes the result of rq. A result larger than the hub takes
// (the server's max payload for this node, less room for headers) is
// replaced by a too_large failure that says so: the server would refuse
// it, and retrying would not help.
func (n *Node) encode(rq requestMsg, res resultMsg) ([]byte, error) {
	res.CallID, res.Node, res.NodeVersion = rq.CallID, n.opts.Name, n.opts.Version
	data, err := marshalResult(res)
	if limit := int(n.nc.MaxPayload()) - headerRoom; err == nil && len(data) > limit {
		n.log.Warn("result too large for the hub replaced by an error", "call", rq.CallID, "bytes", len(data), "limit", limit)
		res.Result, res.Notes = failure(executor.CodeTooLarge, fmt.Sprintf(
			"The answer of node %s was %d bytes, over the %d bytes the hub takes from it (nats.node_limits.max_result_bytes): ask for less (fs.readRange, proc.output pages)",
			n.opts.Name, len(data), limit)), nil
		data, err = marshalResult(res)
	}
	return data, err
}

// beat writes the node's heartbeat now and at every interval.
func (n *Node) beat(ctx context.Context) {
	for {
		hb := Heartbeat{
			Name: n.opts.Name, Version: n.opts.Version, Started: n.started, LastSeen: n.clk.Now(),
			Workspaces: n.workspaceNames(), Load: loadAverage(), Running: int(n.running.Load()),
		}
		data, _ := json.Marshal(hb)
		if err := publishAcked(ctx, n.js, statusSubject(n.opts.Name), data); err != nil && ctx.Err() == nil {
			n.log.Debug("heartbeat", "err", err.Error())
		}
		select {
		case <-ctx.Done():
			return
		case <-after(n.clk, n.opts.Heartbeat):
		}
	}
}

// loadAverage reads the 1, 5 and 15 minute load averages (zero where the
// system does not tell).
func loadAverage() [3]float64 {
	var l [3]float64
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return l
	}
	f := strings.Fields(string(b))
	for i := 0; i < 3 && i < len(f); i++ {
		l[i], _ = strconv.ParseFloat(f[i], 64)
	}
	return l
}

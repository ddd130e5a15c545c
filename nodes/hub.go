package nodes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"

	"github.com/a6afc2ce/hermes-hub/clock"
	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/executor"
)

// Defaults of HubOptions.
const (
	DefaultHeartbeatTTL = 15 * time.Second
	// retentionGrace is how long past a call's deadline its request and
	// result stay in their streams: a node checks the deadline itself, the
	// stream's age limit only bounds the storage of a node that never
	// comes back.
	retentionGrace = time.Minute
	// maxDeliver: the server hands a call out until it is acked, however
	// often (-1). A limit would leave a call whose deliveries went to a
	// dead node's pulls (a cluster serves them a while) in the queue, never
	// delivered again and unanswered until the call timeout; a copy after
	// the first is never run twice (the node's ledger answers it), and the
	// call's deadline and the stream's age limit end it.
	maxDeliver = -1
	// resultsAckWait is how long the hub may hold a result before the
	// server hands it out again.
	resultsAckWait = 30 * time.Second
	maxPayload     = 8 << 20
	// pullHeartbeat is how often the server tells a waiting pull that it
	// is still there; two missed, the client pulls again. On a cluster
	// whose stream leader failed, that is how soon the consumers find the
	// new leader (the library's default waits 15s).
	pullHeartbeat = 2 * time.Second
	// pullExpiry is how long a pull waits before the client pulls again
	// (the library's default is 30s). A cluster's new leader may take
	// over a pull it cannot serve while its heartbeats still arrive: the
	// calls then wait until the pull expires.
	pullExpiry = 5 * time.Second
)

// HubOptions configure the hub's end.
type HubOptions struct {
	// StateDir is the hub's state directory: the embedded server keeps its
	// JetStream storage, and the hub its own nkey seed, under StateDir/nats.
	StateDir string
	// State is StateDir opened by the caller and held open: the seed is
	// read and written, and the server's storage named, through it
	// (openNATSState). nil: opened from StateDir.
	State *os.Root
	// Embedded runs a NATS server in-process listening on Listen (host:port,
	// port 0 for any), with TLS when CertFile and KeyFile are set. A
	// non-loopback Listen without TLS is refused.
	Embedded          bool
	Listen            string
	CertFile, KeyFile string
	// URL is an existing server or cluster (when not Embedded); CAFile
	// verifies its certificate.
	URL, CAFile string
	// Replicas is how many servers of the cluster at URL keep each stream
	// and the status bucket (default 1; the embedded server is one).
	Replicas int
	// Nodes maps each node's name to its public user nkey.
	Nodes map[string]string
	// CallTimeout bounds the wait for an answer (default 10m).
	CallTimeout time.Duration
	// HeartbeatTTL is how long a heartbeat counts (default 15s): a node
	// whose last beat is older is offline.
	HeartbeatTTL time.Duration
	// AckWait is how long a node may hold a request without a sign of
	// life before the server redelivers it (default config.DefaultAckWait;
	// a running call extends it).
	AckWait time.Duration
	// Limits bound each node (its answers, its streams, its account on
	// the embedded server); zero fields take their defaults.
	Limits config.NodeLimits
	// OnCall, when set, is told of every call to a configured node once
	// it ends (the hub's metrics): it must not block.
	OnCall func(CallStats)
	Clock  clock.Clock
	Logger *slog.Logger
}

// Hub is the hub's end of the remote nodes: it owns the embedded server (if
// any), the streams, and the calls waiting for an answer.
type Hub struct {
	opts  HubOptions
	log   *slog.Logger
	clk   clock.Clock
	srv   *embedded // nil when using an external server
	state *natsState
	nc    *nats.Conn
	js    jetstream.JetStream
	kv    jetstream.KeyValue
	cc    []jetstream.ConsumeContext
	names []string

	mu      sync.Mutex
	pending map[string]*waiter

	// reconnected is signalled when the connection is back after a break
	// (resetAfterReconnect, which runs in bg until stop).
	reconnected chan struct{}
	stop        context.CancelFunc
	bg          sync.WaitGroup
}

type waiter struct {
	node string
	ch   chan Response
}

// OpenHub starts the embedded server (when configured), connects to it as
// the hub, and creates the streams, consumers and status bucket.
func OpenHub(ctx context.Context, opts HubOptions) (*Hub, error) {
	if opts.CallTimeout <= 0 {
		opts.CallTimeout = config.DefaultCallTimeout
	}
	if opts.HeartbeatTTL <= 0 {
		opts.HeartbeatTTL = DefaultHeartbeatTTL
	}
	if opts.AckWait <= 0 {
		opts.AckWait = config.DefaultAckWait
	}
	if opts.Replicas <= 0 || opts.Embedded {
		opts.Replicas = 1
	}
	opts.Limits = opts.Limits.WithDefaults()
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	h := &Hub{opts: opts, log: opts.Logger.With("component", "nodes"), clk: opts.Clock, pending: map[string]*waiter{},
		reconnected: make(chan struct{}, 1), stop: func() {}}
	for name, key := range opts.Nodes {
		if err := config.ValidNodeName(name); err != nil {
			return nil, fmt.Errorf("nodes: %w", err)
		}
		if !nkeys.IsValidPublicUserKey(key) {
			return nil, fmt.Errorf("nodes.%s.nkey: not a valid public user nkey (U…, from `hub node init`)", name)
		}
		h.names = append(h.names, name)
	}
	sort.Strings(h.names)
	var err error
	if h.state, err = openNATSState(opts); err != nil {
		return nil, err
	}
	kp, err := hubSeed(h.state.root)
	if err != nil {
		h.closeServer()
		return nil, err
	}
	hubKey, _ := kp.PublicKey()
	copts := []nats.Option{
		nats.Name("hub"),
		nats.Nkey(hubKey, kp.Sign),
		nats.CustomInboxPrefix(hubInbox),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			h.log.Warn("nats", "err", err.Error())
		}),
		nats.ReconnectHandler(func(*nats.Conn) { signal(h.reconnected) }),
	}
	url := opts.URL
	if opts.Embedded {
		if err := h.removeLegacyStorage(); err != nil {
			h.closeServer()
			return nil, err
		}
		h.srv, err = startEmbedded(opts, h.state.dir, hubKey)
		if err != nil {
			h.closeServer()
			return nil, err
		}
		// The hub talks to its own server in-process: no socket, no TLS
		// to configure, and the connection follows a restarted server.
		copts = append(copts, nats.InProcessServer(h.srv))
		url = ""
	} else if opts.CAFile != "" {
		copts = append(copts, nats.RootCAs(opts.CAFile))
	}
	h.nc, err = nats.Connect(url, copts...)
	if err != nil {
		h.closeServer()
		return nil, fmt.Errorf("connect to nats: %w", err)
	}
	if err := h.setup(ctx); err != nil {
		h.Close()
		return nil, err
	}
	bg, stop := context.WithCancel(context.Background())
	h.stop = stop
	h.bg.Go(func() { h.resetAfterReconnect(bg) })
	return h, nil
}

// resetAfterReconnect has the server hand out again, after each
// reconnection, the results not acknowledged yet (handOutAgain): a result
// handed out as the connection broke never reached the hub. The copies of
// results it took already find no call waiting and are dropped (onResult).
func (h *Hub) resetAfterReconnect(ctx context.Context) {
	onEachReconnect(ctx, h.reconnected, func() {
		var wg sync.WaitGroup
		for _, n := range h.names {
			wg.Go(func() { handOutAgain(ctx, h.js, h.clk, h.log, resultsStream(n), resultsConsumer, resultsAckWait) })
		}
		wg.Wait()
	})
}

func (h *Hub) setup(ctx context.Context) error {
	js, err := newJetStream(h.nc)
	if err != nil {
		return fmt.Errorf("jetstream: %w", err)
	}
	h.js = js
	keep := h.opts.CallTimeout + retentionGrace
	// One results stream per node: JetStream deduplicates message ids
	// across a whole stream, so a node that published another node's call
	// id first would otherwise have the real result dropped as a copy.
	_, err = whenReady(ctx, placementWait, func() (struct{}, error) {
		if err := js.DeleteStream(ctx, legacyResultsStream); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
			return struct{}{}, err
		}
		return struct{}{}, nil
	})
	if err != nil {
		return fmt.Errorf("remove the shared results stream of an earlier version: %w", err)
	}
	for _, n := range h.names {
		requests, results := streamConfigs(n, keep, h.opts.CallTimeout, h.opts.Limits, h.opts.Replicas)
		if _, err := whenReady(ctx, placementWait, func() (jetstream.Stream, error) { return js.CreateOrUpdateStream(ctx, requests) }); err != nil {
			return h.streamError("stream", n, err)
		}
		_, err = whenReady(ctx, placementWait, func() (jetstream.Consumer, error) {
			return js.CreateOrUpdateConsumer(ctx, nodeStream(n), jetstream.ConsumerConfig{
				Durable: workConsumer, AckPolicy: jetstream.AckExplicitPolicy, AckWait: h.opts.AckWait, MaxDeliver: maxDeliver,
			})
		})
		if err != nil {
			return fmt.Errorf("consumer of node %s: %w", n, err)
		}
		if _, err := whenReady(ctx, placementWait, func() (jetstream.Stream, error) { return js.CreateOrUpdateStream(ctx, results) }); err != nil {
			return h.streamError("results stream", n, err)
		}
		cc, err := h.consume(ctx, n)
		if err != nil {
			return err
		}
		h.cc = append(h.cc, cc)
	}
	h.kv, err = whenReady(ctx, placementWait, func() (jetstream.KeyValue, error) {
		return js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
			Bucket: statusBucket, TTL: h.opts.HeartbeatTTL, History: 1, Storage: jetstream.FileStorage,
			MaxValueSize: maxHeartbeatBytes, MaxBytes: statusBucketBytes(len(h.names)), Replicas: h.opts.Replicas,
		})
	})
	if err != nil {
		return fmt.Errorf("status bucket: %w", err)
	}
	return nil
}

// placementWait is how long setup waits for a cluster to place a stream
// or the bucket with their replicas: a server that has just started or
// rejoined counts as an offline peer for a moment ("no suitable peers for
// placement"), a cluster still electing the leader of its JetStream
// answers no request (each request then times out, or finds no
// responder), and the hub starting beside it would otherwise fail.
const placementWait = 15 * time.Second

// jsStorageExceeded is JetStream's error code for a stream whose bytes
// the server cannot reserve in its store (its disk, or max_file_store).
const jsStorageExceeded jetstream.ErrorCode = 10047

// streamError is the error of creating a node's stream (what): when the
// server cannot reserve the stream's bytes, it says which setting reserves
// them and how much the configured nodes reserve in all.
func (h *Hub) streamError(what, node string, err error) error {
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorCode != jsStorageExceeded {
		return fmt.Errorf("%s of node %s: %w", what, node, err)
	}
	each := h.opts.Limits.MaxStreamBytes
	total := config.Size(int64(each) * 2 * int64(len(h.names)))
	return fmt.Errorf("%s of node %s: the NATS server cannot reserve its %s in its store "+
		"(nats.node_limits.max_stream_bytes, reserved for each of a node's two streams: %s for the %d configured nodes, on every server that keeps them): "+
		"free disk space where the server keeps its streams (the embedded server: the state directory's nats/jetstream), or lower max_stream_bytes: %w",
		what, node, each, total, len(h.names), err)
}

// jsNoSuitablePeers is JetStream's error code for a stream or bucket it
// cannot place on enough servers now.
const jsNoSuitablePeers jetstream.ErrorCode = 10005

// whenReady calls do until it succeeds, fails otherwise than by a
// cluster not ready yet (notReady: unplaced, no answer in the request's
// time, no responder), within has passed, or ctx ends.
func whenReady[T any](ctx context.Context, within time.Duration, do func() (T, error)) (T, error) {
	deadline := time.Now().Add(within)
	for {
		v, err := do()
		if err == nil || !notReady(ctx, err) || time.Now().After(deadline) {
			return v, err
		}
		select {
		case <-ctx.Done():
			return v, err
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// notReady reports whether err, from a JetStream request made with ctx,
// says the cluster cannot answer yet rather than that the request was
// refused: a stream it cannot place, a request that timed out while ctx
// itself goes on, or no server answering JetStream's requests.
func notReady(ctx context.Context, err error) bool {
	var apiErr *jetstream.APIError
	switch {
	case errors.As(err, &apiErr):
		return apiErr.ErrorCode == jsNoSuitablePeers
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, nats.ErrTimeout):
		return ctx.Err() == nil
	default:
		return errors.Is(err, nats.ErrNoResponders)
	}
}

// streamConfigs are a node's two streams: its queue of calls and its
// results, each bounded in bytes and messages and refusing a new message
// beyond them (the node's own calls suffer, nobody else's). A result is
// removed once the hub has read it, so the results stream holds only what
// the hub has not read yet; a node cannot store an answer larger than
// the result limit. Each is kept by replicas servers (its consumers
// too).
func streamConfigs(node string, keep, dedupe time.Duration, l config.NodeLimits, replicas int) (requests, results jetstream.StreamConfig) {
	requests = jetstream.StreamConfig{
		Name: nodeStream(node), Subjects: []string{requestSubject(node)}, Storage: jetstream.FileStorage,
		Retention: jetstream.WorkQueuePolicy, MaxAge: keep, Duplicates: dedupe,
		MaxBytes: int64(l.MaxStreamBytes), MaxMsgs: int64(l.MaxStreamMessages), Discard: jetstream.DiscardNew,
		Replicas: replicas,
	}
	results = jetstream.StreamConfig{
		Name: resultsStream(node), Subjects: []string{resultSubject(node)}, Storage: jetstream.FileStorage,
		Retention: jetstream.InterestPolicy, MaxAge: keep, Duplicates: dedupe,
		MaxBytes: int64(l.MaxStreamBytes), MaxMsgs: int64(l.MaxStreamMessages), Discard: jetstream.DiscardNew,
		MaxMsgSize: int32(nodePayload(l)), Replicas: replicas,
	}
	return requests, results
}

// consume reads node's results. What the hub holds at once is bounded in
// bytes (two answers of the largest size), whatever the node publishes.
func (h *Hub) consume(ctx context.Context, node string) (jetstream.ConsumeContext, error) {
	cons, err := h.js.CreateOrUpdateConsumer(ctx, resultsStream(node), jetstream.ConsumerConfig{
		Durable: resultsConsumer, AckPolicy: jetstream.AckExplicitPolicy, AckWait: resultsAckWait,
	})
	if err != nil {
		return nil, fmt.Errorf("results consumer of node %s: %w", node, err)
	}
	cc, err := cons.Consume(h.onResult, jetstream.PullMaxBytes(2*nodePayload(h.opts.Limits)), jetstream.PullHeartbeat(pullHeartbeat), jetstream.PullExpiry(pullExpiry))
	if err != nil {
		return nil, fmt.Errorf("consume the results of node %s: %w", node, err)
	}
	return cc, nil
}

// Close stops consuming, closes the connection and shuts the embedded
// server down. Calls still waiting end with their context or deadline.
func (h *Hub) Close() error {
	h.stop()
	h.bg.Wait()
	for _, cc := range h.cc {
		cc.Stop()
	}
	if h.nc != nil {
		h.nc.Close()
	}
	h.closeServer()
	return nil
}

func (h *Hub) closeServer() {
	if h.srv != nil {
		h.srv.shutdown()
	}
	if h.state != nil {
		h.state.close()
	}
}

// ClientURL is the address nodes connect to (the embedded server's, or
// the configured URL).
func (h *Hub) ClientURL() string {
	if h.srv != nil {
		return h.srv.clientURL()
	}
	return h.opts.URL
}

// NoAnswerError is a call that got no answer before its deadline.
type NoAnswerError struct {
	Node   string
	Waited time.Duration
	// Queued is false when the request could not even be handed to NATS.
	Queued bool
	// Online is whether the node was heartbeating when the wait ended.
	Online bool
}

func (e *NoAnswerError) Error() string {
	switch {
	case !e.Queued:
		return fmt.Sprintf("node %s: the call could not be queued within %s (NATS unreachable); it did not run", e.Node, e.Waited)
	case e.Online:
		return fmt.Sprintf("node %s did not answer within %s; the call may still be running (or may not have run)", e.Node, e.Waited)
	default:
		return fmt.Sprintf("node %s is offline; the call did not run (or may not have): no answer within %s", e.Node, e.Waited)
	}
}

// Call sends req to node and waits for its answer, at most the call
// timeout. The request is published with the call id as its message id,
// so sending the same call again while the first is queued does not queue
// it twice. A call that gets no answer in time fails with *NoAnswerError.
func (h *Hub) Call(ctx context.Context, node string, req Request) (Response, error) {
	if !h.known(node) {
		return Response{}, fmt.Errorf("node %q is not configured (known: %v); add it under nodes: with `hub node init`", node, h.names)
	}
	id := CallID(req.TurnID, req.CallIndex)
	timeout := h.opts.CallTimeout
	if req.Timeout > 0 && req.Timeout < timeout {
		timeout = req.Timeout
	}
	deadline := h.clk.Now().Add(timeout)
	data, err := json.Marshal(requestMsg{
		CallID: id, TurnID: req.TurnID, CallIndex: req.CallIndex, Node: node, Workspace: req.Workspace,
		Identity: req.Identity, Session: req.Session, Envelope: json.RawMessage(req.Envelope), Deadline: deadline,
	})
	if err != nil {
		return Response{}, fmt.Errorf("call %s: the envelope is not JSON: %w", id, err)
	}
	w := &waiter{node: node, ch: make(chan Response, 1)}
	h.mu.Lock()
	if _, dup := h.pending[id]; dup {
		h.mu.Unlock()
		return Response{}, fmt.Errorf("call %s is already waiting for node %s", id, node)
	}
	h.pending[id] = w
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		if h.pending[id] == w {
			delete(h.pending, id)
		}
		h.mu.Unlock()
	}()
	started := h.clk.Now()
	expired := make(chan struct{})
	t := h.clk.AfterFunc(timeout, func() { close(expired) })
	defer t.Stop()
	stats := CallStats{Call: id, Node: node, Status: CallCanceled}
	if h.opts.OnCall != nil {
		defer func() {
			stats.RoundTrip = h.clk.Now().Sub(started)
			h.opts.OnCall(stats)
		}()
	}
	for {
		err := publishAcked(ctx, h.js, requestSubject(node), data, jetstream.WithMsgID(id), jetstream.WithExpectStream(nodeStream(node)))
		if err == nil {
			break
		}
		if full(err) {
			stats.Status = CallFull
			return Response{}, fmt.Errorf("node %s: its queue is full (%w; nats.node_limits bounds the calls waiting for a node): the call did not run", node, err)
		}
		h.log.Debug("queue call", "node", node, "call", id, "err", err.Error())
		select {
		case <-ctx.Done():
			return Response{}, fmt.Errorf("call %s to node %s: %w", id, node, ctx.Err())
		case <-expired:
			stats.Status = CallNoAnswer
			return Response{}, &NoAnswerError{Node: node, Waited: timeout}
		case <-after(h.clk, 250*time.Millisecond):
		}
	}
	h.log.Debug("call queued", "node", node, "call", id, "deadline", deadline)
	select {
	case r := <-w.ch:
		stats.Status, stats.Timing = knownStatus(r.Status), r.Timing
		return r, nil
	case <-ctx.Done():
		return Response{}, fmt.Errorf("call %s to node %s: %w", id, node, ctx.Err())
	case <-expired:
		stats.Status = CallNoAnswer
		online := false
		if st, err := h.status(context.WithoutCancel(ctx), node); err == nil {
			online = st.Online
		}
		return Response{}, &NoAnswerError{Node: node, Waited: timeout, Queued: true, Online: online}
	}
}

// knownStatus is status when it is one a node or the hub answers with,
// else CallOther: a node's words never become a metric's label unread.
func knownStatus(status string) string {
	switch status {
	case StatusDone, StatusInterrupted, StatusExpired, StatusRejected, StatusDropped:
		return status
	}
	return CallOther
}

// errStoreFailed is the server's error code for a message a stream
// refuses (it is full and discards new messages).
const errStoreFailed jetstream.ErrorCode = 10077

// full reports whether err is a stream refusing a message because it is
// full: retrying soon does not help.
func full(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == errStoreFailed
}

func (h *Hub) known(node string) bool {
	i := sort.SearchStrings(h.names, node)
	return i < len(h.names) && h.names[i] == node
}

// onResult matches a result to the call waiting for it. The node is the
// one the subject names (the server only lets a node publish its own);
// anything else is dropped and logged. A result over the size limit is
// not decoded: the call it names (by its message id) fails.
func (h *Hub) onResult(m jetstream.Msg) {
	defer m.Ack()
	node, ok := nodeOfResult(m.Subject())
	if !ok {
		h.log.Warn("result on an unknown subject dropped", "bytes", len(m.Data()))
		return
	}
	if n := len(m.Data()); n > int(h.opts.Limits.MaxResultBytes) {
		h.dropOversized(node, m.Headers().Get(jetstream.MsgIDHeader), n)
		return
	}
	r, err := unmarshalResult(m.Data())
	if err != nil {
		h.log.Warn("malformed result dropped", "node", node, "bytes", len(m.Data()))
		return
	}
	h.mu.Lock()
	w := h.pending[r.CallID]
	switch {
	case w == nil:
		h.mu.Unlock()
		h.log.Warn("result dropped: no call waits for it (never sent, or the wait ended)", "node", node, "call", clip(r.CallID), "status", clip(r.Status))
		return
	case w.node != node:
		h.mu.Unlock()
		h.log.Warn("result dropped: it came from another node than the call was sent to", "call", clip(r.CallID), "from", node, "sent_to", w.node)
		return
	case r.Node != node:
		h.mu.Unlock()
		h.log.Warn("result dropped: the node names itself differently from its key", "call", clip(r.CallID), "from", node, "claims", clip(r.Node))
		return
	}
	delete(h.pending, r.CallID)
	h.mu.Unlock()
	w.ch <- Response{
		Result: r.Result, Verb: r.Verb, Notes: r.Notes, Status: r.Status,
		Node: node, NodeVersion: Version(r.NodeVersion), Duration: time.Duration(r.DurationMS) * time.Millisecond,
		Timing: r.Timing.timing(),
	}
}

// dropOversized answers the call a result too large to read was for, when
// that call waits for this node; the result itself is never decoded.
func (h *Hub) dropOversized(node, id string, size int) {
	limit := h.opts.Limits.MaxResultBytes
	h.log.Warn("result over the size limit dropped unread", "node", node, "call", clip(id), "bytes", size, "limit", int64(limit))
	h.mu.Lock()
	w := h.pending[id]
	if w == nil || w.node != node {
		h.mu.Unlock()
		return
	}
	delete(h.pending, id)
	h.mu.Unlock()
	w.ch <- Response{Status: StatusDropped, Node: node, Result: failure(executor.CodeTooLarge, fmt.Sprintf(
		"node %s's answer was %d bytes, over nats.node_limits.max_result_bytes (%s): the hub dropped it unread (the call may have run there)", node, size, limit))}
}

// NodeStatus is what the hub knows of a node's liveness.
type NodeStatus struct {
	Name string `json:"name"`
	// Online: a heartbeat younger than the TTL and, with the embedded
	// server, a live connection.
	Online    bool       `json:"online"`
	Heartbeat *Heartbeat `json:"heartbeat,omitempty"`
}

// List reports every configured node's status.
func (h *Hub) List(ctx context.Context) ([]NodeStatus, error) {
	out := make([]NodeStatus, 0, len(h.names))
	conns := h.connections()
	for _, n := range h.names {
		st, err := h.statusWith(ctx, n, conns)
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, nil
}

func (h *Hub) status(ctx context.Context, node string) (NodeStatus, error) {
	return h.statusWith(ctx, node, h.connections())
}

// statusWith is node's status; with the embedded server, conns are the
// keys connected to it (nil: cannot tell, trust the heartbeat).
func (h *Hub) statusWith(ctx context.Context, node string, conns map[string]bool) (NodeStatus, error) {
	st, err := readStatus(ctx, h.kv, node)
	if err != nil || !st.Online || conns == nil {
		return st, err
	}
	// With the embedded server a dead node's connection is gone at once,
	// before its last heartbeat expires.
	st.Online = conns[h.opts.Nodes[node]]
	return st, nil
}

// connections are the keys connected to the embedded server, nil without
// one or when it cannot tell.
func (h *Hub) connections() map[string]bool {
	if h.srv == nil {
		return nil
	}
	return h.srv.connected()
}

func readStatus(ctx context.Context, kv jetstream.KeyValue, node string) (NodeStatus, error) {
	st := NodeStatus{Name: node}
	// The bucket's stream between leaders (a cluster just formed, or
	// failing over) answers no one for a moment.
	e, err := whenReady(ctx, statusWait, func() (jetstream.KeyValueEntry, error) { return kv.Get(ctx, node) })
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
		return st, nil
	}
	if err != nil {
		return st, fmt.Errorf("status of node %s: %w", node, err)
	}
	var hb Heartbeat
	if err := json.Unmarshal(e.Value(), &hb); err != nil {
		return st, nil // a beat that does not decode says nothing
	}
	hb = hb.bounded()
	hb.Name = node // the key, which the server authorised, not the claim
	st.Heartbeat, st.Online = &hb, true
	return st, nil
}

// statusWait is how long a status read waits for the bucket's stream to
// answer again.
const statusWait = 2 * time.Second

// ListStatus reads the status of the named nodes through an existing
// connection (`hub nodes list` connects with the hub's key).
func ListStatus(ctx context.Context, nc *nats.Conn, names []string) ([]NodeStatus, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	kv, err := js.KeyValue(ctx, statusBucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil, fmt.Errorf("status bucket (has `hub serve` run with nats enabled?): %w", err)
	}
	if err != nil {
		return nil, fmt.Errorf("status bucket: %w", err)
	}
	sort.Strings(names)
	out := make([]NodeStatus, 0, len(names))
	for _, n := range names {
		st, err := readStatus(ctx, kv, n)
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, nil
}

// DialHub connects to url as the hub, with the seed in stateDir.
func DialHub(url, stateDir, caFile string) (*nats.Conn, error) {
	kp, err := LoadSeed(HubSeedFile(stateDir))
	if err != nil {
		return nil, err
	}
	pub, _ := kp.PublicKey()
	opts := []nats.Option{nats.Name("hub cli"), nats.Nkey(pub, kp.Sign), nats.CustomInboxPrefix(hubInbox), nats.Timeout(5 * time.Second)}
	if caFile != "" {
		opts = append(opts, nats.RootCAs(caFile))
	}
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		return nil, fmt.Errorf("connect to nats at %s: %w", url, err)
	}
	return nc, nil
}

// removeLegacyStorage removes the streams earlier versions kept in the
// embedded server's global account, before each node had an account of
// its own: nothing reads them any more. What they held was for a hub
// process that is gone (calls it queued, results it did not read).
func (h *Hub) removeLegacyStorage() error {
	name := filepath.Join(natsDir, server.JetStreamStoreDir, server.DEFAULT_GLOBAL_ACCOUNT)
	if _, err := h.state.root.Lstat(name); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err := h.state.root.RemoveAll(name); err != nil {
		return fmt.Errorf("remove the streams of an earlier version: %w", err)
	}
	h.log.Info("removed the streams of an earlier version (calls still queued for a node at the upgrade are dropped)", "dir", name)
	return nil
}

// embedded is the in-process NATS server; it can be restarted on the same
// address and storage (tests use that).
type embedded struct {
	mu   sync.Mutex
	opts *server.Options
	s    *server.Server
}

func startEmbedded(o HubOptions, dir, hubKey string) (*embedded, error) {
	host, portS, err := net.SplitHostPort(o.Listen)
	if err != nil {
		return nil, fmt.Errorf("nats.listen: %q is not host:port: %w", o.Listen, err)
	}
	port, err := strconv.Atoi(portS)
	if err != nil || port < 0 || port > 65535 {
		return nil, fmt.Errorf("nats.listen: %q has no valid port", o.Listen)
	}
	tlsOn := o.CertFile != "" && o.KeyFile != ""
	if !config.IsLoopback(host) && !tlsOn {
		return nil, fmt.Errorf("nats.listen: %s is not a loopback address and no TLS is configured (nats.cert_file, nats.key_file): refused", o.Listen)
	}
	if port == 0 {
		port = server.RANDOM_PORT
	}
	sopts, err := accountOptions(Accounts{HubKey: hubKey, Nodes: o.Nodes, Limits: o.Limits, Replicas: 1})
	if err != nil {
		return nil, err
	}
	sopts.ServerName, sopts.Host, sopts.Port = "hub", host, port
	sopts.JetStream, sopts.StoreDir = true, dir
	sopts.NoLog, sopts.NoSigs, sopts.MaxPayload = true, true, serverPayload(o.Limits)
	if tlsOn {
		tc, err := server.GenTLSConfig(&server.TLSConfigOpts{CertFile: o.CertFile, KeyFile: o.KeyFile})
		if err != nil {
			return nil, fmt.Errorf("nats TLS: %w", err)
		}
		sopts.TLSConfig, sopts.TLS = tc, true
	}
	e := &embedded{opts: sopts}
	if err := e.start(); err != nil {
		return nil, err
	}
	// A restart keeps the address nodes know.
	if addr, ok := e.s.Addr().(*net.TCPAddr); ok {
		sopts.Port = addr.Port
	}
	return e, nil
}

func (e *embedded) start() error {
	s, err := server.NewServer(e.opts)
	if err != nil {
		return fmt.Errorf("nats server: %w", err)
	}
	go s.Start()
	if !s.ReadyForConnections(30 * time.Second) {
		s.Shutdown()
		return errors.New("nats server: not ready for connections after 30s")
	}
	e.mu.Lock()
	e.s = s
	e.mu.Unlock()
	return nil
}

func (e *embedded) current() *server.Server {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.s
}

// InProcessConn lets the hub's connection reach the current server.
func (e *embedded) InProcessConn() (net.Conn, error) {
	s := e.current()
	if s == nil || !s.Running() {
		return nil, errors.New("nats server: not running")
	}
	return s.InProcessConn()
}

func (e *embedded) shutdown() {
	if s := e.current(); s != nil {
		s.Shutdown()
		s.WaitForShutdown()
	}
}

func (e *embedded) clientURL() string {
	scheme := "nats"
	if e.opts.TLS {
		scheme = "tls"
	}
	return fmt.Sprintf("%s://%s", scheme, net.JoinHostPort(e.opts.Host, strconv.Itoa(e.opts.Port)))
}

// connected are the keys of the clients connected now (nil: cannot tell).
func (e *embedded) connected() map[string]bool {
	s := e.current()
	if s == nil {
		return map[string]bool{}
	}
	cz, err := s.Connz(&server.ConnzOptions{Username: true, Limit: 1 << 16})
	if err != nil {
		return nil
	}
	keys := make(map[string]bool, len(cz.Conns))
	for _, c := range cz.Conns {
		keys[c.AuthorizedUser] = true
	}
	return keys
}

// after returns a channel closed after d on clk.
func after(clk clock.Clock, d time.Duration) <-chan struct{} {
	ch := make(chan struct{})
	clk.AfterFunc(d, func() { close(ch) })
	return ch
}

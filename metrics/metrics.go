package metrics

import (
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/a6afc2ce/hermes-hub/clock"
	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/hub"
	"github.com/a6afc2ce/hermes-hub/outbox"
)

// Namespace prefixes every metric of the hub (not the Go runtime's and the
// process's, which keep their standard names).
const Namespace = "hub"

// OutboxStats is the outbox as the metrics read it at scrape time
// (*outbox.Outbox satisfies it).
type OutboxStats interface {
	Stats() outbox.Stats
}

// Board is the adapters' states as the metrics and the readiness probe read
// them (*hub.StateBoard satisfies it).
type Board interface {
	All() []hub.AdapterState
}

// Verbs tells the registered verbs (*executor.Registry satisfies it).
type Verbs interface {
	Lookup(name string) (executor.Info, bool)
}

// Options configure Metrics.
type Options struct {
	// Clock dates deliveries for their latency; default real.
	Clock clock.Clock
	// Verbs are the verb names a verb label may take: any other name is
	// counted as "other" (all of them without Verbs), so a caller or a
	// node cannot add series by naming verbs.
	Verbs Verbs
}

// Metrics is the hub's registry. It implements hub.Observer and
// outbox.Events; give it to hub.RuntimeOptions, then Watch the runtime's
// outbox and state board.
type Metrics struct {
	reg   *prometheus.Registry
	clk   clock.Clock
	verbs Verbs

	turns       *prometheus.CounterVec
	verbCalls   *prometheus.CounterVec
	verbSeconds *prometheus.HistogramVec
	delivery    *prometheus.HistogramVec
	rateLimited *prometheus.CounterVec
	nodeCalls   *prometheus.CounterVec
	nodeSeconds *prometheus.HistogramVec

	watchOnce sync.Once
}

var (
	_ hub.Observer  = (*Metrics)(nil)
	_ outbox.Events = (*Metrics)(nil)
)

// New returns Metrics with the hub's collectors and the Go runtime's and
// the process's registered.
func New(opts Options) (*Metrics, error) {
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	m := &Metrics{
		reg:   prometheus.NewRegistry(),
		clk:   opts.Clock,
		verbs: opts.Verbs,
		turns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "turns_total",
			Help: "Turns the hub handled, by surface (telegram, discord, web, api) and status (executed, builtin, rejected, forbidden, denied, duplicate, notice, ignored, error).",
		}, []string{"surface", "status"}),
		verbCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "verb_calls_total",
			Help: "Verb calls, by verb (unknown for an unknown verb, other for a name that is not a registered verb's) and outcome (ok, or the error code; other for an unknown code).",
		}, []string{"verb", "outcome"}),
		verbSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: Namespace, Name: "verb_duration_seconds",
			Help:    "How long verb calls ran, by verb.",
			Buckets: []float64{.001, .005, .01, .05, .1, .5, 1, 5, 10, 30, 60, 300},
		}, []string{"verb"}),
		delivery: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: Namespace, Name: "outbox_delivery_seconds",
			Help:    "Time from a chunk's enqueueing to its delivery, by platform.",
			Buckets: []float64{.01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 3600},
		}, []string{"platform"}),
		rateLimited: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "outbox_rate_limited_total",
			Help: "Sends a platform refused with a rate limit (HTTP 429, retry after), by platform.",
		}, []string{"platform"}),
		nodeCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "node_calls_total",
			Help: "Calls to remote nodes, by node and status (done, interrupted, expired, rejected, dropped; no_answer, full, canceled without an answer; other for a status the hub does not know).",
		}, []string{"node", "status"}),
		nodeSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: Namespace, Name: "node_call_seconds",
			Help: "Where the time of answered calls to remote nodes went, by node and phase: round_trip (the hub's wait), and from the node's own account " +
				"ledger (recording the call before it runs), slot (waiting for a free slot), run, and transit (the round trip less those: queues, server, network).",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 5, 30, 300},
		}, []string{"node", "phase"}),
	}
	for _, c := range []prometheus.Collector{
		m.turns, m.verbCalls, m.verbSeconds, m.delivery, m.rateLimited, m.nodeCalls, m.nodeSeconds,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	} {
		if err := m.reg.Register(c); err != nil {
			return nil, fmt.Errorf("metrics: register: %w", err)
		}
	}
	return m, nil
}

// Watch registers the collectors read at scrape time: the outbox's
// counters and the adapters' states. Call it once, after the runtime is
// open; later calls do nothing.
func (m *Metrics) Watch(ob OutboxStats, board Board) error {
	err := errors.New("metrics: Watch called twice")
	m.watchOnce.Do(func() {
		err = nil
		if ob != nil {
			err = m.reg.Register(outboxCollector{ob})
		}
		if err == nil && board != nil {
			err = m.reg.Register(boardCollector{board})
		}
		if err != nil {
			err = fmt.Errorf("metrics: register: %w", err)
		}
	})
	return err
}

// MirrorStats is the mirror of the running hub (store.Mirror): the bytes
// appended to its inbound and outbound files.
type MirrorStats interface {
	Bytes() (inbound, outbound uint64)
}

// WatchMirror registers hub_mirror_bytes_total, read from m at scrape time.
func (m *Metrics) WatchMirror(ms MirrorStats) error {
	if err := m.reg.Register(mirrorCollector{ms}); err != nil {
		return fmt.Errorf("metrics: register: %w", err)
	}
	return nil
}

// Registry is the registry, for tests and other collectors.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the registry in the Prometheus text format. It checks no
// credentials: its mounter does.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// Turn counts a turn (hub.Observer).
func (m *Metrics) Turn(surface string, status hub.Status) {
	if surface == "" {
		surface = "unknown"
	}
	m.turns.WithLabelValues(surface, string(status)).Inc()
}

// Verb counts a verb call and its duration (hub.Observer). Its labels
// take only known values: registered verb names and error codes.
func (m *Metrics) Verb(out *executor.Outcome) {
	verb := m.verbLabel(out.Verb)
	outcome := "ok"
	if out.Err != nil {
		outcome = "other"
		if out.Err.Code.Known() {
			outcome = string(out.Err.Code)
		}
	}
	m.verbCalls.WithLabelValues(verb, outcome).Inc()
	m.verbSeconds.WithLabelValues(verb).Observe(out.Duration.Seconds())
}

// verbLabel is the verb label of a call of name: "unknown" for no verb,
// the name when it is a registered verb's, else "other".
func (m *Metrics) verbLabel(name string) string {
	if name == "" {
		return "unknown"
	}
	if m.verbs != nil {
		if info, ok := m.verbs.Lookup(name); ok && info.Name == name {
			return name
		}
	}
	return "other"
}

// NodeCall is one call to a remote node as the hub saw it (cmd/hub
// passes the nodes package's account of each call). Node is a configured
// node's name and Status one of the values hub_node_calls_total lists:
// the caller keeps the labels' values known.
type NodeCall struct {
	Node, Status string
	// Answered is whether the node answered; RoundTrip is then the hub's
	// wait for it.
	Answered  bool
	RoundTrip time.Duration
	// Ledger, Slot and Run are the node's own account of the call: how
	// long it took to record it, to get a slot, to run it; all zero when
	// it gave none.
	Ledger, Slot, Run time.Duration
}

// NodeCall counts a call to a node and observes where its time went.
func (m *Metrics) NodeCall(c NodeCall) {
	m.nodeCalls.WithLabelValues(c.Node, c.Status).Inc()
	if !c.Answered {
		return
	}
	m.nodeSeconds.WithLabelValues(c.Node, "round_trip").Observe(c.RoundTrip.Seconds())
	on := c.Ledger + c.Slot + c.Run
	if c.Ledger == 0 && c.Slot == 0 && c.Run == 0 {
		return
	}
	for _, p := range []struct {
		phase string
		d     time.Duration
	}{{"ledger", c.Ledger}, {"slot", c.Slot}, {"run", c.Run}, {"transit", max(c.RoundTrip-on, 0)}} {
		m.nodeSeconds.WithLabelValues(c.Node, p.phase).Observe(p.d.Seconds())
	}
}

// Delivered observes a chunk's delivery latency (outbox.Events).
func (m *Metrics) Delivered(e *outbox.Entry, _ outbox.Receipt) {
	if e.EnqueuedAt.IsZero() {
		return
	}
	d := m.clk.Now().Sub(e.EnqueuedAt)
	if d < 0 {
		d = 0
	}
	m.delivery.WithLabelValues(e.Target.Label()).Observe(d.Seconds())
}

// Dead does nothing: dead letters are read from the outbox at scrape time
// (outbox.Events).
func (m *Metrics) Dead(*outbox.Entry) {}

// Retrying counts rate-limited sends (outbox.Events); the other retries are
// read from the outbox at scrape time.
func (m *Metrics) Retrying(e *outbox.Entry, err error, _ time.Time) {
	if _, ok := outbox.RetryAfterOf(err); ok {
		m.rateLimited.WithLabelValues(e.Target.Label()).Inc()
	}
}

var (
	outboxChunksDesc    = prometheus.NewDesc(Namespace+"_outbox_chunks", "Chunks in the outbox now, by platform and state (pending includes in_flight; dead are dead letters kept for inspection).", []string{"platform", "state"}, nil)
	outboxDeliveredDesc = prometheus.NewDesc(Namespace+"_outbox_delivered_total", "Chunks delivered since the state was created, by platform.", []string{"platform"}, nil)
	outboxRetriedDesc   = prometheus.NewDesc(Namespace+"_outbox_retried_total", "Failed sends retried since the state was created, by platform.", []string{"platform"}, nil)
	outboxTargetsDesc   = prometheus.NewDesc(Namespace+"_outbox_targets", "Targets with pending chunks, by whether a sender is configured for them (routable true or false).", []string{"routable"}, nil)
	mirrorBytesDesc     = prometheus.NewDesc(Namespace+"_mirror_bytes_total", "Bytes appended to the chat mirror's JSONL files by this run, by direction (inbound or outbound).", []string{"direction"}, nil)
	adapterStateDesc    = prometheus.NewDesc(Namespace+"_adapter_state", "1 for an adapter's current state, 0 for its other states.", []string{"adapter", "state"}, nil)
)

// outboxCollector reads the outbox's counters when scraped.
type outboxCollector struct{ ob OutboxStats }

func (c outboxCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{outboxChunksDesc, outboxDeliveredDesc, outboxRetriedDesc, outboxTargetsDesc} {
		ch <- d
	}
}

func (c outboxCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.ob.Stats()
	for p, ps := range s.Platforms {
		ch <- prometheus.MustNewConstMetric(outboxChunksDesc, prometheus.GaugeValue, float64(ps.Pending), p, "pending")
		ch <- prometheus.MustNewConstMetric(outboxChunksDesc, prometheus.GaugeValue, float64(ps.InFlight), p, "in_flight")
		ch <- prometheus.MustNewConstMetric(outboxChunksDesc, prometheus.GaugeValue, float64(ps.Dead), p, "dead")
		ch <- prometheus.MustNewConstMetric(outboxDeliveredDesc, prometheus.CounterValue, float64(ps.Delivered), p)
		ch <- prometheus.MustNewConstMetric(outboxRetriedDesc, prometheus.CounterValue, float64(ps.Retried), p)
	}
	ch <- prometheus.MustNewConstMetric(outboxTargetsDesc, prometheus.GaugeValue, float64(s.Targets-s.Unroutable), "true")
	ch <- prometheus.MustNewConstMetric(outboxTargetsDesc, prometheus.GaugeValue, float64(s.Unroutable), "false")
}

// mirrorCollector reads the mirror's byte counts when scraped.
type mirrorCollector struct{ m MirrorStats }

func (c mirrorCollector) Describe(ch chan<- *prometheus.Desc) { ch <- mirrorBytesDesc }

func (c mirrorCollector) Collect(ch chan<- prometheus.Metric) {
	in, out := c.m.Bytes()
	ch <- prometheus.MustNewConstMetric(mirrorBytesDesc, prometheus.CounterValue, float64(in), "inbound")
	ch <- prometheus.MustNewConstMetric(mirrorBytesDesc, prometheus.CounterValue, float64(out), "outbound")
}

// boardCollector reads the adapters' states when scraped.
type boardCollector struct{ b Board }

func (c boardCollector) Describe(ch chan<- *prometheus.Desc) { ch <- adapterStateDesc }

func (c boardCollector) Collect(ch chan<- prometheus.Metric) {
	for _, a := range c.b.All() {
		for _, st := range hub.States {
			v := 0.0
			if a.State == st {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(adapterStateDesc, prometheus.GaugeValue, v, a.Name, string(st))
		}
	}
}

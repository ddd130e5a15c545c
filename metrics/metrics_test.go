package metrics_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/a6afc2ce/hermes-hub/adapters/web"
	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/hub"
	"github.com/a6afc2ce/hermes-hub/hub/hubtest"
	"github.com/a6afc2ce/hermes-hub/internal/testkit"
	"github.com/a6afc2ce/hermes-hub/metrics"
)

// panel is a real, started hub with the web server in front of it, its
// metrics and probes mounted, served over HTTP.
type panel struct {
	rt  *hub.Runtime
	rec *hubtest.Recorder
	srv *web.Server
	ts  *httptest.Server
}

func newPanel(t *testing.T) *panel {
	t.Helper()
	cfg := hubtest.Config(t, "", "")
	// The verbs the runtime registers too: the names a verb label may take.
	verbs := executor.NewRegistry()
	ws, err := hubtest.RealVerbs(verbs, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	m, err := metrics.New(metrics.Options{Verbs: verbs})
	if err != nil {
		t.Fatal(err)
	}
	env := hubtest.Open(t, cfg, hubtest.Options{Runtime: hub.RuntimeOptions{Observer: m, OutboxEvents: m}})
	rt := env.Runtime
	if err := m.WatchMirror(rt.Mirror); err != nil {
		t.Fatal(err)
	}
	if err := m.Watch(rt.Outbox, rt.Board); err != nil {
		t.Fatal(err)
	}
	rec := hubtest.NewRecorder()
	rec.HandleAll(t, rt)
	srv, err := web.New(web.Options{
		Intake: rt.Hub, Config: cfg.Web, Logger: testkit.Discard(), Status: rt.Board.Reporter("web"),
		Health: metrics.Health(rt.Board, rt.Running), Metrics: m.Handler(),
	})
	if err != nil {
		t.Fatal(err)
	}
	env.Start(t)
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	rt.Board.Set("web", "running", "")
	return &panel{rt: rt, rec: rec, srv: srv, ts: ts}
}

func (p *panel) do(t *testing.T, method, path, body string, auth bool) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, p.ts.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if auth {
		req.Header.Set("Authorization", "Bearer "+p.srv.Token())
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := p.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// scrape reads /metrics with the token and parses it.
func (p *panel) scrape(t *testing.T) map[string]*dto.MetricFamily {
	t.Helper()
	code, body := p.do(t, http.MethodGet, web.MetricsPath, "", true)
	if code != http.StatusOK {
		t.Fatalf("GET /metrics = %d %s", code, body)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader([]byte(body)))
	if err != nil {
		t.Fatalf("parse /metrics: %v\n%s", err, body)
	}
	return fams
}

// value is the value of the series of name whose labels include want; ok is
// false when there is none.
func value(fams map[string]*dto.MetricFamily, name string, want map[string]string) (v float64, ok bool) {
	f := fams[name]
	if f == nil {
		return 0, false
	}
next:
	for _, m := range f.GetMetric() {
		got := map[string]string{}
		for _, l := range m.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		for k, w := range want {
			if got[k] != w {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			v += m.GetCounter().GetValue()
		case m.Gauge != nil:
			v += m.GetGauge().GetValue()
		case m.Histogram != nil:
			v += float64(m.GetHistogram().GetSampleCount())
		}
		ok = true
	}
	return v, ok
}

func TestProbes(t *testing.T) {
	p := newPanel(t)
	tests := []struct {
		name     string
		set      func()
		path     string
		wantCode int
		wantBody string
	}{
		{"healthz", func() {}, web.HealthPath, http.StatusOK, "ok\n"},
		{"ready", func() { p.rt.Board.Set("telegram", "running", "") }, web.ReadyPath, http.StatusOK, "ready\n"},
		{"ready while retrying", func() { p.rt.Board.Set("telegram", "degraded", "api.telegram.org: 502, retrying") }, web.ReadyPath, http.StatusOK, "ready\n"},
		{"adapter stopped", func() { p.rt.Board.Set("telegram", "stopped", "token /etc/secret rejected") }, web.ReadyPath, http.StatusServiceUnavailable, "not ready: adapters not running: telegram stopped\n"},
		{"adapter starting", func() { p.rt.Board.Set("telegram", "starting", "") }, web.ReadyPath, http.StatusServiceUnavailable, "not ready: adapters not running: telegram starting\n"},
		{"healthz while not ready", func() {}, web.HealthPath, http.StatusOK, "ok\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.set()
			// No credentials: the probes answer before login.
			code, body := p.do(t, http.MethodGet, tt.path, "", false)
			if code != tt.wantCode || body != tt.wantBody {
				t.Errorf("GET %s = %d %q, want %d %q", tt.path, code, body, tt.wantCode, tt.wantBody)
			}
		})
	}
}

func TestProbesKeepTheHostAllowList(t *testing.T) {
	p := newPanel(t)
	req, err := http.NewRequest(http.MethodGet, p.ts.URL+web.HealthPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = "evil.example.org"
	resp, err := p.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		t.Errorf("GET /healthz with Host evil.example.org = 200, want a refusal")
	}
}

func TestMetricsNeedTheToken(t *testing.T) {
	p := newPanel(t)
	if code, body := p.do(t, http.MethodGet, web.MetricsPath, "", false); code != http.StatusUnauthorized {
		t.Errorf("GET /metrics without the token = %d %s, want 401", code, body)
	}
}

func TestMetricsMove(t *testing.T) {
	p := newPanel(t)
	before := p.scrape(t)
	for _, name := range []string{"go_goroutines", "process_start_time_seconds", "hub_adapter_state", "hub_outbox_targets"} {
		if _, ok := before[name]; !ok {
			t.Errorf("metric %s is missing", name)
		}
	}
	if v, _ := value(before, "hub_adapter_state", map[string]string{"adapter": "web", "state": "running"}); v != 1 {
		t.Errorf(`hub_adapter_state{adapter="web",state="running"} = %v, want 1`, v)
	}

	// A chat turn from the panel: a verb runs, its reply is delivered.
	code, body := p.do(t, http.MethodPost, "/api/messages", `{"text":"/sys.machineInfo"}`, true)
	if code != http.StatusAccepted || !strings.Contains(body, `"executed"`) {
		t.Fatalf("POST /api/messages = %d %s", code, body)
	}
	p.rec.Wait(t, "web", 1)
	// An API call: a turn of the api surface.
	if code, body := p.do(t, http.MethodPost, "/api/execute", `{"verb":"sys.machineInfo"}`, true); code != http.StatusOK {
		t.Fatalf("POST /api/execute = %d %s", code, body)
	}

	var after map[string]*dto.MetricFamily
	testkit.WaitFor(t, "the delivery counted", func() bool {
		after = p.scrape(t)
		v, _ := value(after, "hub_outbox_delivered_total", map[string]string{"platform": "web"})
		return v >= 1
	})
	tests := []struct {
		name   string
		labels map[string]string
		delta  float64
	}{
		{"hub_turns_total", map[string]string{"surface": "web", "status": "executed"}, 1},
		{"hub_turns_total", map[string]string{"surface": "api", "status": "executed"}, 1},
		{"hub_verb_calls_total", map[string]string{"verb": "sys.machineInfo", "outcome": "ok"}, 2},
		{"hub_verb_duration_seconds", map[string]string{"verb": "sys.machineInfo"}, 2},
		{"hub_outbox_delivered_total", map[string]string{"platform": "web"}, 1},
		{"hub_outbox_delivery_seconds", map[string]string{"platform": "web"}, 1},
		// The panel's message and the API call are mirrored both ways.
		{"hub_mirror_bytes_total", map[string]string{"direction": "inbound"}, 20},
		{"hub_mirror_bytes_total", map[string]string{"direction": "outbound"}, 20},
	}
	for _, tt := range tests {
		b, _ := value(before, tt.name, tt.labels)
		a, ok := value(after, tt.name, tt.labels)
		if !ok {
			t.Errorf("%s%v is missing", tt.name, tt.labels)
			continue
		}
		if a-b < tt.delta {
			t.Errorf("%s%v moved from %v to %v, want at least +%v", tt.name, tt.labels, b, a, tt.delta)
		}
	}
	if v, ok := value(after, "hub_outbox_chunks", map[string]string{"platform": "web", "state": "pending"}); !ok || v != 0 {
		t.Errorf(`hub_outbox_chunks{platform="web",state="pending"} = %v (present %v), want 0 after delivery`, v, ok)
	}
}

// Verb names and error codes that are not the registry's or the
// executor's (a node's answer, a caller's unknown verb) add no series:
// fifty distinct ones are counted as "other".
func TestVerbLabelsTakeKnownValuesOnly(t *testing.T) {
	reg := executor.NewRegistry()
	executor.MustRegister(reg, executor.Info{Name: "test.echo", ReadOnly: true}, executor.VerbFunc[struct{}, executor.Result](
		func(context.Context, struct{}) (executor.Result, error) { return executor.Result{}, nil }))
	m, err := metrics.New(metrics.Options{Verbs: reg})
	if err != nil {
		t.Fatal(err)
	}
	m.Verb(&executor.Outcome{Verb: "test.echo"})
	m.Verb(&executor.Outcome{Verb: "test.echo", Err: &executor.Error{Code: executor.CodeNotFound}})
	m.Verb(&executor.Outcome{})
	for i := range 50 {
		hostile := fmt.Sprintf("%d%s", i, strings.Repeat("x", 4096))
		m.Verb(&executor.Outcome{Verb: hostile, Err: &executor.Error{Code: executor.ErrorCode(hostile)}})
		m.Verb(&executor.Outcome{Verb: "test.echo", Err: &executor.Error{Code: executor.ErrorCode(hostile)}})
	}
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	body := rec.Body.String()
	if strings.Contains(body, "xxxx") || len(body) > 64<<10 {
		t.Fatalf("/metrics is %d bytes and carries the hostile names", len(body))
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		labels map[string]string
		want   float64
	}{
		{map[string]string{"verb": "test.echo", "outcome": "ok"}, 1},
		{map[string]string{"verb": "test.echo", "outcome": "not_found"}, 1},
		{map[string]string{"verb": "test.echo", "outcome": "other"}, 50},
		{map[string]string{"verb": "unknown", "outcome": "ok"}, 1},
		{map[string]string{"verb": "other", "outcome": "other"}, 50},
	}
	for _, tt := range tests {
		if v, _ := value(fams, "hub_verb_calls_total", tt.labels); v != tt.want {
			t.Errorf("hub_verb_calls_total%v = %v, want %v", tt.labels, v, tt.want)
		}
	}
	if n := len(fams["hub_verb_calls_total"].GetMetric()); n != len(tests) {
		t.Errorf("hub_verb_calls_total has %d series, want %d", n, len(tests))
	}
}

// A node call is counted by node and status; an answered one observes its
// round trip, and, when the node gave its account, the node's phases and
// the transit left of the round trip (never below zero).
func TestNodeCalls(t *testing.T) {
	m, err := metrics.New(metrics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ms := time.Millisecond
	m.NodeCall(metrics.NodeCall{Node: "db-1", Status: "done", Answered: true, RoundTrip: 10 * ms,
		Ledger: 2 * ms, Slot: 1 * ms, Run: 3 * ms})
	m.NodeCall(metrics.NodeCall{Node: "db-1", Status: "done", Answered: true, RoundTrip: 4 * ms,
		Ledger: 2 * ms, Slot: 1 * ms, Run: 3 * ms}) // a node's account longer than the wait
	m.NodeCall(metrics.NodeCall{Node: "db-1", Status: "other", Answered: true, RoundTrip: 5 * ms}) // no account
	m.NodeCall(metrics.NodeCall{Node: "db-2", Status: "no_answer", RoundTrip: time.Minute})
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(rec.Body.String()))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"hub_node_calls_total", map[string]string{"node": "db-1", "status": "done"}, 2},
		{"hub_node_calls_total", map[string]string{"node": "db-1", "status": "other"}, 1},
		{"hub_node_calls_total", map[string]string{"node": "db-2", "status": "no_answer"}, 1},
		{"hub_node_call_seconds", map[string]string{"node": "db-1", "phase": "round_trip"}, 3},
		{"hub_node_call_seconds", map[string]string{"node": "db-1", "phase": "ledger"}, 2},
		{"hub_node_call_seconds", map[string]string{"node": "db-1", "phase": "slot"}, 2},
		{"hub_node_call_seconds", map[string]string{"node": "db-1", "phase": "run"}, 2},
		{"hub_node_call_seconds", map[string]string{"node": "db-1", "phase": "transit"}, 2},
		{"hub_node_call_seconds", map[string]string{"node": "db-2"}, 0},
	} {
		if v, _ := value(fams, tt.name, tt.labels); v != tt.want {
			t.Errorf("%s%v = %v, want %v", tt.name, tt.labels, v, tt.want)
		}
	}
	sums := map[string]float64{}
	for _, s := range fams["hub_node_call_seconds"].GetMetric() {
		for _, l := range s.GetLabel() {
			if l.GetName() == "phase" {
				sums[l.GetValue()] = s.GetHistogram().GetSampleSum()
			}
		}
	}
	// transit: 10 − 6 ms, and 0 for the account longer than the wait.
	if got := sums["transit"]; math.Abs(got-0.004) > 1e-9 || math.Abs(sums["round_trip"]-0.019) > 1e-9 || math.Abs(sums["ledger"]-0.004) > 1e-9 {
		t.Errorf("sums %v", sums)
	}
}

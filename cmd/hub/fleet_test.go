//go:build unix

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/internal/testkit"
	"github.com/a6afc2ce/hermes-hub/nodes"
)

// A fleet is one `hub serve` process with many nodes: one node in ten a
// `hub node` process (those are the ones killed and restarted), the others
// the node's runtime in the test process (nodes.StartNode), each with its
// own NATS connection and ledger, sharing one executor. They connect
// through counting proxies, which give the NATS traffic of an idle node.
// Calls go through the panel's API (POST /api/execute in the node's
// remote workspace); the panel's Nodes view and `hub nodes list` are
// read.

// fleetOpts size a fleet run.
type fleetOpts struct {
	nodes   int
	cluster bool
	load    time.Duration // how long the callers call (at least until the kills are over)
	idle    time.Duration // the idle window the heartbeat traffic is measured over
	callers int
}

// long reports whether the long version of the cluster tests runs.
func long() bool { return os.Getenv("LAB_CLUSTER_LONG") == "1" }

// TestClusterHundredNodes runs a fleet on the embedded server and on a
// three-server cluster: calls spread over every node through the panel's
// API, every node online in the panel's Nodes view and `hub nodes list`,
// one node in ten SIGKILLed and started again during the calls. Every
// call is answered: with its result, or (a call on a killed node)
// "may or may not have completed". It logs the figures: calls/s, p50 and
// p99 round trip, the hub's memory and CPU, the heartbeat traffic of an
// idle node, and how long the hub took to see a killed node offline. The
// short version (make test) has 20 nodes; LAB_CLUSTER_LONG=1 runs 100.
func TestClusterHundredNodes(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		testkit.Unavailable(t, "no /proc: the hub's CPU and memory are read from it")
	}
	o := fleetOpts{nodes: 20, load: 3 * time.Second, idle: 6 * time.Second, callers: 8}
	if long() {
		o = fleetOpts{nodes: 100, load: 60 * time.Second, idle: 30 * time.Second, callers: 16}
	}
	t.Run("Embedded", func(t *testing.T) { runFleet(t, o) })
	o.cluster = true
	t.Run("Cluster", func(t *testing.T) { runFleet(t, o) })
}

// fleet is a running fleet.
type fleet struct {
	t       *testing.T
	o       fleetOpts
	dir     string
	config  string
	base    string // the panel's address
	token   string
	hub     *exec.Cmd
	names   []string
	procs   map[string]*nodeProc
	proxies []*countingProxy
}

// nodeProc is a `hub node` process of the fleet.
type nodeProc struct {
	config string // its log is next to it (.log)
	cmd    *exec.Cmd
	done   chan struct{}
	runs   int
}

func fleetNames(n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = "n" + strconv.Itoa(i+1)
	}
	return names
}

// isProc: every tenth node is a process.
func isProc(i int) bool { return (i+1)%10 == 0 }

func runFleet(t *testing.T, o fleetOpts) {
	f := &fleet{t: t, o: o, dir: t.TempDir(), names: fleetNames(o.nodes), procs: map[string]*nodeProc{}}
	f.config = filepath.Join(f.dir, "hub.yml")
	ws := workspace(t)
	extra := f.hubConfig(ws)
	var seeds map[string]string
	var upstream []string
	if o.cluster {
		hc := newHubCluster(t, f.dir, f.names, ", ack_wait: 5s", extra)
		seeds = hc.seeds
		for _, s := range hc.cluster.Servers {
			upstream = append(upstream, s.Listen())
		}
	} else {
		port := testkit.Port(t)
		nats := fmt.Sprintf("{embedded: true, listen: \"127.0.0.1:%d\", ack_wait: 5s}", port)
		seeds = writeHubConfig(t, f.config, filepath.Join(f.dir, "state"), nats, f.names, extra)
		upstream = []string{fmt.Sprintf("127.0.0.1:%d", port)}
	}
	started := time.Now()
	cmd, url, logs := startServeWithin(t, f.dir, 3*time.Minute, nil, "--config", f.config)
	f.hub = cmd
	f.base, f.token = url[:strings.Index(url, "/#")], url[strings.Index(url, "#token=")+len("#token="):]
	t.Logf("hub serve with %d nodes ready in %s", o.nodes, time.Since(started).Round(time.Millisecond))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("hub log:\n%s", tailString(logs.String(), 4000))
		}
	})
	var proxyURLs []string
	for _, u := range upstream {
		p := startProxy(t, u)
		f.proxies = append(f.proxies, p)
		proxyURLs = append(proxyURLs, "nats://"+p.addr)
	}
	f.startNodes(ws, seeds, strings.Join(proxyURLs, ","), strings.Join(prefixed("nats://", upstream), ","))
	testkit.WaitFor(t, "every node online in the panel's Nodes view", func() bool { return f.online() == o.nodes })
	f.listOnline(o.nodes)

	idle := f.idleFigures()
	figs := f.load()
	testkit.WaitFor(t, "every node online again in the panel's Nodes view", func() bool { return f.online() == o.nodes })
	f.listOnline(o.nodes)
	mode := "embedded server"
	if o.cluster {
		mode = "three-server cluster, R3"
	}
	t.Logf("figures (%d nodes, %s, %d callers, %d killed and restarted): %s; %s", o.nodes, mode, o.callers, len(f.procs), figs, idle)
}

func prefixed(prefix string, ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = prefix + s
	}
	return out
}

// hubConfig is the fleet hub's configuration besides state_dir, nats and
// nodes: the panel, a remote workspace per node and a role that may use
// them all.
func (f *fleet) hubConfig(ws string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "workspace: %q\nweb:\n  enabled: true\n  listen: 127.0.0.1:0\nverbs: {timeout: 5m}\naccess:\n  roles:\n    ops:\n      verbs: [\"*\", \"admin.*\"]\n      workspaces: [default, %s]\n  grants:\n    web: [ops]\nworkspaces:\n",
		ws, strings.Join(prefixed("r", f.numbers()), ", "))
	for i, n := range f.names {
		fmt.Fprintf(&b, "  r%d:\n    destination: {kind: remote, node: %s, workspace: main}\n", i+1, n)
	}
	return b.String()
}

func (f *fleet) numbers() []string {
	out := make([]string, len(f.names))
	for i := range f.names {
		out[i] = strconv.Itoa(i + 1)
	}
	return out
}

// startNodes starts every node: the runtimes in this process through the
// proxies (viaProxy), the processes straight (direct).
func (f *fleet) startNodes(ws string, seeds map[string]string, viaProxy, direct string) {
	t := f.t
	cfg := config.Default()
	cfg.Workspace, cfg.StateDir = ws, filepath.Join(f.dir, "exec-state")
	tc, err := buildExecutor(cfg, testkit.Discard())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tc.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	for i, name := range f.names {
		state := filepath.Join(f.dir, name+"-state")
		if isProc(i) {
			p := &nodeProc{config: filepath.Join(f.dir, name+".yml")}
			data := fmt.Sprintf("node: {name: %s, nats_url: %q, nkey_file: %q}\nstate_dir: %q\nworkspaces: {main: {path: %q}}\n", name, direct, seeds[name], state, ws)
			if err := os.WriteFile(p.config, []byte(data), 0o600); err != nil {
				t.Fatal(err)
			}
			f.procs[name] = p
			f.startProc(p)
			continue
		}
		kp, err := nodes.LoadSeed(seeds[name])
		if err != nil {
			t.Fatal(err)
		}
		n, err := nodes.StartNode(t.Context(), nodes.NodeOptions{Name: name, URL: viaProxy, Key: kp, StateDir: state,
			Workspaces: map[string]*executor.Executor{"main": tc.exec}, Default: "main", Version: "fleet", Logger: testkit.Discard()})
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() { n.Run(ctx) })
	}
}

func (f *fleet) startProc(p *nodeProc) {
	p.cmd = exec.Command(hubBin, "node", "--config", p.config)
	logFile := strings.TrimSuffix(p.config, ".yml") + ".log"
	lf, err := os.OpenFile(logFile, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		f.t.Fatal(err)
	}
	defer lf.Close()
	p.cmd.Stdout, p.cmd.Stderr = lf, lf
	if err := p.cmd.Start(); err != nil {
		f.t.Fatal(err)
	}
	if p.runs++; p.runs == 1 {
		f.t.Cleanup(func() {
			if f.t.Failed() {
				data, _ := os.ReadFile(logFile)
				f.t.Logf("%s:\n%s", logFile, tailString(string(data), 3000))
			}
		})
	}
	p.done = make(chan struct{})
	cmd, done := p.cmd, p.done
	go func() { cmd.Wait(); close(done) }()
	f.t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		<-done
	})
}

// api calls the panel's API.
func (f *fleet) api(client *http.Client, method, path, body string) (int, []byte, error) {
	req, err := http.NewRequest(method, f.base+path, strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+f.token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp.StatusCode, data, err
}

// nodesView is the panel's Nodes view, by node: online or not.
func (f *fleet) nodesView() map[string]bool {
	code, data, err := f.api(http.DefaultClient, http.MethodGet, "/api/nodes", "")
	if err != nil || code != http.StatusOK {
		return nil
	}
	var v struct {
		Configured bool `json:"configured"`
		Nodes      []struct {
			Name   string `json:"name"`
			Online bool   `json:"online"`
		} `json:"nodes"`
	}
	if json.Unmarshal(data, &v) != nil || !v.Configured {
		return nil
	}
	out := map[string]bool{}
	for _, n := range v.Nodes {
		out[n.Name] = n.Online
	}
	return out
}

func (f *fleet) online() int {
	n := 0
	for _, on := range f.nodesView() {
		if on {
			n++
		}
	}
	return n
}

// listOnline checks that `hub nodes list` shows want nodes online. A
// command the servers do not answer within its 10 seconds (a cluster on
// a loaded machine) is run again; what it prints must parse.
func (f *fleet) listOnline(want int) {
	f.t.Helper()
	testkit.WaitFor(f.t, fmt.Sprintf("hub nodes list to show %d of %d nodes online", want, f.o.nodes), func() bool {
		out, errs, code := runHub(f.t, f.dir, "", "nodes", "list", "--config", f.config, "--json")
		if code != 0 {
			f.t.Logf("hub nodes list: %d %s", code, errs)
			return false
		}
		var l []nodes.NodeStatus
		if err := json.Unmarshal([]byte(out), &l); err != nil {
			f.t.Fatalf("hub nodes list printed %q: %v", out, err)
		}
		n := 0
		for _, s := range l {
			if s.Online {
				n++
			}
		}
		if len(l) != f.o.nodes || n != want {
			f.t.Logf("hub nodes list: %d nodes, %d online; want %d, %d online", len(l), n, f.o.nodes, want)
			return false
		}
		return true
	})
}

// idleFigures measures, over the idle window, what an idle node's
// runtime sends and receives (its heartbeats, its pull's renewals and
// the server's heartbeats) and the hub's CPU.
func (f *fleet) idleFigures() string {
	inproc := f.o.nodes - len(f.procs)
	b0, cpu0, t0 := f.proxyBytes(), hubCPU(f.t, f.hub.Process.Pid), time.Now()
	time.Sleep(f.o.idle)
	b1, cpu1, el := f.proxyBytes(), hubCPU(f.t, f.hub.Process.Pid), time.Since(t0)
	return fmt.Sprintf("idle: heartbeat traffic %.0f B/s per node (%d node runtimes over %s), hub CPU %.1f%% of a core, hub RSS %.1f MiB",
		float64(b1-b0)/float64(inproc)/el.Seconds(), inproc, el.Round(time.Second), 100*(cpu1-cpu0).Seconds()/el.Seconds(), float64(hubRSS(f.hub.Process.Pid))/1024)
}

func (f *fleet) proxyBytes() int64 {
	var n int64
	for _, p := range f.proxies {
		n += p.bytes.Load()
	}
	return n
}

// callOutcome is one call of the load.
type callOutcome struct {
	node     string // "" for the hub's own workspace
	answered time.Time
	rtt      time.Duration
	result   string
	errText  string
}

// caller makes calls until stop: to every node in turn, or with local to
// the hub's own workspace.
type callers struct {
	f     *fleet
	local bool
	seq   atomic.Int64
	mu    sync.Mutex
	outs  []callOutcome
	stop  chan struct{}
	wg    sync.WaitGroup
}

func (f *fleet) startCallers(local bool) *callers {
	c := &callers{f: f, local: local, stop: make(chan struct{})}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: f.o.callers}, Timeout: 5 * time.Minute}
	for range f.o.callers {
		c.wg.Go(func() {
			for {
				select {
				case <-c.stop:
					return
				default:
				}
				path, node := "/api/execute?workspace=default", ""
				if !local {
					i := int(c.seq.Add(1)) % len(f.names)
					path, node = fmt.Sprintf("/api/execute?workspace=r%d", i+1), f.names[i]
				}
				t0 := time.Now()
				code, data, err := f.api(client, http.MethodPost, path, existsEnv)
				o := callOutcome{node: node, answered: time.Now(), rtt: time.Since(t0), result: string(data)}
				if err != nil || code != http.StatusOK {
					o.errText = fmt.Sprintf("HTTP %d %v", code, err)
				}
				c.mu.Lock()
				c.outs = append(c.outs, o)
				c.mu.Unlock()
			}
		})
	}
	return c
}

// end stops the callers and returns every call made.
func (c *callers) end() []callOutcome {
	close(c.stop)
	c.wg.Wait()
	return c.outs
}

// window is the figures of the calls answered between from and to.
func window(outs []callOutcome, from, to time.Time) string {
	var rtts []time.Duration
	for _, o := range outs {
		if o.errText == "" && !o.answered.Before(from) && o.answered.Before(to) {
			rtts = append(rtts, o.rtt)
		}
	}
	slices.Sort(rtts)
	pct := func(p float64) time.Duration {
		if len(rtts) == 0 {
			return 0
		}
		return rtts[min(len(rtts)-1, int(p*float64(len(rtts))))]
	}
	return fmt.Sprintf("%.0f calls/s, round trip p50 %s p99 %s", float64(len(rtts))/to.Sub(from).Seconds(), pct(0.5).Round(10*time.Microsecond), pct(0.99).Round(10*time.Microsecond))
}

// load calls every node in turn from the callers: first steadily (the
// figures: calls/s, round trips, the hub's CPU and memory), then while
// the process nodes are SIGKILLed at once and each started again as soon
// as the panel shows it offline. It checks every answer and returns the
// figures, with those of the same calls to the hub's own workspace.
func (f *fleet) load() string {
	t := f.t
	local := f.startCallers(true)
	time.Sleep(f.o.load / 3)
	lt0 := time.Now()
	time.Sleep(f.o.load / 3)
	lt1 := time.Now()
	f.check(local.end())

	c := f.startCallers(false)
	rss := newRSSSampler(f.hub.Process.Pid)
	time.Sleep(f.o.load / 3) // warm up
	cpu0, t0 := hubCPU(t, f.hub.Process.Pid), time.Now()
	time.Sleep(f.o.load)
	cpu1, t1 := hubCPU(t, f.hub.Process.Pid), time.Now()
	offline := f.killProcs()
	time.Sleep(f.o.load / 3) // calls to the restarted nodes
	outs := c.end()
	rssMax := rss.stop()
	unsure := f.check(outs)
	slices.Sort(offline)
	return fmt.Sprintf("steady: %s, hub CPU %.0f%% of a core, hub RSS max %.1f MiB; the same to the hub's own workspace: %s; in all %d calls, %d answered \"may or may not have completed\"; a killed node seen offline after %s to %s",
		window(outs, t0, t1), 100*(cpu1-cpu0).Seconds()/t1.Sub(t0).Seconds(), float64(rssMax)/1024, window(local.outs, lt0, lt1),
		len(outs), unsure, first(offline).Round(time.Millisecond), last(offline).Round(time.Millisecond))
}

// check checks every call's answer: its result, or for a call on a
// killed node, "may or may not have completed" (counted).
func (f *fleet) check(outs []callOutcome) (unsure int) {
	for _, o := range outs {
		switch {
		case o.errText != "":
			f.t.Errorf("call to %q: %s %s", o.node, o.errText, o.result)
		case strings.Contains(o.result, `"succeeded":true`) && strings.Contains(o.result, `"exists":true`):
		case f.procs[o.node] != nil && strings.Contains(o.result, "may or may not have completed"):
			unsure++
		default:
			f.t.Errorf("call to %q answered %s", o.node, o.result)
		}
	}
	return unsure
}

func first(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	return d[0]
}

func last(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	return d[len(d)-1]
}

// killProcs SIGKILLs every node process at once, starts each again once
// the panel's Nodes view shows it offline, and returns how long each took
// to be seen offline.
func (f *fleet) killProcs() []time.Duration {
	killed := time.Now()
	down := map[string]bool{}
	for name, p := range f.procs {
		p.cmd.Process.Kill()
		<-p.done
		down[name] = true
	}
	var offline []time.Duration
	testkit.WaitFor(f.t, "the killed nodes offline in the panel's Nodes view", func() bool {
		view := f.nodesView()
		for name := range down {
			if on, ok := view[name]; ok && !on {
				offline = append(offline, time.Since(killed))
				delete(down, name)
				f.startProc(f.procs[name])
			}
		}
		return len(down) == 0
	})
	return offline
}

// hubCPU is the CPU time the process pid has used (user and system).
func hubCPU(t *testing.T, pid int) time.Duration {
	t.Helper()
	d, err := testkit.ProcessCPU(pid)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// hubRSS is the resident memory of pid, KiB.
func hubRSS(pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb
		}
	}
	return 0
}

// rssSampler samples a process's resident memory every 250ms.
type rssSampler struct {
	stopped chan struct{}
	done    chan int64
}

func newRSSSampler(pid int) *rssSampler {
	s := &rssSampler{stopped: make(chan struct{}), done: make(chan int64, 1)}
	go func() {
		var peak int64
		for {
			peak = max(peak, hubRSS(pid))
			select {
			case <-s.stopped:
				s.done <- peak
				return
			case <-time.After(250 * time.Millisecond):
			}
		}
	}()
	return s
}

func (s *rssSampler) stop() int64 { close(s.stopped); return <-s.done }

// countingProxy forwards loopback TCP connections to a server and counts
// the bytes in both directions.
type countingProxy struct {
	addr  string
	bytes atomic.Int64
}

func startProxy(t *testing.T, upstream string) *countingProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &countingProxy{addr: ln.Addr().String()}
	var conns sync.WaitGroup
	t.Cleanup(func() { ln.Close(); conns.Wait() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Go(func() { p.forward(c, upstream) })
		}
	}()
	return p
}

func (p *countingProxy) forward(c net.Conn, upstream string) {
	defer c.Close()
	u, err := net.Dial("tcp", upstream)
	if err != nil {
		return
	}
	defer u.Close()
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				p.bytes.Add(int64(n))
				if _, werr := dst.Write(buf[:n]); werr != nil {
					break
				}
			}
			if err != nil {
				break
			}
		}
		dst.Close()
		src.Close()
		done <- struct{}{}
	}
	go pipe(u, c)
	go pipe(c, u)
	<-done
	<-done
}

func tailString(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

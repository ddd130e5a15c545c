package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/internal/testkit"
	"github.com/a6afc2ce/hermes-hub/nodes"
)

const existsEnv = `{"verb":"fs.exists","arguments":{"path":"README.md"}}`

// benchNodes opens a hub's end with count in-process nodes serving ws.
func benchNodes(b *testing.B, count int, ws string, onCall func(nodes.CallStats)) *nodes.Hub {
	b.Helper()
	return benchNodesAt(b, count, ws, b.TempDir(), onCall, 8)
}

// benchNodesAt is benchNodes with the hub's and the nodes' state under
// dir, each node running concurrency calls at once (node.concurrency).
func benchNodesAt(b *testing.B, count int, ws, dir string, onCall func(nodes.CallStats), concurrency int) *nodes.Hub {
	b.Helper()
	keys := map[string]string{}
	seeds := map[string]string{}
	for i := range count {
		name := fmt.Sprint("n", i)
		seeds[name] = filepath.Join(dir, name+".nk")
		pub, err := nodes.NewSeed(seeds[name])
		if err != nil {
			b.Fatal(err)
		}
		keys[name] = pub
	}
	h, err := nodes.OpenHub(context.Background(), nodes.HubOptions{StateDir: filepath.Join(dir, "hub"), Embedded: true, Listen: "127.0.0.1:0", Nodes: keys, OnCall: onCall, Logger: testkit.Discard()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { h.Close() })
	for name := range keys {
		stateDir := filepath.Join(dir, name+"-state")
		tc := benchExecutor(b, ws, stateDir)
		kp, err := nodes.LoadSeed(seeds[name])
		if err != nil {
			b.Fatal(err)
		}
		n, err := nodes.StartNode(context.Background(), nodes.NodeOptions{Name: name, URL: h.ClientURL(), Key: kp, StateDir: stateDir,
			Workspaces: map[string]*executor.Executor{"main": tc.exec}, Default: "main", Concurrency: concurrency, Logger: testkit.Discard()})
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { n.Run(ctx); close(done) }()
		b.Cleanup(func() { cancel(); <-done })
	}
	return h
}

func BenchmarkNodeRoundTrip(b *testing.B) {
	ws := workspace(b)
	b.Run("local", func(b *testing.B) {
		tc := benchExecutor(b, ws, b.TempDir())
		for b.Loop() {
			if out := tc.exec.ExecuteInput(context.Background(), []byte(existsEnv)); !out.Succeeded() {
				b.Fatal(out.Err)
			}
		}
	})
	b.Run("node", func(b *testing.B) {
		benchCalls(b, ws, []byte(existsEnv), func(r nodes.Response) {
			if !strings.Contains(string(r.Result), `"succeeded":true`) {
				b.Fatal(string(r.Result))
			}
		})
	})
	// A 1 MB text file read whole through the node, as the hub's remote
	// workspaces call it: the answer's way (encoded by the node, stored in
	// the results stream, read by the hub) and its outcome decoded.
	b.Run("node-read-1MB", func(b *testing.B) {
		line := strings.Repeat("0123456789abcdef", 4) + "\n"
		if err := os.WriteFile(filepath.Join(ws, "large.txt"), []byte(strings.Repeat(line, (1<<20)/len(line))), 0o644); err != nil {
			b.Fatal(err)
		}
		tc := benchExecutor(b, ws, b.TempDir())
		args := json.RawMessage(`{"path":"large.txt"}`)
		benchCalls(b, ws, []byte(`{"verb":"fs.readFile","arguments":{"path":"large.txt"}}`), func(r nodes.Response) {
			if out := r.Outcome(tc.exec.Registry(), "fs.readFile", args); !out.Succeeded() {
				b.Fatal(out.Err)
			}
		})
	})
}

// benchCalls calls env on one node of a fresh hub, one call after
// another, checks each answer and reports where the calls' time went.
func benchCalls(b *testing.B, ws string, env []byte, check func(nodes.Response)) {
	var p phases
	h := benchNodes(b, 1, ws, p.add)
	defer p.report(b)
	i := 0
	for b.Loop() {
		i++
		r, err := h.Call(context.Background(), "n0", nodes.Request{TurnID: "bench.rt", CallIndex: i, Envelope: env})
		if err != nil {
			b.Fatal(err)
		}
		check(r)
	}
}

// benchExecutor is the verbs over ws with their state in stateDir, closed
// after b.
func benchExecutor(b *testing.B, ws, stateDir string) *toolchain {
	b.Helper()
	cfg := config.Default()
	cfg.Workspace, cfg.StateDir = ws, stateDir
	tc, err := buildExecutor(cfg, testkit.Discard())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { tc.Close() })
	return tc
}

// phases adds up where the answered calls' time went, from the node's
// account (HubOptions.OnCall: the hub's metrics hub_node_call_seconds).
type phases struct {
	mu                                    sync.Mutex
	n                                     int
	roundTrip, ledger, slot, run, transit time.Duration
}

func (p *phases) add(s nodes.CallStats) {
	if !s.Answered() || !s.Timing.Reported() {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	t := s.Timing
	p.n++
	p.roundTrip += s.RoundTrip
	p.ledger += t.Ledger
	p.slot += t.Slot
	p.run += t.Run
	p.transit += max(s.RoundTrip-t.Ledger-t.Slot-t.Run, 0)
}

// report reports each phase's mean in milliseconds.
func (p *phases) report(b *testing.B) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.n == 0 {
		return
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(p.n) }
	b.ReportMetric(ms(p.roundTrip), "round-trip-ms")
	b.ReportMetric(ms(p.ledger), "ledger-ms")
	b.ReportMetric(ms(p.slot), "slot-ms")
	b.ReportMetric(ms(p.run), "run-ms")
	b.ReportMetric(ms(p.transit), "transit-ms")
}

// tmpfsDir is a directory on tmpfs (/dev/shm), removed after b; the
// benchmark skips without one.
func tmpfsDir(b *testing.B) string {
	b.Helper()
	if fi, err := os.Stat("/dev/shm"); err != nil || !fi.IsDir() {
		b.Skip("no tmpfs at /dev/shm")
	}
	dir, err := os.MkdirTemp("/dev/shm", "hub-bench-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// BenchmarkNodeRoundTripGoal measures an fs.exists round trip through a
// node against its goal: three times this disk's fdatasync (a 4 KiB
// overwrite; the node's one commit before it runs a call is what keeps a
// redelivered call from running twice) plus the loopback network cost
// (the same round trip with every state directory on tmpfs, where a sync
// costs nothing). Each iteration makes one of each, in turn, so that the
// machine's load weighs on all three alike.
func BenchmarkNodeRoundTripGoal(b *testing.B) {
	ws := workspace(b)
	disk, tmpfs := benchNodesAt(b, 1, ws, b.TempDir(), nil, 8), benchNodesAt(b, 1, ws, tmpfsDir(b), nil, 8)
	f, err := os.OpenFile(filepath.Join(b.TempDir(), "sync"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	page := make([]byte, 4096)
	if _, err := f.Write(make([]byte, 256*len(page))); err != nil || fdatasync(f) != nil {
		b.Fatal("prepare the sync file:", err)
	}
	call := func(h *nodes.Hub, i int) time.Duration {
		t0 := time.Now()
		r, err := h.Call(context.Background(), "n0", nodes.Request{TurnID: "bench.goal", CallIndex: i, Envelope: []byte(existsEnv)})
		if err != nil || !strings.Contains(string(r.Result), `"succeeded":true`) {
			b.Fatal(err, string(r.Result))
		}
		return time.Since(t0)
	}
	var syncT, diskT, tmpfsT time.Duration
	i := 0
	for b.Loop() {
		i++
		t0 := time.Now()
		if _, err := f.WriteAt(page, int64(i%256)*int64(len(page))); err != nil || fdatasync(f) != nil {
			b.Fatal("fdatasync:", err)
		}
		syncT += time.Since(t0)
		diskT += call(disk, i)
		tmpfsT += call(tmpfs, i)
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(b.N) }
	goal := 3*ms(syncT) + ms(tmpfsT)
	b.ReportMetric(ms(syncT), "fdatasync_ms")
	b.ReportMetric(ms(tmpfsT), "node_tmpfs_ms")
	b.ReportMetric(ms(diskT), "node_ms")
	b.ReportMetric(goal, "goal_ms")
	b.ReportMetric(ms(diskT)/goal, "node/goal")
}

// BenchmarkNodeThroughput: calls/s from 32 callers (16 per CPU) to one
// node and to two, each node with concurrency 8, so taking 32 calls at
// once (docs/nodes.md); 1nodes-tmpfs is one node with every state
// directory on tmpfs, where a sync costs nothing: what is left is the
// CPU's share. 1nodes-offered is a node's capacity: more calls offered
// than it takes (128 callers), to a node with concurrency 32 (taking
// 128), as an operator who wants more calls/s from one node sets it.
// cores is the CPU the process (hub, embedded NATS server, nodes and
// callers alike) used while the calls ran, in processors' worth: at the
// machine's count of processors, the CPU is the bound.
func BenchmarkNodeThroughput(b *testing.B) {
	ws := workspace(b)
	for _, tc := range []struct {
		name               string
		nodes, concurrency int
		perP               int  // callers per processor (SetParallelism)
		tmpfs              bool // every state directory on tmpfs
	}{
		{name: "1nodes", nodes: 1, concurrency: 8, perP: 16},
		{name: "2nodes", nodes: 2, concurrency: 8, perP: 16},
		{name: "1nodes-tmpfs", nodes: 1, concurrency: 8, perP: 16, tmpfs: true},
		{name: "1nodes-offered", nodes: 1, concurrency: 32, perP: 64},
	} {
		b.Run(tc.name, func(b *testing.B) {
			dir := b.TempDir()
			if tc.tmpfs {
				dir = tmpfsDir(b)
			}
			var p phases
			h := benchNodesAt(b, tc.nodes, ws, dir, p.add, tc.concurrency)
			defer p.report(b)
			var seq atomic.Int64
			cpu0, cpuErr := testkit.ProcessCPU(os.Getpid())
			start := time.Now()
			b.SetParallelism(tc.perP)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					i := seq.Add(1)
					node := fmt.Sprint("n", i%int64(tc.nodes))
					if _, err := h.Call(context.Background(), node, nodes.Request{TurnID: "bench.tp", CallIndex: int(i), Envelope: []byte(existsEnv)}); err != nil {
						b.Error(err)
						return
					}
				}
			})
			elapsed := time.Since(start)
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "calls/s")
			if cpu1, err := testkit.ProcessCPU(os.Getpid()); err == nil && cpuErr == nil {
				cpu := cpu1 - cpu0
				b.ReportMetric(cpu.Seconds()/elapsed.Seconds(), "cores")
				b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/call")
			}
		})
	}
}

// BenchmarkNodeProcess measures an idle `hub node` (its resident memory)
// and the time from its SIGKILL until the hub sees it offline: at once
// through the embedded server's connections, and in the heartbeat bucket
// once its last beat expires (TTL 1s here, 15s by default).
func BenchmarkNodeProcess(b *testing.B) {
	var rssKB, connMS, kvMS float64
	for b.Loop() {
		r := newNodeRig(b, "db-1", nodes.HubOptions{HeartbeatTTL: time.Second})
		cmd := r.startNodeProcess(b)
		testkit.WaitFor(b, "the node online", func() bool { return r.online("db-1") })
		time.Sleep(500 * time.Millisecond) // let it settle idle
		rssKB += float64(vmRSS(b, cmd.Process.Pid))
		nc, err := nodes.DialHub(r.hub.ClientURL(), filepath.Join(filepath.Dir(r.config), "hub"), "")
		if err != nil {
			b.Fatal(err)
		}
		killed := time.Now()
		cmd.Process.Kill()
		testkit.WaitFor(b, "offline (connection)", func() bool { return !r.online("db-1") })
		connMS += float64(time.Since(killed).Microseconds()) / 1000
		testkit.WaitFor(b, "offline (bucket)", func() bool {
			l, err := nodes.ListStatus(context.Background(), nc, []string{"db-1"})
			return err == nil && !l[0].Online
		})
		kvMS += float64(time.Since(killed).Microseconds()) / 1000
		nc.Close()
	}
	n := float64(b.N)
	b.ReportMetric(rssKB/n/1024, "idle_rss_MiB")
	b.ReportMetric(connMS/n, "kill_to_offline_conn_ms")
	b.ReportMetric(kvMS/n, "kill_to_offline_kv_ms")
}

func vmRSS(b *testing.B, pid int) int {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Skip("no /proc")
	}
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return kb
		}
	}
	return 0
}

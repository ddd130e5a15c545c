package mcp_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/internal/testkit"
)

// costSide is one protocol under BenchmarkCallCost: a hub process, how to
// write its i-th fs.exists call, and whether an answer line is one.
type costSide struct {
	name   string
	c      *child
	req    func(id int) []byte
	answer func(line []byte) bool
	lat    stats // one call at a time, the sides in turns
	b2b    stats // one call at a time, the next sent as soon as an answer comes
	cpu    time.Duration
	wall   time.Duration
	calls  int
}

// BenchmarkCallCost is the cost of one call of the same verb (fs.exists)
// on the hub's stdio protocols, each over pipes to a hub process:
//
//   - exec: `hub exec --stdio` (the hub's own protocol; with the default
//     mirror.cli, a read is not mirrored);
//   - exec-mirrored: the same with mirror.cli: all (both records of every
//     call written, as MCP writes them);
//   - mcp: `hub mcp`, a tools/call of fs_exists (run through the hub's
//     Execute: access checked, both records written).
//
// Rounds alternate between the sides so that all meet the same machine.
// One at a time: the client waits for each answer (p50 of the round trip,
// pipes and wake-ups included), the sides in turns, so each side's
// process waits idle between its calls, as for a client that thinks
// between calls. Back to back: the same, each side's calls one after
// another, the next sent as soon as an answer comes (a client in a
// loop). Pipelined: 32 calls written before their
// answers are read; the server's CPU time per call (its threads' run time
// as the scheduler counts it, from /proc; see cpuTime) and the calls per
// second.
//
// go test -run '^$' -bench CallCost ./bench/mcp/
func BenchmarkCallCost(b *testing.B) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		b.Skip("the server's CPU time is read from /proc (Linux)")
	}
	loadBefore := loadavg()
	bin := buildHub(b)
	dir := fixture(b)
	conf := func(extra string) string {
		p := filepath.Join(b.TempDir(), "hub.yml")
		yml := "state_dir: " + filepath.Join(b.TempDir(), "state") + "\naccess:\n  roles:\n    admin:\n      verbs: ['*']\n  grants:\n    agent:local: [admin]\n" + extra
		if err := os.WriteFile(p, []byte(yml), 0o600); err != nil {
			b.Fatal(err)
		}
		return p
	}
	execReq := func(id int) []byte {
		return fmt.Appendf(nil, `{"id":%d,"verb":"fs.exists","arguments":{"path":%q}}`, id, small.name)
	}
	execOK := func(line []byte) bool { return strings.Contains(string(line), `"exists":true`) }
	mcpSide := &mcpClient{child: startChild(b, "hub mcp", dir, []string{"HUB_CONFIG="}, bin, "mcp", "--config", conf(""), "--workspace", dir)}
	if err := mcpSide.initialize(); err != nil {
		b.Fatal(err)
	}
	sides := []*costSide{
		{name: "exec", c: startChild(b, "hub exec --stdio", dir, []string{"HUB_CONFIG="}, bin, "exec", "--stdio"), req: execReq, answer: execOK},
		{name: "exec-mirrored", c: startChild(b, "hub exec --stdio (mirror.cli: all)", dir, []string{"HUB_CONFIG="}, bin, "exec", "--stdio", "--config", conf("mirror:\n  cli: all\n")), req: execReq, answer: execOK},
		{name: "mcp", c: mcpSide.child, req: func(id int) []byte {
			return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"fs_exists","arguments":{"path":%q}}}`, id, small.name)
		}, answer: execOK},
	}
	id := 1 << 20 // above the ids mcpClient used for the handshake
	roundTrip := func(s *costSide) time.Duration {
		id++
		t0 := time.Now()
		if err := s.c.send(s.req(id)); err != nil {
			b.Fatal(err)
		}
		line, err := s.c.receive()
		if err != nil {
			b.Fatal(err)
		}
		d := time.Since(t0)
		if !s.answer(line) {
			b.Fatalf("%s: %.300s", s.name, line)
		}
		return d
	}
	// Warm every side (page cache, the first mirror writes, code paths).
	for range 200 {
		for _, s := range sides {
			roundTrip(s)
		}
	}
	const perRound, depth = 500, 32
	b.ResetTimer()
	for b.Loop() {
		for range perRound {
			for _, s := range sides {
				s.lat.lat = append(s.lat.lat, roundTrip(s))
			}
		}
		for _, s := range sides {
			for range perRound {
				s.b2b.lat = append(s.b2b.lat, roundTrip(s))
			}
		}
		for _, s := range sides {
			cpu0, t0 := cpuTime(b, s.c), time.Now()
			for sent := 0; sent < perRound; sent += depth {
				for range depth {
					id++
					s.c.in.Write(s.req(id))
					s.c.in.WriteByte('\n')
				}
				if err := s.c.in.Flush(); err != nil {
					b.Fatal(err)
				}
				for range depth {
					line, err := s.c.receive()
					if err != nil {
						b.Fatal(err)
					}
					if !s.answer(line) {
						b.Fatalf("%s: %.300s", s.name, line)
					}
				}
				s.calls += depth
			}
			s.wall += time.Since(t0)
			s.cpu += cpuTime(b, s.c) - cpu0
		}
	}
	b.StopTimer()
	p50 := map[string]float64{}
	cpu := map[string]float64{}
	for _, s := range sides {
		p50[s.name] = percentile(s.lat.lat, 0.5) * 1000
		cpu[s.name] = float64(s.cpu.Microseconds()) / float64(s.calls)
		b.ReportMetric(p50[s.name], s.name+"-p50-µs")
		b.ReportMetric(percentile(s.b2b.lat, 0.5)*1000, s.name+"-b2b-p50-µs")
		b.ReportMetric(cpu[s.name], s.name+"-cpu-µs/call")
		b.ReportMetric(float64(s.calls)/s.wall.Seconds(), s.name+"-pipelined-calls/s")
	}
	b.ReportMetric(p50["mcp"]/p50["exec"], "mcp/exec-p50")
	b.ReportMetric(p50["mcp"]/p50["exec-mirrored"], "mcp/exec-mirrored-p50")
	if cpu["exec-mirrored"] > 0 {
		b.ReportMetric(cpu["mcp"]/cpu["exec-mirrored"], "mcp/exec-mirrored-cpu")
	}
	b.ReportMetric(0, "ns/op")
	b.Logf("load before %s, after %s", loadBefore, loadavg())
}

// cpuTime is the CPU time the child has used so far: the sum of its
// threads' run time as the scheduler counts it (testkit.ThreadsCPU), or,
// where the kernel does not show it, its user and system time
// (testkit.ProcessCPU, 10 ms ticks: coarse for a few thousand calls of a
// few microseconds).
func cpuTime(b *testing.B, c *child) time.Duration {
	b.Helper()
	if d, err := testkit.ThreadsCPU(c.cmd.Process.Pid); err == nil {
		return d
	}
	d, err := testkit.ProcessCPU(c.cmd.Process.Pid)
	if err != nil {
		b.Fatalf("the CPU time of %s: %v", c.name, err)
	}
	return d
}

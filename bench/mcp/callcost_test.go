package mcp_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkCallCost is the cost of one call of the same verb (fs.exists)
// on the hub's two stdio protocols, both over pipes to a hub process:
// `hub exec --stdio` (the hub's own) and `hub mcp` (a tools/call of
// fs_exists, run through the hub's Execute: access checked, mirrored).
// Rounds alternate between the two so that both meet the same machine.
//
//   - one at a time: the client waits for each answer (p50 of the round
//     trip, pipes and wake-ups included);
//   - pipelined: 32 calls written before their answers are read, the
//     server's CPU time per call (user and system, from /proc) and the
//     calls per second.
//
// go test -run '^$' -bench CallCost ./bench/mcp/
func BenchmarkCallCost(b *testing.B) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		b.Skip("the server's CPU time is read from /proc (Linux)")
	}
	loadBefore := loadavg()
	bin := buildHub(b)
	dir := fixture(b)
	conf := filepath.Join(b.TempDir(), "hub.yml")
	yml := "state_dir: " + filepath.Join(b.TempDir(), "state") + "\naccess:\n  roles:\n    admin:\n      verbs: ['*']\n  grants:\n    agent:local: [admin]\n"
	if err := os.WriteFile(conf, []byte(yml), 0o600); err != nil {
		b.Fatal(err)
	}
	execSide := hubClient{startChild(b, "hub exec --stdio", dir, []string{"HUB_CONFIG="}, bin, "exec", "--stdio")}
	mcpSide := &mcpClient{child: startChild(b, "hub mcp", dir, []string{"HUB_CONFIG="}, bin, "mcp", "--config", conf, "--workspace", dir)}
	if err := mcpSide.initialize(); err != nil {
		b.Fatal(err)
	}
	args := map[string]any{"path": small.name}
	execReq := func(id int) []byte {
		return fmt.Appendf(nil, `{"id":%d,"verb":"fs.exists","arguments":{"path":%q}}`, id, args["path"])
	}
	mcpReq := func(id int64) []byte {
		return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"fs_exists","arguments":{"path":%q}}}`, id, args["path"])
	}
	// Warm both (page cache, first mirror writes, code paths).
	for i := range 200 {
		if _, err := execSide.call(i, "fs.exists", args); err != nil {
			b.Fatal(err)
		}
		if _, err := mcpSide.callTool("fs_exists", args); err != nil {
			b.Fatal(err)
		}
	}

	const perRound, depth = 500, 32
	var execLat, mcpLat stats
	var execCPU, mcpCPU time.Duration
	var execCalls, mcpCalls int
	var execWall, mcpWall time.Duration
	id := 1000
	b.ResetTimer()
	for b.Loop() {
		for range perRound {
			id++
			t0 := time.Now()
			if _, err := execSide.call(id, "fs.exists", args); err != nil {
				b.Fatal(err)
			}
			execLat.lat = append(execLat.lat, time.Since(t0))
			t0 = time.Now()
			if _, err := mcpSide.callTool("fs_exists", args); err != nil {
				b.Fatal(err)
			}
			mcpLat.lat = append(mcpLat.lat, time.Since(t0))
		}
		// Pipelined: depth calls in flight, perRound calls per side.
		cpu0, t0 := cpuTime(b, execSide.child), time.Now()
		for sent := 0; sent < perRound; sent += depth {
			for k := range depth {
				execSide.in.Write(execReq(id + k))
				execSide.in.WriteByte('\n')
			}
			if err := execSide.in.Flush(); err != nil {
				b.Fatal(err)
			}
			for range depth {
				if _, err := execSide.receive(); err != nil {
					b.Fatal(err)
				}
			}
			id += depth
			execCalls += depth
		}
		execWall += time.Since(t0)
		execCPU += cpuTime(b, execSide.child) - cpu0
		cpu0, t0 = cpuTime(b, mcpSide.child), time.Now()
		for sent := 0; sent < perRound; sent += depth {
			for range depth {
				mcpSide.nextID++
				mcpSide.in.Write(mcpReq(mcpSide.nextID))
				mcpSide.in.WriteByte('\n')
			}
			if err := mcpSide.in.Flush(); err != nil {
				b.Fatal(err)
			}
			for range depth {
				msg, err := mcpSide.receive()
				if err != nil {
					b.Fatal(err)
				}
				if !strings.Contains(string(msg), `"succeeded":true`) {
					b.Fatalf("hub mcp: %.300s", msg)
				}
			}
			mcpCalls += depth
		}
		mcpWall += time.Since(t0)
		mcpCPU += cpuTime(b, mcpSide.child) - cpu0
	}
	b.StopTimer()
	execP50, mcpP50 := percentile(execLat.lat, 0.5)*1000, percentile(mcpLat.lat, 0.5)*1000
	b.ReportMetric(execP50, "exec-p50-µs")
	b.ReportMetric(mcpP50, "mcp-p50-µs")
	b.ReportMetric(mcpP50/execP50, "mcp/exec-p50")
	execPer := float64(execCPU.Microseconds()) / float64(execCalls)
	mcpPer := float64(mcpCPU.Microseconds()) / float64(mcpCalls)
	b.ReportMetric(execPer, "exec-cpu-µs/call")
	b.ReportMetric(mcpPer, "mcp-cpu-µs/call")
	if execPer > 0 {
		b.ReportMetric(mcpPer/execPer, "mcp/exec-cpu")
	}
	b.ReportMetric(float64(execCalls)/execWall.Seconds(), "exec-pipelined-calls/s")
	b.ReportMetric(float64(mcpCalls)/mcpWall.Seconds(), "mcp-pipelined-calls/s")
	b.ReportMetric(0, "ns/op")
	b.Logf("load before %s, after %s", loadBefore, loadavg())
}

// cpuTime is the user and system time the child has used so far.
func cpuTime(b *testing.B, c *child) time.Duration {
	b.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", c.cmd.Process.Pid))
	if err != nil {
		b.Fatal(err)
	}
	// Fields after the command name in parentheses: state is field 3,
	// utime 14 and stime 15 (proc(5)), in clock ticks of 1/100 s.
	s := string(raw)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		b.Fatalf("stat of %s: %q", c.name, s)
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		b.Fatalf("stat of %s: %q", c.name, s)
	}
	return time.Duration(ut+st) * 10 * time.Millisecond
}

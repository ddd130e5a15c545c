package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// BenchmarkStdioRoundTrip measures `hub exec --stdio` as an agent uses it:
// one fs.readRange request written, its answer read, then the next.
func BenchmarkStdioRoundTrip(b *testing.B) {
	dir := b.TempDir()
	var sb strings.Builder
	for i := 1; i <= 2000; i++ {
		fmt.Fprintf(&sb, "line %d of a file that an agent reads in ranges\n", i)
	}
	if err := os.WriteFile(filepath.Join(dir, "big.txt"), []byte(sb.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(hubBin, "exec", "--stdio")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HUB_CONFIG=")
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer cmd.Wait()
	defer stdin.Close()
	r := bufio.NewReader(stdout)
	w := bufio.NewWriter(stdin)
	req := func(i int) {
		start := 1 + i%1900
		fmt.Fprintf(w, `{"id":%d,"verb":"fs.readRange","arguments":{"path":"big.txt","startLine":%d,"endLine":%d}}`+"\n", i, start, start+49)
		w.Flush()
		line, err := r.ReadString('\n')
		if err != nil || !strings.Contains(line, `"succeeded":true`) {
			b.Fatalf("round trip %d: %v %s", i, err, line)
		}
	}
	req(0) // warm up: process start is not part of the figure
	b.ResetTimer()
	t0 := time.Now()
	for i := 0; i < b.N; i++ {
		req(i)
	}
	b.ReportMetric(float64(b.N)/time.Since(t0).Seconds(), "roundtrips/s")
	_ = io.Discard
}

// BenchmarkServeStartup measures `hub serve` from exec to the login URL on
// stdout (the panel is listening by then), and the resident memory of the
// idle hub a second later.
func BenchmarkServeStartup(b *testing.B) {
	var totalStart time.Duration
	var rss float64
	for i := 0; i < b.N; i++ {
		dir := b.TempDir()
		cfg := filepath.Join(dir, "hub.yml")
		os.WriteFile(cfg, []byte("web:\n  listen: 127.0.0.1:0\n"), 0o600)
		cmd := exec.Command(hubBin, "serve", "--config", cfg)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "HUB_CONFIG=")
		out, _ := cmd.StdoutPipe()
		t0 := time.Now()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "http://") {
				break
			}
		}
		totalStart += time.Since(t0)
		time.Sleep(time.Second)
		status, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", cmd.Process.Pid))
		for _, line := range strings.Split(string(status), "\n") {
			if strings.HasPrefix(line, "VmRSS:") {
				var kb float64
				fmt.Sscanf(strings.TrimSpace(strings.TrimPrefix(line, "VmRSS:")), "%f", &kb)
				rss += kb / 1024
			}
		}
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
	}
	b.ReportMetric(float64(totalStart.Milliseconds())/float64(b.N), "startup-ms")
	b.ReportMetric(rss/float64(b.N), "idle-rss-MB")
}

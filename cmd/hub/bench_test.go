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

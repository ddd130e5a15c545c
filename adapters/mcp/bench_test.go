package mcp_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	mcpsurface "github.com/a6afc2ce/hermes-hub/adapters/mcp"
	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/hub/hubtest"
	"github.com/a6afc2ce/hermes-hub/internal/testkit"
)

// lineClient speaks MCP's stdio framing (one JSON-RPC message per line) to
// a server over pipes, as an agent does to `hub mcp`.
type lineClient struct {
	w    io.Writer
	r    *bufio.Reader
	next int
}

func (c *lineClient) call(method string, params any) ([]byte, error) {
	c.next++
	msg, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.next, "method": method, "params": params})
	if err != nil {
		return nil, err
	}
	if _, err := c.w.Write(append(msg, '\n')); err != nil {
		return nil, err
	}
	prefix := fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,`, c.next)
	for {
		line, err := c.r.ReadBytes('\n')
		if err != nil {
			return nil, err
		}
		if bytes.HasPrefix(line, prefix) {
			return line, nil
		}
	}
}

// BenchmarkToolCall is the hub side of `hub mcp` in one process, for CPU
// profiles: a hub runtime on a real state directory (the mirror fsyncs),
// the MCP server on pipes with the stdio framing, and one tools/call at a
// time. go test -run '^$' -bench ToolCall -cpuprofile cpu.out ./adapters/mcp/
func BenchmarkToolCall(b *testing.B) {
	cfg := hubtest.Config(b, "", "")
	cfg.Access = config.Access{
		Roles:  map[string]config.Role{"admin": {Verbs: []string{"*"}}},
		Grants: map[string][]string{"agent:local": {"admin"}},
	}
	env := hubtest.Open(b, cfg, hubtest.Options{})
	env.WriteFile(b, "small.txt", strings.Repeat("0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklm\n", 70))
	env.WriteFile(b, "large.txt", strings.Repeat("0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklm\n", 18_000))
	for i := range 100 {
		env.WriteFile(b, fmt.Sprintf("list/f%02d.txt", i), "x")
	}
	for i := range 10_000 {
		env.WriteFile(b, fmt.Sprintf("list10k/f%05d.txt", i), "x")
	}
	srv, err := mcpsurface.New(mcpsurface.Options{Intake: env.Runtime.Hub, Version: "bench", Logger: testkit.Discard()})
	if err != nil {
		b.Fatal(err)
	}
	cr, sw := io.Pipe()
	sr, cw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.RunStdio(ctx, sr, sw) }()
	b.Cleanup(func() {
		cw.Close()
		cancel()
		<-done
	})
	c := &lineClient{w: cw, r: bufio.NewReaderSize(cr, 1<<20)}
	if _, err := c.call("initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "bench", "version": "0"}}); err != nil {
		b.Fatal(err)
	}
	if _, err := cw.Write([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n")); err != nil {
		b.Fatal(err)
	}
	// Pipelined: 32 calls written before their answers are read, as an
	// agent with calls in parallel sends them: the server's cost per call
	// without the client's wait between calls.
	b.Run("exists-pipelined", func(b *testing.B) {
		const depth = 32
		var batch []byte
		for b.Loop() {
			batch = batch[:0]
			for range depth {
				c.next++
				batch = fmt.Appendf(batch, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"fs_exists","arguments":{"path":"small.txt"}}}`+"\n", c.next)
			}
			if _, err := cw.Write(batch); err != nil {
				b.Fatal(err)
			}
			for range depth {
				line, err := c.r.ReadBytes('\n')
				if err != nil {
					b.Fatal(err)
				}
				if !bytes.Contains(line, []byte(`"succeeded":true`)) {
					b.Fatalf("%.300s", line)
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*depth), "ns/call")
	})
	for _, tc := range []struct {
		name string
		tool string
		args func(i int) map[string]any
	}{
		{"exists", "fs_exists", func(int) map[string]any { return map[string]any{"path": "small.txt"} }},
		{"readFile-4KB", "fs_readFile", func(int) map[string]any { return map[string]any{"path": "small.txt"} }},
		{"readFile-1MB", "fs_readFile", func(int) map[string]any { return map[string]any{"path": "large.txt"} }},
		{"readRange-head50", "fs_readRange", func(int) map[string]any {
			return map[string]any{"path": "small.txt", "startLine": 1, "endLine": 50, "includeLineNumbers": false}
		}},
		{"listDir-100", "fs_listDir", func(int) map[string]any { return map[string]any{"path": "list"} }},
		{"listDir-10000", "fs_listDir", func(int) map[string]any { return map[string]any{"path": "list10k"} }},
		{"writeFile-4KB", "fs_writeFile", func(i int) map[string]any {
			return map[string]any{"path": fmt.Sprintf("w/f%02d.txt", i%100), "content": strings.Repeat("w", 4096)}
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			i := 0
			for b.Loop() {
				msg, err := c.call("tools/call", map[string]any{"name": tc.tool, "arguments": tc.args(i)})
				if err != nil {
					b.Fatal(err)
				}
				if !bytes.Contains(msg, []byte(`"succeeded":true`)) {
					b.Fatalf("%s: %.300s", tc.tool, msg)
				}
				i++
			}
		})
	}
}

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// mcpProc is a `hub mcp` process on pipes.
type mcpProc struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	stdout io.Reader
	out    *bufio.Reader
}

// startMCP runs `hub mcp` in a workspace whose configuration grants
// agent:local the reader role; extra is added to the configuration. The
// process is killed shortly before the test's deadline, so a hang shows as
// a failure.
func startMCP(t *testing.T, extra string) *mcpProc {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	if dl, ok := t.Deadline(); ok {
		ctx, cancel = context.WithDeadline(ctx, dl.Add(-10*time.Second))
	}
	t.Cleanup(cancel)
	dir := workspace(t)
	conf := filepath.Join(t.TempDir(), "hub.yml")
	yml := "state_dir: " + filepath.Join(t.TempDir(), "state") + "\naccess:\n  grants:\n    agent:local: [reader]\n" + extra
	if err := os.WriteFile(conf, []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, hubBin, "mcp", "--config", conf, "--workspace", dir)
	cmd.Env = append(os.Environ(), "HUB_CONFIG=")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		in.Close()
		if t.Failed() {
			cancel() // it may be stuck writing answers nobody reads
		}
		_ = cmd.Wait()
	})
	p := &mcpProc{cmd: cmd, in: in, stdout: out, out: bufio.NewReaderSize(out, 1<<20)}
	p.send(t, `{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"test","version":"1"}}}`)
	if a := p.answer(t); a.ID != "init" || a.Error != nil {
		t.Fatalf("initialize: %+v", a)
	}
	p.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return p
}

func (p *mcpProc) send(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(p.in, line+"\n"); err != nil {
		t.Fatalf("write %.80q: %v", line, err)
	}
}

// mcpAnswer is one JSON-RPC answer line.
type mcpAnswer struct {
	ID     any             `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func (p *mcpProc) answer(t *testing.T) mcpAnswer {
	t.Helper()
	line, err := p.out.ReadBytes('\n')
	if err != nil {
		t.Fatalf("read an answer: %v (the process ended?)", err)
	}
	var a mcpAnswer
	if err := json.Unmarshal(line, &a); err != nil {
		t.Fatalf("answer %q is not JSON: %v", line, err)
	}
	return a
}

// TestMCPStdioAnswersBadLinesAndGoesOn: a line that is not JSON, JSON that
// is not a JSON-RPC message, a batch and a line over the bound are each
// answered with a JSON-RPC error (parse error -32700 or invalid request
// -32600, with the request's id when it has one, else null) and `hub mcp`
// goes on answering; at the end of its input it exits 0.
func TestMCPStdioAnswersBadLinesAndGoesOn(t *testing.T) {
	p := startMCP(t, "web:\n  max_body_bytes: 2048\n")
	for i, tc := range []struct {
		line string
		code int
		id   any
		says string
	}{
		{"not json", -32700, nil, "not JSON"},
		{`{"jsonrpc":"2.0","id":1,"method":"ping"`, -32700, nil, "not JSON"},
		{`{"id":7,"method":3}`, -32600, float64(7), "invalid request"},
		{`{"jsonrpc":"2.0","id":"x","method":"ping","extra":[}`, -32700, nil, "not JSON"},
		{`[{"jsonrpc":"2.0","id":8,"method":"ping"}]`, -32600, nil, "batches are not accepted"},
		{`42`, -32600, nil, "a JSON object"},
		{`{"jsonrpc":"1.0","id":"old","method":"ping"}`, -32600, "old", "2.0"},
		{`{"jsonrpc":"2.0","id":9,"method":"ping","params":{"pad":"` + strings.Repeat("x", 3000) + `"}}`, -32600, nil, "longer than 2048 bytes"},
	} {
		p.send(t, tc.line)
		a := p.answer(t)
		if a.Error == nil || a.Error.Code != tc.code || a.ID != tc.id || !strings.Contains(a.Error.Message, tc.says) {
			t.Errorf("line %d %.60q: answer %+v, want code %d, id %v, a message with %q", i, tc.line, a, tc.code, tc.id, tc.says)
		}
		// The next request is answered as usual.
		p.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"fs_exists","arguments":{"path":"README.md"}}}`, 100+i))
		a = p.answer(t)
		if a.ID != float64(100+i) || a.Error != nil || !strings.Contains(string(a.Result), `"exists":true`) {
			t.Fatalf("after line %d: %+v %s", i, a, a.Result)
		}
	}
	p.in.Close()
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("hub mcp at the end of its input: %v", err)
	}
}

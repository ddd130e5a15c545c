package mcp_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	mcpsurface "github.com/a6afc2ce/hermes-hub/adapters/mcp"
	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/hub/hubtest"
	"github.com/a6afc2ce/hermes-hub/internal/testkit"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

// stdioEnv is a hub runtime and an MCP client connected in memory, as
// `hub mcp` serves over stdio, for the given identity.
func stdioEnv(t *testing.T, identity string) (*hubtest.Env, *mcp.ClientSession) {
	t.Helper()
	return stdioEnvWith(t, mcpsurface.Options{Identity: identity}, nil)
}

// stdioEnvWith is stdioEnv with the server's options (Intake, Version and
// Logger are filled in) and the client's.
func stdioEnvWith(t *testing.T, o mcpsurface.Options, co *mcp.ClientOptions) (*hubtest.Env, *mcp.ClientSession) {
	t.Helper()
	return stdioEnvHub(t, hubtest.Options{}, o, co)
}

// stdioEnvHub is stdioEnvWith over a hub runtime opened with ho.
func stdioEnvHub(t *testing.T, ho hubtest.Options, o mcpsurface.Options, co *mcp.ClientOptions) (*hubtest.Env, *mcp.ClientSession) {
	t.Helper()
	cfg := hubtest.Config(t, "", "")
	cfg.Access = config.Access{
		Roles:  map[string]config.Role{"admin": {Verbs: []string{"*"}}},
		Grants: map[string][]string{"agent:local": {"admin"}, "agent:reader": {"reader"}},
	}
	env := hubtest.Open(t, cfg, ho)
	o.Intake = env.Runtime.Hub
	return env, serveStdio(t, o, co)
}

// serveStdio serves an MCP server with options o (Version and Logger are
// filled in) over in-memory pipes, as `hub mcp` serves over stdio, and
// connects a client with options co.
func serveStdio(t *testing.T, o mcpsurface.Options, co *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	return serveStdioVersion(t, o, co, "")
}

// serveStdioVersion is serveStdio with the client asking for a protocol
// version ("" for its latest).
func serveStdioVersion(t *testing.T, o mcpsurface.Options, co *mcp.ClientOptions, version string) *mcp.ClientSession {
	t.Helper()
	o.Version, o.Logger = "test", testkit.Discard()
	srv, err := mcpsurface.New(o)
	if err != nil {
		t.Fatal(err)
	}
	cr, sw := io.Pipe()
	sr, cw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.RunStdio(ctx, sr, sw) }()
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, co)
	cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: cr, Writer: cw}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		cancel()
		if err := waitServed(t, done); err != nil {
			t.Errorf("RunStdio: %v", err)
		}
	})
	return cs
}

// waitServed waits for RunStdio to end after its client left, failing with
// the stacks of every goroutine when it does not within a minute (a test
// that hangs says where).
func waitServed(t *testing.T, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(time.Minute):
		t.Fatalf("RunStdio still runs a minute after its client left; goroutines:\n%s", stacks())
		return nil
	}
}

// TestToolsGolden lists the tools of an identity that may run every verb
// and compares names, descriptions, schemas and annotations with the
// golden file (go test ./adapters/mcp -run ToolsGolden -update).
func TestToolsGolden(t *testing.T) {
	_, cs := stdioEnv(t, "agent:local")
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.MarshalIndent(res.Tools, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	golden := filepath.Join("testdata", "tools.golden.json")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if string(got) != string(want) {
		t.Errorf("tools/list differs from %s (rerun with -update if intended):\n%s", golden, got)
	}
}

// TestToolsFollowAccess: tools/list shows what the identity may run; a
// hidden verb called anyway is a tool error "forbidden", not a protocol
// error; an unknown tool is a protocol error.
func TestToolsFollowAccess(t *testing.T) {
	_, cs := stdioEnv(t, "agent:reader")
	ctx := context.Background()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		if !tool.Annotations.ReadOnlyHint {
			t.Errorf("reader sees %s, which is not read-only", tool.Name)
		}
	}
	if !strings.Contains(strings.Join(names, ","), "fs_readFile") {
		t.Errorf("reader's tools: %v", names)
	}
	r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fs_writeFile", Arguments: map[string]any{"path": "x.txt", "content": "x"}})
	if err != nil {
		t.Fatal(err)
	}
	sc, _ := json.Marshal(r.StructuredContent)
	if !r.IsError || !strings.Contains(string(sc), `"errorCode":"forbidden"`) {
		t.Errorf("a hidden verb: isError %v, %s", r.IsError, sc)
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fs_nope", Arguments: map[string]any{}}); err == nil || !strings.Contains(err.Error(), "unknown tool") {
		t.Errorf("an unknown tool: %v", err)
	}
}

// TestCallResult: a succeeded call carries the result JSON and the chat
// rendering; a failed one isError with the errorCode.
func TestCallResult(t *testing.T) {
	env, cs := stdioEnv(t, "agent:local")
	env.WriteFile(t, "notes.txt", "alpha\nbeta\n")
	ctx := context.Background()
	tests := []struct {
		name    string
		args    map[string]any
		isError bool
		want    string // in the structured content
		text    string // in the text block
	}{
		{"fs_readRange", map[string]any{"path": "notes.txt", "startLine": 2, "endLine": 2}, false, `"content":"2: beta"`, "beta"},
		{"fs_readFile", map[string]any{"path": "../etc/passwd"}, true, `"errorCode":"forbidden_path"`, "forbidden_path"},
		{"fs_readFile", map[string]any{"path": "missing.txt"}, true, `"errorCode":"not_found"`, "not_found"},
		{"fs_lineCount", nil, true, `"errorCode":"invalid_arguments"`, "path"},
		{"fs_readRange", map[string]any{"path": "notes.txt", "lastLines": 1, "includeLineNumbers": false}, false, `"content":"beta"`, "beta"},
		{"fs_readRange", map[string]any{"path": "notes.txt", "lastLines": 1, "startLine": 1}, true, `"errorCode":"invalid_arguments"`, "lastLines reads the end"},
		{"fs_stat", map[string]any{"path": "notes.txt", "sha256": true}, false, `"sha256":"` + sha256Hex("alpha\nbeta\n") + `"`, "type      file"},
		{"fs_readMany", map[string]any{"paths": []string{"notes.txt", "../x"}}, false, `"errorCode":"forbidden_path"`, "alpha"},
		{"fs_edit", map[string]any{"path": "notes.txt", "oldText": "beta", "newText": "gamma", "dryRun": true}, false, `"diff":"--- a/notes.txt\n+++ b/notes.txt\n@@ -1,2 +1,2 @@\n alpha\n-beta\n+gamma\n"`, "```diff"},
		{"fs_edit", map[string]any{"path": "notes.txt", "oldText": "a", "newText": "b"}, true, `"errorCode":"invalid_arguments"`, "occurs 3 times"},
		{"fs_edit", map[string]any{"path": "notes.txt", "oldText": "beta", "newText": "gamma", "expectedSha256": sha256Hex("other")}, true, `"errorCode":"conflict"`, sha256Hex("alpha\nbeta\n")},
		{"fs_edit", map[string]any{"path": "notes.txt", "edits": []map[string]any{{"oldText": "beta", "newText": "gamma"}}}, false, `"replacements":1`, "+gamma"},
	}
	for _, tt := range tests {
		t.Run(tt.name+"/"+tt.want, func(t *testing.T) {
			r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tt.name, Arguments: tt.args})
			if err != nil {
				t.Fatal(err)
			}
			sc, _ := json.Marshal(r.StructuredContent)
			text := r.Content[0].(*mcp.TextContent).Text
			if r.IsError != tt.isError || !strings.Contains(string(sc), tt.want) || !strings.Contains(text, tt.text) {
				t.Errorf("isError %v, structured %s, text %q", r.IsError, sc, text)
			}
		})
	}
}

// TestSearchTools: fs.search and fs.find are tools like every verb, for
// readers too (they are read-only); their results come back structured
// and rendered, and the hub's state is out of their reach.
func TestSearchTools(t *testing.T) {
	env, cs := stdioEnv(t, "agent:reader")
	env.WriteFile(t, "src/retry.go", "package src\n\nfunc retryAfter() {}\n")
	env.WriteFile(t, "src/retry_test.go", "package src\n")
	ctx := context.Background()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	tools := map[string]*mcp.Tool{}
	for _, tool := range res.Tools {
		tools[tool.Name] = tool
	}
	for _, name := range []string{"fs_search", "fs_find"} {
		if tool := tools[name]; tool == nil || !tool.Annotations.ReadOnlyHint {
			t.Fatalf("reader's tools lack %s (or it is not read-only): %v", name, tools[name])
		}
	}
	for _, tt := range []struct {
		name string
		args map[string]any
		want []string // in the structured content
		text string   // in the text block
	}{
		{"fs_search", map[string]any{"pattern": `func \w+After\(`}, []string{`"path":"src/retry.go"`, `"line":3`, `"truncated":false`}, "`src/retry.go:3`"},
		{"fs_search", map[string]any{"pattern": "state", "hidden": true, "noIgnore": true, "binary": true}, []string{`"matches":[]`}, "No match"},
		{"fs_find", map[string]any{"pattern": "**/*_test.go"}, []string{`"path":"src/retry_test.go"`, `"type":"file"`}, "src/retry_test.go"},
	} {
		r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tt.name, Arguments: tt.args})
		if err != nil {
			t.Fatal(err)
		}
		sc, _ := json.Marshal(r.StructuredContent)
		text := r.Content[0].(*mcp.TextContent).Text
		for _, w := range tt.want {
			if r.IsError || !strings.Contains(string(sc), w) || !strings.Contains(text, tt.text) {
				t.Errorf("%s %v: isError %v, structured %s (want %s), text %q", tt.name, tt.args, r.IsError, sc, w, text)
			}
		}
	}
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func TestTurnID(t *testing.T) {
	tests := []struct{ session, request, want string }{
		{"ABCD234", "7", "mcp.ABCD234.7"},
		{"", "1", "mcp.none.1"},
		{"stdio-00ff", "a:b", "mcp.stdio-00ff.a_b-"},
		{"s", "../../x", "mcp.s.______x-"},
		{"s", strings.Repeat("9", 100), "mcp.s." + strings.Repeat("9", 64) + "-"},
	}
	for _, tt := range tests {
		got := mcpsurface.TurnID(tt.session, tt.request)
		if !strings.HasPrefix(got, tt.want) || strings.ContainsAny(got, ":/") || strings.Contains(got, "..") {
			t.Errorf("TurnID(%q, %q) = %q, want prefix %q, no ':' '/' '..'", tt.session, tt.request, got, tt.want)
		}
	}
	if mcpsurface.TurnID("s", "a:b") == mcpsurface.TurnID("s", "a_b") {
		t.Error("distinct request ids share a turn id")
	}
}

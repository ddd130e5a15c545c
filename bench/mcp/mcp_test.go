package mcp_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/internal/testkit"
)

// serverScript is the MCP server's entry point, relative to where `make
// bench-deps` installs this package's npm packages (testkit.NPMDir).
const serverScript = "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"

// mcpProtocolVersion is the MCP revision the client asks for; the pinned
// server speaks it.
const mcpProtocolVersion = "2025-06-18"

// lineLen is the length of a line of the benchmark files with its newline.
const lineLen = 58

// line returns line n (counting from 1) of the benchmark files, without its
// newline.
func line(n int) string {
	return fmt.Sprintf("line %07d: the quick brown fox jumps over the lazy dog", n)
}

// textFile is a file of numbered lines, each ending in a newline.
type textFile struct {
	name  string
	lines int
}

func (f textFile) size() int { return f.lines * lineLen }

func (f textFile) content() string {
	var sb strings.Builder
	for n := 1; n <= f.lines; n++ {
		sb.WriteString(line(n))
		sb.WriteByte('\n')
	}
	return sb.String()
}

// span is lines first..last joined with "\n", without a final newline: what
// fs.readRange returns without line numbers, and MCP's head.
func span(first, last int) string {
	var sb strings.Builder
	for n := first; n <= last; n++ {
		if n > first {
			sb.WriteByte('\n')
		}
		sb.WriteString(line(n))
	}
	return sb.String()
}

// The benchmark's files, the same for both servers.
var (
	small = textFile{"small.txt", 70}     // 4 KB, a short source file
	large = textFile{"large.txt", 18_000} // 1 MB
	huge  = textFile{"huge.txt", 180_000} // 10 MB, for tails
	// The listed directories: dirs subdirectories and files files each.
	listings = []listing{{"list", 10, 90}, {"list10k", 100, 9900}}
	// writeFiles files of writeSize bytes are overwritten in turn.
	writeFiles, writeSize = 100, 4096
	// editFile is edited in place, one passage per round trip: each server
	// has its own copy (edit-hub.txt, edit-mcp.txt).
	editFile = textFile{"edit", 1_724} // 100 KB
)

// editState is the passage the round trips of fs.edit and edit_file
// replace, the line in the middle of the edited file.
func editState(i int) string { return fmt.Sprintf("state after round trip %d", i) }

// editContent is the edited file holding state on its middle line.
func editContent(state string) string {
	return strings.Replace(editFile.content(), line(editFile.lines/2), state, 1)
}

// fixture writes the files into a fresh directory.
func fixture(b *testing.B) string {
	b.Helper()
	dir := b.TempDir()
	put := func(rel, content string) {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	for _, f := range []textFile{small, large, huge} {
		put(f.name, f.content())
	}
	for _, l := range listings {
		for i := range l.dirs {
			if err := os.MkdirAll(filepath.Join(dir, l.name, fmt.Sprintf("d%02d", i)), 0o755); err != nil {
				b.Fatal(err)
			}
		}
		for i := range l.files {
			put(fmt.Sprintf("%s/f%02d.txt", l.name, i), "x\n")
		}
	}
	for i := range writeFiles {
		put(writePath(i), writeContent("init", i))
	}
	for _, who := range []string{"hub", "mcp"} {
		put(editFile.name+"-"+who+".txt", editContent(line(editFile.lines/2)))
	}
	return dir
}

func writePath(i int) string { return fmt.Sprintf("w/f%02d.txt", i%writeFiles) }

// writeContent is writeSize bytes that name the writer and the round trip,
// so reading the file back proves this very write landed.
func writeContent(who string, i int) string {
	head := fmt.Sprintf("written by %s in round trip %d\n", who, i)
	return head + strings.Repeat("w", writeSize-len(head)-1) + "\n"
}

// listing is a listed directory of the fixture.
type listing struct {
	name        string
	dirs, files int
}

// want is the directory's entries as sorted "D name" / "F name" lines.
func (d listing) want() []string {
	var l []string
	for i := range d.dirs {
		l = append(l, fmt.Sprintf("D d%02d", i))
	}
	for i := range d.files {
		l = append(l, fmt.Sprintf("F f%02d.txt", i))
	}
	slices.Sort(l)
	return l
}

// op is one operation done the same way on both servers; i numbers the
// round trip.
type op struct {
	name    string
	hubVerb string
	hubArgs func(i int) map[string]any
	// hubCheck validates a succeeded result.
	hubCheck func(dir string, i int, r hubResult) error
	mcpTool  string
	mcpArgs  func(dir string, i int) map[string]any
	// mcpCheck validates the text of a result that is not an error.
	mcpCheck func(dir string, i int, text string) error
	// prepare, when set, runs before every round trip to either server,
	// outside the timed part.
	prepare func(dir string) error
	// settle, when set, runs once before the first round trip.
	settle func(dir string) error
	// written is the size of the file a durable write or edit leaves (0
	// for a read): the floor with calls makes the system calls of such a
	// write (floorSource).
	written int
}

// ops are the compared operations. MCP's tail=N on a file that ends in a
// newline returns N-1 lines and the empty string after the last newline,
// so tail=51 is the call that returns the last 50 lines.
func ops() []op {
	same := func(want string) func(string, int, string) error {
		return func(_ string, _ int, got string) error { return sameText(got, want) }
	}
	read := func(f textFile) op {
		want := f.content()
		return op{
			name: "read-" + sizeName(len(want)), hubVerb: "fs.readFile",
			hubArgs:  func(int) map[string]any { return map[string]any{"path": f.name} },
			hubCheck: func(_ string, _ int, r hubResult) error { return sameText(r.Content, want) },
			mcpTool:  "read_text_file",
			mcpArgs:  func(dir string, _ int) map[string]any { return map[string]any{"path": filepath.Join(dir, f.name)} },
			mcpCheck: same(want),
		}
	}
	head := func(f textFile) op {
		want := span(1, 50)
		return op{
			name: "head50-" + sizeName(f.size()), hubVerb: "fs.readRange",
			hubArgs: func(int) map[string]any {
				return map[string]any{"path": f.name, "startLine": 1, "endLine": 50, "includeLineNumbers": false}
			},
			hubCheck: func(_ string, _ int, r hubResult) error { return sameText(r.Content, want) },
			mcpTool:  "read_text_file",
			mcpArgs: func(dir string, _ int) map[string]any {
				return map[string]any{"path": filepath.Join(dir, f.name), "head": 50}
			},
			mcpCheck: same(want),
		}
	}
	tail := func(f textFile) op {
		want := span(f.lines-49, f.lines)
		return op{
			name: "tail50-" + sizeName(f.size()), hubVerb: "fs.readRange",
			hubArgs: func(int) map[string]any {
				// The tail form: one call, without knowing the line count.
				return map[string]any{"path": f.name, "lastLines": 50, "includeLineNumbers": false}
			},
			hubCheck: func(_ string, _ int, r hubResult) error { return sameText(r.Content, want) },
			mcpTool:  "read_text_file",
			mcpArgs: func(dir string, _ int) map[string]any {
				return map[string]any{"path": filepath.Join(dir, f.name), "tail": 51}
			},
			mcpCheck: same(want + "\n"),
		}
	}
	list := func(d listing) op {
		want := d.want()
		return op{
			name: fmt.Sprintf("list-%d", d.dirs+d.files), hubVerb: "fs.listDir",
			hubArgs: func(int) map[string]any { return map[string]any{"path": d.name} },
			hubCheck: func(_ string, _ int, r hubResult) error {
				return sameListing(hubListing(r.Entries), want)
			},
			mcpTool: "list_directory",
			mcpArgs: func(dir string, _ int) map[string]any { return map[string]any{"path": filepath.Join(dir, d.name)} },
			// The hub keeps no listing of a directory changed less than 2 s
			// before it was read (see verbs.listCache): wait until the
			// fixture's directory is older, so the listing is measured warm.
			settle: func(dir string) error {
				fi, err := os.Stat(filepath.Join(dir, d.name))
				if err != nil {
					return err
				}
				time.Sleep(time.Until(fi.ModTime().Add(3 * time.Second)))
				return nil
			},
			mcpCheck: func(_ string, _ int, text string) error {
				got, err := mcpListing(text)
				if err != nil {
					return err
				}
				return sameListing(got, want)
			},
		}
	}
	write := op{
		name: "write-" + sizeName(writeSize), hubVerb: "fs.writeFile",
		hubArgs: func(i int) map[string]any {
			return map[string]any{"path": writePath(i), "content": writeContent("hub", i)}
		},
		hubCheck: func(dir string, i int, _ hubResult) error {
			return fileHolds(dir, writePath(i), writeContent("hub", i))
		},
		mcpTool: "write_file",
		mcpArgs: func(dir string, i int) map[string]any {
			return map[string]any{"path": filepath.Join(dir, writePath(i)), "content": writeContent("mcp", i)}
		},
		mcpCheck: func(dir string, i int, _ string) error { return fileHolds(dir, writePath(i), writeContent("mcp", i)) },
		written:  writeSize,
	}
	// The same listing with the directory changed (a file created and
	// removed) before every round trip: the hub's listing cache never
	// answers it.
	cold := list(listings[1])
	cold.name += "-cold"
	cold.settle = nil
	cold.prepare = func(dir string) error {
		p := filepath.Join(dir, listings[1].name, "scratch")
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			return err
		}
		return os.Remove(p)
	}
	return []op{read(small), read(large), head(large), tail(large), tail(huge), list(listings[0]), list(listings[1]), cold, write, edit()}
}

// edit replaces the middle line of a 100 KB file, each round trip with a
// text of its own: fs.edit (durable: the new file is synced before it is
// renamed, and its directory after) against edit_file (a write and a
// rename). Each server edits its own copy; the checks read it back.
func edit() op {
	cur := map[string]string{"hub": line(editFile.lines / 2), "mcp": line(editFile.lines / 2)}
	name := func(who string) string { return editFile.name + "-" + who + ".txt" }
	check := func(who string) func(dir string, i int) error {
		return func(dir string, i int) error {
			if err := fileHolds(dir, name(who), editContent(editState(i))); err != nil {
				return err
			}
			cur[who] = editState(i)
			return nil
		}
	}
	return op{
		name: "edit-" + sizeName(editFile.size()), hubVerb: "fs.edit",
		hubArgs: func(i int) map[string]any {
			return map[string]any{"path": name("hub"), "oldText": cur["hub"], "newText": editState(i)}
		},
		hubCheck: func(dir string, i int, _ hubResult) error { return check("hub")(dir, i) },
		mcpTool:  "edit_file",
		mcpArgs: func(dir string, i int) map[string]any {
			return map[string]any{"path": filepath.Join(dir, name("mcp")), "edits": []map[string]any{{"oldText": cur["mcp"], "newText": editState(i)}}}
		},
		mcpCheck: func(dir string, i int, _ string) error { return check("mcp")(dir, i) },
		written:  editFile.size(),
	}
}

func sizeName(n int) string {
	if n >= 1_000_000 {
		return fmt.Sprintf("%dMB", (n+500_000)/1_000_000)
	}
	return fmt.Sprintf("%dKB", (n+500)/1000)
}

func sameText(got, want string) error {
	if got == want {
		return nil
	}
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	return fmt.Errorf("content differs at byte %d of %d (want %d bytes): got %q", i, len(got), len(want), excerpt(got, i))
}

func excerpt(s string, at int) string {
	return s[max(0, at-20):min(len(s), at+20)]
}

func sameListing(got, want []string) error {
	if !slices.Equal(got, want) {
		return fmt.Errorf("listing is %q, want %q", got, want)
	}
	return nil
}

func fileHolds(dir, rel, want string) error {
	got, err := os.ReadFile(filepath.Join(dir, rel))
	if err != nil {
		return fmt.Errorf("read back: %w", err)
	}
	if err := sameText(string(got), want); err != nil {
		return fmt.Errorf("%s after the write: %w", rel, err)
	}
	return nil
}

// hubResult holds the fields of a `hub exec --stdio` result the checks read.
type hubResult struct {
	ID           int    `json:"id"`
	Succeeded    bool   `json:"succeeded"`
	ErrorMessage string `json:"errorMessage"`
	Content      string `json:"content"`
	Entries      []struct {
		Name        string `json:"name"`
		IsDirectory bool   `json:"isDirectory"`
	} `json:"entries"`
}

func hubListing(entries []struct {
	Name        string `json:"name"`
	IsDirectory bool   `json:"isDirectory"`
}) []string {
	l := make([]string, 0, len(entries))
	for _, e := range entries {
		kind := "F"
		if e.IsDirectory {
			kind = "D"
		}
		l = append(l, kind+" "+e.Name)
	}
	slices.Sort(l)
	return l
}

// mcpListing turns list_directory's "[DIR] name" / "[FILE] name" lines into
// sorted "D name" / "F name" lines.
func mcpListing(text string) ([]string, error) {
	var l []string
	if text == "" {
		return l, nil
	}
	for _, ln := range strings.Split(text, "\n") {
		switch {
		case strings.HasPrefix(ln, "[DIR] "):
			l = append(l, "D "+strings.TrimPrefix(ln, "[DIR] "))
		case strings.HasPrefix(ln, "[FILE] "):
			l = append(l, "F "+strings.TrimPrefix(ln, "[FILE] "))
		default:
			return nil, fmt.Errorf("listing line %q is neither [DIR] nor [FILE]", ln)
		}
	}
	slices.Sort(l)
	return l, nil
}

// rpcResponse is a JSON-RPC message from the MCP server: a response to a
// request (ID set) or a notification (Method set).
type rpcResponse struct {
	ID     *int64 `json:"id"`
	Method string `json:"method"`
	Result *struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		IsError         bool   `json:"isError"`
		ProtocolVersion string `json:"protocolVersion"`
	} `json:"result"`
	Error *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// mcpText returns the text of a tools/call response, or the error it
// carries.
func mcpText(msg []byte) (string, error) {
	var r rpcResponse
	if err := json.Unmarshal(msg, &r); err != nil {
		return "", fmt.Errorf("decode response: %w", err)
	}
	switch {
	case r.Error != nil:
		return "", fmt.Errorf("JSON-RPC error %d: %s", r.Error.Code, r.Error.Message)
	case r.Result == nil:
		return "", errors.New("response has neither result nor error")
	case len(r.Result.Content) != 1 || r.Result.Content[0].Type != "text":
		return "", fmt.Errorf("result has %d content blocks, want one text block", len(r.Result.Content))
	case r.Result.IsError:
		return "", fmt.Errorf("tool error: %s", r.Result.Content[0].Text)
	}
	return r.Result.Content[0].Text, nil
}

// lockedTail keeps the last 8 KiB written to it: a child's stderr, for
// error messages.
type lockedTail struct {
	mu  sync.Mutex
	buf []byte
}

func (t *lockedTail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - 8<<10; over > 0 {
		t.buf = t.buf[over:]
	}
	return len(p), nil
}

func (t *lockedTail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

// child is a server process spoken to one JSON line at a time.
type child struct {
	name   string
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	in     *bufio.Writer
	out    *bufio.Reader
	stderr *lockedTail
}

// startChild starts the command in dir; it is stopped (stdin closed, then
// killed if it does not exit) when the benchmark ends.
func startChild(b *testing.B, name, dir string, env []string, argv ...string) *child {
	b.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	c := &child{name: name, cmd: cmd, stderr: &lockedTail{}}
	cmd.Stderr = c.stderr
	var err error
	if c.stdin, err = cmd.StdinPipe(); err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatalf("start %s: %v", name, err)
	}
	c.in = bufio.NewWriterSize(c.stdin, 64<<10)
	c.out = bufio.NewReaderSize(stdout, 1<<20)
	b.Cleanup(c.stop)
	return c
}

func (c *child) stop() {
	c.stdin.Close()
	done := make(chan struct{})
	go func() { c.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		c.cmd.Process.Kill()
		<-done
	}
}

// send writes one message and a newline.
func (c *child) send(msg []byte) error {
	c.in.Write(msg)
	c.in.WriteByte('\n')
	if err := c.in.Flush(); err != nil {
		return fmt.Errorf("write to %s: %w (stderr: %s)", c.name, err, c.stderr)
	}
	return nil
}

// receive reads one line.
func (c *child) receive() ([]byte, error) {
	msg, err := c.out.ReadBytes('\n')
	if err != nil {
		return nil, fmt.Errorf("read from %s: %w (stderr: %s)", c.name, err, c.stderr)
	}
	return msg, nil
}

// hubClient speaks `hub exec --stdio`: one envelope per line with an id,
// one result per line with the id echoed.
type hubClient struct{ *child }

// call runs one verb and returns the raw result line.
func (h hubClient) call(id int, verb string, args map[string]any) ([]byte, error) {
	req, err := json.Marshal(map[string]any{"id": id, "verb": verb, "arguments": args})
	if err != nil {
		return nil, err
	}
	if err := h.send(req); err != nil {
		return nil, err
	}
	return h.receive()
}

// mcpClient speaks MCP's stdio transport: JSON-RPC 2.0, one message per line.
type mcpClient struct {
	*child
	nextID int64
}

// request sends a request and returns its response, skipping any
// notification or request from the server in between.
func (m *mcpClient) request(method string, params any) ([]byte, error) {
	m.nextID++
	id := m.nextID
	req, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err != nil {
		return nil, err
	}
	if err := m.send(req); err != nil {
		return nil, err
	}
	// The reference server writes the id last, the Go SDK (hub mcp) first;
	// check both before decoding anything, so that no side pays for a
	// decode inside its timed round trip.
	suffix := fmt.Appendf(nil, `"id":%d}`, id)
	prefix := fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"result"`, id)
	for {
		msg, err := m.receive()
		if err != nil {
			return nil, err
		}
		if bytes.HasSuffix(bytes.TrimSpace(msg), suffix) || bytes.HasPrefix(msg, prefix) {
			return msg, nil
		}
		var r rpcResponse
		if err := json.Unmarshal(msg, &r); err != nil {
			return nil, fmt.Errorf("decode message from %s: %w", m.name, err)
		}
		if r.Method == "" && r.ID != nil && *r.ID == id {
			return msg, nil
		}
	}
}

// initialize does MCP's handshake.
func (m *mcpClient) initialize() error {
	msg, err := m.request("initialize", map[string]any{
		"protocolVersion": mcpProtocolVersion,
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]any{"name": "hermes-hub-bench", "version": "0"},
	})
	if err != nil {
		return err
	}
	var r rpcResponse
	if err := json.Unmarshal(msg, &r); err != nil {
		return fmt.Errorf("decode initialize response: %w", err)
	}
	if r.Error != nil || r.Result == nil || r.Result.ProtocolVersion == "" {
		return fmt.Errorf("initialize failed: %s", msg)
	}
	return m.send([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
}

func (m *mcpClient) callTool(name string, args map[string]any) ([]byte, error) {
	return m.request("tools/call", map[string]any{"name": name, "arguments": args})
}

// buildHub builds the hub binary into a temp directory.
func buildHub(b *testing.B) string {
	b.Helper()
	bin := filepath.Join(b.TempDir(), "hub")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/a6afc2ce/hermes-hub/cmd/hub")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("build hub: %v\n%s", err, out)
	}
	return bin
}

// stats are one server's round trips for one operation.
type stats struct{ lat []time.Duration }

func (s stats) opsPerSec() float64 {
	var total time.Duration
	for _, d := range s.lat {
		total += d
	}
	if total == 0 {
		return 0
	}
	return float64(len(s.lat)) / total.Seconds()
}

// percentile is the nearest-rank p-quantile (0..1) in milliseconds.
func percentile(lat []time.Duration, p float64) float64 {
	if len(lat) == 0 {
		return 0
	}
	s := slices.Clone(lat)
	slices.Sort(s)
	return float64(s[int(p*float64(len(s)-1))]) / float64(time.Millisecond)
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// BenchmarkVersusMCP runs the same operations on the same files through
// `hub exec --stdio` and the MCP reference filesystem server, both started
// once for the run. Each iteration makes one round trip to each server
// (request written, whole response read: sequential, as an agent works),
// alternating which goes first; every answer is checked outside the timed
// round trip. Reported per operation: each server's round trips per second
// (count over the summed round-trip times), hub/mcp (the ratio of those),
// each server's p50 and p99 latency, and the p50 of the floor (floorSource:
// a process that does nothing but answer as many bytes as the hub did). A
// summary table is printed at the end.
func BenchmarkVersusMCP(b *testing.B) {
	node, script := mcpServer(b)
	loadBefore := loadavg()
	bin := buildHub(b)
	dir := fixture(b)
	hub := hubClient{startChild(b, "hub exec --stdio", dir, []string{"HUB_CONFIG="}, bin, "exec", "--stdio")}
	ref := &mcpClient{child: startChild(b, "MCP filesystem server", dir, nil, node, script, dir)}
	if err := ref.initialize(); err != nil {
		b.Fatal(err)
	}
	hubRound := func(o op, i int) (time.Duration, int, hubResult, error) {
		t0 := time.Now()
		msg, err := hub.call(i, o.hubVerb, o.hubArgs(i))
		d := time.Since(t0)
		if err != nil {
			return d, 0, hubResult{}, err
		}
		var r hubResult
		if err := json.Unmarshal(msg, &r); err != nil {
			return d, len(msg), r, fmt.Errorf("decode %.200s: %w", msg, err)
		}
		if r.ID != i {
			return d, len(msg), r, fmt.Errorf("id %d, want %d", r.ID, i)
		}
		return d, len(msg), r, nil
	}
	compare(b, "hub exec --stdio", loadBefore, dir, hub.child, ref, hubRound)
}

// BenchmarkMCPVersusMCP is BenchmarkVersusMCP with MCP on both sides: the
// same JSON-RPC client speaks MCP over stdio to `hub mcp` (tools named
// fs_readFile and so on, arguments as for hub exec, the result read from
// structuredContent) and to the reference server. `hub mcp` runs every call
// through the hub's Execute: access checked and the exchange mirrored (two
// JSONL appends per call, fsynced for the write, not waited for on disk for
// the reads), as it does for clients.
func BenchmarkMCPVersusMCP(b *testing.B) {
	node, script := mcpServer(b)
	loadBefore := loadavg()
	bin := buildHub(b)
	dir := fixture(b)
	conf := filepath.Join(b.TempDir(), "hub.yml")
	yml := "state_dir: " + filepath.Join(b.TempDir(), "state") + "\naccess:\n  roles:\n    admin:\n      verbs: ['*']\n  grants:\n    agent:local: [admin]\n"
	if err := os.WriteFile(conf, []byte(yml), 0o600); err != nil {
		b.Fatal(err)
	}
	hub := &mcpClient{child: startChild(b, "hub mcp", dir, []string{"HUB_CONFIG="}, bin, "mcp", "--config", conf, "--workspace", dir)}
	if err := hub.initialize(); err != nil {
		b.Fatal(err)
	}
	ref := &mcpClient{child: startChild(b, "MCP filesystem server", dir, nil, node, script, dir)}
	if err := ref.initialize(); err != nil {
		b.Fatal(err)
	}
	hubRound := func(o op, i int) (time.Duration, int, hubResult, error) {
		t0 := time.Now()
		msg, err := hub.callTool(strings.ReplaceAll(o.hubVerb, ".", "_"), o.hubArgs(i))
		d := time.Since(t0)
		if err != nil {
			return d, 0, hubResult{}, err
		}
		r, err := structured(msg)
		return d, len(msg), r, err
	}
	compare(b, "hub mcp", loadBefore, dir, hub.child, ref, hubRound)
}

// structured decodes the structuredContent of a hub tools/call response.
func structured(msg []byte) (hubResult, error) {
	var resp struct {
		Result *struct {
			StructuredContent *hubResult `json:"structuredContent"`
		} `json:"result"`
		Error *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(msg, &resp); err != nil {
		return hubResult{}, fmt.Errorf("decode %.200s: %w", msg, err)
	}
	if resp.Error != nil || resp.Result == nil || resp.Result.StructuredContent == nil {
		return hubResult{}, fmt.Errorf("no structured result: %.300s", msg)
	}
	return *resp.Result.StructuredContent, nil
}

// mcpServer finds node and the reference server, or skips.
func mcpServer(b *testing.B) (node, script string) {
	node, err := exec.LookPath("node")
	if err != nil {
		b.Skip("node not installed")
	}
	dir, err := testkit.NPMDir(".")
	if err != nil {
		b.Fatal(err)
	}
	script = filepath.Join(dir, serverScript)
	if _, err := os.Stat(script); err != nil {
		b.Skip("@modelcontextprotocol/server-filesystem not installed: run make bench-deps")
	}
	return node, script
}

// floorSource is the floor of a round trip: a process that does no work,
// answering each line, a decimal n, with n bytes and a newline. Asked for
// the length of the hub's last answer, it measures what the pipes, the
// wake-ups of two idle processes and the client's reading of as many
// bytes cost on this machine, which no server can go below. Given a
// directory, it also makes the system calls of a small read through the
// hub before each answer (floor-calls): a record appended to one file, a
// 4 KB file opened, read and closed, a record appended to another file;
// the difference between the two floors is what those calls cost. A line
// "n size" asks floor-calls for the system calls of a durable write of
// size bytes as the hub makes them (docs/mcp.md, "What a call leaves in
// the mirror"): a record appended and fsynced; a temporary file created,
// written, fsynced and closed; the rename over the file; the directory
// fsynced; a record appended and fsynced. That floor is the disk's part of
// a durable write, which no server keeping those promises can go below.
const floorSource = `package main

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"
)

func main() {
	r := bufio.NewReaderSize(os.Stdin, 64<<10)
	w := bufio.NewWriterSize(os.Stdout, 64<<10)
	var calls func() error
	var durable func(size int) error
	var content []byte
	if len(os.Args) > 1 {
		dir := os.Args[1]
		in, err := os.OpenFile(filepath.Join(dir, "in.jsonl"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			panic(err)
		}
		out, err := os.OpenFile(filepath.Join(dir, "out.jsonl"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			panic(err)
		}
		rec := append(bytes.Repeat([]byte("r"), 450), '\n')
		buf := make([]byte, 8<<10)
		d, err := os.Open(dir)
		if err != nil {
			panic(err)
		}
		durable = func(size int) error {
			if _, err := in.Write(rec); err != nil {
				return err
			}
			if err := in.Sync(); err != nil {
				return err
			}
			tmp := filepath.Join(dir, ".written.tmp")
			f, err := os.OpenFile(tmp, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
			if err != nil {
				return err
			}
			if len(content) != size {
				content = bytes.Repeat([]byte("w"), size)
			}
			if _, err := f.Write(content); err != nil {
				f.Close()
				return err
			}
			if err := f.Sync(); err != nil {
				f.Close()
				return err
			}
			if err := f.Close(); err != nil {
				return err
			}
			if err := os.Rename(tmp, filepath.Join(dir, "written.txt")); err != nil {
				return err
			}
			if err := d.Sync(); err != nil {
				return err
			}
			if _, err := out.Write(rec); err != nil {
				return err
			}
			return out.Sync()
		}
		calls = func() error {
			if _, err := in.Write(rec); err != nil {
				return err
			}
			f, err := os.Open(filepath.Join(dir, "read.txt"))
			if err != nil {
				return err
			}
			_, err = f.Read(buf)
			f.Close()
			if err != nil {
				return err
			}
			_, err = out.Write(rec)
			return err
		}
	}
	var answer []byte
	for {
		line, err := r.ReadSlice('\n')
		if err != nil {
			return
		}
		fields := bytes.Fields(line)
		if len(fields) == 0 {
			return
		}
		n, err := strconv.Atoi(string(fields[0]))
		if err != nil || n < 0 {
			return
		}
		size := 0
		if len(fields) > 1 {
			if size, err = strconv.Atoi(string(fields[1])); err != nil || size < 0 {
				return
			}
		}
		switch {
		case durable != nil && size > 0:
			if durable(size) != nil {
				return
			}
		case calls != nil:
			if calls() != nil {
				return
			}
		}
		if len(answer) != n+1 {
			answer = append(bytes.Repeat([]byte("x"), n), '\n')
		}
		w.Write(answer)
		if w.Flush() != nil {
			return
		}
	}
}
`

// startFloor builds floorSource and starts it; with calls, making the
// system calls of a small read before each answer.
func startFloor(b *testing.B, calls bool) *child {
	b.Helper()
	dir := b.TempDir()
	src := filepath.Join(dir, "floor.go")
	if err := os.WriteFile(src, []byte(floorSource), 0o644); err != nil {
		b.Fatal(err)
	}
	bin := filepath.Join(dir, "floor")
	if out, err := exec.Command("go", "build", "-o", bin, src).CombinedOutput(); err != nil {
		b.Fatalf("build the floor program: %v\n%s", err, out)
	}
	if !calls {
		return startChild(b, "floor", dir, nil, bin)
	}
	if err := os.WriteFile(filepath.Join(dir, "read.txt"), bytes.Repeat([]byte("0123456789abcdef\n"), 240), 0o644); err != nil {
		b.Fatal(err)
	}
	return startChild(b, "floor-calls", dir, nil, bin, dir)
}

// compare runs every operation against the hub (hubRound makes one timed
// round trip and gives the length of the answer) and the reference
// server, one round trip each per iteration, and a round trip to the
// floor (floorSource) for as many bytes as the hub's answer, and one to
// the floor with calls (with a durable write's calls for a write).
//
// Each process's CPU time over the timed round trips (cpuTime), per round
// trip, is reported too: the client waits between a process's calls (for
// the other's), so this is the CPU a call costs a process that idled
// before it, which on this kind of machine is several times what the same
// call costs back to back (BenchmarkCallCost).
func compare(b *testing.B, label, loadBefore, dir string, hubChild *child, ref *mcpClient, hubRound func(o op, i int) (time.Duration, int, hubResult, error)) {
	floor, floorCalls := startFloor(b, false), startFloor(b, true)
	type row struct {
		name                        string
		hub, mcp, floor, floorCalls stats
		cpu                         [4]float64 // µs a round trip: hub, MCP, floor, floor with calls
	}
	var rows []row
	for _, o := range ops() {
		var hubStats, mcpStats, floorStats, callsStats stats
		var cpu [4]float64
		ok := b.Run(o.name, func(b *testing.B) {
			hubStats, mcpStats, floorStats, callsStats = stats{}, stats{}, stats{}, stats{}
			answer := 0 // the length of the hub's last answer
			prepare := func() {
				if o.prepare != nil {
					if err := o.prepare(dir); err != nil {
						b.Fatalf("%s: prepare: %v", o.name, err)
					}
				}
			}
			roundHub := func(i int) {
				prepare()
				d, n, r, err := hubRound(o, i)
				answer = n
				if err != nil {
					b.Fatalf("%s %s round trip %d: %v", label, o.name, i, err)
				}
				if !r.Succeeded {
					b.Fatalf("%s %s round trip %d: %s", label, o.name, i, r.ErrorMessage)
				}
				if err := o.hubCheck(dir, i, r); err != nil {
					b.Fatalf("%s %s round trip %d: %v", label, o.name, i, err)
				}
				hubStats.lat = append(hubStats.lat, d)
			}
			roundMCP := func(i int) {
				prepare()
				t0 := time.Now()
				msg, err := ref.callTool(o.mcpTool, o.mcpArgs(dir, i))
				d := time.Since(t0)
				if err != nil {
					b.Fatal(err)
				}
				text, err := mcpText(msg)
				if err != nil {
					b.Fatalf("MCP %s round trip %d: %v", o.name, i, err)
				}
				if err := o.mcpCheck(dir, i, text); err != nil {
					b.Fatalf("MCP %s round trip %d: %v", o.name, i, err)
				}
				mcpStats.lat = append(mcpStats.lat, d)
			}
			roundFloor := func(floor *child, st *stats) {
				req := strconv.AppendInt(nil, int64(answer), 10)
				if floor == floorCalls && o.written > 0 {
					req = strconv.AppendInt(append(req, ' '), int64(o.written), 10)
				}
				t0 := time.Now()
				if err := floor.send(req); err != nil {
					b.Fatal(err)
				}
				msg, err := floor.receive()
				d := time.Since(t0)
				if err != nil || len(msg) != answer+1 {
					b.Fatalf("%s: %d bytes, want %d: %v", floor.name, len(msg), answer+1, err)
				}
				st.lat = append(st.lat, d)
			}
			if o.settle != nil {
				if err := o.settle(dir); err != nil {
					b.Fatalf("%s: settle: %v", o.name, err)
				}
			}
			// Warm up both (and check them) before anything is counted:
			// node compiles its hot paths on first use.
			for i := range 10 {
				roundHub(-1 - i)
				roundMCP(-1 - i)
				roundFloor(floor, &floorStats)
				roundFloor(floorCalls, &callsStats)
			}
			hubStats, mcpStats, floorStats, callsStats = stats{}, stats{}, stats{}, stats{}
			procs := []*child{hubChild, ref.child, floor, floorCalls}
			cpu0 := make([]time.Duration, len(procs))
			for k, c := range procs {
				cpu0[k] = cpuTime(b, c)
			}
			i := 0
			for b.Loop() {
				if i%2 == 0 {
					roundHub(i)
					roundMCP(i)
				} else {
					roundMCP(i)
					roundHub(i)
				}
				// After the reference's round trip as often as after the
				// hub's: both leave the floors' processes idle as long.
				roundFloor(floor, &floorStats)
				roundFloor(floorCalls, &callsStats)
				i++
			}
			for k, unit := range []string{"hub-cpu-µs", "mcp-cpu-µs", "floor-cpu-µs", "floor-calls-cpu-µs"} {
				cpu[k] = float64(cpuTime(b, procs[k])-cpu0[k]) / float64(time.Microsecond) / float64(i)
				b.ReportMetric(cpu[k], unit)
			}
			h, m := hubStats.opsPerSec(), mcpStats.opsPerSec()
			b.ReportMetric(h, "hub-ops/s")
			b.ReportMetric(m, "mcp-ops/s")
			if m > 0 {
				b.ReportMetric(h/m, "hub/mcp")
			}
			b.ReportMetric(percentile(hubStats.lat, 0.50), "hub-p50-ms")
			b.ReportMetric(percentile(hubStats.lat, 0.99), "hub-p99-ms")
			b.ReportMetric(percentile(mcpStats.lat, 0.50), "mcp-p50-ms")
			b.ReportMetric(percentile(mcpStats.lat, 0.99), "mcp-p99-ms")
			b.ReportMetric(percentile(floorStats.lat, 0.50), "floor-p50-ms")
			b.ReportMetric(percentile(callsStats.lat, 0.50), "floor-calls-p50-ms")
			b.ReportMetric(0, "ns/op") // one iteration is a pair of round trips: see the metrics
		})
		if ok && len(hubStats.lat) > 0 {
			rows = append(rows, row{o.name, hubStats, mcpStats, floorStats, callsStats, cpu})
		}
	}
	if len(rows) == 0 {
		return
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s vs MCP filesystem server (load average %s before, %s after)\n", label, loadBefore, loadavg())
	fmt.Fprintf(&sb, "| operation | round trips | hub ops/s | MCP ops/s | hub/MCP | hub p50/p99 ms | MCP p50/p99 ms | floor p50 ms | floor with calls p50 ms | CPU µs a call: hub / MCP / floor / with calls |\n")
	fmt.Fprintf(&sb, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range rows {
		h, m := r.hub.opsPerSec(), r.mcp.opsPerSec()
		fmt.Fprintf(&sb, "| %s | %d | %.0f | %.0f | %.2f | %.3f / %.3f | %.3f / %.3f | %.3f | %.3f | %.0f / %.0f / %.0f / %.0f |\n", r.name, len(r.hub.lat), h, m, h/m,
			percentile(r.hub.lat, 0.50), percentile(r.hub.lat, 0.99), percentile(r.mcp.lat, 0.50), percentile(r.mcp.lat, 0.99),
			percentile(r.floor.lat, 0.50), percentile(r.floorCalls.lat, 0.50), r.cpu[0], r.cpu[1], r.cpu[2], r.cpu[3])
	}
	// The geometric mean of the ratios weighs every operation alike.
	logSum := 0.0
	for _, r := range rows {
		logSum += math.Log(r.hub.opsPerSec() / r.mcp.opsPerSec())
	}
	fmt.Fprintf(&sb, "| geometric mean of hub/MCP | | | | %.2f | | | | | |\n", math.Exp(logSum/float64(len(rows))))
	// Printed rather than logged: a parent benchmark's log shows only with -v.
	fmt.Print(sb.String())
}

// BenchmarkFindVersusMCP compares fs.find with the reference server's
// search_files on the Go toolchain's own source tree ($(go env
// GOROOT)/src, about 11k files): the same glob, **/*_test.go, over MCP on
// both sides (`hub mcp` with the hub's state outside the tree), one round
// trip to each per iteration, alternating which goes first. Both must
// return the same number of files. Reported as BenchmarkVersusMCP reports
// its operations.
func BenchmarkFindVersusMCP(b *testing.B) {
	node, script := mcpServer(b)
	src := goSrc(b)
	if _, err := os.Stat(filepath.Join(src, "go.mod")); err != nil {
		b.Skipf("GOROOT/src not found: %v", err)
	}
	bin := buildHub(b)
	conf := filepath.Join(b.TempDir(), "hub.yml")
	yml := "state_dir: " + filepath.Join(b.TempDir(), "state") + "\naccess:\n  roles:\n    admin:\n      verbs: ['*']\n  grants:\n    agent:local: [admin]\n"
	if err := os.WriteFile(conf, []byte(yml), 0o600); err != nil {
		b.Fatal(err)
	}
	cwd := b.TempDir()
	hub := &mcpClient{child: startChild(b, "hub mcp", cwd, []string{"HUB_CONFIG="}, bin, "mcp", "--config", conf, "--workspace", src)}
	if err := hub.initialize(); err != nil {
		b.Fatal(err)
	}
	ref := &mcpClient{child: startChild(b, "MCP filesystem server", cwd, nil, node, script, src)}
	if err := ref.initialize(); err != nil {
		b.Fatal(err)
	}
	const glob = "**/*_test.go"
	hubRound := func() (time.Duration, int) {
		t0 := time.Now()
		msg, err := hub.callTool("fs_find", map[string]any{"pattern": glob, "type": "file", "maxResults": 2000})
		d := time.Since(t0)
		if err != nil {
			b.Fatal(err)
		}
		var resp struct {
			Result struct {
				StructuredContent struct {
					Succeeded bool              `json:"succeeded"`
					Truncated bool              `json:"truncated"`
					Entries   []json.RawMessage `json:"entries"`
				} `json:"structuredContent"`
			} `json:"result"`
		}
		if err := json.Unmarshal(msg, &resp); err != nil || !resp.Result.StructuredContent.Succeeded || resp.Result.StructuredContent.Truncated {
			b.Fatalf("fs_find: %v %.300s", err, msg)
		}
		return d, len(resp.Result.StructuredContent.Entries)
	}
	refRound := func() (time.Duration, int) {
		t0 := time.Now()
		msg, err := ref.callTool("search_files", map[string]any{"path": src, "pattern": glob})
		d := time.Since(t0)
		if err != nil {
			b.Fatal(err)
		}
		text, err := mcpText(msg)
		if err != nil {
			b.Fatal(err)
		}
		return d, strings.Count(text, "\n") + 1
	}
	hn, mn := 0, 0
	for range 2 { // warm up both, and the page cache
		_, hn = hubRound()
		_, mn = refRound()
	}
	if hn != mn {
		b.Fatalf("fs.find found %d files, search_files %d", hn, mn)
	}
	var hubStats, mcpStats stats
	i := 0
	for b.Loop() {
		if i%2 == 0 {
			d, _ := hubRound()
			hubStats.lat = append(hubStats.lat, d)
			d, _ = refRound()
			mcpStats.lat = append(mcpStats.lat, d)
		} else {
			d, _ := refRound()
			mcpStats.lat = append(mcpStats.lat, d)
			d, _ = hubRound()
			hubStats.lat = append(hubStats.lat, d)
		}
		i++
	}
	h, m := hubStats.opsPerSec(), mcpStats.opsPerSec()
	b.ReportMetric(h, "hub-ops/s")
	b.ReportMetric(m, "mcp-ops/s")
	b.ReportMetric(h/m, "hub/mcp")
	b.ReportMetric(percentile(hubStats.lat, 0.50), "hub-p50-ms")
	b.ReportMetric(percentile(mcpStats.lat, 0.50), "mcp-p50-ms")
	b.ReportMetric(float64(hn), "files")
	b.ReportMetric(0, "ns/op")
}

// goSrc is $(go env GOROOT)/src, the Go toolchain's own source tree.
func goSrc(b *testing.B) string {
	b.Helper()
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		b.Skipf("go env GOROOT: %v", err)
	}
	return filepath.Join(strings.TrimSpace(string(out)), "src")
}

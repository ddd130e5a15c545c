package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"

	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/hub"
	"github.com/a6afc2ce/hermes-hub/hub/hubtest"
	"github.com/a6afc2ce/hermes-hub/internal/testkit"
	"github.com/a6afc2ce/hermes-hub/metrics"
	"github.com/a6afc2ce/hermes-hub/nodes"
	"github.com/a6afc2ce/hermes-hub/store"
)

// remoteRig is a hub runtime whose workspace db1-logs is the workspace
// logs of node db-1, over the embedded NATS server, with nodes db-1 and
// db-2 configured; nodes run in-process with the real verbs.
type remoteRig struct {
	env     *hubtest.Env
	rec     *hubtest.Recorder
	mx      *metrics.Metrics
	nodes   *nodes.Hub
	keys    map[string]nkeys.KeyPair
	nodeDir string
	n       int
}

func newRemoteRig(t *testing.T) *remoteRig {
	t.Helper()
	root := t.TempDir()
	r := &remoteRig{keys: map[string]nkeys.KeyPair{}, nodeDir: filepath.Join(root, "node-logs")}
	if err := os.MkdirAll(r.nodeDir, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := hubtest.Config(t, filepath.Join(root, "main"), "")
	if err := os.MkdirAll(cfg.Workspace, 0o755); err != nil {
		t.Fatal(err)
	}
	pubs := map[string]string{}
	cfg.Nodes = map[string]config.NodeEntry{}
	for _, n := range []string{"db-1", "db-2"} {
		kp, err := nkeys.CreateUser()
		if err != nil {
			t.Fatal(err)
		}
		r.keys[n] = kp
		pubs[n], _ = kp.PublicKey()
		cfg.Nodes[n] = config.NodeEntry{NKey: pubs[n]}
	}
	cfg.NATS.Embedded, cfg.NATS.Listen = true, "127.0.0.1:0"
	cfg.Workspaces.Named = map[string]config.WorkspaceConfig{
		"db1-logs": {Destination: config.Destination{Kind: config.DestinationRemote, Node: "db-1", Workspace: "logs"}},
	}
	cfg.Access.Roles = map[string]config.Role{"ops": {Verbs: []string{"*", config.AdminRead}, Workspaces: []string{"*"}}}
	cfg.Access.Grants = map[string][]string{"telegram:1": {"ops"}, "web": {"ops"}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	var err error
	r.mx, err = metrics.New(metrics.Options{Verbs: laterVerbs(func() *executor.Registry { return r.env.Runtime.Hub.Registry() })})
	if err != nil {
		t.Fatal(err)
	}
	nh, err := openNodes(context.Background(), cfg, nil, nil, testkit.Discard(), nodeCallMetrics(r.mx))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nh.Close() })
	r.nodes = nh
	remote := &remoteNodes{nodes: nh}
	r.env = hubtest.Open(t, cfg, hubtest.Options{Workspaces: true, Runtime: hub.RuntimeOptions{Remote: remote, Observer: r.mx}})
	remote.reg = r.env.Runtime.Hub.Registry()
	r.rec = hubtest.NewRecorder()
	r.rec.HandleAll(t, r.env.Runtime)
	r.env.Start(t)
	return r
}

// laterVerbs are the verbs of the runtime opened after the metrics.
type laterVerbs func() *executor.Registry

func (f laterVerbs) Lookup(name string) (executor.Info, bool) { return f().Lookup(name) }

// startNode runs node db-1 in-process, with the real verbs over its
// workspace logs, until the test ends.
func (r *remoteRig) startNode(t *testing.T, name string) {
	t.Helper()
	nf := &config.NodeFile{StateDir: filepath.Join(filepath.Dir(r.nodeDir), name+"-state"), DefaultWorkspace: "logs",
		Workspaces: map[string]config.NodeWorkspace{"logs": {Path: r.nodeDir}}}
	execs, closeAll, err := buildNodeWorkspaces(nf, testkit.Discard())
	if err != nil {
		t.Fatal(err)
	}
	n, err := nodes.StartNode(context.Background(), nodes.NodeOptions{
		Name: name, URL: r.nodes.ClientURL(), Key: r.keys[name], StateDir: nf.StateDir, Workspaces: execs,
		Default: "logs", Version: "v-node", Heartbeat: 100 * time.Millisecond, Logger: testkit.Discard(),
	})
	if err != nil {
		closeAll()
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { n.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done; closeAll() })
}

// say sends text as telegram user 1 in chat 100 and returns the turn and
// its reply once enqueued and sent.
func (r *remoteRig) say(t *testing.T, text string) (*hub.TurnResult, string) {
	t.Helper()
	r.n++
	in := &chat.Inbound{TurnID: fmt.Sprintf("telegram.100.%d", r.n), Platform: chat.Telegram, ChatID: "100", MessageID: fmt.Sprint(r.n),
		UserID: "1", UserName: "u", ChatType: "private", Text: text}
	before := len(r.rec.Sent("chat:telegram:100"))
	res, err := r.env.Runtime.Hub.Handle(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	got := r.rec.Wait(t, "chat:telegram:100", before+len(res.Outbox))
	var b strings.Builder
	for _, e := range got[before:] {
		b.WriteString(e.Text)
	}
	return res, b.String()
}

// A chat turn in a remote workspace runs on its node; a long proc.run's
// output is paged back through proc.output, which goes to the node like
// any verb.
func TestRemoteWorkspaceEndToEnd(t *testing.T) {
	r := newRemoteRig(t)
	r.startNode(t, "db-1")
	testkit.WaitFor(t, "db-1 online", func() bool {
		l, err := r.nodes.List(context.Background())
		return err == nil && l[0].Online
	})
	if _, reply := r.say(t, "/use db1-logs"); !strings.Contains(reply, "remote (node db-1, logs); node db-1 is online") {
		t.Fatalf("/use: %q", reply)
	}
	res, reply := r.say(t, `/proc.run sh -c "seq 1 20000"`)
	if res.Status != hub.StatusExecuted || !res.Outcome.Succeeded() {
		t.Fatalf("proc.run: %s %q", res.Status, reply)
	}
	if sent := r.rec.Sent("chat:telegram:100"); sent[len(sent)-1].Meta[hub.MetaNode] != "db-1" {
		t.Fatalf("reply meta %v", sent[len(sent)-1].Meta)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(r.nodeDir), "db-1-state", "proc", res.TurnID, "stdout.txt")); err != nil {
		t.Fatalf("the output is not on the node: %v", err)
	}
	// Page through the whole output, as the caller who ran it.
	lines, pages := 0, 0
	for start := 1; ; {
		out, err := r.env.Runtime.Hub.Execute(context.Background(), hub.APIRequest{Identity: "telegram:1", Workspace: "db1-logs",
			Input: fmt.Appendf(nil, `{"verb":"proc.output","arguments":{"outputId":%q,"startLine":%d}}`, res.TurnID, start)})
		if err != nil {
			t.Fatal(err)
		}
		var page struct {
			Succeeded           bool
			Content             string
			EndLine, TotalLines int
		}
		if err := json.Unmarshal(out.JSON(), &page); err != nil || !page.Succeeded {
			t.Fatalf("page at %d: %s", start, out.JSON())
		}
		if first := strings.SplitN(page.Content, "\n", 2)[0]; first != fmt.Sprint(start) {
			t.Fatalf("page at %d starts with %q", start, first)
		}
		lines += page.EndLine - start + 1
		pages++
		if page.EndLine >= page.TotalLines {
			break
		}
		start = page.EndLine + 1
	}
	if lines != 20000 {
		t.Fatalf("paged %d lines, want 20000", lines)
	}
	// The hub's metrics account for every call to db-1 (proc.run and the
	// pages) and for where its time went, on the node and between.
	rec := httptest.NewRecorder()
	r.mx.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	body := rec.Body.String()
	calls := 1 + pages
	want := []string{fmt.Sprintf(`hub_node_calls_total{node="db-1",status="done"} %d`, calls)}
	for _, phase := range []string{"round_trip", "ledger", "slot", "run", "transit"} {
		want = append(want, fmt.Sprintf(`hub_node_call_seconds_count{node="db-1",phase=%q} %d`, phase, calls))
	}
	for _, w := range want {
		if !strings.Contains(body, w) {
			t.Errorf("/metrics lacks %s", w)
		}
	}
}

// A node cannot make the hub say anything in a chat but the answer to a
// call the hub sent it: db-2's forged result for db-1's real turn, and a
// result for a call nobody made, are dropped; the turn gets db-1's answer
// once.
func TestForgedResultNeverReachesAChat(t *testing.T) {
	r := newRemoteRig(t)
	if err := os.WriteFile(filepath.Join(r.nodeDir, "real.txt"), []byte("the real answer"), 0o644); err != nil {
		t.Fatal(err)
	}
	type turn struct {
		res   *hub.TurnResult
		reply string
	}
	done := make(chan turn, 1)
	var wg sync.WaitGroup
	wg.Go(func() {
		res, reply := r.say(t, `{"verb":"fs.readFile","arguments":{"path":"real.txt"},"workspace":"db1-logs"}`)
		done <- turn{res, reply}
	})
	defer wg.Wait()
	callID := nodes.CallID("telegram.100.1", 0)
	pub, _ := r.keys["db-2"].PublicKey()
	nc, err := nats.Connect(r.nodes.ClientURL(), nats.Nkey(pub, r.keys["db-2"].Sign), nats.CustomInboxPrefix("_INBOX.node.db-2"))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	forge := func(id string) {
		data, _ := json.Marshal(map[string]any{"call_id": id, "node": "db-1", "status": "done", "verb": "fs.readFile",
			"result": map[string]any{"succeeded": true, "content": "FORGED"}})
		if _, err := js.Publish(context.Background(), "hub.results.db-2", data, jetstream.WithMsgID(id)); err != nil {
			t.Fatal(err)
		}
	}
	// The turn is waiting for db-1 (not started yet): db-2 answers in its
	// place, and for a turn that made no call.
	hc, err := nodes.DialHub(r.nodes.ClientURL(), r.env.Config.StateDir, "")
	if err != nil {
		t.Fatal(err)
	}
	defer hc.Close()
	hjs, _ := jetstream.New(hc)
	testkit.WaitFor(t, "the call queued for db-1", func() bool {
		s, err := hjs.Stream(context.Background(), "HUB_NODE_db-1")
		return err == nil && s.CachedInfo().State.Msgs == 1
	})
	forge(callID)
	forge(nodes.CallID("telegram.100.99", 0))
	select {
	case tt := <-done:
		t.Fatalf("the turn was answered before its node ran it: %q", tt.reply)
	case <-time.After(200 * time.Millisecond):
	}
	r.startNode(t, "db-1")
	var tt turn
	select {
	case tt = <-done:
	case <-time.After(testkit.Wait):
		t.Fatal("no answer once db-1 started")
	}
	if strings.Contains(tt.reply, "FORGED") || !strings.Contains(tt.reply, "the real answer") {
		t.Fatalf("reply %q", tt.reply)
	}
	for _, e := range r.rec.Sent("chat:telegram:100") {
		if strings.Contains(e.Text, "FORGED") || e.TurnID != "telegram.100.1" {
			t.Fatalf("a chunk that is not the real turn's answer: %+v", e)
		}
	}
}

// A client holding db-1's key answers fifty calls itself, each naming a
// verb, an error code and a version of its own: /metrics gains no series
// from them, and the replies' and mirror records' meta carry only the
// verb the hub sent, a known error code and a checked version.
func TestHostileNodeAnswersAddNoSeriesOrMeta(t *testing.T) {
	r := newRemoteRig(t)
	pub, _ := r.keys["db-1"].PublicKey()
	nc, err := nats.Connect(r.nodes.ClientURL(), nats.Nkey(pub, r.keys["db-1"].Sign), nats.CustomInboxPrefix("_INBOX.node.db-1"))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	work, err := js.Consumer(t.Context(), "HUB_NODE_db-1", "work")
	if err != nil {
		t.Fatal(err)
	}
	answer := func(i int) {
		m, err := work.Next(jetstream.FetchMaxWait(testkit.Wait))
		if err != nil {
			t.Error(err)
			return
		}
		m.Ack()
		var rq struct {
			CallID string `json:"call_id"`
		}
		json.Unmarshal(m.Data(), &rq)
		long := strings.Repeat("h", 2000)
		data, _ := json.Marshal(map[string]any{"call_id": rq.CallID, "node": "db-1", "status": "done",
			"node_version": fmt.Sprintf("v%d \x1b[2J%s", i, long), "verb": fmt.Sprintf("verb%d%s", i, long),
			"result": map[string]any{"succeeded": false, "errorCode": fmt.Sprintf("code%d%s", i, long), "errorMessage": "refused"}})
		if _, err := js.Publish(t.Context(), "hub.results.db-1", data, jetstream.WithMsgID(rq.CallID)); err != nil {
			t.Error(err)
		}
	}
	const verb = `{"verb":"fs.readFile","arguments":{"path":"x.txt"},"workspace":"db1-logs"}`
	for i := range 50 {
		var wg sync.WaitGroup
		wg.Go(func() { answer(i) })
		if i%2 == 0 {
			if res, reply := r.say(t, verb); res.Outcome == nil || !strings.Contains(reply, "refused") {
				t.Errorf("turn %d: %s %.200q", i, res.Status, reply)
			}
		} else {
			out, err := r.env.Runtime.Hub.Execute(t.Context(), hub.APIRequest{Identity: "web", Workspace: "db1-logs", Input: []byte(verb)})
			if err != nil || out.Verb != "fs.readFile" || out.Err == nil || out.Err.Code != "internal" {
				t.Errorf("call %d: %.200s %v", i, out.JSON(), err)
			}
		}
		wg.Wait()
	}
	rec := httptest.NewRecorder()
	r.mx.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	body := rec.Body.String()
	if strings.Contains(body, "hhhh") || len(body) > 64<<10 {
		t.Errorf("/metrics is %d bytes after 50 hostile answers", len(body))
	} else if !strings.Contains(body, `hub_verb_calls_total{outcome="internal",verb="fs.readFile"} 50`) {
		t.Errorf("/metrics does not count the 50 calls as fs.readFile internal:\n%s", body)
	} else if !strings.Contains(body, `hub_node_calls_total{node="db-1",status="done"} 50`) ||
		!strings.Contains(body, `hub_node_call_seconds_count{node="db-1",phase="round_trip"} 50`) || strings.Contains(body, `phase="ledger"`) {
		// The answers gave no account of the node's time: none is made up.
		t.Errorf("/metrics does not count the 50 node calls, or shows phases no node reported:\n%s", body)
	}
	for _, e := range r.rec.Sent("chat:telegram:100") {
		if v := e.Meta[hub.MetaNodeVersion]; v != "unknown" || e.Meta[hub.MetaNode] != "db-1" {
			t.Fatalf("reply meta %.200v", e.Meta)
		}
	}
	results := 0
	err = store.ReadMirror(flowsRoot(t, filepath.Join(r.env.Config.StateDir, "flows")), store.MirrorFilter{}, func(rec store.MirrorRecord) error {
		if rec.Platform == "api" && rec.Kind == "result" {
			results++
			if m := rec.Meta; m["verb"] != "fs.readFile" || m["error_code"] != "internal" || m[hub.MetaNodeVersion] != "unknown" {
				return fmt.Errorf("api result meta %.200v", m)
			}
		}
		if strings.Contains(fmt.Sprint(rec.Meta), "hhhh") {
			return fmt.Errorf("a mirror record carries the node's words in its meta: %.200v", rec.Meta)
		}
		return nil
	})
	if err != nil || results != 25 {
		t.Fatalf("%d api results in the mirror: %v", results, err)
	}
}

// fs.search and fs.find in a remote workspace run on its node, over the
// node's own files; the chat reply shows each hit as path:line over its
// line.
func TestRemoteSearch(t *testing.T) {
	r := newRemoteRig(t)
	var big strings.Builder
	for i := 1; i <= 400; i++ {
		fmt.Fprintf(&big, "request %d failed, retrying\n", i)
	}
	for name, content := range map[string]string{"app/today.log": "ok\nretryAfter=3 from the node\n", "app/.hidden.log": "retryAfter hidden\n",
		"old/big.txt": big.String()} {
		p := filepath.Join(r.nodeDir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The same name in the hub's own workspace is not what the node finds.
	if err := os.WriteFile(filepath.Join(r.env.Config.Workspace, "hub-side.log"), []byte("retryAfter on the hub\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r.startNode(t, "db-1")
	testkit.WaitFor(t, "db-1 online", func() bool {
		l, err := r.nodes.List(context.Background())
		return err == nil && l[0].Online
	})
	r.say(t, "/use db1-logs")
	res, reply := r.say(t, "/fs.search retryAfter")
	if res.Status != hub.StatusExecuted || !res.Outcome.Succeeded() {
		t.Fatalf("fs.search: %s %q", res.Status, reply)
	}
	if !strings.Contains(reply, "`app/today.log:2`") || !strings.Contains(reply, "retryAfter=3 from the node") || strings.Contains(reply, "hidden") || strings.Contains(reply, "on the hub") {
		t.Fatalf("fs.search reply: %q", reply)
	}
	out, err := r.env.Runtime.Hub.Execute(context.Background(), hub.APIRequest{Identity: "telegram:1", Workspace: "db1-logs",
		Input: []byte(`{"verb":"fs.find","arguments":{"pattern":"**/*.log","hidden":true}}`)})
	if err != nil {
		t.Fatal(err)
	}
	var found struct {
		Succeeded bool
		Entries   []struct{ Path string }
	}
	if err := json.Unmarshal(out.JSON(), &found); err != nil || !found.Succeeded || len(found.Entries) != 2 ||
		found.Entries[0].Path != "app/.hidden.log" || found.Entries[1].Path != "app/today.log" {
		t.Fatalf("fs.find on the node: %s", out.JSON())
	}
	// A long result goes the way long output goes: its head in the chat,
	// the whole as an attachment.
	res, _ = r.say(t, "/fs.search retrying path=old maxResults=500")
	if len(res.Outbox) != 2 {
		t.Fatalf("a long result: %d chunks, want its head and an attachment", len(res.Outbox))
	}
	sent := r.rec.Sent("chat:telegram:100")
	last := sent[len(sent)-1]
	if last.Attachment == nil || !strings.Contains(string(last.Attachment.Data), "`old/big.txt:400`") {
		t.Fatalf("the attachment: %+v", last)
	}
}

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/internal/testkit"
	"github.com/a6afc2ce/hermes-hub/nodes"
)

// nodeRig is a hub's end of the nodes (in-process, embedded server) and
// the files of one `hub node` child process.
type nodeRig struct {
	hub               *nodes.Hub
	config, ws, state string
}

func newNodeRig(t testing.TB, name string, opts nodes.HubOptions) *nodeRig {
	t.Helper()
	dir := t.TempDir()
	seed := filepath.Join(dir, name+".nk")
	out, errOut, code := runHub(t, dir, "", "node", "init", "--name", name, "--seed", seed)
	if code != 0 {
		t.Fatalf("node init: %d %s", code, errOut)
	}
	pub := out[strings.Index(out, "nkey: ")+len("nkey: "):]
	pub = strings.TrimSpace(pub)
	opts.StateDir, opts.Embedded, opts.Listen = filepath.Join(dir, "hub"), true, "127.0.0.1:0"
	opts.Nodes = map[string]string{name: pub}
	opts.Logger = testkit.Discard()
	h, err := nodes.OpenHub(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	r := &nodeRig{hub: h, ws: workspace(t), state: filepath.Join(dir, "node-state"), config: filepath.Join(dir, "node.yml")}
	cfg := fmt.Sprintf("node: {name: %s, nats_url: %q, nkey_file: %q, heartbeat: 200ms}\nstate_dir: %q\nworkspaces: {main: {path: %q}}\n",
		name, h.ClientURL(), seed, r.state, r.ws)
	if err := os.WriteFile(r.config, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return r
}

// startNodeProcess runs `hub node` until the test ends or it is killed.
func (r *nodeRig) startNodeProcess(t testing.TB) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(hubBin, "node", "--config", r.config)
	cmd.Stderr = os.Stderr
	if os.Getenv("HUB_TEST_LOG") == "" {
		cmd.Stderr = nil
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		<-done
	})
	return cmd
}

func (r *nodeRig) online(name string) bool {
	l, err := r.hub.List(context.Background())
	return err == nil && len(l) == 1 && l[0].Name == name && l[0].Online
}

func TestNodeKilledMidCallIsNotRunAgain(t *testing.T) {
	t.Parallel() // its own directories and processes: it runs beside the package's other long tests
	r := newNodeRig(t, "db-1", nodes.HubOptions{AckWait: 2 * time.Second})
	programsMayWrite(t, r.ws)
	first := r.startNodeProcess(t)
	testkit.WaitFor(t, "the node online", func() bool { return r.online("db-1") })
	env := `{"verb":"proc.run","arguments":{"executable":"sh","arguments":["-c","echo ran >> runs.txt; sleep 3"]}}`
	ch := make(chan error, 1)
	var resp nodes.Response
	go func() {
		var err error
		resp, err = r.hub.Call(context.Background(), "db-1", nodes.Request{TurnID: "t.kill", Identity: "web", Envelope: []byte(env)})
		ch <- err
	}()
	runs := filepath.Join(r.ws, "runs.txt")
	testkit.WaitFor(t, "the call to start", func() bool { b, _ := os.ReadFile(runs); return strings.Contains(string(b), "ran") })
	first.Process.Kill()
	testkit.WaitFor(t, "the node offline", func() bool { return !r.online("db-1") })
	r.startNodeProcess(t)
	select {
	case err := <-ch:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(testkit.Wait):
		t.Fatal("no answer after the node restarted")
	}
	if resp.Status != nodes.StatusInterrupted || !strings.Contains(string(resp.Result), "may or may not have completed") {
		t.Fatalf("response = %+v %s", resp, resp.Result)
	}
	b, _ := os.ReadFile(runs)
	if n := strings.Count(string(b), "ran"); n != 1 {
		t.Fatalf("the call ran %d times", n)
	}
}

func TestNodeInitRefusesToOverwrite(t *testing.T) {
	dir := t.TempDir()
	seed := filepath.Join(dir, "a.nk")
	if _, e, code := runHub(t, dir, "", "node", "init", "--name", "db-1", "--seed", seed); code != 0 {
		t.Fatal(e)
	}
	fi, err := os.Stat(seed)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("seed mode: %v %v", fi.Mode(), err)
	}
	if _, e, code := runHub(t, dir, "", "node", "init", "--name", "db-1", "--seed", seed); code != 1 || !strings.Contains(e, "not overwritten") {
		t.Fatalf("second init: %d %s", code, e)
	}
	if _, e, code := runHub(t, dir, "", "node", "init", "--name", "DB 1", "--seed", filepath.Join(dir, "b.nk")); code != 2 || !strings.Contains(e, "not a node name") {
		t.Fatalf("bad name: %d %s", code, e)
	}
}

// `hub workspaces show NAME --json` of a remote workspace carries its
// node's liveness, read through the hub's NATS: online with its version
// while `hub node` runs, offline once it is stopped.
func TestWorkspacesShowNodeLiveness(t *testing.T) {
	r := newNodeRig(t, "db-1", nodes.HubOptions{HeartbeatTTL: time.Second})
	dir := filepath.Dir(r.config)
	kp, err := nodes.LoadSeed(filepath.Join(dir, "db-1.nk"))
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := kp.PublicKey()
	listen := strings.TrimPrefix(r.hub.ClientURL(), "nats://")
	cfg := fmt.Sprintf(`workspace: %q
state_dir: %q
nats: {embedded: true, listen: %q}
nodes: {db-1: {nkey: %s}}
workspaces:
  db1-logs:
    destination: {kind: remote, node: db-1, workspace: main}
access:
  roles: {ops: {verbs: ["*"], workspaces: [db1-logs]}}
`, r.ws, filepath.Join(dir, "hub"), listen, pub)
	if err := os.WriteFile(filepath.Join(dir, "hub.yml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	show := func() map[string]any {
		t.Helper()
		out, errs, code := runHub(t, dir, "", "workspaces", "show", "db1-logs", "--config", "hub.yml", "--json")
		if code != 0 {
			t.Fatalf("show --json: %d %s", code, errs)
		}
		var v map[string]any
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatalf("show --json printed %q: %v", out, err)
		}
		return v
	}
	node := func(v map[string]any) map[string]any {
		t.Helper()
		n, ok := v["node"].(map[string]any)
		if !ok || n["name"] != "db-1" || v["name"] != "db1-logs" {
			t.Fatalf("show --json = %v, want the workspace with its node db-1", v)
		}
		return n
	}
	if n := node(show()); n["online"] != false {
		t.Fatalf("node before it started: %v", n)
	}
	cmd := r.startNodeProcess(t)
	testkit.WaitFor(t, "the node online", func() bool { return r.online("db-1") })
	n := node(show())
	if n["online"] != true || n["version"] == "" || n["last_seen"] == nil {
		t.Fatalf("node while it runs: %v", n)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	testkit.WaitFor(t, "show to say offline", func() bool { return node(show())["online"] == false })
}

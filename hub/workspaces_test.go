package hub_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/hub"
	"github.com/a6afc2ce/hermes-hub/hub/hubtest"
	"github.com/a6afc2ce/hermes-hub/store"
	"github.com/a6afc2ce/hermes-hub/verbs"
)

// wsRunner stands in for a container runner: it records the programs it
// was asked to run.
type wsRunner struct {
	mu   sync.Mutex
	runs []verbs.RunSpec
}

func (r *wsRunner) Run(_ context.Context, spec verbs.RunSpec) (verbs.RunResult, error) {
	r.mu.Lock()
	r.runs = append(r.runs, spec)
	r.mu.Unlock()
	fmt.Fprint(spec.Stdout, "in the sandbox")
	return verbs.RunResult{}, nil
}

// wsConfig has three workspaces: default, alpha (local) and sandbox
// (docker); the admin role may use all, the dev role only alpha and
// default, and telegram chat 300 is put in alpha by configuration.
func wsConfig(t *testing.T, root string) *config.Config {
	t.Helper()
	cfg := hubtest.Config(t, filepath.Join(root, "main"), "")
	for _, d := range []string{"main", "a", "sb"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, d, "where.txt"), []byte("in "+d), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg.Workspaces.Named = map[string]config.WorkspaceConfig{
		"alpha":   {Path: filepath.Join(root, "a"), Destination: config.Destination{Kind: config.DestinationLocal}},
		"sandbox": {Path: filepath.Join(root, "sb"), Destination: config.Destination{Kind: config.DestinationDocker, Image: "busybox", Network: "none"}},
	}
	cfg.Workspaces.ByChat = map[string]string{"chat:telegram:300": "alpha"}
	cfg.Access.Roles = map[string]config.Role{
		"admin": {Verbs: []string{"*"}, Workspaces: []string{"*"}},
		"dev":   {Verbs: []string{"*"}, Workspaces: []string{"default", "alpha"}},
	}
	cfg.Access.Grants = map[string][]string{"telegram:1": {"admin"}, "telegram:2": {"dev"}, "web": {"admin"}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

type wsEnv struct {
	env    *hubtest.Env
	rec    *hubtest.Recorder
	runner *wsRunner
	n      int
}

func openWS(t *testing.T, cfg *config.Config, runner *wsRunner) *wsEnv {
	t.Helper()
	e := hubtest.Open(t, cfg, hubtest.Options{Workspaces: true, Runners: func(string, config.Destination) (verbs.Runner, error) { return runner, nil }})
	rec := hubtest.NewRecorder()
	rec.HandleAll(t, e.Runtime)
	e.Start(t)
	return &wsEnv{env: e, rec: rec, runner: runner}
}

// say sends text from user to a private telegram chat and returns the
// status and the reply.
func (w *wsEnv) say(t *testing.T, user, chatID, text string) (hub.Status, string) {
	t.Helper()
	w.n++
	in := &chat.Inbound{
		TurnID: fmt.Sprintf("telegram.%s.%d.%s", chatID, w.n, user), Platform: chat.Telegram, ChatID: chatID, MessageID: fmt.Sprint(w.n),
		UserID: user, UserName: "u", ChatType: "private", Text: text,
	}
	target := "chat:telegram:" + chatID
	before := len(w.rec.Texts(target))
	res, err := w.env.Runtime.Hub.Handle(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	got := w.rec.Wait(t, target, before+len(res.Outbox))
	var reply []string
	for _, c := range got[before:] {
		reply = append(reply, c.Text)
	}
	return res.Status, strings.Join(reply, "")
}

func TestUseAndWhereSurviveARestart(t *testing.T) {
	root := t.TempDir()
	cfg := wsConfig(t, root)
	runner := &wsRunner{}
	w := openWS(t, cfg, runner)

	if _, r := w.say(t, "1", "100", "/where"); !strings.Contains(r, "Workspace: default") || !strings.Contains(r, "Why: default") || !strings.Contains(r, "Destination: local (host processes in ") {
		t.Fatalf("/where at first: %q", r)
	}
	if _, r := w.say(t, "1", "100", "/fs.readFile where.txt"); !strings.Contains(r, "in main") {
		t.Fatalf("default workspace reads %q", r)
	}
	_, r := w.say(t, "1", "100", "/use")
	for _, want := range []string{"▶ default: local", "current: default", "alpha: local", "sandbox: docker (image busybox, network none)"} {
		if !strings.Contains(r, want) {
			t.Fatalf("/use lists %q, want %q in it", r, want)
		}
	}
	if _, r := w.say(t, "1", "100", "/use nope"); !strings.Contains(r, `No workspace named "nope". You may use: default, alpha, sandbox.`) {
		t.Fatalf("/use nope: %q", r)
	}
	if _, r := w.say(t, "1", "100", "/use sandbox"); !strings.Contains(r, "This conversation now works in sandbox: docker") {
		t.Fatalf("/use sandbox: %q", r)
	}
	if _, r := w.say(t, "1", "100", "/fs.readFile where.txt"); !strings.Contains(r, "in sb") {
		t.Fatalf("after /use sandbox reads %q", r)
	}
	if st, r := w.say(t, "1", "100", "/proc.run true"); st != hub.StatusExecuted || !strings.Contains(r, "in the sandbox") {
		t.Fatalf("proc.run in sandbox: %s %q", st, r)
	}
	if len(runner.runs) != 1 || runner.runs[0].Workspace != "sandbox" {
		t.Fatalf("runner got %+v", runner.runs)
	}
	// Another chat is not affected.
	if _, r := w.say(t, "1", "101", "/fs.readFile where.txt"); !strings.Contains(r, "in main") {
		t.Fatalf("chat 101 reads %q", r)
	}

	// The choice is in the state: it survives a restart.
	if err := w.env.Close(); err != nil {
		t.Fatal(err)
	}
	n := w.n
	w = openWS(t, cfg, runner)
	w.n = n // turn ids are not reused
	if _, r := w.say(t, "1", "100", "/where"); !strings.Contains(r, "Workspace: sandbox") || !strings.Contains(r, "Why: chosen with /use") || !strings.Contains(r, "Session: none") {
		t.Fatalf("/where after restart: %q", r)
	}
	if _, r := w.say(t, "1", "100", "/use --default"); !strings.Contains(r, "Choice dropped; the configuration decides now: default (default") {
		t.Fatalf("/use --default: %q", r)
	}
	if _, r := w.say(t, "1", "100", "/fs.readFile where.txt"); !strings.Contains(r, "in main") {
		t.Fatalf("after --default reads %q", r)
	}
	// by_chat decides for chat 300.
	if _, r := w.say(t, "1", "300", "/where"); !strings.Contains(r, `Why: workspaces.by_chat["chat:telegram:300"]`) || !strings.Contains(r, "Workspace: alpha") {
		t.Fatalf("/where in 300: %q", r)
	}
	// The mirror records the workspace a verb acted in.
	found := false
	err := store.ReadMirror(flowsRoot(t, filepath.Join(cfg.StateDir, "flows")), store.MirrorFilter{}, func(rec store.MirrorRecord) error {
		if rec.Meta[hub.MetaWorkspace] == "sandbox" && strings.Contains(rec.Text, "/proc.run") {
			found = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	{
		if !found {
			t.Error("no mirror record with workspace sandbox for the proc.run turn")
		}
	}
}

func TestWorkspaceAccessIsRefusedNotSwapped(t *testing.T) {
	root := t.TempDir()
	cfg := wsConfig(t, root)
	w := openWS(t, cfg, &wsRunner{})
	if _, r := w.say(t, "2", "200", "/use sandbox"); !strings.Contains(r, `Workspace "sandbox" (asked with /use) is not open to your roles (dev); roles that may use it: admin.`) {
		t.Fatalf("/use sandbox as dev: %q", r)
	}
	if _, r := w.say(t, "2", "200", "/use"); strings.Contains(r, "sandbox") {
		t.Fatalf("/use lists a workspace dev may not use: %q", r)
	}
	// A per-call choice in an envelope is refused the same way.
	st, r := w.say(t, "2", "200", `{"verb":"fs.readFile","arguments":{"path":"where.txt"},"workspace":"sandbox"}`)
	if st != hub.StatusForbidden || !strings.Contains(r, `fs.readFile was not run: Workspace "sandbox" (chosen for this call) is not open to your roles (dev); roles that may use it: admin`) {
		t.Fatalf("envelope into sandbox as dev: %s %q", st, r)
	}
	// An admin may, per call.
	if st, r := w.say(t, "1", "100", `{"verb":"fs.readFile","arguments":{"path":"where.txt"},"workspace":"alpha"}`); st != hub.StatusExecuted || !strings.Contains(r, "in a") {
		t.Fatalf("envelope into alpha: %s %q", st, r)
	}
}

func TestExecuteWorkspace(t *testing.T) {
	root := t.TempDir()
	cfg := wsConfig(t, root)
	w := openWS(t, cfg, &wsRunner{})
	h := w.env.Runtime.Hub
	read := []byte(`{"verb":"fs.readFile","arguments":{"path":"where.txt"}}`)
	for _, c := range []struct {
		name, workspace string
		input           []byte
		want            string
	}{
		{"default", "", read, `"content":"in main"`},
		{"query", "alpha", read, `"content":"in a"`},
		{"envelope", "", []byte(`{"verb":"fs.readFile","arguments":{"path":"where.txt"},"workspace":"sandbox"}`), `"content":"in sb"`},
		{"both agree", "sandbox", []byte(`{"verb":"fs.readFile","arguments":{"path":"where.txt"},"workspace":"sandbox"}`), `"content":"in sb"`},
		{"both differ", "alpha", []byte(`{"verb":"fs.readFile","arguments":{"path":"where.txt"},"workspace":"sandbox"}`), `names workspace \"sandbox\" and the request \"alpha\"`},
		{"unknown", "nope", read, `workspace \"nope\" is not configured (accepted: default, alpha, sandbox)`},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, err := h.Execute(context.Background(), hub.APIRequest{Identity: "web", Workspace: c.workspace, Input: c.input})
			if err != nil {
				t.Fatal(err)
			}
			if got := string(out.JSON()); !strings.Contains(got, c.want) {
				t.Fatalf("got %s, want %s", got, c.want)
			}
		})
	}
}

//go:build unix

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

	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/hub"
	"github.com/a6afc2ce/hermes-hub/hub/hubtest"
	"github.com/a6afc2ce/hermes-hub/internal/dockertest"
	"github.com/a6afc2ce/hermes-hub/internal/testkit"
	"github.com/a6afc2ce/hermes-hub/workspaces/docker"
	"github.com/moby/moby/client"
)

// dockerSecret is a secret in the hub's environment that must not reach a
// container.
const dockerSecret = "hub-secret-do-not-leak-7f3a"

// dockerRig is a workspace directory served by two workspaces, default
// (local) and box (kind docker), with the state directory inside it.
type dockerRig struct {
	root, dir, state, outside string
	cli                       *client.Client
	image                     string
}

func newDockerRig(t *testing.T, extra string) *dockerRig {
	t.Helper()
	cli := dockertest.Client(t)
	r := &dockerRig{cli: cli, image: dockertest.BusyboxImage(t), root: t.TempDir()}
	r.dir = filepath.Join(r.root, "ws")
	r.state = filepath.Join(r.dir, ".hub")
	r.outside = filepath.Join(r.root, "outside.txt")
	if err := os.MkdirAll(r.state, 0o700); err != nil {
		t.Fatal(err)
	}
	// The workspace belongs to an unprivileged user, whom box's container
	// runs as (a root-owned one would run as nobody).
	if err := os.Chown(r.dir, 4242, 4242); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(r.outside, []byte("outside the workspace"), 0o644); err != nil {
		t.Fatal(err)
	}
	yml := fmt.Sprintf(`workspace: .
state_dir: ./.hub
workspaces:
  box:
    path: .
    destination:
      kind: docker
      image: %s
      env_allow: [PATH]
web:
  listen: 127.0.0.1:0
access:
  roles:
    ops: {verbs: ["*"], workspaces: ["*"]}
  grants:
    web: [ops]
%s`, r.image, extra)
	// The configuration lies outside the workspace: a docker workspace may
	// not hold it (its container could read or rewrite it).
	if err := os.WriteFile(filepath.Join(r.root, "hub.yml"), []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.removeContainers(t) })
	return r
}

// containers lists the containers of this hub's workspace box.
func (r *dockerRig) containers(t *testing.T) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := r.cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: make(client.Filters).Add("label", docker.LabelHub+"="+hubID(r.state))})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range res.Items {
		ids = append(ids, c.ID)
	}
	return ids
}

func (r *dockerRig) removeContainers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, id := range r.containers(t) {
		if _, err := r.cli.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true}); err != nil {
			t.Errorf("remove container %s: %v", id, err)
		}
	}
}

// hub runs the hub binary in the workspace with the secret in its
// environment.
func (r *dockerRig) hub(t *testing.T, stdin string, args ...string) (string, string, int) {
	t.Helper()
	return runHubEnv(t, r.dir, stdin, []string{"HUB_WEB_TOKEN_TEST=" + dockerSecret}, args...)
}

// execResult is the part of a verb's result JSON the test reads.
type execResult struct {
	Succeeded    bool   `json:"succeeded"`
	ErrorMessage string `json:"errorMessage"`
	Content      string `json:"content"`
	ExitCode     int    `json:"exitCode"`
	StdoutTail   string `json:"stdoutTail"`
	StderrTail   string `json:"stderrTail"`
}

// exec runs one envelope with hub exec in workspace ws ("" for default).
func (r *dockerRig) exec(t *testing.T, ws, envelope string) execResult {
	t.Helper()
	args := []string{"exec", "--config", "../hub.yml"}
	if ws != "" {
		args = append(args, "--workspace", ws)
	}
	out, errs, _ := r.hub(t, envelope, args...)
	var res execResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("hub %v: %q %q: %v", args, out, errs, err)
	}
	return res
}

// run runs a program in box with proc.run and returns its result.
func (r *dockerRig) run(t *testing.T, exe string, args ...string) execResult {
	t.Helper()
	if args == nil {
		args = []string{}
	}
	b, _ := json.Marshal(map[string]any{"verb": "proc.run", "arguments": map[string]any{"executable": exe, "arguments": args}})
	res := r.exec(t, "box", string(b))
	if !res.Succeeded {
		t.Fatalf("proc.run %s %q in box: %s", exe, args, res.ErrorMessage)
	}
	return res
}

// TestDockerWorkspaceEndToEnd runs the hub binary with a local and a docker
// workspace on one directory: they share files, the container sees nothing
// of the hub's state, environment, host files or network, separate hub
// processes reuse its container, and hub workspaces lists and resets it,
// through a running hub and without one.
func TestDockerWorkspaceEndToEnd(t *testing.T) {
	t.Parallel() // its own directories and processes: it runs beside the package's other long tests
	r := newDockerRig(t, "")

	// A verb in default and a proc.run in box see the same files.
	if res := r.exec(t, "", `{"verb":"fs.writeFile","arguments":{"path":"from-default.txt","content":"written by default"}}`); !res.Succeeded {
		t.Fatalf("fs.writeFile in default: %+v", res)
	}
	if res := r.run(t, "cat", "from-default.txt"); res.ExitCode != 0 || res.StdoutTail != "written by default" {
		t.Fatalf("box reads default's file: %+v", res)
	}
	if res := r.run(t, "sh", "-c", "echo written in box > from-box.txt"); res.ExitCode != 0 {
		t.Fatalf("box writes: %+v", res)
	}
	if res := r.exec(t, "", `{"verb":"fs.readFile","arguments":{"path":"from-box.txt"}}`); !res.Succeeded || res.Content != "written in box\n" {
		t.Fatalf("default reads box's file: %+v", res)
	}
	var ws, made syscall.Stat_t
	if err := syscall.Stat(r.dir, &ws); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Stat(filepath.Join(r.dir, "from-box.txt"), &made); err != nil {
		t.Fatal(err)
	}
	if made.Uid != ws.Uid || made.Gid != ws.Gid {
		t.Fatalf("a file made in box is owned by %d:%d, the workspace by %d:%d", made.Uid, made.Gid, ws.Uid, ws.Gid)
	}

	// The state directory shows nothing (an empty tmpfs with the mode of
	// the directory it covers, which the container's user may not even
	// list); host files outside are invisible.
	if res := r.run(t, "ls", "-a", "/workspace/.hub"); !(res.ExitCode == 0 && strings.Join(strings.Fields(res.StdoutTail), " ") == ". ..") &&
		!(res.ExitCode != 0 && res.StdoutTail == "" && strings.Contains(res.StderrTail, "Permission denied")) {
		t.Fatalf("the state directory in the container: %+v", res)
	}
	for _, p := range []string{r.outside, r.dir, filepath.Join(r.dir, ".hub", "hub.db"), hubBin} {
		if res := r.run(t, "test", "-e", p); res.ExitCode == 0 {
			t.Errorf("the host's %s is visible in the container", p)
		}
	}
	if res := r.run(t, "cat", "/workspace/.hub/hub.db"); res.ExitCode == 0 {
		t.Errorf("the hub's database is readable in the container: %+v", res)
	}

	// Nothing of the hub's environment; no network but lo.
	for _, args := range [][]string{{"cat", "/proc/1/environ"}, {"env"}, {"sh", "-c", "cat /proc/*/environ"}} {
		res := r.run(t, args[0], args[1:]...)
		if strings.Contains(res.StdoutTail, dockerSecret) || strings.Contains(res.StdoutTail, "HUB_WEB_TOKEN_TEST") {
			t.Errorf("%v shows the hub's environment: %q", args, res.StdoutTail)
		}
	}
	if res := r.run(t, "cat", "/proc/net/dev"); res.ExitCode != 0 || !strings.Contains(res.StdoutTail, "lo:") || strings.Count(res.StdoutTail, ":") != 1 {
		t.Errorf("interfaces in the container: %q", res.StdoutTail)
	}

	// Two separate hub processes use the same container.
	h1 := strings.TrimSpace(r.run(t, "hostname").StdoutTail)
	h2 := strings.TrimSpace(r.run(t, "hostname").StdoutTail)
	if h1 == "" || h1 != h2 || len(r.containers(t)) != 1 {
		t.Fatalf("hostnames %q %q, containers %v", h1, h2, r.containers(t))
	}

	// Offline: reset removes it; the next call makes another.
	if out, errs, code := r.hub(t, "", "workspaces", "reset", "box", "--config", "../hub.yml"); code != 0 || !strings.Contains(out, "workspace box: removed every sandbox") {
		t.Fatalf("offline reset: %d %q %q", code, out, errs)
	}
	if ids := r.containers(t); len(ids) != 0 {
		t.Fatalf("containers left after reset: %v", ids)
	}
	if h3 := strings.TrimSpace(r.run(t, "hostname").StdoutTail); h3 == "" || h3 == h1 {
		t.Fatalf("after a reset the container is made again: %q (was %q)", h3, h1)
	}

	// Through a running hub: list shows the container, reset removes it.
	cmd := exec.Command(hubBin, "serve", "--config", "../hub.yml")
	cmd.Dir = r.dir
	cmd.Env = append(os.Environ(), "HUB_CONFIG=", "HUB_WEB_TOKEN_TEST="+dockerSecret)
	logs := &syncWriter{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	testkit.WaitFor(t, "the admin socket", func() bool {
		_, err := os.Stat(filepath.Join(r.state, "hub.sock"))
		return err == nil
	})
	out, errs, code := r.hub(t, "", "workspaces", "list", "--config", "../hub.yml")
	if code != 0 || !strings.Contains(out, "box") || !strings.Contains(out, "container ") || !strings.Contains(out, "running session (workspace)") {
		t.Fatalf("list through the running hub: %d %q %q\n%s", code, out, errs, logs)
	}
	out, _, code = r.hub(t, "", "workspaces", "list", "--config", "../hub.yml", "--json")
	if code != 0 || !strings.Contains(out, `"containers": [`) || !strings.Contains(out, `"kind": "docker"`) {
		t.Fatalf("list --json through the running hub: %d %q", code, out)
	}
	out, _, code = r.hub(t, "", "workspaces", "show", "--config", "../hub.yml", "--chat", "chat:telegram:5")
	if code != 0 || !strings.Contains(out, "workspace:   default") || !strings.Contains(out, "why:         default") {
		t.Fatalf("show through the running hub: %d %q", code, out)
	}
	if out, errs, code := r.hub(t, "", "workspaces", "reset", "default", "--config", "../hub.yml"); code == 0 || !strings.Contains(errs, "runs locally") {
		t.Fatalf("reset default through the running hub: %d %q %q", code, out, errs)
	}
	if out, errs, code := r.hub(t, "", "workspaces", "reset", "box", "--config", "../hub.yml"); code != 0 || !strings.Contains(out, "workspace box: removed every sandbox") {
		t.Fatalf("reset through the running hub: %d %q %q", code, out, errs)
	}
	if ids := r.containers(t); len(ids) != 0 {
		t.Fatalf("containers left after reset through the running hub: %v", ids)
	}
	if out, _, _ := r.hub(t, "", "workspaces", "list", "--config", "../hub.yml"); !strings.Contains(out, "containers: none") {
		t.Fatalf("list after the reset: %q", out)
	}
	if strings.Contains(logs.String(), dockerSecret) {
		t.Fatal("the hub logged its secret")
	}
}

// TestDockerUseWhereAndSessions: /use box and /where through a hub runtime
// with the real runner say docker and why; in session mode proc.run runs
// in box and each session sees only its own directory.
func TestDockerUseWhereAndSessions(t *testing.T) {
	t.Parallel() // its own directories and processes: it runs beside the package's other long tests
	r := newDockerRig(t, "")
	cfg, err := config.Load(filepath.Join(r.root, "hub.yml"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Workspace, cfg.StateDir = r.dir, r.state
	// The hub (root here) makes session directories owner-only: their
	// containers must run as its user, named explicitly.
	box := cfg.Workspaces.Named["box"].Destination
	box.User = "0"
	cfg.Workspaces.Named["box"] = config.WorkspaceConfig{Path: r.dir, Destination: box}
	cfg.Access.Grants = map[string][]string{"telegram:1": {"ops"}, "telegram:2": {"ops"}}
	cfg.Sessions.Mode = hub.ModeSession
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	sw := hub.NewSessionSwitch(cfg.Sessions)
	e := hubtest.Open(t, cfg, hubtest.Options{Workspaces: true, Runners: runnerFactory(cfg, testkit.Discard()), Runtime: hub.RuntimeOptions{SessionFor: sw.For}})
	rec := hubtest.NewRecorder()
	rec.HandleAll(t, e.Runtime)
	e.Start(t)
	n := 0
	say := func(user, text string) (hub.Status, string) {
		t.Helper()
		n++
		in := &chat.Inbound{TurnID: fmt.Sprintf("telegram.%s.%d", user, n), Platform: chat.Telegram, ChatID: user, MessageID: fmt.Sprint(n),
			UserID: user, UserName: "u", ChatType: "private", Text: text}
		target := "chat:telegram:" + user
		before := len(rec.Texts(target))
		res, err := e.Runtime.Hub.Handle(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, c := range rec.Wait(t, target, before+len(res.Outbox))[before:] {
			out = append(out, c.Text)
		}
		return res.Status, strings.Join(out, "")
	}
	// Local proc.run stays refused in a session workspace.
	if st, got := say("1", `{"verb":"proc.run","arguments":{"executable":"true","arguments":[]}}`); st == hub.StatusExecuted && !strings.Contains(got, "session") {
		t.Fatalf("local proc.run in a session: %s %q", st, got)
	}
	for _, u := range []string{"1", "2"} {
		if _, got := say(u, "/use box"); !strings.Contains(got, "now works in box") || !strings.Contains(got, "docker") {
			t.Fatalf("/use box: %q", got)
		}
		if _, got := say(u, "/where"); !strings.Contains(got, "Workspace: box") || !strings.Contains(got, "Destination: docker") || !strings.Contains(got, "Why: chosen with /use") || !strings.Contains(got, "Session: chat:telegram:"+u) {
			t.Fatalf("/where: %q", got)
		}
	}
	write := func(u string) string {
		return fmt.Sprintf(`{"verb":"proc.run","arguments":{"executable":"sh","arguments":["-c","echo session %s > mine.txt; ls"]}}`, u)
	}
	if st, got := say("1", write("1")); st != hub.StatusExecuted || !strings.Contains(got, "mine.txt") {
		t.Fatalf("proc.run in session 1: %s %q", st, got)
	}
	if st, got := say("2", `{"verb":"proc.run","arguments":{"executable":"cat","arguments":["mine.txt"]}}`); st != hub.StatusExecuted || strings.Contains(got, "session 1") {
		t.Fatalf("session 2 sees session 1's file: %s %q", st, got)
	}
	if _, got := say("2", write("2")); !strings.Contains(got, "mine.txt") {
		t.Fatalf("proc.run in session 2: %q", got)
	}
	for _, u := range []string{"1", "2"} {
		if _, got := say(u, `{"verb":"fs.readFile","arguments":{"path":"mine.txt"}}`); !strings.Contains(got, "session "+u) {
			t.Fatalf("session %s reads %q", u, got)
		}
	}
	if _, err := os.Stat(filepath.Join(r.dir, "mine.txt")); err == nil {
		t.Fatal("a session's file landed in the workspace itself")
	}
	if ids := r.containers(t); len(ids) != 2 {
		t.Fatalf("want one container per session, got %v", ids)
	}
}

// TestDockerWorkspaceHoldingTheStateDeep: a docker workspace whose
// directory holds the state directory below its top level (where a
// program could move what hides it) stops hub exec and hub serve at start
// with the fix, and hub doctor reports it; the daemon is never asked.
func TestDockerWorkspaceHoldingTheStateDeep(t *testing.T) {
	r := newDockerRig(t, "")
	yml, err := os.ReadFile(filepath.Join(r.root, "hub.yml"))
	if err != nil {
		t.Fatal(err)
	}
	deep := strings.Replace(string(yml), "  box:\n    path: .\n", "  box:\n    path: ..\n", 1)
	if err := os.WriteFile(filepath.Join(r.root, "hub.yml"), []byte(deep), 0o600); err != nil {
		t.Fatal(err)
	}
	want := []string{" box", "holds the protected directory " + r.state + " below its top level", "move it out of the workspace or to its top level"}
	for _, args := range [][]string{{"exec", "--config", "../hub.yml", "--workspace", "default"}, {"serve", "--config", "../hub.yml"}, {"doctor", "--config", "../hub.yml"}} {
		out, errs, code := r.hub(t, `{"verb":"fs.exists","arguments":{"path":"x"}}`, args...)
		if code == 0 {
			t.Fatalf("hub %v accepted the workspace: %q %q", args, out, errs)
		}
		for _, w := range want {
			if !strings.Contains(out+errs, w) {
				t.Fatalf("hub %v: %q %q lacks %q", args, out, errs, w)
			}
		}
	}
	if ids := r.containers(t); len(ids) != 0 {
		t.Fatalf("containers were made: %v", ids)
	}
}

// TestDockerWorkspaceHoldingTheConfiguration: the README's layout (hub.yml
// in the workspace's directory) with a docker workspace on that directory
// stops exec, serve and doctor at start: the container could read or
// rewrite the configuration.
func TestDockerWorkspaceHoldingTheConfiguration(t *testing.T) {
	r := newDockerRig(t, "")
	yml, err := os.ReadFile(filepath.Join(r.root, "hub.yml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(r.dir, "hub.yml"), yml, 0o600); err != nil {
		t.Fatal(err)
	}
	want := []string{" box", "holds the protected file " + filepath.Join(r.dir, "hub.yml"), "move the file out of the workspace directory"}
	for _, args := range [][]string{{"exec", "--config", "hub.yml", "--workspace", "default"}, {"serve", "--config", "hub.yml"}, {"doctor", "--config", "hub.yml"}} {
		out, errs, code := r.hub(t, `{"verb":"fs.exists","arguments":{"path":"x"}}`, args...)
		if code == 0 {
			t.Fatalf("hub %v accepted the workspace: %q %q", args, out, errs)
		}
		for _, w := range want {
			if !strings.Contains(out+errs, w) {
				t.Fatalf("hub %v: %q %q lacks %q", args, out, errs, w)
			}
		}
	}
	if ids := r.containers(t); len(ids) != 0 {
		t.Fatalf("containers were made: %v", ids)
	}
}

// TestDockerWorkspaceSearch: fs.search and fs.find in a docker workspace
// act on its host directory, where the container's programs write: they
// find what a program wrote, and follow none of the links it planted (to
// the host's root, to the state directory, to a file outside).
func TestDockerWorkspaceSearch(t *testing.T) {
	r := newDockerRig(t, "")
	if err := os.WriteFile(filepath.Join(r.state, "hub.db"), []byte("needle in the state"), 0o600); err != nil {
		t.Fatal(err)
	}
	if res := r.run(t, "sh", "-c", "mkdir -p src && echo 'a needle from the box' > src/made.txt && ln -s / root && ln -s .hub state && ln -s "+r.outside+" out.txt"); res.ExitCode != 0 {
		t.Fatalf("box writes: %+v", res)
	}
	type result struct {
		Succeeded bool `json:"succeeded"`
		Matches   []struct {
			Path string `json:"path"`
			Text string `json:"text"`
		} `json:"matches"`
		Entries []struct {
			Path string `json:"path"`
		} `json:"entries"`
	}
	for _, tc := range []struct{ envelope, want string }{
		{`{"verb":"fs.search","arguments":{"pattern":"needle|workspace|root:","hidden":true,"noIgnore":true,"binary":true}}`, "src/made.txt: a needle from the box"},
		{`{"verb":"fs.find","arguments":{"pattern":"**","hidden":true,"noIgnore":true,"type":"file"}}`, "src/made.txt"},
	} {
		out, errs, _ := r.hub(t, tc.envelope, "exec", "--config", "../hub.yml", "--workspace", "box")
		var res result
		if err := json.Unmarshal([]byte(out), &res); err != nil || !res.Succeeded {
			t.Fatalf("%s: %q %q: %v", tc.envelope, out, errs, err)
		}
		var got []string
		for _, m := range res.Matches {
			got = append(got, m.Path+": "+m.Text)
		}
		for _, e := range res.Entries {
			got = append(got, e.Path)
		}
		if strings.Join(got, "|") != tc.want {
			t.Errorf("%s: got %q, want %q", tc.envelope, got, tc.want)
		}
	}
}

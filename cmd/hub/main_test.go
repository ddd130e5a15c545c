package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/adapters/telegram/telegramtest"
	"github.com/a6afc2ce/hermes-hub/internal/testkit"
	"github.com/a6afc2ce/hermes-hub/store"
	"github.com/a6afc2ce/hermes-hub/verbs"
)

// hubBin is the hub binary built once for the tests that run it as a process.
var hubBin string

func TestMain(m *testing.M) {
	// In-process proc.run (remote nodes, the stdio tests) runs under the
	// supervisor, as in the hub binary.
	verbs.MaybeRunSupervisor()
	dir, err := os.MkdirTemp("", "hub-cli-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	hubBin = filepath.Join(dir, "hub")
	build := exec.Command("go", "build", "-o", hubBin, ".")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build hub:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// programsMayWrite gives dir to the user a hub running as root runs
// programs as (nobody), as an operator would, so that they may write
// there. A hub not running as root runs them as itself: nothing to do.
func programsMayWrite(t testing.TB, dir string) {
	t.Helper()
	if os.Geteuid() != 0 {
		return
	}
	if err := os.Chown(dir, 65534, 65534); err != nil {
		t.Fatal(err)
	}
}

// workspace makes a temp workspace with a few files and returns its path.
func workspace(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("# Title\nline two\nline three\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "docs"), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// runHub runs the binary in dir with stdin and returns stdout, stderr, exit code.
func runHub(t testing.TB, dir, stdin string, args ...string) (string, string, int) {
	t.Helper()
	return runHubEnv(t, dir, stdin, nil, args...)
}

// runHubEnv is runHub with env added to the binary's environment.
func runHubEnv(t testing.TB, dir, stdin string, env []string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(hubBin, args...)
	cmd.Dir = dir
	// $PWD is dir, as a shell sets it after cd: a path through a symbolic
	// link stays one.
	cmd.Env = append(append(os.Environ(), "HUB_CONFIG=", "HUB_WEB_LISTEN=", "PWD="+dir), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

func decode(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("not JSON: %q", s)
	}
	return m
}

func TestExecOneShot(t *testing.T) {
	dir := workspace(t)
	out, _, code := runHub(t, dir, "", "exec", `{"verb":"fs.listDir","arguments":{"path":"."}}`)
	if code != 0 || !strings.Contains(out, `{"name":"docs","isDirectory":true},{"name":"README.md","isDirectory":false}`) {
		t.Fatalf("code %d out %s", code, out)
	}
	// YAML on stdin.
	out, _, code = runHub(t, dir, "verb: fs.readRange\narguments: {path: README.md, startLine: 2, endLine: 3}\n", "exec")
	if code != 0 || decode(t, out)["content"] != "2: line two\n3: line three" {
		t.Fatalf("code %d out %s", code, out)
	}
	// -i FILE and -o FILE, flags after the positional-free form.
	env := filepath.Join(t.TempDir(), "env.json")
	os.WriteFile(env, []byte(`{"verb":"fs.lineCount","arguments":{"path":"README.md"}}`), 0o600)
	res := filepath.Join(t.TempDir(), "res.json")
	_, _, code = runHub(t, dir, "", "exec", "-i", env, "-o", res)
	b, _ := os.ReadFile(res)
	if code != 0 || decode(t, string(b))["lineCount"] != 3.0 {
		t.Fatalf("code %d res %s", code, b)
	}
	// A failed verb exits 1 with the result on stdout.
	out, _, code = runHub(t, dir, "", "exec", `{"verb":"fs.readFile","arguments":{"path":"../etc/passwd"}}`)
	if code != 1 || decode(t, out)["errorCode"] != "forbidden_path" {
		t.Fatalf("code %d out %s", code, out)
	}
	out, _, code = runHub(t, dir, "", "exec", `{"verb":"fs.nope"}`)
	if code != 1 || decode(t, out)["errorCode"] != "unknown_verb" {
		t.Fatalf("code %d out %s", code, out)
	}
	// Usage errors exit 2.
	_, stderr, code := runHub(t, dir, "", "exec", "a", "b")
	if code != 2 || !strings.Contains(stderr, "one ENVELOPE argument expected") {
		t.Fatalf("code %d stderr %s", code, stderr)
	}
	_, stderr, code = runHub(t, dir, "", "exec", "--bogus")
	if code != 2 || !strings.Contains(stderr, "flag provided but not defined: -bogus") {
		t.Fatalf("code %d stderr %s", code, stderr)
	}
	// --workspace points elsewhere; the state dir inside the workspace is off limits.
	other := workspace(t)
	os.WriteFile(filepath.Join(other, "only-here.txt"), []byte("x"), 0o644)
	out, _, code = runHub(t, dir, "", "exec", "--workspace", other, `{"verb":"fs.exists","arguments":{"path":"only-here.txt"}}`)
	if code != 0 || decode(t, out)["exists"] != true {
		t.Fatalf("code %d out %s", code, out)
	}
	os.MkdirAll(filepath.Join(dir, ".hub"), 0o700)
	out, _, code = runHub(t, dir, "", "exec", `{"verb":"fs.listDir","arguments":{"path":".hub"}}`)
	if code != 1 || decode(t, out)["errorCode"] != "forbidden_path" {
		t.Fatalf("state dir reachable: code %d out %s", code, out)
	}
}

func TestExecInteractivePipe(t *testing.T) {
	dir := workspace(t)
	in := strings.Join([]string{
		"verb: fs.exists",
		"arguments: {path: README.md}",
		"",
		"{not yaml: [",
		"",
		`{"verb":"fs.lineCount","arguments":{"path":"README.md"}}`, // pending at EOF: still runs
	}, "\n")
	out, stderr, code := runHub(t, dir, in, "exec", "--interactive")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 {
		t.Fatalf("want 3 results, got %d: %s", len(lines), out)
	}
	if decode(t, lines[0])["exists"] != true || decode(t, lines[1])["errorCode"] != "invalid_envelope" || decode(t, lines[2])["lineCount"] != 3.0 {
		t.Fatalf("results %s", out)
	}
	if !strings.Contains(stderr, "hub> ") || strings.Contains(out, "hub>") {
		t.Fatalf("prompt must go to stderr only; stderr %q", stderr)
	}
	if code != 1 {
		t.Fatalf("an envelope failed, want exit 1, got %d", code)
	}
	// exit quits before later input.
	out, _, code = runHub(t, dir, "exit\nverb: fs.exists\narguments: {path: x}\n", "exec", "--interactive")
	if out != "" || code != 0 {
		t.Fatalf("exit: code %d out %q", code, out)
	}
}

func TestExecInteractiveTmux(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		testkit.Unavailable(t, "tmux not installed")
	}
	dir := workspace(t)
	sock := filepath.Join(t.TempDir(), "tmux.sock")
	tmux := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("tmux", append([]string{"-S", sock}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %v: %v: %s", args, err, out)
		}
		return string(out)
	}
	tmux("new-session", "-d", "-x", "200", "-y", "50", "-c", dir, "env HUB_CONFIG= "+hubBin+" exec --interactive; echo EXITED:$?; sleep 30")
	defer exec.Command("tmux", "-S", sock, "kill-server").Run()
	waitFor := func(want string) string {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			screen := tmux("capture-pane", "-p", "-J")
			if strings.Contains(screen, want) {
				return screen
			}
			if time.Now().After(deadline) {
				t.Fatalf("screen never showed %q:\n%s", want, screen)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	waitFor("hub> ")
	tmux("send-keys", "verb: fs.readRange", "Enter", "arguments: {path: README.md, startLine: 1, endLine: 1}", "Enter")
	waitFor("...> ")
	tmux("send-keys", "Enter")
	waitFor(`"content":"1: # Title"`)
	tmux("send-keys", "exit", "Enter")
	waitFor("EXITED:0")
}

func TestExecStdio(t *testing.T) {
	dir := workspace(t)
	cmd := exec.Command(hubBin, "exec", "--stdio")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HUB_CONFIG=")
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(stdout)
	ask := func(line string) map[string]any {
		t.Helper()
		if _, err := io.WriteString(stdin, line+"\n"); err != nil {
			t.Fatal(err)
		}
		// The answer must arrive before we send anything else: output is flushed per line.
		resp, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		return decode(t, resp)
	}
	m := ask(`{"id":1,"verb":"fs.readRange","arguments":{"path":"README.md","startLine":1,"endLine":1}}`)
	if m["id"] != 1.0 || m["content"] != "1: # Title" {
		t.Fatalf("got %v", m)
	}
	m = ask(`{"id":"two","verb":"fs.readFile","arguments":{"path":"/etc/passwd"}}`)
	if m["id"] != "two" || m["errorCode"] != "forbidden_path" {
		t.Fatalf("got %v", m)
	}
	m = ask(`{"id":3, this is not json`)
	if m["errorCode"] != "invalid_envelope" {
		t.Fatalf("got %v", m)
	}
	m = ask(`{"id":{"nested":[1]},"verb":"fs.exists","arguments":{"path":"docs"}}`)
	if m["exists"] != true || fmt.Sprint(m["id"]) != "map[nested:[1]]" {
		t.Fatalf("got %v", m)
	}
	huge := `{"id":5,"verb":"fs.writeFile","arguments":{"path":"x","content":"` + strings.Repeat("a", 1<<20+10) + `"}}`
	m = ask(huge)
	if m["errorCode"] != "too_large" {
		t.Fatalf("got %v", m)
	}
	m = ask(`{"id":6,"verb":"fs.exists","arguments":{"path":"README.md"}}`)
	if m["id"] != 6.0 || m["exists"] != true {
		t.Fatalf("stream desynchronised after a long line: %v", m)
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("stdio exit: %v", err)
	}
}

func TestVerbsAndSchema(t *testing.T) {
	dir := t.TempDir()
	out, _, code := runHub(t, dir, "", "verbs")
	if code != 0 || strings.Count(out, "\n") != 28 || !strings.Contains(out, "proc.run") || !strings.Contains(out, "proc.output") {
		t.Fatalf("verbs: %d %s", code, out)
	}
	out, _, code = runHub(t, dir, "", "schema", "FS.READRANGE")
	if code != 0 || !strings.Contains(out, "type FsReadRangeArgs") || !strings.Contains(out, "includeLineNumbers?: bool") {
		t.Fatalf("schema: %d %s", code, out)
	}
	out, _, _ = runHub(t, dir, "", "schema")
	if strings.Count(out, "Args\n{") != 28 {
		t.Fatalf("schema of all verbs: %s", out)
	}
	_, stderr, code := runHub(t, dir, "", "schema", "fs.redFile")
	if code != 2 || !strings.Contains(stderr, "did you mean fs.readFile") {
		t.Fatalf("unknown verb: %d %s", code, stderr)
	}
	_, _, code = runHub(t, dir, "", "nonsense")
	if code != 2 {
		t.Fatalf("unknown command exit %d", code)
	}
}

func TestAdminCommandsOffline(t *testing.T) {
	dir := workspace(t)
	run := func(args ...string) (string, string, int) {
		t.Helper()
		return runHub(t, dir, "", args...)
	}
	out, _, code := run("targets", "list")
	if code != 0 || !strings.Contains(out, "No delivery targets") {
		t.Fatalf("%d %s", code, out)
	}
	// With no configuration Telegram and Discord are off: their targets are
	// added with a note saying the chunks wait; web and local ones are not.
	for tgt, note := range map[string]string{
		"telegram:-1001:7":           "Note: Telegram is not enabled in the configuration (telegram.enabled): chunks for this target wait in the outbox",
		"discord:123":                "Note: Discord is not enabled in the configuration (discord.enabled)",
		"local:pma/deliveries.jsonl": "",
		"web":                        "",
	} {
		out, errOut, code := run("targets", "add", tgt)
		if code != 0 || !strings.Contains(out, "Added") {
			t.Fatalf("add %s: %d %s %s", tgt, code, out, errOut)
		}
		if note == "" && strings.Contains(out, "Note:") || !strings.Contains(out, note) {
			t.Fatalf("add %s: %q, want the note %q", tgt, out, note)
		}
	}
	out, _, _ = run("targets", "add", "telegram:-1001:7")
	if !strings.Contains(out, "already a target") {
		t.Fatalf("re-add: %s", out)
	}
	_, errOut, code := run("targets", "add", "slack:1")
	if code == 0 || !strings.Contains(errOut, "accepted: web, local:<path>, telegram:<chat_id>[:<thread_id>], discord:<channel_id>") {
		t.Fatalf("bad target: %d %s", code, errOut)
	}
	out, _, _ = run("targets", "list", "--json")
	if !strings.Contains(out, `"chat:telegram:-1001:7"`) || !strings.Contains(out, `"chat:discord:123"`) {
		t.Fatalf("list: %s", out)
	}
	// The seed's file shape is on disk.
	b, _ := os.ReadFile(filepath.Join(dir, ".hub", "pma", "delivery_targets.json"))
	if !strings.Contains(string(b), `"kind": "chat"`) || !strings.Contains(string(b), `"thread_id": "7"`) {
		t.Fatalf("delivery_targets.json: %s", b)
	}
	// hub send while no hub runs queues pma entries for each target.
	out, _, code = run("send", "--turn", "deploy-42", "deploy", "done")
	if code != 0 || !strings.Contains(out, "4 chunks enqueued") || !strings.Contains(out, "sent when `hub serve` runs") {
		t.Fatalf("send: %d %s", code, out)
	}
	out, _, _ = run("send", "--turn", "deploy-42", "deploy", "done")
	if !strings.Contains(out, "0 chunks enqueued") {
		t.Fatalf("resend must be a no-op per target: %s", out)
	}
	out, _, _ = run("outbox", "list")
	if strings.Count(out, "pma:deploy-42:") != 4 {
		t.Fatalf("outbox list: %s", out)
	}
	out, _, code = run("outbox", "show", "pma:deploy-42:chat:discord:123:0")
	if code != 0 || !strings.Contains(out, "deploy done") || !strings.Contains(out, "state:       pending") {
		t.Fatalf("outbox show: %d %s", code, out)
	}
	_, errOut, code = run("outbox", "show", "pma:nope:web:0")
	if code != 1 || !strings.Contains(errOut, "no outbox entry") {
		t.Fatalf("missing entry: %d %s", code, errOut)
	}
	out, _, _ = run("outbox", "dead")
	if !strings.Contains(out, "No dead-letter entries") {
		t.Fatalf("dead: %s", out)
	}
	_, errOut, code = run("outbox", "retry", "pma:deploy-42:web:0")
	if code != 1 || !strings.Contains(errOut, "not a dead letter") && !strings.Contains(errOut, "state") {
		t.Fatalf("retry of a pending entry: %d %s", code, errOut)
	}
	out, _, _ = run("targets", "rm", "discord:123")
	if !strings.Contains(out, "Removed chat:discord:123") {
		t.Fatalf("rm: %s", out)
	}
	out, _, _ = run("targets", "clear")
	if !strings.Contains(out, "Removed 3 targets") {
		t.Fatalf("clear: %s", out)
	}
	out, _, code = run("channels", "list")
	if code != 0 || !strings.Contains(out, "No channels seen yet") {
		t.Fatalf("channels: %d %s", code, out)
	}
	out, _, code = run("mirror", "tail")
	if code != 0 {
		t.Fatalf("mirror tail: %d %s", code, out)
	}
	// No empty run directories were created by offline commands: the only
	// runs are the two sends', mirrored as CLI calls.
	runs := listRuns(filepath.Join(dir, ".hub", "flows"))
	if len(runs) != 2 {
		t.Fatalf("offline commands created runs: %v", runs)
	}
	for _, r := range runs {
		if b, _ := os.ReadFile(filepath.Join(dir, ".hub", "flows", r, "chat", "inbound.jsonl")); !strings.Contains(string(b), `"kind":"cli"`) {
			t.Fatalf("run %s is not a mirrored send: %s", r, b)
		}
	}
}

func TestCorruptStateFiles(t *testing.T) {
	dir := workspace(t)
	runHub(t, dir, "", "targets", "list") // creates the state layout
	p := filepath.Join(dir, ".hub", "pma", "delivery_targets.json")
	bad := []byte("{\n  \"version\": 1,\n  \"targets\": [ {\"kind\": \"web\"}, \n")
	os.WriteFile(p, bad, 0o600)
	before, _ := os.Stat(p)
	_, errOut, code := runHub(t, dir, "", "targets", "add", "web")
	if code != 1 || !strings.Contains(errOut, "delivery_targets.json:3:") || !strings.Contains(errOut, "left untouched") {
		t.Fatalf("corrupt targets: %d %s", code, errOut)
	}
	after, _ := os.Stat(p)
	b, _ := os.ReadFile(p)
	if string(b) != string(bad) || !after.ModTime().Equal(before.ModTime()) {
		t.Fatal("the corrupt file was modified")
	}
	out, _, code := runHub(t, dir, "", "doctor")
	if code != 1 || !strings.Contains(out, "FAIL  targets") {
		t.Fatalf("doctor: %d %s", code, out)
	}
}

func TestDoctor(t *testing.T) {
	dir := workspace(t)
	cfg := filepath.Join(dir, "hub.yml")
	tg := telegramtest.NewServer()
	defer tg.Close()
	os.WriteFile(cfg, []byte("web:\n  listen: 127.0.0.1:0\ntelegram:\n  enabled: true\n  token: ${TG_TOKEN}\n  api_endpoint: "+tg.URL()+"\naccess:\n  grants:\n    web: [reader]\n"), 0o600)
	cmd := exec.Command(hubBin, "doctor", "--config", cfg)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TG_TOKEN="+tg.Token())
	b, err := cmd.CombinedOutput()
	out := string(b)
	if err != nil || !strings.Contains(out, "ok    telegram       enabled, the token is accepted: the bot "+telegramtest.DefaultUsername) || !strings.Contains(out, "No problems") {
		t.Fatalf("doctor: %v\n%s", err, out)
	}
	if _, secret, _ := strings.Cut(tg.Token(), ":"); strings.Contains(out, secret) {
		t.Fatal("doctor printed a token")
	}
	os.WriteFile(cfg, []byte("telegram:\n  enabled: true\n"), 0o600)
	out, _, code := runHub(t, dir, "", "doctor", "--config", cfg)
	if code != 1 || !strings.Contains(out, "telegram.token is empty") {
		t.Fatalf("doctor with a problem: %d %s", code, out)
	}
	os.WriteFile(cfg, []byte("webb: {}\n"), 0o600)
	out, _, code = runHub(t, dir, "", "doctor", "--config", cfg)
	if code != 1 || !strings.Contains(out, `line 1: unknown key "webb"`) {
		t.Fatalf("doctor with a typo: %d %s", code, out)
	}
	// Each problem is a line of its own, counted.
	os.WriteFile(cfg, []byte("webb: {}\ntelegram:\n  enabled: yes please\n"), 0o600)
	out, _, code = runHub(t, dir, "", "doctor", "--config", cfg)
	lines := strings.Split(out, "\n")
	if code != 1 || len(lines) < 3 || !strings.HasPrefix(lines[0], "FAIL  config ") || !strings.Contains(lines[0], `line 1: unknown key "webb"`) ||
		!strings.HasPrefix(lines[1], "FAIL  config ") || !strings.Contains(lines[1], "line 3: telegram.enabled") || !strings.Contains(out, "2 problems to fix") {
		t.Fatalf("doctor with two problems: %d %s", code, out)
	}
}

func TestDiscordCommandsJSON(t *testing.T) {
	out, _, code := runHub(t, t.TempDir(), "", "discord", "commands")
	var cmds []struct {
		Name    string `json:"name"`
		Options []struct {
			Name string `json:"name"`
		} `json:"options"`
	}
	if err := json.Unmarshal([]byte(out), &cmds); code != 0 || err != nil {
		t.Fatalf("%d %v %s", code, err, out)
	}
	subs := map[string]bool{}
	for _, c := range cmds {
		for _, o := range c.Options {
			subs[c.Name+" "+o.Name] = true
		}
	}
	for _, want := range []string{"fs read-range", "proc run", "sys machine-info", "hub whoami", "vfs snapshot"} {
		if !subs[want] {
			t.Errorf("missing /%s in %v", want, subs)
		}
	}
}

// TestAdminCommandsWithoutWorkspace: the admin commands work on the state
// directory alone, so a missing workspace does not stop an operator from
// reading the outbox or the targets.
func TestAdminCommandsWithoutWorkspace(t *testing.T) {
	dir := t.TempDir()
	cfg := "workspace: " + filepath.Join(dir, "gone") + "\nstate_dir: " + filepath.Join(dir, ".hub") + "\n"
	if err := os.WriteFile(filepath.Join(dir, "hub.yml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"targets", "add", "web"}, {"targets", "list"}, {"send", "hello"}, {"outbox", "list"}, {"channels", "list"}} {
		if out, errOut, code := runHub(t, dir, "", args...); code != 0 {
			t.Errorf("hub %s with the workspace missing: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
		}
	}
	// Running a verb still needs the workspace, and says so.
	if _, errOut, code := runHub(t, dir, "", "exec", `{"verb":"fs.exists","arguments":{"path":"x"}}`); code == 0 || !strings.Contains(errOut, "gone") {
		t.Errorf("exec without a workspace: exit %d, %s", code, errOut)
	}
}

// TestExecDeliver: hub exec --deliver prints the result and fans the
// rendered result, as a chat would see it, out to the delivery targets.
func TestExecDeliver(t *testing.T) {
	dir := workspace(t)
	if _, errOut, code := runHub(t, dir, "", "targets", "add", "local:pma/out.jsonl"); code != 0 {
		t.Fatal(errOut)
	}
	out, errOut, code := runHub(t, dir, "", "exec", "--deliver", `{"verb":"fs.readRange","arguments":{"path":"README.md","startLine":1,"endLine":2}}`)
	if code != 0 || !strings.Contains(out, `"succeeded":true`) || !strings.Contains(errOut, "delivered as turn") {
		t.Fatalf("exec --deliver: exit %d\n%s%s", code, out, errOut)
	}
	list, _, _ := runHub(t, dir, "", "outbox", "list", "--json")
	var entries []struct{ Text string }
	if err := json.Unmarshal([]byte(list), &entries); err != nil || len(entries) != 1 {
		t.Fatalf("outbox: %v %s", err, list)
	}
	// The rendering used the envelope's arguments (the path and lines).
	if txt := entries[0].Text; !strings.Contains(txt, "`README.md` lines 1–2") || !strings.Contains(txt, "2: line two") {
		t.Errorf("delivered text %q", txt)
	}
	// A failure is delivered too (a scheduled command that failed must be
	// heard of), as one line with its code, and the exit code says so.
	if _, _, code := runHub(t, dir, "", "exec", "--deliver", `{"verb":`); code != 1 {
		t.Errorf("a bad envelope: exit %d, want 1", code)
	}
	list, _, _ = runHub(t, dir, "", "outbox", "list", "--json")
	if err := json.Unmarshal([]byte(list), &entries); err != nil || len(entries) != 2 || !strings.Contains(entries[0].Text+entries[1].Text, "invalid_envelope") {
		t.Errorf("the failure was not delivered with its code: %v %s", err, list)
	}
}

// TestLocalTargetsConfined: hub targets add refuses a local: path that
// leaves the state directory or lies outside outbox.local_roots, naming the
// setting; one put in delivery_targets.json by hand is reported by hub
// doctor.
func TestLocalTargetsConfined(t *testing.T) {
	dir := workspace(t)
	allowed := t.TempDir()
	cfg := filepath.Join(dir, "hub.yml")
	if err := os.WriteFile(cfg, []byte("web:\n  listen: 127.0.0.1:0\noutbox:\n  local_roots: ["+allowed+"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "x.jsonl")
	for _, tc := range []struct{ target, why string }{
		{"local:" + outside, "outbox.local_roots"},
		{"local:../../x.jsonl", "leaves the state directory"},
		{"local:" + filepath.Join(allowed, "..", "x.jsonl"), "outbox.local_roots"},
	} {
		_, errOut, code := runHub(t, dir, "", "targets", "add", "--config", cfg, tc.target)
		if code == 0 || !strings.Contains(errOut, tc.why) {
			t.Errorf("add %s: exit %d %q, want a refusal saying %q", tc.target, code, errOut, tc.why)
		}
	}
	for _, ok := range []string{"local:pma/x.jsonl", "local:" + filepath.Join(allowed, "sub", "x.jsonl")} {
		if out, errOut, code := runHub(t, dir, "", "targets", "add", "--config", cfg, ok); code != 0 || !strings.Contains(out, "Added") {
			t.Errorf("add %s: exit %d %s%s", ok, code, out, errOut)
		}
	}
	if out, _, code := runHub(t, dir, "", "doctor", "--config", cfg); code != 0 || !strings.Contains(out, "ok    targets") {
		t.Fatalf("doctor with allowed targets: %d %s", code, out)
	}
	// By hand, past the check.
	p := filepath.Join(dir, ".hub", "pma", "delivery_targets.json")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(b), `"targets": [`, `"targets": [{"kind": "local", "path": "`+outside+`"}, `, 1)
	if err := os.WriteFile(p, []byte(edited), 0o600); err != nil {
		t.Fatal(err)
	}
	out, _, code := runHub(t, dir, "", "doctor", "--config", cfg)
	if code != 1 || !strings.Contains(out, "FAIL  targets") || !strings.Contains(out, outside) || !strings.Contains(out, "outbox.local_roots") {
		t.Fatalf("doctor with a target outside the roots: %d %s", code, out)
	}
}

// TestCLIMirror: a CLI call that changes something (a write verb, a
// delivery) is mirrored as kind "cli" with the local user, in a run of its
// own; a read-only call is not, unless mirror.cli is all.
func TestCLIMirror(t *testing.T) {
	dir := workspace(t)
	flows := filepath.Join(dir, ".hub", "flows")
	me, err := user.Current()
	if err != nil {
		testkit.Unavailable(t, "needs the current user's name (the CLI mirror records it), which this system does not give: "+err.Error())
	}
	records := func() (in, out []store.MirrorRecord) {
		t.Helper()
		for _, r := range listRuns(flows) {
			for dirn, dst := range map[string]*[]store.MirrorRecord{"inbound": &in, "outbound": &out} {
				b, _ := os.ReadFile(filepath.Join(flows, r, "chat", dirn+".jsonl"))
				for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
					if line == "" {
						continue
					}
					var rec store.MirrorRecord
					if err := json.Unmarshal([]byte(line), &rec); err != nil {
						t.Fatalf("%s: %v", line, err)
					}
					*dst = append(*dst, rec)
				}
			}
		}
		// Runs started in the same second do not sort by time: the records do.
		for _, l := range [][]store.MirrorRecord{in, out} {
			sort.SliceStable(l, func(i, j int) bool { return l[i].TS.Before(l[j].TS) })
		}
		return in, out
	}
	if _, errOut, code := runHub(t, dir, "", "exec", `{"verb":"fs.readFile","arguments":{"path":"README.md"}}`); code != 0 {
		t.Fatal(errOut)
	}
	if runs := listRuns(flows); len(runs) != 0 {
		t.Fatalf("a read-only call was mirrored: %v", runs)
	}
	if _, errOut, code := runHub(t, dir, "", "exec", `{"verb":"fs.writeFile","arguments":{"path":"new.txt","content":"hi"}}`); code != 0 {
		t.Fatal(errOut)
	}
	in, out := records()
	if len(in) != 1 || len(out) != 1 {
		t.Fatalf("write: %d inbound, %d outbound records", len(in), len(out))
	}
	r := in[0]
	if r.Kind != "cli" || r.Platform != "cli" || r.Actor != "cli:"+me.Username || r.Meta["uid"] != me.Uid || r.Meta["user_name"] != me.Username ||
		r.Meta["verb"] != "fs.writeFile" || !strings.Contains(r.Text, `"new.txt"`) || r.Meta["turn_id"] == "" {
		t.Fatalf("inbound record %+v", r)
	}
	if o := out[0]; o.Kind != "cli" || o.Meta["succeeded"] != "true" || o.Meta["turn_id"] != r.Meta["turn_id"] || !strings.Contains(o.Text, `"succeeded":true`) {
		t.Fatalf("outbound record %+v", o)
	}
	// Each invocation has its own run; stdio mirrors per call.
	if _, errOut, code := runHub(t, dir, `{"verb":"fs.createDirectory","arguments":{"path":"d"}}`+"\n"+`{"verb":"fs.exists","arguments":{"path":"d"}}`+"\n", "exec", "--stdio"); code != 0 {
		t.Fatal(errOut)
	}
	if runs := listRuns(flows); len(runs) != 2 {
		t.Fatalf("runs %v, want one per invocation", runs)
	}
	if in, _ := records(); len(in) != 2 || in[1].Meta["verb"] != "fs.createDirectory" {
		t.Fatalf("stdio: %+v", in)
	}
	// A delivery is mirrored, with its turn.
	if _, errOut, code := runHub(t, dir, "", "send", "--turn", "t-1", "hello", "there"); code != 0 {
		t.Fatal(errOut)
	}
	in, out = records()
	if got := in[len(in)-1]; got.Meta["action"] != "send" || got.Text != "hello there" || got.Meta["turn_id"] != "t-1" {
		t.Fatalf("send record %+v", got)
	}
	if got := out[len(out)-1]; got.Meta["action"] != "send" || got.Meta["succeeded"] != "true" || !strings.Contains(got.Text, `"turnId"`) && !strings.Contains(got.Text, "t-1") {
		t.Fatalf("send result record %+v", got)
	}
	// mirror.cli: all mirrors read-only calls too.
	cfg := filepath.Join(dir, "hub.yml")
	os.WriteFile(cfg, []byte("mirror:\n  cli: all\n"), 0o600)
	before := len(listRuns(flows))
	if _, errOut, code := runHub(t, dir, "", "exec", "--config", cfg, `{"verb":"fs.exists","arguments":{"path":"README.md"}}`); code != 0 {
		t.Fatal(errOut)
	}
	if in, _ := records(); len(listRuns(flows)) != before+1 || in[len(in)-1].Meta["verb"] != "fs.exists" {
		t.Fatalf("mirror.cli: all did not mirror a read-only call: %+v", in[len(in)-1])
	}
}

// flowsRoot opens the mirrors' directory flows for reading, closed at the
// end of the test.
func flowsRoot(t testing.TB, flows string) *os.Root {
	t.Helper()
	r, err := os.OpenRoot(flows)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// listRuns lists the runs in the mirrors' directory flows (none while it
// does not exist).
func listRuns(flows string) []string {
	r, err := os.OpenRoot(flows)
	if err != nil {
		return nil
	}
	defer r.Close()
	return store.ListRuns(r)
}

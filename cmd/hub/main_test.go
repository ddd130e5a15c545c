package main

import (
	"bufio"
	"bytes"
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

// hubBin is the hub binary built once for the tests that run it as a process.
var hubBin string

func TestMain(m *testing.M) {
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
func runHub(t *testing.T, dir, stdin string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(hubBin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HUB_CONFIG=")
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
		t.Skip("tmux not installed")
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
	if code != 0 || strings.Count(out, "\n") != 14 || !strings.Contains(out, "proc.run") {
		t.Fatalf("verbs: %d %s", code, out)
	}
	out, _, code = runHub(t, dir, "", "schema", "FS.READRANGE")
	if code != 0 || !strings.Contains(out, "type FsReadRangeArgs") || !strings.Contains(out, "includeLineNumbers?: bool") {
		t.Fatalf("schema: %d %s", code, out)
	}
	out, _, _ = runHub(t, dir, "", "schema")
	if strings.Count(out, "Args\n{") != 14 {
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

//go:build unix

package main

import (
	"bufio"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// startServe runs `hub serve` in dir and returns the process and the login URL.
func startServe(t *testing.T, dir string, args ...string) (*exec.Cmd, string, *syncWriter) {
	t.Helper()
	return startServeEnv(t, dir, nil, args...)
}

// startServeEnv is startServe with env added to the hub's environment.
func startServeEnv(t *testing.T, dir string, env []string, args ...string) (*exec.Cmd, string, *syncWriter) {
	t.Helper()
	return startServeWithin(t, dir, 30*time.Second, env, args...)
}

// startServeWithin is startServeEnv waiting up to wait for the login URL.
func startServeWithin(t *testing.T, dir string, wait time.Duration, env []string, args ...string) (*exec.Cmd, string, *syncWriter) {
	t.Helper()
	cmd := exec.Command(hubBin, append([]string{"serve"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "HUB_CONFIG=", "HUB_WEB_LISTEN=", "HUB_TEST_SECRET_TOKEN=do-not-leak"), env...)
	stdout, _ := cmd.StdoutPipe()
	logs := &syncWriter{}
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := regexp.MustCompile(`http://\S+`).FindString(sc.Text()); m != "" {
				urls <- m
			}
		}
	}()
	select {
	case u := <-urls:
		return cmd, u, logs
	case <-time.After(wait):
		t.Fatalf("no login URL printed; logs:\n%s", logs.String())
	}
	return nil, "", nil
}

// syncWriter serialises writes to a builder read by the test.
type syncWriter struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncWriter) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestServeWithNoConfig(t *testing.T) {
	t.Parallel() // its own directories and processes: it runs beside the package's other long tests
	dir := workspace(t)
	cfg := filepath.Join(dir, "hub.yml")
	os.WriteFile(cfg, []byte("web:\n  listen: 127.0.0.1:0\n"), 0o600)
	cmd, url, logs := startServe(t, dir, "--config", cfg)
	if !strings.Contains(url, "#token=") {
		t.Fatalf("login URL without a token: %s", url)
	}
	base := url[:strings.Index(url, "/#")]
	token := url[strings.Index(url, "#token=")+len("#token="):]
	// The panel answers, and the API wants the token.
	resp, err := http.Get(base + "/api/status")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("status without token: %d", resp.StatusCode)
	}
	req, _ := http.NewRequest("GET", base+"/api/status", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err = http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("status with token: %v %v", err, resp)
	}
	resp.Body.Close()
	// The admin socket is owner-only and the CLI uses it while the hub runs.
	sock := filepath.Join(dir, ".hub", "hub.sock")
	fi, err := os.Stat(sock)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("admin socket: %v %v", err, fi)
	}
	out, errOut, code := runHub(t, dir, "", "targets", "add", "local:pma/deliveries.jsonl")
	if code != 0 {
		t.Fatalf("targets add via socket: %d %s %s", code, out, errOut)
	}
	out, _, code = runHub(t, dir, "", "send", "hello from the CLI")
	if code != 0 || strings.Contains(out, "when `hub serve` runs") {
		t.Fatalf("send via the running hub: %d %s", code, out)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, _ := os.ReadFile(filepath.Join(dir, ".hub", "pma", "deliveries.jsonl"))
		if strings.Contains(string(b), "hello from the CLI") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the running hub did not deliver: %s", b)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// A second hub on the same state is refused with a clear error.
	_, errOut, code = runHub(t, dir, "", "serve", "--config", cfg)
	if code == 0 || !strings.Contains(errOut, "is in use by process") {
		t.Fatalf("second hub: %d %s", code, errOut)
	}
	// SIGTERM: graceful stop, socket removed, exit 0.
	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v\n%s", err, logs.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no exit after SIGTERM")
	}
	if _, err := os.Stat(sock); !os.IsNotExist(err) {
		t.Fatalf("socket left behind: %v", err)
	}
	if strings.Contains(logs.String(), token) || strings.Contains(logs.String(), "do-not-leak") {
		t.Fatal("a token reached the logs")
	}
	// The CLI works offline again.
	out, _, code = runHub(t, dir, "", "targets", "list")
	if code != 0 || !strings.Contains(out, "local:pma/deliveries.jsonl") {
		t.Fatalf("offline after stop: %d %s", code, out)
	}
}

// TestServeSecondSignalExitsAtOnce: the first SIGTERM starts a graceful stop
// that waits for a request in flight; a second one exits immediately.
func TestServeSecondSignalExitsAtOnce(t *testing.T) {
	dir := workspace(t)
	programsMayWrite(t, dir)
	cfg := filepath.Join(dir, "hub.yml")
	os.WriteFile(cfg, []byte("web:\n  listen: 127.0.0.1:0\naccess:\n  roles:\n    admin: {verbs: ['*']}\n  grants:\n    web: [admin]\n"), 0o600)
	cmd, url, logs := startServe(t, dir, "--config", cfg)
	base := url[:strings.Index(url, "/#")]
	token := url[strings.Index(url, "#token=")+len("#token="):]
	go func() {
		req, _ := http.NewRequest("POST", base+"/api/execute", strings.NewReader(`{"verb":"proc.run","arguments":{"executable":"sh","arguments":["-c","echo $$ > started; exec sleep 20"]}}`))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(dir, "started")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the verb never started; logs:\n%s", logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	// Wait until the graceful stop has begun, then signal again.
	for !strings.Contains(logs.String(), "stopping") {
		if time.Now().After(deadline) {
			t.Fatalf("no graceful stop logged:\n%s", logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		ee, ok := err.(*exec.ExitError)
		if !ok || ee.ExitCode() != 1 {
			t.Fatalf("second signal: want exit status 1, got %v", err)
		}
		if !strings.Contains(logs.String(), "second signal") {
			t.Fatalf("logs:\n%s", logs.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the second signal did not stop the hub")
	}
	// The exit was the immediate one (status 1, logged), not the graceful
	// one, which would have waited for the request and exited 0. The
	// orphaned child is cleaned up here.
	if b, err := os.ReadFile(filepath.Join(dir, "started")); err == nil {
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			syscall.Kill(-pid, syscall.SIGKILL)
		}
	}
}

// TestServeDoesNotPrintConfiguredToken: with web.token configured, the
// printed URL carries no token and says where the token comes from; the
// token reaches neither stdout nor the logs. The listener answers to its
// address and refuses a foreign Host.
func TestServeDoesNotPrintConfiguredToken(t *testing.T) {
	dir := workspace(t)
	cfg := filepath.Join(dir, "hub.yml")
	const token = "configured-token-0123456789"
	os.WriteFile(cfg, []byte("web:\n  listen: 127.0.0.1:0\n  token: "+token+"\n"), 0o600)
	cmd := exec.Command(hubBin, "serve", "--config", cfg)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HUB_CONFIG=")
	out, logs := &syncWriter{}, &syncWriter{}
	cmd.Stdout, cmd.Stderr = out, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(out.String(), "running") {
		if time.Now().After(deadline) {
			t.Fatalf("no start message; logs:\n%s", logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	printed := out.String()
	if strings.Contains(printed, token) || strings.Contains(printed, "#token=") || !strings.Contains(printed, "web.token") {
		t.Fatalf("stdout: %q", printed)
	}
	base := strings.TrimSuffix(regexp.MustCompile(`http://\S+/`).FindString(printed), "/")
	req, _ := http.NewRequest("GET", base+"/api/status", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("status with the configured token at %s: %v %v", base, err, resp)
	}
	resp.Body.Close()
	req.Host = "rebind.example"
	if resp, err = http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusMisdirectedRequest {
		t.Fatalf("foreign Host: %v %v", err, resp)
	}
	resp.Body.Close()
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
	if strings.Contains(logs.String(), token) || strings.Contains(out.String(), token) {
		t.Fatal("the configured token was printed")
	}
}

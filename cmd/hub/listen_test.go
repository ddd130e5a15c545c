//go:build unix

package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// busyPort holds a loopback TCP port for the test's lifetime and returns
// its address.
func busyPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln.Addr().String()
}

// runServeToExit runs `hub serve` expecting it to stop by itself and
// returns what it printed; a hub still running after a minute fails the
// test.
func runServeToExit(t *testing.T, dir string, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, hubBin, append([]string{"serve"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "HUB_CONFIG=", "HUB_WEB_LISTEN="), env...)
	var out, errb syncWriter
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("hub serve %v did not stop by itself; stdout:\n%s\nstderr:\n%s", args, out.String(), errb.String())
	}
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

// TestServeListenPrecedence: the panel's address is --listen, else
// HUB_WEB_LISTEN, else web.listen, for every configuration; an address
// that is not loopback still needs a token, and the error says where the
// address came from.
func TestServeListenPrecedence(t *testing.T) {
	dir := workspace(t)
	fromFile, fromEnv := busyPort(t), busyPort(t)
	cfg := filepath.Join(dir, "hub.yml")
	os.WriteFile(cfg, []byte("web:\n  listen: "+fromFile+"\n"), 0o600)

	// The environment wins over the file (whose port is taken).
	cmd, url, logs := startServeEnv(t, dir, []string{"HUB_WEB_LISTEN=127.0.0.1:0"}, "--config", cfg)
	if strings.Contains(url, fromFile) {
		t.Fatalf("HUB_WEB_LISTEN ignored: %s\n%s", url, logs.String())
	}
	cmd.Process.Kill()
	cmd.Wait()
	// The flag wins over the environment and the file.
	cmd, url, logs = startServeEnv(t, dir, []string{"HUB_WEB_LISTEN=" + fromEnv}, "--config", cfg, "--listen", "127.0.0.1:0")
	if strings.Contains(url, fromFile) || strings.Contains(url, fromEnv) {
		t.Fatalf("--listen ignored: %s\n%s", url, logs.String())
	}
	cmd.Process.Kill()
	cmd.Wait()
	// With no configuration at all, too.
	cmd, url, _ = startServeEnv(t, dir, []string{"HUB_WEB_LISTEN=" + fromEnv}, "--listen", "127.0.0.1:0")
	if !strings.HasPrefix(url, "http://127.0.0.1:") || strings.Contains(url, fromEnv) {
		t.Fatalf("--listen without a configuration: %s", url)
	}
	cmd.Process.Kill()
	cmd.Wait()

	for _, tc := range []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"environment without a token", []string{"HUB_WEB_LISTEN=0.0.0.0:0"}, nil, "web.listen (from HUB_WEB_LISTEN): 0.0.0.0:0 is not a loopback address, so web.token must be set"},
		{"flag without a token", nil, []string{"--listen", "0.0.0.0:0"}, "web.listen (from --listen): 0.0.0.0:0 is not a loopback address"},
		{"flag not host:port", nil, []string{"--listen", "8080"}, `web.listen (from --listen): "8080" is not host:port`},
	} {
		out, errOut, code := runServeToExit(t, dir, tc.env, append([]string{"--config", cfg}, tc.args...)...)
		if code != 1 || !strings.Contains(errOut, tc.want) || out != "" {
			t.Errorf("%s: exit %d, stdout %q, stderr:\n%s", tc.name, code, out, errOut)
		}
	}
	os.WriteFile(cfg, []byte("web:\n  enabled: false\n"), 0o600)
	if _, errOut, code := runServeToExit(t, dir, nil, "--config", cfg, "--listen", "127.0.0.1:0"); code != 1 || !strings.Contains(errOut, "web.listen (from --listen) moves the web panel, which is off (web.enabled: false)") {
		t.Errorf("--listen with the panel off: exit %d\n%s", code, errOut)
	}
}

// TestServePortInUseFailsBeforePrinting: a taken port stops `hub serve`
// before it prints the panel's link (which would lead to the other
// process), with the process holding the port (this test's, on Linux) and
// how to choose another address; `hub doctor` says the same.
func TestServePortInUseFailsBeforePrinting(t *testing.T) {
	dir := workspace(t)
	taken := busyPort(t)
	cfg := filepath.Join(dir, "hub.yml")
	os.WriteFile(cfg, []byte("web:\n  listen: "+taken+"\n"), 0o600)
	holder := ""
	if runtime.GOOS == "linux" {
		holder = fmt.Sprintf(" by process %d (", os.Getpid())
	}
	want := "web.listen: " + taken + " is in use" + holder
	const fix = "choose another address with `hub serve --listen ADDR`, HUB_WEB_LISTEN=ADDR or web.listen"
	out, errOut, code := runServeToExit(t, dir, nil, "--config", cfg)
	if code != 1 || out != "" || !strings.Contains(errOut, want) || !strings.Contains(errOut, fix) {
		t.Fatalf("exit %d, stdout %q, stderr:\n%s", code, out, errOut)
	}
	if strings.Contains(errOut, "hub running") {
		t.Fatalf("the hub said it runs before its port failed:\n%s", errOut)
	}
	// The same through HUB_WEB_LISTEN over a free web.listen.
	os.WriteFile(cfg, []byte("web:\n  listen: 127.0.0.1:0\n"), 0o600)
	out, errOut, code = runServeToExit(t, dir, []string{"HUB_WEB_LISTEN=" + taken}, "--config", cfg)
	if code != 1 || out != "" || !strings.Contains(errOut, want) {
		t.Fatalf("through HUB_WEB_LISTEN: exit %d, stdout %q, stderr:\n%s", code, out, errOut)
	}
	doc, _, code := runHubEnv(t, dir, "", []string{"HUB_WEB_LISTEN=" + taken}, "doctor", "--config", cfg)
	if code != 1 || !strings.Contains(doc, "FAIL  listen         "+taken+" is in use"+holder) || !strings.Contains(doc, fix) {
		t.Fatalf("doctor: exit %d\n%s", code, doc)
	}
}

package packaging_test

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/build"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/a6afc2ce/hermes-hub/internal/testkit"
)

// caCerts is where Debian keeps the CA bundle the image carries.
const caCerts = "/etc/ssl/certs/ca-certificates.crt"

// skipOrFail skips the test where what it needs is missing, and fails it in
// CI, which provides everything.
func skipOrFail(t *testing.T, format string, args ...any) {
	t.Helper()
	testkit.Unavailable(t, fmt.Sprintf(format, args...))
}

// TestImageServesHealthz builds the image as `make image` does (the static
// linux binary, the CA certificates, packaging/Dockerfile and hub.yml, the
// empty state and workspace directories) with the daemon's classic builder,
// starts `hub serve` in it on the host's network at a free loopback port and
// waits for /healthz. The container, its volume and the image are removed.
func TestImageServesHealthz(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: this test builds a binary and a container image")
	}
	ctx := context.Background()
	cli, err := client.New(client.FromEnv)
	if err != nil {
		skipOrFail(t, "docker client: %v", err)
	}
	t.Cleanup(func() { cli.Close() })
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	_, err = cli.Ping(pctx, client.PingOptions{NegotiateAPIVersion: true})
	cancel()
	if err != nil {
		skipOrFail(t, "no Docker daemon reachable: %v", err)
	}
	certs, err := os.ReadFile(caCerts)
	if err != nil {
		skipOrFail(t, "the image carries the build machine's CA certificates: %v", err)
	}

	bin := filepath.Join(t.TempDir(), "hub")
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("build the hub: %v", err)
	}
	cmd := exec.Command(gobin, "build", "-trimpath", "-o", bin, "../cmd/hub")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	buildCtx := imageContext(t, map[string]string{"hub": bin, "Dockerfile": "Dockerfile", "hub.yml": "hub.yml"}, certs)

	tag := "hermes-hub-test/image:" + randHex(t)
	res, err := cli.ImageBuild(ctx, buildCtx, client.ImageBuildOptions{
		Tags: []string{tag}, Remove: true, ForceRemove: true, Version: build.BuilderV1,
	})
	if err != nil {
		t.Fatalf("image build: %v", err)
	}
	t.Cleanup(func() {
		c, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := cli.ImageRemove(c, tag, client.ImageRemoveOptions{Force: true, PruneChildren: true}); err != nil {
			t.Errorf("remove image %s: %v", tag, err)
		}
	})
	if log, err := buildLog(res.Body); err != nil {
		t.Fatalf("image build failed: %v\n%s", err, log)
	}

	port := freePort(t)
	created, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Image:      tag,
		Config:     &container.Config{Env: []string{"HUB_WEB_LISTEN=127.0.0.1:" + port}},
		HostConfig: &container.HostConfig{NetworkMode: "host"},
	})
	if err != nil {
		t.Fatalf("create container: %v", err)
	}
	t.Cleanup(func() {
		c, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := cli.ContainerRemove(c, created.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true}); err != nil {
			t.Errorf("remove container: %v", err)
		}
	})
	if _, err := cli.ContainerStart(ctx, created.ID, client.ContainerStartOptions{}); err != nil {
		t.Fatalf("start container: %v", err)
	}

	url := "http://127.0.0.1:" + port + "/healthz"
	hc := &http.Client{Timeout: 2 * time.Second}
	testkit.WaitFor(t, "hub serve in the container to answer "+url, func() bool {
		if in, err := cli.ContainerInspect(ctx, created.ID, client.ContainerInspectOptions{}); err == nil && in.Container.State != nil && !in.Container.State.Running {
			t.Fatalf("the container exited (status %d):\n%s", in.Container.State.ExitCode, logs(cli, created.ID))
		}
		resp, err := hc.Get(url)
		if err != nil {
			return false
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || string(body) != "ok\n" {
			t.Fatalf("GET /healthz: %s %q", resp.Status, body)
		}
		return true
	})

	in, err := cli.ContainerInspect(ctx, created.ID, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if u := in.Container.Config.User; u != "65532:65532" {
		t.Errorf("the hub runs as %q, want the non-root 65532:65532", u)
	}
	state := false
	for _, m := range in.Container.Mounts {
		state = state || m.Destination == "/state" && m.RW
	}
	if !state {
		t.Errorf("/state is not a writable volume: %+v", in.Container.Mounts)
	}
	// The daemon copies the container's stdout and stderr separately, so
	// the log line (stderr) may reach it after the panel's line (stdout).
	deadline := time.Now().Add(testkit.Wait)
	for l := logs(cli, created.ID); !strings.Contains(l, "state=/state workspace=/workspace"); l = logs(cli, created.ID) {
		if time.Now().After(deadline) {
			t.Fatalf("the hub did not use the image's state and workspace:\n%s", l)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// imageContext is the build context `make image` prepares in dist/image:
// files (name in the context → path here), the CA bundle and two empty
// directories.
func imageContext(t *testing.T, files map[string]string, certs []byte) io.Reader {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	add := func(h *tar.Header, data []byte) {
		h.Size = int64(len(data))
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(data); err != nil {
			t.Fatal(err)
		}
	}
	for name, p := range files {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		mode := int64(0o644)
		if name == "hub" {
			mode = 0o755
		}
		add(&tar.Header{Name: name, Mode: mode, Typeflag: tar.TypeReg}, data)
	}
	add(&tar.Header{Name: "ca-certificates.crt", Mode: 0o644, Typeflag: tar.TypeReg}, certs)
	for _, d := range []string{"state/", "workspace/"} {
		add(&tar.Header{Name: d, Mode: 0o755, Typeflag: tar.TypeDir}, nil)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return &buf
}

// buildLog reads the build's JSON stream to its end and returns its text,
// with the error the build reported, if any.
func buildLog(body io.ReadCloser) (string, error) {
	defer body.Close()
	var log strings.Builder
	dec := json.NewDecoder(bufio.NewReader(body))
	for {
		var m struct {
			Stream      string `json:"stream"`
			Error       string `json:"error"`
			ErrorDetail struct {
				Message string `json:"message"`
			} `json:"errorDetail"`
		}
		if err := dec.Decode(&m); err == io.EOF {
			return log.String(), nil
		} else if err != nil {
			return log.String(), fmt.Errorf("reading the build output: %w", err)
		}
		log.WriteString(m.Stream)
		if m.Error != "" || m.ErrorDetail.Message != "" {
			return log.String(), fmt.Errorf("%s%s", m.Error, m.ErrorDetail.Message)
		}
	}
}

func logs(cli *client.Client, id string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := cli.ContainerLogs(ctx, id, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true})
	if err != nil {
		return fmt.Sprintf("(logs: %v)", err)
	}
	defer r.Close()
	b, _ := io.ReadAll(r)
	return string(b) // multiplexed: frame headers show as a few stray bytes
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return fmt.Sprint(l.Addr().(*net.TCPAddr).Port)
}

func randHex(t *testing.T) string {
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

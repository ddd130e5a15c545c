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
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
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

// TestImageServesHealthz builds the images as `make image` and `make
// image-busybox` do (the static linux binary, the context
// packaging/context.sh prepares, the daemon's classic builder), starts
// `hub serve` in each on the host's network at a free loopback port and
// waits for /healthz; then checks that the hub passes its own `hub doctor`
// there (the state owner-only), and what proc.run can run: nothing but the
// hub in the plain image, busybox's applets in the other. Containers,
// volumes and images are removed.
func TestImageServesHealthz(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: this test builds a binary and container images")
	}
	cli := dockerClient(t)
	if _, err := os.Stat(caCerts); err != nil {
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
	for _, v := range []struct {
		name    string
		busybox string
		proc    func(t *testing.T, out string, code int)
	}{
		{"scratch", "", func(t *testing.T, out string, code int) {
			if code != 1 || !strings.Contains(out, `"errorCode":"not_found"`) || !strings.Contains(out, "Executable not found: sh") {
				t.Errorf("proc.run sh in the image without a userland: exit %d %s", code, out)
			}
		}},
		{"busybox", busybox, func(t *testing.T, out string, code int) {
			if code != 0 || !strings.Contains(out, `"stdoutTail":"hello from 65532\n"`) {
				t.Errorf("proc.run sh in the busybox image: exit %d %s", code, out)
			}
		}},
	} {
		t.Run(v.name, func(t *testing.T) {
			t.Parallel()
			if v.busybox != "" {
				if _, err := os.Stat(v.busybox); err != nil {
					skipOrFail(t, "the busybox image is built from %s (install busybox-static): %v", v.busybox, err)
				}
			}
			tag := buildImage(t, cli, bin, v.busybox)
			id := serveImage(t, cli, tag)
			out, code := execIn(t, cli, id, "/hub", "doctor")
			if code != 0 || !strings.Contains(out, "ok    state          /state (owner-only)") || strings.Contains(out, "FAIL") {
				t.Errorf("hub doctor in the image: exit %d\n%s", code, out)
			}
			out, code = execIn(t, cli, id, "/hub", "exec", `{"verb":"proc.run","arguments":{"executable":"sh","arguments":["-c","echo hello from $(id -u)"]}}`)
			v.proc(t, out, code)
		})
	}
}

// TestImageFromTheRepositoryRoot: `docker build -f packaging/Dockerfile .`
// in the repository stops at once, saying to use make image (the
// repository is not the image's context).
func TestImageFromTheRepositoryRoot(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: this test runs a container image build")
	}
	dockerClient(t)
	docker, err := exec.LookPath("docker")
	if err != nil {
		skipOrFail(t, "no docker command to build with as the README says: %v", err)
	}
	cmd := exec.Command(docker, "build", "-f", "packaging/Dockerfile", ".")
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "DOCKER_BUILDKIT=0")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "use make image, which prepares the context of this Dockerfile") {
		t.Fatalf("docker build from the repository's root: %v\n%s", err, out)
	}
}

// busybox is the static busybox the userland image is made from.
const busybox = "/bin/busybox"

// dockerClient is a client of a daemon that answers, or skips the test.
func dockerClient(t *testing.T) *client.Client {
	t.Helper()
	cli, err := client.New(client.FromEnv)
	if err != nil {
		skipOrFail(t, "docker client: %v", err)
	}
	t.Cleanup(func() { cli.Close() })
	pctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	_, err = cli.Ping(pctx, client.PingOptions{NegotiateAPIVersion: true})
	cancel()
	if err != nil {
		skipOrFail(t, "no Docker daemon reachable: %v", err)
	}
	return cli
}

// buildImage prepares the context with packaging/context.sh (with the
// busybox userland when busybox is set), builds it and returns its tag;
// the image is removed at the end of the test.
func buildImage(t *testing.T, cli *client.Client, bin, busybox string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "image")
	args := []string{"context.sh", dir, bin, caCerts}
	if busybox != "" {
		args = append(args, busybox)
	}
	if out, err := exec.Command("sh", args...).CombinedOutput(); err != nil {
		t.Fatalf("context.sh: %v\n%s", err, out)
	}
	ctx := context.Background()
	tag := "hermes-hub-test/image:" + randHex(t)
	res, err := cli.ImageBuild(ctx, dirTar(t, dir), client.ImageBuildOptions{
		// NoCache: the two images' builds run at once and share their first
		// steps; from the cache, one would build on an intermediate image
		// the other's removal prunes (unable to find image sha256:…).
		Tags: []string{tag}, Remove: true, ForceRemove: true, NoCache: true, Version: build.BuilderV1,
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
	return tag
}

// serveImage starts `hub serve` in the image tag on the host's network at
// a free loopback port, waits for /healthz and checks the container: a
// non-root user, /state a writable volume, the image's state and workspace
// used. It returns the container's id; the container and its volume are
// removed at the end of the test.
func serveImage(t *testing.T, cli *client.Client, tag string) string {
	t.Helper()
	ctx := context.Background()
	port := fmt.Sprint(testkit.Port(t))
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
	return created.ID
}

// execIn runs cmd in the container id as its user and returns its output
// (stdout and stderr) and exit code.
func execIn(t *testing.T, cli *client.Client, id string, cmd ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ex, err := cli.ExecCreate(ctx, id, client.ExecCreateOptions{AttachStdout: true, AttachStderr: true, Cmd: cmd})
	if err != nil {
		t.Fatalf("exec %v: %v", cmd, err)
	}
	at, err := cli.ExecAttach(ctx, ex.ID, client.ExecAttachOptions{})
	if err != nil {
		t.Fatalf("exec %v: %v", cmd, err)
	}
	var out bytes.Buffer
	_, _ = stdcopy.StdCopy(&out, &out, at.Reader)
	at.Close()
	for {
		ins, err := cli.ExecInspect(ctx, ex.ID, client.ExecInspectOptions{})
		if err != nil {
			t.Fatalf("exec %v: %v", cmd, err)
		}
		if !ins.Running {
			return out.String(), ins.ExitCode
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// dirTar is the build context of dir: every file, folder and symbolic
// link below it, with its mode.
func dirTar(t *testing.T, dir string) io.Reader {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || p == dir {
			return err
		}
		link := ""
		if fi.Mode()&os.ModeSymlink != 0 {
			if link, err = os.Readlink(p); err != nil {
				return err
			}
		}
		h, err := tar.FileInfoHeader(fi, link)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		h.Name = filepath.ToSlash(rel)
		h.Uid, h.Gid, h.Uname, h.Gname = 0, 0, "", ""
		if fi.IsDir() {
			h.Name += "/"
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if fi.Mode().IsRegular() {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			_, err = tw.Write(data)
			return err
		}
		return nil
	})
	if err == nil {
		err = tw.Close()
	}
	if err != nil {
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

func randHex(t *testing.T) string {
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

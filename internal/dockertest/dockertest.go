// Package dockertest gives tests a connected Docker Engine client, a small
// test image built without a registry, and a private Docker daemon a test
// may stop and start at will.
//
// A test that needs Docker calls Client (and BusyboxImage); where there is
// no daemon (or no /bin/busybox) the test is skipped with the reason, except
// under CI=true, where the missing piece is a failure. StartDaemon runs a
// second dockerd owned by the test (never the shared one); it needs root,
// and a machine that is not root skips it even under CI (see StartDaemon).
package dockertest

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/client"
)

// Image is the reference of the test image BusyboxImage builds.
const Image = "hermes-hub-test/busybox:2"

// busybox is the static busybox the image is made from (Debian's
// busybox-static).
const busybox = "/bin/busybox"

// Unavailable skips t with reason, or fails it when CI=true: CI provides the
// daemon and busybox, so their absence there is a failure.
func Unavailable(t testing.TB, reason string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("docker test cannot run (CI=true): %s", reason)
	}
	t.Skip(reason)
}

// Client returns a client of the daemon named by the environment
// (DOCKER_HOST, or the default socket), its API version negotiated, closed
// when t ends. Without a reachable daemon t is skipped (failed under CI).
func Client(t testing.TB) *client.Client {
	t.Helper()
	c, err := client.New(client.FromEnv)
	if err != nil {
		Unavailable(t, fmt.Sprintf("no Docker client: %v", err))
	}
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		Unavailable(t, fmt.Sprintf("no Docker daemon at %s: %v", c.DaemonHost(), err))
	}
	return c
}

var buildMu sync.Mutex

// BusyboxImage makes sure the test image exists (importing it once per
// machine from /bin/busybox and its applet links) and returns its
// reference.
func BusyboxImage(t testing.TB) string {
	t.Helper()
	return ImportBusybox(t, Client(t))
}

// ImportBusybox makes sure the test image exists on the daemon of c
// (importing it from /bin/busybox and its applet links when missing) and
// returns its reference.
func ImportBusybox(t testing.TB, c *client.Client) string {
	t.Helper()
	return ImportApplets(t, c, Image)
}

// ImportApplets makes sure image ref exists on the daemon of c, made like
// Image but with only the applets named (every applet when none is), and
// returns ref.
func ImportApplets(t testing.TB, c *client.Client, ref string, applets ...string) string {
	t.Helper()
	if _, err := os.Stat(busybox); err != nil {
		Unavailable(t, fmt.Sprintf("no %s to build the test image from (install busybox-static): %v", busybox, err))
	}
	buildMu.Lock()
	defer buildMu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := c.ImageInspect(ctx, ref); err == nil {
		return ref
	}
	root, err := RootFS(applets...)
	if err != nil {
		t.Fatalf("build the test image: %v", err)
	}
	res, err := c.ImageImport(ctx, client.ImageImportSource{Source: bytes.NewReader(root), SourceName: "-"}, ref,
		client.ImageImportOptions{Message: "hermes-hub test image (busybox-static)"})
	if err != nil {
		t.Fatalf("import the test image: %v", err)
	}
	defer res.Close()
	var out bytes.Buffer
	_, _ = out.ReadFrom(res)
	if _, err := c.ImageInspect(ctx, ref); err != nil {
		t.Fatalf("import the test image: %v (%s)", err, strings.TrimSpace(out.String()))
	}
	return ref
}

// RootFS returns a tar of a root filesystem holding /bin/busybox, a link
// per applet (only those named, when some are) and the usual empty
// directories.
func RootFS(applets ...string) ([]byte, error) {
	bin, err := os.ReadFile(busybox)
	if err != nil {
		return nil, err
	}
	// The applet list is asked of the binary itself: it is the same file.
	list, err := exec.Command(busybox, "--list-full").Output()
	if err != nil {
		return nil, fmt.Errorf("%s --list-full: %w", busybox, err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	mod := time.Unix(0, 0)
	dirs := map[string]bool{}
	dir := func(d string) error {
		if d == "." || d == "/" || dirs[d] {
			return nil
		}
		dirs[d] = true
		mode := int64(0o755)
		if d == "tmp" {
			mode = 0o1777 // as in any image: a container's /tmp keeps it
		}
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: mode, ModTime: mod})
	}
	for _, d := range []string{"bin", "sbin", "usr", "usr/bin", "usr/sbin", "etc", "tmp", "proc", "sys", "dev", "workspace", "root"} {
		if err := dir(d); err != nil {
			return nil, err
		}
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "bin/busybox", Mode: 0o755, Size: int64(len(bin)), ModTime: mod}); err != nil {
		return nil, err
	}
	if _, err := tw.Write(bin); err != nil {
		return nil, err
	}
	for _, name := range strings.Fields(string(list)) {
		name = strings.TrimPrefix(path.Clean("/"+name), "/")
		if name == "bin/busybox" || name == "" || len(applets) > 0 && !slices.Contains(applets, path.Base(name)) {
			continue
		}
		if err := dir(path.Dir(name)); err != nil {
			return nil, err
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: name, Linkname: "/bin/busybox", ModTime: mod}); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

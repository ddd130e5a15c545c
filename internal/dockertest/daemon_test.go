//go:build linux

package dockertest

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/moby/moby/client"
)

// TestDaemon starts a private daemon, imports the test image into it,
// stops and starts it, and checks that its end leaves no file and no
// process behind.
func TestDaemon(t *testing.T) {
	var d *Daemon
	var pid int
	t.Run("lifecycle", func(t *testing.T) {
		d = StartDaemon(t)
		ping := func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, err := d.Client().Ping(ctx, client.PingOptions{})
			return err
		}
		if err := ping(); err != nil || !d.Running() {
			t.Fatalf("started: ping %v, running %v", err, d.Running())
		}
		if d.Host() == "unix:///var/run/docker.sock" {
			t.Fatal("the private daemon is the shared one")
		}
		if img := ImportBusybox(t, d.Client()); img != Image {
			t.Fatalf("image %q", img)
		}
		d.Stop()
		if err := ping(); err == nil || d.Running() {
			t.Fatalf("stopped: ping %v, running %v", err, d.Running())
		}
		d.Start()
		if err := ping(); err != nil {
			t.Fatalf("started again: %v", err)
		}
		// The data root was kept: the image is still there.
		if _, err := d.Client().ImageInspect(context.Background(), Image); err != nil {
			t.Fatalf("the image after a restart: %v", err)
		}
		d.mu.Lock()
		pid = d.cmd.Process.Pid
		d.mu.Unlock()
	})
	if d == nil || t.Failed() {
		return
	}
	if _, err := os.Stat(d.dir); !os.IsNotExist(err) {
		t.Errorf("the daemon's files remain: %v", err)
	}
	if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); err == nil {
		t.Errorf("the daemon (pid %d) still runs", pid)
	}
}

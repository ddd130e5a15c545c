package docker

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/moby/moby/client"
)

// stoppingDaemon is a fake Docker API on a unix socket that reports
// container "c1" exited, as a daemon does while it stops: it closes its
// listener first and keeps answering on the connections already open.
type stoppingDaemon struct {
	srv  *httptest.Server
	host string
	hits atomic.Int32
}

func newStoppingDaemon(t *testing.T) *stoppingDaemon {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "d.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	d := &stoppingDaemon{host: "unix://" + sock}
	d.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		d.hits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Api-Version", "1.41")
		switch {
		case strings.HasSuffix(req.URL.Path, "/_ping"):
			_, _ = w.Write([]byte("OK"))
		case strings.HasSuffix(req.URL.Path, "/containers/c1/json"):
			_, _ = w.Write([]byte(`{"Id":"c1","State":{"Status":"exited","Running":false,"ExitCode":137}}`))
		default:
			http.NotFound(w, req)
		}
	}))
	d.srv.Listener = l
	d.srv.Start()
	t.Cleanup(d.srv.Close)
	return d
}

// stopListening closes the listener only, as a stopping daemon does.
func (d *stoppingDaemon) stopListening(t *testing.T) {
	t.Helper()
	if err := d.srv.Listener.Close(); err != nil {
		t.Fatal(err)
	}
}

// A container found stopped during a call is blamed on its daemon when the
// daemon no longer takes connections (it is stopping and answers on the
// connection the client kept open), and on someone outside when it does.
func TestContainerStoppedWithItsDaemon(t *testing.T) {
	for _, stopping := range []bool{false, true} {
		d := newStoppingDaemon(t)
		r, err := New(Config{Workspace: "box", Image: "busybox", HubID: "h1", Host: d.host}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		cli, err := r.client()
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		// A first request opens the connection the client keeps.
		if _, err := cli.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
			t.Fatal(err)
		}
		if stopping {
			d.stopListening(t)
		}
		b := &box{name: "hermes-box", id: "c1"}
		before := d.hits.Load()
		err = r.containerTrouble(ctx, cli, b, true, "")
		if err == nil {
			t.Fatalf("stopping=%v: no error for a container that stopped during the call", stopping)
		}
		if d.hits.Load() == before {
			t.Fatalf("stopping=%v: the fake daemon was not asked (the kept-alive connection is the point of the test)", stopping)
		}
		msg := err.Error()
		want := "its container was stopped during the call (exited); run the call again"
		if stopping {
			want = "its container stopped during the call because its Docker daemon at " + d.host + " stopped (or is stopping); run the call again once the daemon is up"
		}
		if !strings.Contains(msg, want) || !strings.HasPrefix(msg, "workspace box: ") {
			t.Fatalf("stopping=%v: error %q, want it to say %q", stopping, msg, want)
		}
	}
}

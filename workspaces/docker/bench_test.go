//go:build linux

package docker_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/a6afc2ce/hermes-hub/verbs"
)

// BenchmarkProcRunTrue measures proc.run of true: on the host, in a warm
// container, and the first call that creates the container. The warm case
// also reports the Docker API requests one call makes (counted through a
// proxy after the timed loop): a figure the machine's load does not move.
func BenchmarkProcRunTrue(b *testing.B) {
	args := verbs.ProcRunArgs{Executable: "true", Arguments: []string{}}
	b.Run("local", func(b *testing.B) {
		e := newEnv(b, nil)
		for b.Loop() {
			if _, err := e.local.ProcRun(context.Background(), args); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/1000, "ms/call")
	})
	b.Run("docker-warm", func(b *testing.B) {
		e := newEnv(b, nil)
		run(b, e.set, "true")
		for b.Loop() {
			if _, err := e.set.ProcRun(context.Background(), args); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/1000, "ms/call")

		// The same calls through a counting proxy.
		const calls = 10
		p := countingProxy(b, e.cli.DaemonHost())
		e.cfg.Host = p.host
		e.r = e.runner()
		e.set = e.verbs(e.r)
		run(b, e.set, "true")
		run(b, e.set, "true") // the second call learns what the first made
		p.reset()
		for range calls {
			run(b, e.set, "true")
		}
		total, byKind := p.counts()
		b.ReportMetric(float64(total)/calls, "api/call")
		for _, k := range []string{"inspect", "top", "exec"} {
			b.ReportMetric(float64(byKind[k])/calls, k+"/call")
		}
	})
	b.Run("docker-first", func(b *testing.B) {
		e := newEnv(b, nil)
		for b.Loop() {
			if _, err := e.set.ProcRun(context.Background(), args); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			if err := e.r.Reset(context.Background(), ""); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/1000, "ms/call")
	})
}

// proxy forwards Docker API requests to a daemon's unix socket and counts
// them.
type proxy struct {
	host string
	mu   sync.Mutex
	seen []string // "METHOD path" of each request
}

var (
	idRE      = regexp.MustCompile(`/[0-9a-f]{64}|/hermes-hub-[^/]+`)
	versionRE = regexp.MustCompile(`^/v[0-9.]+`)
)

func countingProxy(tb testing.TB, daemon string) *proxy {
	tb.Helper()
	sock, ok := strings.CutPrefix(daemon, "unix://")
	if !ok {
		tb.Skipf("the API count needs a daemon on a unix socket, not %s", daemon)
	}
	dir, err := os.MkdirTemp("", "hhp-")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	l, err := net.Listen("unix", filepath.Join(dir, "p.sock"))
	if err != nil {
		tb.Fatal(err)
	}
	p := &proxy{host: "unix://" + l.Addr().String()}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(&url.URL{Scheme: "http", Host: "docker"}) },
		Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		}},
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path := idRE.ReplaceAllString(versionRE.ReplaceAllString(r.URL.Path, ""), "/ID")
		p.mu.Lock()
		p.seen = append(p.seen, r.Method+" "+path)
		p.mu.Unlock()
		rp.ServeHTTP(w, r)
	})}
	go srv.Serve(l)
	tb.Cleanup(func() { srv.Close() })
	return p
}

func (p *proxy) reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seen = nil
}

// counts returns the number of requests and how many were container
// inspects, tops and exec requests (create, start, inspect).
func (p *proxy) counts() (int, map[string]int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	by := map[string]int{}
	for _, s := range p.seen {
		switch {
		case s == "GET /containers/ID/json":
			by["inspect"]++
		case s == "GET /containers/ID/top":
			by["top"]++
		case strings.Contains(s, "/exec"):
			by["exec"]++
		}
	}
	return len(p.seen), by
}

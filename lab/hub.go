package lab

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// BuildHub builds the hub binary (./cmd/hub of the module at moduleDir)
// into dir, with the race detector when race is set, and returns its path.
func BuildHub(ctx context.Context, moduleDir, dir string, race bool) (string, error) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("build the hub: %w", err)
	}
	out := filepath.Join(dir, "hub")
	args := []string{"build", "-o", out}
	if race {
		args = append(args, "-race")
	}
	args = append(args, "./cmd/hub")
	cmd := exec.CommandContext(ctx, gobin, args...)
	cmd.Dir = moduleDir
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build the hub: %w\n%s", err, buf.String())
	}
	if err := statSources(ctx, gobin, moduleDir); err != nil {
		return "", err
	}
	return out, nil
}

// statSources stats every file of the module that the hub is built from
// (Go files and embedded files of ./cmd/hub and its dependencies). go test
// caches a result against the files the test itself opened or stated, and
// the build above runs in another process; without this a change to the
// hub's code would leave an earlier lab result standing in the cache.
func statSources(ctx context.Context, gobin, moduleDir string) error {
	cmd := exec.CommandContext(ctx, gobin, "list", "-deps", "-f",
		`{{if not .Standard}}{{$d := .Dir}}{{range .GoFiles}}{{$d}}/{{.}}{{"\n"}}{{end}}{{range .EmbedFiles}}{{$d}}/{{.}}{{"\n"}}{{end}}{{end}}`,
		"./cmd/hub")
	cmd.Dir = moduleDir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	list, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("go list the hub's sources: %w\n%s", err, stderr.String())
	}
	root := moduleDir + string(filepath.Separator)
	for _, f := range strings.Split(string(list), "\n") {
		if strings.HasPrefix(f, root) {
			if _, err := os.Stat(f); err != nil {
				return fmt.Errorf("hub source: %w", err)
			}
		}
	}
	return nil
}

// ModuleDir finds the directory of the module holding the current
// directory (go.mod).
func ModuleDir() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no go.mod above %s", dir)
		}
	}
}

// hubProc runs `hub serve` (or, with node set, `hub node`) as a child
// process, one run after another.
type hubProc struct {
	bin, config, logDir string
	rssEvery            time.Duration
	// node names the `hub node` this runs ("" for `hub serve`): its runs
	// log to node-NAME-runNN.log and are ready once the node logs
	// nodeReadyLine.
	node string

	mu   sync.Mutex
	runs []*hubRun
	cur  *hubRun
}

// hubRun is one process of the hub.
type hubRun struct {
	n      int
	cmd    *exec.Cmd
	log    string // stderr and stdout, with the lab's markers
	done   chan struct{}
	err    error // the exit status, once done
	ready  chan struct{}
	killed bool // by the lab, with SIGKILL
	began  time.Time
	ended  time.Time

	rssMu          sync.Mutex
	rssMin, rssMax int64 // KiB
	rssSamples     int
}

// errNotReady is a run that exited before it served.
var errNotReady = errors.New("the hub exited before it was ready")

// readyLine is what `hub serve` prints once it serves; nodeReadyLine what
// `hub node` logs once it consumes its queue.
const (
	readyLine     = "Hermes Hub is running"
	nodeReadyLine = `msg="node ready"`
)

// start starts a new run and waits (bounded by ctx) until it serves. A run
// that exits first is returned as errNotReady with its exit status and
// output.
func (h *hubProc) start(ctx context.Context) (*hubRun, error) {
	h.mu.Lock()
	if h.cur != nil && !h.cur.exited() {
		h.mu.Unlock()
		return nil, errors.New("the hub is already running")
	}
	r := &hubRun{n: len(h.runs) + 1, done: make(chan struct{}), ready: make(chan struct{})}
	h.runs = append(h.runs, r)
	h.cur = r
	h.mu.Unlock()

	r.log = filepath.Join(h.logDir, fmt.Sprintf("hub-run%02d.log", r.n))
	args, ready, stream := []string{"serve", "--config", h.config}, readyLine, "stdout"
	if h.node != "" {
		r.log = filepath.Join(h.logDir, fmt.Sprintf("node-%s-run%02d.log", h.node, r.n))
		args, ready, stream = []string{"node", "--config", h.config}, nodeReadyLine, "stderr"
	}
	logf, err := os.OpenFile(r.log, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, err
	}
	r.cmd = exec.Command(h.bin, args...)
	r.cmd.Env = append(os.Environ(), "HUB_CONFIG=")
	// The hub dies with the lab, whatever happens to the lab.
	r.cmd.SysProcAttr = hubProcAttr()
	// The stream that says the process is ready is read line by line;
	// the other goes to the log as it is.
	var pipe io.ReadCloser
	if stream == "stdout" {
		r.cmd.Stderr = logf
		pipe, err = r.cmd.StdoutPipe()
	} else {
		r.cmd.Stdout = logf
		pipe, err = r.cmd.StderrPipe()
	}
	if err != nil {
		logf.Close()
		return nil, err
	}
	if err := r.cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start the hub: %w", err)
	}
	r.began = time.Now()
	var lw sync.Mutex
	go func() {
		sc := bufio.NewScanner(pipe)
		once := sync.Once{}
		for sc.Scan() {
			line := sc.Text()
			lw.Lock()
			fmt.Fprintf(logf, "%s: %s\n", stream, line)
			lw.Unlock()
			if strings.Contains(line, ready) {
				once.Do(func() { close(r.ready) })
			}
		}
	}()
	go func() {
		err := r.cmd.Wait()
		lw.Lock()
		logf.Close()
		lw.Unlock()
		r.err = err
		r.ended = time.Now()
		close(r.done)
	}()
	if h.rssEvery > 0 {
		go r.sampleRSS(h.rssEvery)
	}
	select {
	case <-r.ready:
		return r, nil
	case <-r.done:
		return r, fmt.Errorf("%w (%v):\n%s", errNotReady, r.err, tail(r.log, 40))
	case <-ctx.Done():
		r.signal(syscall.SIGKILL)
		<-r.done
		return r, fmt.Errorf("the hub did not become ready: %w\n%s", ctx.Err(), tail(r.log, 40))
	}
}

// current returns the run that was started last, or nil.
func (h *hubProc) current() *hubRun {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cur
}

// running reports whether the last run is alive.
func (h *hubProc) running() bool {
	r := h.current()
	return r != nil && !r.exited()
}

// allRuns returns every run so far.
func (h *hubProc) allRuns() []*hubRun {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]*hubRun(nil), h.runs...)
}

func (r *hubRun) exited() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

func (r *hubRun) signal(sig syscall.Signal) {
	if r.cmd.Process != nil {
		_ = r.cmd.Process.Signal(sig)
	}
}

// kill ends the run with SIGKILL and waits for it.
func (r *hubRun) kill() {
	r.killed = true
	r.signal(syscall.SIGKILL)
	<-r.done
}

// stop ends the run with SIGTERM and waits (a second SIGTERM after grace,
// SIGKILL after twice that); it returns the exit status.
func (r *hubRun) stop(grace time.Duration) error {
	r.signal(syscall.SIGTERM)
	select {
	case <-r.done:
		return r.err
	case <-time.After(grace):
	}
	r.signal(syscall.SIGTERM)
	select {
	case <-r.done:
		return fmt.Errorf("the hub needed a second SIGTERM to stop: %v", r.err)
	case <-time.After(grace):
	}
	r.kill()
	return fmt.Errorf("the hub did not stop on SIGTERM within %s; killed", 2*grace)
}

// lifetime is how long the run lived (so far).
func (r *hubRun) lifetime() time.Duration {
	if r.exited() {
		return r.ended.Sub(r.began)
	}
	return time.Since(r.began)
}

func (r *hubRun) pid() int {
	if r.cmd.Process == nil {
		return 0
	}
	return r.cmd.Process.Pid
}

// sampleRSS records the run's resident set size every interval until it
// exits.
func (r *hubRun) sampleRSS(every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-r.done:
			return
		case <-t.C:
		}
		kib, ok := readRSS(r.pid())
		if !ok {
			continue
		}
		r.rssMu.Lock()
		if r.rssSamples == 0 || kib < r.rssMin {
			r.rssMin = kib
		}
		if kib > r.rssMax {
			r.rssMax = kib
		}
		r.rssSamples++
		r.rssMu.Unlock()
	}
}

func (r *hubRun) rss() (minKiB, maxKiB int64, samples int) {
	r.rssMu.Lock()
	defer r.rssMu.Unlock()
	return r.rssMin, r.rssMax, r.rssSamples
}

// readRSS reads VmRSS (KiB) of pid from /proc.
func readRSS(pid int) (int64, bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(v)
			if len(f) > 0 {
				n, err := strconv.ParseInt(f[0], 10, 64)
				return n, err == nil
			}
		}
	}
	return 0, false
}

// tail returns the last n lines of a file.
func tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = append([]string{fmt.Sprintf("… %d earlier lines in %s", len(lines)-n, path)}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}

// adminClient talks to the running hub's admin API over its socket.
type adminClient struct {
	c *http.Client
}

func newAdminClient(sock string) *adminClient {
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		},
		DisableKeepAlives: true,
	}
	return &adminClient{c: &http.Client{Transport: tr, Timeout: 30 * time.Second}}
}

// do makes one request; out, when set, receives the JSON answer of a 2xx.
func (a *adminClient) do(ctx context.Context, method, path string, body, out any) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://hub"+path, rd)
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := a.c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, raw, err
	}
	if out != nil && resp.StatusCode/100 == 2 {
		if err := json.Unmarshal(raw, out); err != nil {
			return resp.StatusCode, raw, fmt.Errorf("%s %s: decode: %w", method, path, err)
		}
	}
	return resp.StatusCode, raw, nil
}

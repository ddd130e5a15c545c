package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// BenchmarkStdioRoundTrip measures `hub exec --stdio` as an agent uses it:
// one fs.readRange request written, its answer read, then the next.
func BenchmarkStdioRoundTrip(b *testing.B) {
	dir := b.TempDir()
	var sb strings.Builder
	for i := 1; i <= 2000; i++ {
		fmt.Fprintf(&sb, "line %d of a file that an agent reads in ranges\n", i)
	}
	if err := os.WriteFile(filepath.Join(dir, "big.txt"), []byte(sb.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(hubBin, "exec", "--stdio")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HUB_CONFIG=")
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer cmd.Wait()
	defer stdin.Close()
	r := bufio.NewReader(stdout)
	w := bufio.NewWriter(stdin)
	req := func(i int) {
		start := 1 + i%1900
		fmt.Fprintf(w, `{"id":%d,"verb":"fs.readRange","arguments":{"path":"big.txt","startLine":%d,"endLine":%d}}`+"\n", i, start, start+49)
		w.Flush()
		line, err := r.ReadString('\n')
		if err != nil || !strings.Contains(line, `"succeeded":true`) {
			b.Fatalf("round trip %d: %v %s", i, err, line)
		}
	}
	req(0) // warm up: process start is not part of the figure
	b.ResetTimer()
	t0 := time.Now()
	for i := 0; i < b.N; i++ {
		req(i)
	}
	b.ReportMetric(float64(b.N)/time.Since(t0).Seconds(), "roundtrips/s")
	_ = io.Discard
}

// BenchmarkServeStartup measures `hub serve` from exec to the login URL on
// stdout (the panel is listening by then), and the resident memory of the
// idle hub a second later.
func BenchmarkServeStartup(b *testing.B) {
	var totalStart time.Duration
	var rss float64
	for i := 0; i < b.N; i++ {
		dir := b.TempDir()
		cfg := filepath.Join(dir, "hub.yml")
		os.WriteFile(cfg, []byte("web:\n  listen: 127.0.0.1:0\n"), 0o600)
		cmd := exec.Command(hubBin, "serve", "--config", cfg)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "HUB_CONFIG=")
		out, _ := cmd.StdoutPipe()
		t0 := time.Now()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "http://") {
				break
			}
		}
		totalStart += time.Since(t0)
		time.Sleep(time.Second)
		status, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", cmd.Process.Pid))
		for _, line := range strings.Split(string(status), "\n") {
			if strings.HasPrefix(line, "VmRSS:") {
				var kb float64
				fmt.Sscanf(strings.TrimSpace(strings.TrimPrefix(line, "VmRSS:")), "%f", &kb)
				rss += kb / 1024
			}
		}
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
	}
	b.ReportMetric(float64(totalStart.Milliseconds())/float64(b.N), "startup-ms")
	b.ReportMetric(rss/float64(b.N), "idle-rss-MB")
}

// echoSource is the baseline of BenchmarkStdioVersusEcho: a program that
// answers each input line with the same line, reading and flushing the way
// `hub exec --stdio` does (buffered output, flushed when no more input is
// buffered), so the difference between the two is the hub's own work.
const echoSource = `package main

import (
	"bufio"
	"os"
)

func main() {
	br := bufio.NewReaderSize(os.Stdin, 64<<10)
	bw := bufio.NewWriterSize(os.Stdout, 64<<10)
	for {
		line, err := br.ReadSlice('\n')
		bw.Write(line)
		if err != nil {
			bw.Flush()
			return
		}
		if br.Buffered() == 0 {
			if bw.Flush() != nil {
				return
			}
		}
	}
}
`

// echoOnce builds the echo program next to the hub binary (TestMain removes
// that directory).
var echoOnce = sync.OnceValues(func() (string, error) {
	dir := filepath.Dir(hubBin)
	src := filepath.Join(dir, "echo.go")
	if err := os.WriteFile(src, []byte(echoSource), 0o644); err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "echo")
	if out, err := exec.Command("go", "build", "-o", bin, src).CombinedOutput(); err != nil {
		return "", fmt.Errorf("build the echo program: %v\n%s", err, out)
	}
	return bin, nil
})

// lineServer is a child process spoken to one line at a time, by the same
// client code whatever the child is.
type lineServer struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	w     *bufio.Writer
	r     *bufio.Reader
}

func startLineServer(b *testing.B, dir string, argv ...string) *lineServer {
	b.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HUB_CONFIG=")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	s := &lineServer{cmd: cmd, stdin: stdin, w: bufio.NewWriterSize(stdin, 64<<10), r: bufio.NewReaderSize(stdout, 1<<20)}
	b.Cleanup(func() { stdin.Close(); cmd.Wait() })
	return s
}

// exchange writes the requests in one write and reads as many answer
// lines: one request is a round trip, several are a pipelined batch.
func (s *lineServer) exchange(reqs [][]byte, answers [][]byte) ([][]byte, error) {
	for _, q := range reqs {
		s.w.Write(q)
	}
	if err := s.w.Flush(); err != nil {
		return nil, err
	}
	answers = answers[:0]
	for range reqs {
		line, err := s.r.ReadSlice('\n')
		if err != nil {
			return nil, err
		}
		answers = append(answers, append([]byte(nil), line...))
	}
	return answers, nil
}

// BenchmarkStdioVersusEcho measures `hub exec --stdio` answering fs.exists
// against a do-nothing line echo driven by the same client over the same
// kind of pipe, one exchange to each per iteration, alternating which goes
// first, so both see the same machine load. depth=1 is one request at a
// time (an agent waiting for each answer); depth=64 writes 64 requests
// before reading their answers (pipelining); mirror=all is depth=1 with
// mirror.cli: all (every call mirrored, read-only ones too). hub/echo is
// the ratio of the rates (1 = as fast as the echo).
func BenchmarkStdioVersusEcho(b *testing.B) {
	echoBin, err := echoOnce()
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "probe.txt"), []byte("x\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	mirrorAll := filepath.Join(b.TempDir(), "hub.yml")
	if err := os.WriteFile(mirrorAll, []byte("mirror:\n  cli: all\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		depth int
		args  []string
		// pin runs the client and both servers on one CPU: the ratio is
		// then that of the work done per round trip, without the wake-ups
		// of idle CPUs the scheduler's placement costs on this machine.
		pin bool
	}{
		{"depth=1", 1, nil, false},
		{"depth=64", 64, nil, false},
		{"depth=1,mirror=all", 1, []string{"--config", mirrorAll}, false},
		{"depth=1,cpus=1", 1, nil, true},
	} {
		depth := c.depth
		b.Run(c.name, func(b *testing.B) {
			if c.pin {
				restore, err := pinToOneCPU()
				if err != nil {
					b.Skip(err)
				}
				defer func() {
					if err := restore(); err != nil {
						b.Error(err)
					}
				}()
			}
			hub := startLineServer(b, dir, append([]string{hubBin, "exec", "--stdio"}, c.args...)...)
			echo := startLineServer(b, dir, echoBin)
			reqs := make([][]byte, depth)
			var answers [][]byte
			var hubTime, echoTime time.Duration
			hubLat := make([]time.Duration, 0, b.N)
			echoLat := make([]time.Duration, 0, b.N)
			round := func(s *lineServer, i int, isHub bool) time.Duration {
				for k := range reqs {
					reqs[k] = fmt.Appendf(reqs[k][:0], `{"id":%d,"verb":"fs.exists","arguments":{"path":"probe.txt"}}`+"\n", i*depth+k)
				}
				t0 := time.Now()
				answers, err = s.exchange(reqs, answers)
				d := time.Since(t0)
				if err != nil {
					b.Fatal(err)
				}
				for k, a := range answers {
					id := fmt.Sprintf(`{"id":%d,`, i*depth+k)
					if !strings.HasPrefix(string(a), id) || (isHub && !strings.Contains(string(a), `"exists":true`)) {
						b.Fatalf("answer %d: %s", k, a)
					}
				}
				return d
			}
			for i := range 20 { // warm up both
				round(hub, i, true)
				round(echo, i, false)
			}
			b.ResetTimer()
			for i := range b.N {
				var h, e time.Duration
				if i%2 == 0 {
					h = round(hub, i, true)
					e = round(echo, i, false)
				} else {
					e = round(echo, i, false)
					h = round(hub, i, true)
				}
				hubTime, echoTime = hubTime+h, echoTime+e
				hubLat, echoLat = append(hubLat, h), append(echoLat, e)
			}
			b.StopTimer()
			hubRate := float64(b.N*depth) / hubTime.Seconds()
			echoRate := float64(b.N*depth) / echoTime.Seconds()
			b.ReportMetric(hubRate, "hub-req/s")
			b.ReportMetric(echoRate, "echo-req/s")
			b.ReportMetric(hubRate/echoRate, "hub/echo")
			// The same ratio from the median exchanges: less moved by the
			// preemptions of a busy machine than the sums.
			slices.Sort(hubLat)
			slices.Sort(echoLat)
			hubP50, echoP50 := hubLat[len(hubLat)/2], echoLat[len(echoLat)/2]
			b.ReportMetric(float64(hubP50.Nanoseconds())/1000/float64(depth), "hub-p50-us/req")
			b.ReportMetric(float64(echoP50.Nanoseconds())/1000/float64(depth), "echo-p50-us/req")
			b.ReportMetric(float64(echoP50)/float64(hubP50), "hub/echo-p50")
			b.ReportMetric(0, "ns/op")
		})
	}
}

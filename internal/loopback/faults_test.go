package loopback

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

func is(want string) func(string) bool { return func(s string) bool { return s == want } }

func all(string) bool { return true }

// take plays the requests through s and returns, per request, the fault
// answered or "-".
func take(s *Schedule[string, string], reqs ...string) string {
	var out []string
	for _, r := range reqs {
		f, ok := s.Take(r)
		if !ok {
			f = "-"
		}
		out = append(out, f)
	}
	return strings.Join(out, " ")
}

func TestScheduleQueueComesFirstInOrder(t *testing.T) {
	var s Schedule[string, string]
	s.AddRule(1, 0, "rule", is("a"))
	s.Queue("q1", is("a"))
	s.Queue("qb", is("b"))
	s.Queue("q2", is("a"))
	if got, want := take(&s, "a", "b", "b", "a", "a"), "q1 qb - q2 rule"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestScheduleEveryAndCount(t *testing.T) {
	var s Schedule[string, string]
	s.AddRule(3, 2, "x", is("a"))
	if s.Done() {
		t.Fatal("Done before the rule fired")
	}
	// Requests the rule does not match are not counted.
	if got, want := take(&s, "a", "b", "a", "a", "a", "a", "a", "a", "a", "a"), "- - - x - - x - - -"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	if !s.Done() {
		t.Fatal("not Done after the rule fired Count times")
	}
	s.AddRule(0, 0, "y", all) // every below 1 is every request, forever
	if got, want := take(&s, "a", "b", "c"), "y y y"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	if !s.Done() {
		t.Fatal("a rule without Count keeps Done from holding")
	}
	s.Clear()
	if got := take(&s, "a", "b"); got != "- -" {
		t.Fatalf("after Clear: %q", got)
	}
}

// TestScheduleRulesCountIndependently: a request another rule answers
// still counts for every rule that matches it.
func TestScheduleRulesCountIndependently(t *testing.T) {
	var s Schedule[string, string]
	s.AddRule(1, 1, "first", all)
	s.AddRule(2, 0, "second", all)
	if got, want := take(&s, "a", "a", "a", "a"), "first second - second"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestStall(t *testing.T) {
	type fault struct {
		delay      time.Duration
		hang, drop bool
	}
	var (
		mu      sync.Mutex
		current fault
	)
	set := func(f fault) { mu.Lock(); current = f; mu.Unlock() }
	release := make(chan struct{})
	var srv *Server
	srv, err := New(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		f := current
		mu.Unlock()
		if f.hang {
			defer close(release)
		}
		if srv.Stall(w, r, f.delay, f.hang, f.drop) {
			io.WriteString(w, "answered")
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	get := func(timeout time.Duration) (string, error) {
		c := &http.Client{Timeout: timeout, Transport: &http.Transport{DisableKeepAlives: true}}
		resp, err := c.Get("http://" + srv.Addr() + "/")
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return string(b), err
	}

	set(fault{delay: 50 * time.Millisecond})
	start := time.Now()
	if body, err := get(10 * time.Second); err != nil || body != "answered" {
		t.Fatalf("delay: %q, %v; want the normal answer after the delay", body, err)
	}
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Fatalf("delay: answered after %v, before the 50ms delay", d)
	}

	set(fault{drop: true})
	if body, err := get(10 * time.Second); err == nil {
		t.Fatalf("drop: got %q, want the connection closed without an answer", body)
	}

	set(fault{hang: true})
	_, err = get(200 * time.Millisecond)
	var ne interface{ Timeout() bool }
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("hang: %v, want the client to time out", err)
	}
	select { // the hung handler ends when its client gives up
	case <-release:
	case <-time.After(10 * time.Second):
		t.Fatal("hang: the handler did not end when the client went away")
	}

	// A hang in progress ends with the server.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan bool)
	go func() {
		req := httptestRequest(ctx)
		done <- srv.Stall(nil, req, 0, true, false)
	}()
	srv.Close()
	select {
	case ok := <-done:
		if ok {
			t.Fatal("Stall with hang reported the request should be answered")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("hang did not end with Close")
	}
}

func httptestRequest(ctx context.Context) *http.Request {
	r, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://127.0.0.1/", nil)
	return r
}

// TestFaultsDownAndUp: Down Refused closes the port (connections refused)
// until Up brings it back on the same port; Down Unavailable keeps it open
// and tells the fake through Mode.
func TestFaultsDownAndUp(t *testing.T) {
	var x *Faults[string, string]
	srv, err := New(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if x.Mode() == Unavailable {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, "up")
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	x = NewFaults[string, string](srv)
	get := func() (int, error) {
		c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
		resp, err := c.Get("http://" + srv.Addr() + "/")
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	addr := srv.Addr()
	for _, step := range []struct {
		mode DownMode
		want int // status; 0: connection refused
	}{{Running, 200}, {Refused, 0}, {Running, 200}, {Unavailable, 503}, {Running, 200}} {
		if step.mode == Running {
			if err := x.Up(); err != nil {
				t.Fatal(err)
			}
		} else {
			x.Down(step.mode)
		}
		if x.Mode() != step.mode {
			t.Fatalf("Mode() = %v after %v", x.Mode(), step.mode)
		}
		code, err := get()
		if (step.want == 0) != (err != nil) || code != step.want {
			t.Fatalf("%v: status %d, err %v; want %d", step.mode, code, err, step.want)
		}
	}
	if srv.Addr() != addr {
		t.Fatalf("back on %s, want the same port %s", srv.Addr(), addr)
	}
}

// TestFaultsConcurrentUse: faults queued and taken from many goroutines are
// each answered once (the schedule is guarded).
func TestFaultsConcurrentUse(t *testing.T) {
	x := NewFaults[int, string](nil)
	const n = 200
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			x.Queue(i, is("a"))
		}()
	}
	wg.Wait()
	x.AddRule(1, 5, -1, is("a"))
	got := make(chan int, 2*n)
	for range n + 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if f, ok := x.Take("a"); ok {
				got <- f
			}
		}()
	}
	wg.Wait()
	close(got)
	seen, rule := map[int]bool{}, 0
	for f := range got {
		if f == -1 {
			rule++
			continue
		}
		if seen[f] {
			t.Fatalf("fault %d answered twice", f)
		}
		seen[f] = true
	}
	if len(seen) != n || rule != 5 || !x.Done() {
		t.Fatalf("%d queued faults and %d rule faults answered, Done %v; want %d and 5", len(seen), rule, x.Done(), n)
	}
	x.Clear()
	if _, ok := x.Take("a"); ok {
		t.Fatal("a fault after Clear")
	}
}

func TestDescribe(t *testing.T) {
	for _, tt := range []struct {
		delay      time.Duration
		hang, drop bool
		answer     string
		want       string
	}{
		{0, false, false, "", "none"},
		{0, false, false, "429 Too Many Requests", "429 Too Many Requests"},
		{time.Second, false, false, "", "delay 1s"},
		{time.Second, false, false, "500", "delay 1s, 500"},
		{0, true, false, "500", "hang"},
		{2 * time.Second, false, true, "500", "delay 2s, drop"},
	} {
		if got := Describe(tt.delay, tt.hang, tt.drop, tt.answer); got != tt.want {
			t.Errorf("Describe(%v, %v, %v, %q) = %q, want %q", tt.delay, tt.hang, tt.drop, tt.answer, got, tt.want)
		}
	}
}

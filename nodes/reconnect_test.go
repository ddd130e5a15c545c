package nodes

import (
	"bytes"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/internal/natstest"
	"github.com/a6afc2ce/hermes-hub/internal/testkit"
)

// TestAnswerLostWithItsConnection: a node whose answer was on its
// connection when the connection broke (its server killed, the network
// cut) sends it again as soon as it has reconnected, instead of waiting
// for an acknowledgement the broken connection will never bring. The
// wait for an acknowledgement is made longer than the call's: a node that
// waited for it would leave the call unanswered.
func TestAnswerLostWithItsConnection(t *testing.T) {
	old := publishWait
	publishWait = 2 * time.Minute
	t.Cleanup(func() { publishWait = old })
	r := newRig(t, []string{"db-1"}, func(o *HubOptions) { o.CallTimeout = 30 * time.Second })
	p := r.startNodeBehindProxy()

	done := r.callInBackground("t.lost", holdEnv("k"))
	testkit.WaitFor(t, "the call running on the node", func() bool { return r.ran("k") == 1 })
	p.silence()
	r.release("k")
	testkit.WaitFor(t, "the node's answer sent into the silent connection", func() bool { return p.heard(resultSubject("db-1")) })
	p.cut()
	r.answeredOnce(<-done, "k", "the call got no answer after its node reconnected")
}

// TestCallLostWithItsConnection: a call the server handed to a node as
// the node's connection broke (the delivery lost with it) is handed out
// again as soon as the node has reconnected, not after nats.ack_wait,
// which is made longer than the call's wait: a node that waited for it
// would leave the call unanswered. It runs once.
func TestCallLostWithItsConnection(t *testing.T) {
	r := newRig(t, []string{"db-1"}, func(o *HubOptions) {
		o.CallTimeout = 30 * time.Second
		o.AckWait = 2 * time.Minute
	})
	p := r.startNodeBehindProxy()
	if _, err := r.hub.Call(t.Context(), "db-1", Request{TurnID: "t.first", Envelope: echo("first")}); err != nil {
		t.Fatalf("the node does not answer through the proxy: %v", err)
	}

	p.silence()
	done := r.callInBackground("t.lost", echo("lost"))
	testkit.WaitFor(t, "the call handed to the node into the silent connection", func() bool { return p.told("t.lost#0") })
	p.cut()
	r.answeredOnce(<-done, "lost", "the call lost with the node's connection got no answer")
}

// TestResultLostWithItsConnection: a result the server handed to the hub
// as the hub's connection broke is handed out again as soon as the hub has
// reconnected, not after the results' ack wait (30 s), longer than the
// call's wait here: a hub that waited for it would leave the call
// unanswered. On a cluster, as the hub's connection to its own embedded
// server does not break.
func TestResultLostWithItsConnection(t *testing.T) {
	var p *cutProxy
	r := newClusterRig(t, []string{"db-1"}, nil, func(c *natstest.Cluster, o *HubOptions) {
		p = newCutProxy(t, c.Servers[0].Listen())
		o.URL = "nats://" + p.addr()
		o.CallTimeout = 20 * time.Second
	})
	opts := r.nodeOptions("db-1", r.keys["db-1"], t.TempDir())
	opts.URL = r.cluster.URLs("nats")
	r.startNode(opts)
	if _, err := r.hub.Call(t.Context(), "db-1", Request{TurnID: "t.first", Envelope: echo("first")}); err != nil {
		t.Fatalf("the hub gets no answer through the proxy: %v", err)
	}

	done := r.callInBackground("t.lost", holdEnv("k"))
	testkit.WaitFor(t, "the call running on the node", func() bool { return r.ran("k") == 1 })
	p.silence()
	r.release("k")
	testkit.WaitFor(t, "the result handed to the hub into the silent connection", func() bool { return p.told("t.lost#0") })
	p.cut()
	r.answeredOnce(<-done, "k", "the result lost with the hub's connection never came")
}

// startNodeBehindProxy starts node db-1 connected to the hub's server
// through a cutProxy, which it returns.
func (r *rig) startNodeBehindProxy() *cutProxy {
	r.t.Helper()
	u, err := url.Parse(r.hub.ClientURL())
	if err != nil {
		r.t.Fatal(err)
	}
	p := newCutProxy(r.t, u.Host)
	opts := r.nodeOptions("db-1", r.keys["db-1"], r.t.TempDir())
	opts.URL = "nats://" + p.addr()
	r.startNode(opts)
	return p
}

// answer is the outcome of a call made in the background.
type answer struct {
	resp Response
	err  error
}

// callInBackground makes turn's call of env to node db-1; its outcome
// comes on the channel.
func (r *rig) callInBackground(turn string, env []byte) <-chan answer {
	done := make(chan answer, 1)
	go func() {
		resp, err := r.hub.Call(r.t.Context(), "db-1", Request{TurnID: turn, Envelope: env})
		done <- answer{resp, err}
	}()
	return done
}

// answeredOnce fails the test unless a is the result of the call of key,
// which ran once; lost says what a call without an answer means.
func (r *rig) answeredOnce(a answer, key, lost string) {
	r.t.Helper()
	if a.err != nil {
		r.t.Fatalf("%s: %v", lost, a.err)
	}
	if a.resp.Status != StatusDone || !strings.Contains(string(a.resp.Result), `"`+key+`"`) {
		r.t.Fatalf("answer %+v, want the call's result", a.resp)
	}
	if n := r.ran(key); n != 1 {
		r.t.Fatalf("the call ran %d times, want 1", n)
	}
}

// cutProxy forwards TCP connections to a server on loopback. Silenced, it
// passes nothing either way on the connections it holds (as a server that
// died without a word), keeping what each side sends; cut, it closes them,
// and the connections made after pass again.
type cutProxy struct {
	ln net.Listener
	to string

	mu     sync.Mutex
	conns  []net.Conn
	silent bool
	kept   bytes.Buffer // what clients sent while silenced
	lost   bytes.Buffer // what the server sent while silenced
}

func newCutProxy(t *testing.T, to string) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, to: to}
	go p.accept()
	t.Cleanup(func() {
		ln.Close()
		p.cut()
	})
	return p
}

func (p *cutProxy) addr() string { return p.ln.Addr().String() }

func (p *cutProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.to)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, s)
		p.mu.Unlock()
		go p.pipe(s, c, true)
		go p.pipe(c, s, false)
	}
}

// pipe copies from src to dst until either closes; what either side sends
// while the proxy is silent is kept instead.
func (p *cutProxy) pipe(dst, src net.Conn, fromClient bool) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			silent := p.silent
			switch {
			case silent && fromClient:
				p.kept.Write(buf[:n])
			case silent:
				p.lost.Write(buf[:n])
			}
			p.mu.Unlock()
			if !silent {
				if _, werr := dst.Write(buf[:n]); werr != nil {
					return
				}
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *cutProxy) silence() {
	p.mu.Lock()
	p.silent = true
	p.mu.Unlock()
}

// heard reports whether a client sent s while the proxy was silent.
func (p *cutProxy) heard(s string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return bytes.Contains(p.kept.Bytes(), []byte(s))
}

// told reports whether the server sent s while the proxy was silent.
func (p *cutProxy) told(s string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return bytes.Contains(p.lost.Bytes(), []byte(s))
}

// cut closes every connection the proxy holds; those made after pass.
func (p *cutProxy) cut() {
	p.mu.Lock()
	p.silent = false
	conns := p.conns
	p.conns = nil
	p.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
}

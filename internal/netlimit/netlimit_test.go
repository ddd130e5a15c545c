package netlimit

import (
	"net"
	"testing"
	"time"
)

// TestListenerCaps: connections over the per-client or the overall cap are
// closed at accept; a closed connection gives its slot back once, however
// often it is closed.
func TestListenerCaps(t *testing.T) {
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := NewListener(tcp, Limits{MaxConns: 3, MaxPerClient: 2})
	defer ln.Close()
	accepted := make(chan net.Conn, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	dial := func(ip string) net.Conn {
		t.Helper()
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
		c, err := d.Dial("tcp", tcp.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	wait := func(open int, refused int64) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for ln.Open() != open || ln.Refused() != refused {
			if time.Now().After(deadline) {
				t.Fatalf("open %d refused %d, want %d and %d", ln.Open(), ln.Refused(), open, refused)
			}
			time.Sleep(time.Millisecond)
		}
	}
	for range 3 {
		dial("127.0.0.1")
	}
	wait(2, 1) // the third from 127.0.0.1 is over its client's cap
	dial("127.0.0.2")
	wait(3, 1)
	dial("127.0.0.3")
	wait(3, 2) // over the overall cap
	c := <-accepted
	c.Close()
	c.Close()
	wait(2, 2)
	dial("127.0.0.3")
	wait(3, 2)
}

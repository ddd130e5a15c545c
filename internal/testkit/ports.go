package testkit

import (
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// FreePort chooses a port for a server to listen on, below the kernel's
// ephemeral range when it can: a server binds its ports only when it
// starts, and again at each restart, so a port handed out by the kernel
// meanwhile (to any client connection of the tests beside it) would make
// it fail with "address already in use". A port it chooses is held for
// this process until it ends (claimPort): no other test process (go test
// runs packages side by side) chooses it, even while the server that
// listens on it is down for a restart. It falls back to a port the
// kernel gives.
func FreePort() (int, error) {
	low := ephemeralLow()
	portsMu.Lock()
	defer portsMu.Unlock()
	for tries := 0; low > minPort+1000 && tries < 200; tries++ {
		p := minPort + rand.IntN(low-minPort)
		if portsGiven[p] || !claimPort(p) {
			continue
		}
		ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			continue
		}
		ln.Close()
		portsGiven[p] = true
		return p, nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// Port is FreePort for a test, which it fails when no port can be had.
func Port(t testing.TB) int {
	t.Helper()
	p, err := FreePort()
	if err != nil {
		t.Fatalf("choose a port: %v", err)
	}
	return p
}

// minPort is the lowest port FreePort chooses.
const minPort = 20000

var (
	portsMu    sync.Mutex
	portsGiven = map[int]bool{} // by FreePort in this process
)

// ephemeralLow is the lowest port of the kernel's ephemeral range (Linux:
// /proc/sys/net/ipv4/ip_local_port_range), 0 when it is not known.
func ephemeralLow() int {
	data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(data))
	if len(f) < 1 {
		return 0
	}
	n, _ := strconv.Atoi(f[0])
	return n
}

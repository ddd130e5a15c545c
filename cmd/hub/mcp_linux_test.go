package main

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	mcpsurface "github.com/a6afc2ce/hermes-hub/adapters/mcp"
)

// TestMCPStdioPipelinedPingsKeepMemoryBounded writes 200,000 pings to `hub
// mcp`, a notification after every fourth, as fast as the pipe takes them,
// and reads answers only when the hub can neither write more (its output
// pipe is full) nor has taken more input for a while, or once every line
// is written. Meanwhile the hub must not take more pings than
// DefaultMaxPending beyond those it answered, plus what its read buffer
// holds: the rest waits in the pipe (a hub that keeps reading while its
// answers wait queues them all, over 1 GB). Every ping is answered once,
// nothing else is, and the process's peak resident memory stays far below
// that.
func TestMCPStdioPipelinedPingsKeepMemoryBounded(t *testing.T) {
	t.Parallel() // its own directories and processes: it runs beside the package's other long tests
	if testing.Short() {
		t.Skip("200,000 pings through a hub process: skipped in -short mode")
	}
	const pings = 200_000
	const peakBound = 160 << 20 // bytes of peak resident memory
	const minAnswer = len(`{"jsonrpc":"2.0","id":0,"result":{}}` + "\n")
	p := startMCP(t, "")

	// The input, and for each line's end the pings before it.
	var input []byte
	var ends, pingsBefore []int
	for i := range pings {
		input = fmt.Appendf(input, `{"jsonrpc":"2.0","id":%d,"method":"ping"}`+"\n", i)
		ends, pingsBefore = append(ends, len(input)), append(pingsBefore, i+1)
		if i%4 == 3 {
			input = append(input, `{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`+"\n"...)
			ends, pingsBefore = append(ends, len(input)), append(pingsBefore, i+1)
		}
	}
	// The most pings the hub may have taken and not answered: the messages
	// in progress, and the lines its read buffer may hold.
	bound := mcpsurface.DefaultMaxPending + mcpsurface.StdioReadAhead/len(`{"jsonrpc":"2.0","id":0,"method":"ping"}`+"\n") + 1

	in, out := p.in.(*os.File), p.stdout.(*os.File)
	inFd, outFd := int(in.Fd()), int(out.Fd())
	var handed atomic.Int64 // bytes of input the kernel took
	written := make(chan error, 1)
	go func() {
		// Writes of PIPE_BUF bytes are atomic: none is in the pipe in part
		// while handed does not count it yet.
		for off := 0; off < len(input); {
			n, err := in.Write(input[off:min(off+4096, len(input))])
			off += n
			handed.Store(int64(off))
			if err != nil {
				written <- err
				return
			}
		}
		written <- nil
	}()
	unread := func(fd int) int {
		n, err := unix.IoctlGetInt(fd, unix.TIOCINQ)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	// full reports whether the hub's output pipe can take no answer more.
	// Its size is asked each time: hub mcp grows the pipe as it starts.
	// An answer is written into a page only where it fits whole, so each
	// page may keep up to an answer's length free.
	maxAnswer := len(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{}}`+"\n", pings))
	full := func() bool {
		size, err := unix.FcntlInt(uintptr(outFd), unix.F_GETPIPE_SZ, 0)
		if err != nil {
			t.Fatal(err)
		}
		page := os.Getpagesize()
		return unread(outFd) >= size-page-size/page*maxAnswer
	}
	// taken is how many pings the hub has read at least (bytes in the pipe
	// are not taken; a write in progress counts as not handed yet).
	taken := func() int {
		n := sort.SearchInts(ends, int(handed.Load())-unread(inFd)+1)
		if n == 0 {
			return 0
		}
		return pingsBefore[n-1]
	}
	var writeErr error
	allWritten := false
	seen := make([]bool, pings)
	answered, outOfOrder, worst, last, still := 0, 0, 0, -1, 0
	for answered < pings {
		if !allWritten {
			select {
			case writeErr = <-written:
				allWritten = true
			default:
			}
		}
		// The pings taken, then the answers written and not read yet (at
		// most): a ping the hub takes between the two looks is not
		// counted, an answer it writes between them is, so a look delayed
		// by the scheduler never counts more pings ahead than there are.
		took := taken()
		waiting := (unread(outFd) + p.out.Buffered()) / minAnswer
		if ahead := took - answered - waiting; ahead > worst {
			worst = ahead
			if ahead > bound {
				t.Fatalf("the hub took %d pings more than it answered, over the bound of %d: it reads ahead of its answers", ahead, bound)
			}
		}
		// Read once the hub can neither answer (its output is full) nor
		// has taken input for 50 looks in a row, or when the input is all
		// written. (A hub with a read buffer takes input in bursts; the
		// looks only decide when to read, never whether the test passes.)
		if now := taken(); !allWritten && p.out.Buffered() == 0 {
			if !full() || now != last {
				still = 0
			}
			if last = now; still < 50 {
				still++
				time.Sleep(time.Millisecond)
				continue
			}
		}
		a := p.answer(t)
		id, ok := a.ID.(float64)
		if !ok || id < 0 || id >= pings || a.Error != nil || string(a.Result) != "{}" {
			t.Fatalf("answer %d: %+v %s", answered, a, a.Result)
		}
		if seen[int(id)] {
			t.Fatalf("ping %v answered twice", a.ID)
		}
		seen[int(id)] = true
		if int(id) != answered {
			outOfOrder++
		}
		answered++
	}
	if !allWritten {
		writeErr = <-written
	}
	if writeErr != nil {
		t.Fatalf("write the pings: %v", writeErr)
	}
	p.send(t, `{"jsonrpc":"2.0","id":"last","method":"ping"}`)
	if a := p.answer(t); a.ID != "last" {
		t.Fatalf("an answer nobody asked for: %+v", a)
	}
	peak := peakRSS(t, p.cmd.Process.Pid)
	t.Logf("%d pings answered, at most %d taken ahead of their answers (bound %d); peak resident memory %d MiB; %d answers came out of request order (requests run concurrently)", pings, worst, bound, peak>>20, outOfOrder)
	if peak > peakBound {
		t.Errorf("peak resident memory of hub mcp is %d MiB, over %d MiB", peak>>20, peakBound>>20)
	}
}

// peakRSS is VmHWM of a process, in bytes.
func peakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("VmHWM: %q", line)
			}
			return kb << 10
		}
	}
	t.Fatalf("no VmHWM in /proc/%d/status", pid)
	return 0
}

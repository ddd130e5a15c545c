package testkit

import (
	"os"
	"runtime"
	"testing"
	"time"
)

// TestCPUTimes: both readings of this process's CPU time grow with the
// CPU it burns (30 ms by the scheduler's count, however long that takes
// on a shared machine: three of ProcessCPU's ticks).
func TestCPUTimes(t *testing.T) {
	if runtime.GOOS != "linux" {
		if _, err := ProcessCPU(os.Getpid()); err == nil {
			t.Fatal("ProcessCPU read a /proc this system should not have")
		}
		t.Skip("the CPU times are read from /proc (Linux)")
	}
	read := func() (process, threads time.Duration) {
		t.Helper()
		p, err := ProcessCPU(os.Getpid())
		if err != nil {
			t.Fatal(err)
		}
		th, err := ThreadsCPU(os.Getpid())
		if err != nil {
			t.Fatal(err)
		}
		return p, th
	}
	p0, t0 := read()
	p1, t1 := p0, t0
	for t1-t0 < 30*time.Millisecond {
		burn()
		p1, t1 = read()
	}
	if p1 <= p0 {
		t.Errorf("ProcessCPU %v then %v after %v of CPU", p0, p1, t1-t0)
	}
	if _, err := ProcessCPU(-1); err == nil {
		t.Error("ProcessCPU of no process: no error")
	}
	if _, err := ThreadsCPU(-1); err == nil {
		t.Error("ThreadsCPU of no process: no error")
	}
}

// burn keeps this goroutine on a processor for a moment.
func burn() {
	x := 0
	for i := range 1_000_000 {
		x += i
	}
	_ = x
}

package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// watchRSS follows the peak resident set (VmHWM) of the process pid
// until stop, which returns it in bytes (0 when it could not be read).
// The kernel's accounting of a process's own memory is read, not the
// rusage of its exit: a child started by a large process reports that
// process's size as its own maximum.
func watchRSS(pid int) (stop func() int64) {
	done := make(chan struct{})
	peak := make(chan int64, 1)
	go func() {
		var max int64
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			if v := vmHWM(pid); v > max {
				max = v
			}
			select {
			case <-done:
				peak <- max
				return
			case <-t.C:
			}
		}
	}()
	return func() int64 { close(done); return <-peak }
}

// vmHWM is the VmHWM of the process pid in bytes, 0 when unreadable.
func vmHWM(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

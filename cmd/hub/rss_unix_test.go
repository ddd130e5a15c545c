//go:build unix

package main

import (
	"os"
	"runtime"
	"syscall"
)

// exitedPeakRSS is the largest resident set of an exited process, in bytes (0
// when unknown).
func exitedPeakRSS(ps *os.ProcessState) int64 {
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok {
		return 0
	}
	if runtime.GOOS == "darwin" {
		return int64(ru.Maxrss) // bytes there
	}
	return int64(ru.Maxrss) * 1024 // kilobytes on Linux and the BSDs
}

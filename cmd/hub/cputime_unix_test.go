//go:build unix

package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// processCPU is the CPU time the process pid has used, user and system,
// as /proc counts it (an error where there is no /proc).
func processCPU(pid int) (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The fields after the command's closing parenthesis: state is the
	// first, utime the 12th and stime the 13th.
	fields := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
	if len(fields) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields after the command, want at least 13", pid, len(fields))
	}
	ut, _ := strconv.ParseInt(fields[11], 10, 64)
	st, _ := strconv.ParseInt(fields[12], 10, 64)
	return time.Duration(ut+st) * time.Second / 100, nil // USER_HZ
}

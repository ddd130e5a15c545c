package testkit

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// ProcessCPU is the CPU time process pid has used, user and system, as
// /proc/<pid>/stat counts it: in clock ticks of 10 ms, every thread it
// ever ran included. An error where there is no /proc.
func ProcessCPU(pid int) (time.Duration, error) {
	name := fmt.Sprintf("/proc/%d/stat", pid)
	data, err := os.ReadFile(name)
	if err != nil {
		return 0, err
	}
	// The fields after the command's closing parenthesis: state is the
	// first, utime the 12th and stime the 13th (proc(5)).
	s := string(data)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 13 {
		return 0, fmt.Errorf("%s: %d fields after the command, want at least 13", name, len(fields))
	}
	ut, err1 := strconv.ParseInt(fields[11], 10, 64)
	st, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("%s: %w", name, err)
	}
	return time.Duration(ut+st) * time.Second / 100, nil // USER_HZ
}

// ThreadsCPU is the CPU time the running threads of process pid have
// used, as the scheduler counts it (se.sum_exec_runtime of each
// /proc/<pid>/task/*/sched, nanoseconds): precise enough for a few
// thousand calls of a few microseconds, where ProcessCPU's ticks are not.
// An error where the kernel does not show it.
func ThreadsCPU(pid int) (time.Duration, error) {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return 0, err
	}
	var sum time.Duration
	for _, t := range tasks {
		name := fmt.Sprintf("/proc/%d/task/%s/sched", pid, t.Name())
		raw, err := os.ReadFile(name)
		if err != nil {
			return 0, err
		}
		_, rest, ok := strings.Cut(string(raw), "se.sum_exec_runtime")
		if !ok {
			return 0, fmt.Errorf("%s: no se.sum_exec_runtime", name)
		}
		_, rest, _ = strings.Cut(rest, ":")
		field, _, _ := strings.Cut(strings.TrimSpace(rest), "\n")
		ms, err := strconv.ParseFloat(strings.TrimSpace(field), 64) // milliseconds, six decimals
		if err != nil {
			return 0, fmt.Errorf("%s: %w", name, err)
		}
		sum += time.Duration(ms * float64(time.Millisecond))
	}
	return sum, nil
}

package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// pinToOneCPU moves every thread of this process to one CPU of those it
// may use, so that the programs it starts from then on (which inherit the
// mask) share that CPU with it, and returns the function that gives the
// threads their former mask back. A benchmark pinned so measures the work
// of its client and server without the cost of waking an idle CPU, which
// on a virtual machine can exceed the work itself.
func pinToOneCPU() (restore func() error, err error) {
	var old unix.CPUSet
	if err := unix.SchedGetaffinity(0, &old); err != nil {
		return nil, fmt.Errorf("read the CPU mask: %w", err)
	}
	cpu := -1
	for i := range 1024 {
		if old.IsSet(i) {
			cpu = i
			break
		}
	}
	if cpu < 0 {
		return nil, errors.New("the CPU mask is empty")
	}
	var one unix.CPUSet
	one.Set(cpu)
	if err := setThreadsMask(&one); err != nil {
		return nil, err
	}
	return func() error { return setThreadsMask(&old) }, nil
}

// setThreadsMask sets the CPU mask of every thread of this process; twice,
// so that a thread started by one not yet moved is moved too.
func setThreadsMask(set *unix.CPUSet) error {
	for range 2 {
		tasks, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return fmt.Errorf("list this process's threads: %w", err)
		}
		for _, t := range tasks {
			tid, err := strconv.Atoi(t.Name())
			if err != nil {
				continue
			}
			if err := unix.SchedSetaffinity(tid, set); err != nil && !errors.Is(err, unix.ESRCH) {
				return fmt.Errorf("set the CPU mask of thread %d: %w", tid, err)
			}
		}
	}
	return nil
}

package docker

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
)

// cgroupRoot is where the cgroup hierarchies are mounted.
const cgroupRoot = "/sys/fs/cgroup"

// hostView reads a container's state from the host rather than through the
// daemon: whether its PID 1 lives, the processes in its cgroup, and its
// memory cgroup's out-of-memory count. It exists only when the daemon runs
// on the hub's machine in the hub's PID namespace (the container's PID 1,
// as the daemon reports it, is a process here whose cgroup is the
// container's and lists that pid); otherwise every answer comes from the
// Docker API, as it does whenever a file here cannot be read.
type hostView struct {
	pid   int    // the container's PID 1 on the host
	start string // its start time (/proc/PID/stat field 22): a reused pid is another process
	procs string // cgroup.procs of the container's cgroup
	oom   string // memory.oom_control (cgroup v1) or memory.events (v2); "" when not found
}

// hostViews turns the host view off (tests of the API-only path).
var hostViews atomic.Bool

func init() { hostViews.Store(true) }

// pfExiting is the kernel's PF_EXITING task flag (/proc/PID/stat field 9).
const pfExiting = 0x4

// newHostView returns the host view of container id whose PID 1 is pid,
// or nil when the host cannot see it.
func newHostView(id string, pid int) *hostView {
	if pid <= 0 || len(id) < 12 || !hostViews.Load() {
		return nil
	}
	st, ok := procStat(pid)
	if !ok || !st.running() {
		return nil
	}
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		return nil
	}
	v := &hostView{pid: pid, start: st.start}
	var procs []string
	for _, line := range strings.Split(string(data), "\n") {
		// hierarchy-ID:controllers:path
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 || !strings.Contains(f[2], id[:12]) {
			continue
		}
		p := filepath.Clean("/" + f[2])
		if f[1] == "" { // cgroup v2 (or v1's unified hierarchy)
			procs = append(procs, filepath.Join(cgroupRoot, p, "cgroup.procs"), filepath.Join(cgroupRoot, "unified", p, "cgroup.procs"))
			if v.oom == "" && fileExists(filepath.Join(cgroupRoot, p, "memory.events")) {
				v.oom = filepath.Join(cgroupRoot, p, "memory.events")
			}
			continue
		}
		for _, c := range strings.Split(f[1], ",") {
			switch c {
			case "pids":
				procs = append([]string{filepath.Join(cgroupRoot, f[1], p, "cgroup.procs")}, procs...)
			case "memory":
				if fileExists(filepath.Join(cgroupRoot, f[1], p, "memory.oom_control")) {
					v.oom = filepath.Join(cgroupRoot, f[1], p, "memory.oom_control")
				}
			}
		}
	}
	for _, p := range procs {
		v.procs = p
		if pids, err := v.pids(); err == nil && slices.Contains(pids, pid) {
			return v
		}
	}
	return nil
}

// alive tells whether the container's PID 1 still runs: not gone, not
// exiting, not another process under a reused pid. When it has ended the
// kernel has killed, or is killing, every process of the container.
func (v *hostView) alive() bool {
	st, ok := procStat(v.pid)
	return ok && st.running() && st.start == v.start
}

// pids lists the processes in the container's cgroup (host pids).
func (v *hostView) pids() ([]int, error) {
	data, err := os.ReadFile(v.procs)
	if err != nil {
		return nil, err
	}
	var out []int
	for _, f := range strings.Fields(string(data)) {
		n, err := strconv.Atoi(f)
		if err != nil {
			return nil, errors.New("unreadable " + v.procs)
		}
		out = append(out, n)
	}
	return out, nil
}

// oomKills reads the memory cgroup's count of processes the out-of-memory
// killer killed; ok is false when the host cannot tell.
func (v *hostView) oomKills() (n int64, ok bool) {
	if v.oom == "" {
		return 0, false
	}
	data, err := os.ReadFile(v.oom)
	if err != nil {
		return 0, false
	}
	return oomKillCount(data)
}

// oomKillCount finds the oom_kill line of memory.events or
// memory.oom_control.
func oomKillCount(data []byte) (int64, bool) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 2 && f[0] == "oom_kill" {
			n, err := strconv.ParseInt(f[1], 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

// process is one process as the host sees it.
type process struct {
	pid, ppid int
}

// processes lists the container's processes with their parents.
func (v *hostView) processes() ([]process, error) {
	pids, err := v.pids()
	if err != nil {
		return nil, err
	}
	out := make([]process, 0, len(pids))
	for _, pid := range pids {
		if st, ok := procStat(pid); ok {
			out = append(out, process{pid: pid, ppid: st.ppid})
		}
	}
	return out, nil
}

// stat is what the runner reads of /proc/PID/stat.
type stat struct {
	state byte
	ppid  int
	flags uint64
	start string
}

func (s stat) running() bool {
	return s.state != 'Z' && s.state != 'X' && s.state != 'x' && s.flags&pfExiting == 0
}

func procStat(pid int) (stat, bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return stat{}, false
	}
	return parseStat(data)
}

// parseStat parses a /proc/PID/stat line.
func parseStat(data []byte) (stat, bool) {
	// pid (comm) state ppid pgrp session tty tpgid flags … starttime(22)
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return stat{}, false
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 20 || len(f[0]) != 1 {
		return stat{}, false
	}
	ppid, err1 := strconv.Atoi(f[1])
	flags, err2 := strconv.ParseUint(f[6], 10, 64)
	if err1 != nil || err2 != nil {
		return stat{}, false
	}
	return stat{state: f[0][0], ppid: ppid, flags: flags, start: f[19]}, true
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

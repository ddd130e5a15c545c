//go:build linux

package docker

import (
	"os"
	"testing"
)

func TestParseStat(t *testing.T) {
	tail := " 0 0 0 0 20 0 1 0 932166 3133440 347 0" // utime … starttime (field 22) …
	cases := []struct {
		name, line string
		ok         bool
		want       stat
		running    bool
	}{
		{"sleeping", "42 (sleep) S 7 42 42 0 -1 4194560 1 0 0 0" + tail, true, stat{'S', 7, 4194560, "932166"}, true},
		{"a comm with spaces and parens", "42 (a) b) (c) R 1 42 42 0 -1 0 1 0 0 0" + tail, true, stat{'R', 1, 0, "932166"}, true},
		{"zombie", "42 (sh) Z 7 42 42 0 -1 4194316 1 0 0 0" + tail, true, stat{'Z', 7, 4194316, "932166"}, false},
		{"exiting", "42 (docker-init) S 7 42 42 0 -1 4194564 1 0 0 0" + tail, true, stat{'S', 7, 4194564, "932166"}, false},
		{"dead", "42 (x) X 7 42 42 0 -1 0 1 0 0 0" + tail, true, stat{'X', 7, 0, "932166"}, false},
		{"truncated", "42 (x) S 7 42", false, stat{}, false},
		{"no comm", "42 x S 7", false, stat{}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := parseStat([]byte(c.line))
			if ok != c.ok || got != c.want || (ok && got.running() != c.running) {
				t.Fatalf("parseStat = %+v %v (running %v), want %+v %v (running %v)", got, ok, got.running(), c.want, c.ok, c.running)
			}
		})
	}
	// This process, read from /proc.
	st, ok := procStat(os.Getpid())
	if !ok || st.ppid != os.Getppid() || !st.running() {
		t.Fatalf("procStat(self) = %+v %v", st, ok)
	}
	if _, ok := procStat(-1); ok {
		t.Fatal("procStat of no process succeeded")
	}
}

func TestOOMKillCount(t *testing.T) {
	cases := []struct {
		name, data string
		n          int64
		ok         bool
	}{
		{"cgroup v2 memory.events", "low 0\nhigh 0\nmax 12\noom 2\noom_kill 2\noom_group_kill 0\n", 2, true},
		{"cgroup v1 memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 0\n", 0, true},
		{"a kernel without the count", "oom_kill_disable 0\nunder_oom 0\n", 0, false},
		{"garbage", "oom_kill many\n", 0, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if n, ok := oomKillCount([]byte(c.data)); n != c.n || ok != c.ok {
				t.Fatalf("oomKillCount = %d %v, want %d %v", n, ok, c.n, c.ok)
			}
		})
	}
}

// TestNoHostViewOfAnotherProcess: a process whose cgroup is not the
// container's gives no view, so the runner asks the daemon.
func TestNoHostViewOfAnotherProcess(t *testing.T) {
	id := "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	for _, pid := range []int{os.Getpid(), 1, 0, -5} {
		if v := newHostView(id, pid); v != nil {
			t.Fatalf("pid %d: a view %+v of a process outside the container", pid, v)
		}
	}
}

//go:build linux

package proc

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

const supervisorSupported = true

// supervisorPoll is how often the supervisor counts the program's
// processes against MaxProcs (it also wakes on every SIGCHLD).
const supervisorPoll = 5 * time.Millisecond

// modeSubreaper names how the supervisor owns the tree, in logs.
const modeSubreaper = "subreaper"

// runHiddenMode exits with syscall.Exit: the supervisor has nothing to
// flush, and a race-enabled test binary would otherwise pause at exit.
func runHiddenMode() {
	if spec, ok := os.LookupEnv(supervisorEnv); ok {
		syscall.Exit(runSupervisor(spec))
	}
	if spec, ok := os.LookupEnv(execStageEnv); ok {
		syscall.Exit(runExecStage(spec))
	}
}

// supervision is the hub's side of one supervised run.
type supervision struct {
	statusR *os.File
	statusW *os.File
	done    chan struct{}
	mu      sync.Mutex
	pid     int              // the program's pid, once reported
	final   supervisorStatus // the outcome, when final.Done
}

// supervise rewrites cmd (a program with its Path, Args, Dir and Env set)
// to run through the supervisor with spec's limits. Cancel asks the
// supervisor to stop the tree; WaitDelay later kills the supervisor itself.
func supervise(cmd *exec.Cmd, spec supervisorSpec) (*supervision, error) {
	spec.Parent = os.Getpid()
	spec.Path = cmd.Path
	b, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	sup := &supervision{statusR: r, statusW: w, done: make(chan struct{})}
	cmd.Path = "/proc/self/exe" // the hub's executable, even if replaced on disk since
	cmd.Args = append([]string{"hub-proc-supervisor"}, cmd.Args...)
	cmd.Env = append(cmd.Env[:len(cmd.Env):len(cmd.Env)], supervisorEnv+"="+string(b))
	cmd.ExtraFiles = []*os.File{w} // fd 3
	// The supervisor hears of the hub's death as SIGTERM and then stops
	// the tree. (The signal is tied to the hub thread that forks it, and Go
	// only ends threads locked by a goroutine that exits: not in the hub.)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	return sup, nil
}

// started is called after cmd.Start, successful or not.
func (sup *supervision) started(ok bool) {
	sup.statusW.Close()
	if !ok {
		sup.statusR.Close()
		close(sup.done)
		return
	}
	go func() {
		defer close(sup.done)
		sc := bufio.NewScanner(sup.statusR)
		for sc.Scan() {
			var st supervisorStatus
			if json.Unmarshal(sc.Bytes(), &st) != nil {
				continue
			}
			sup.mu.Lock()
			if st.Pid > 0 && sup.pid == 0 {
				sup.pid = st.Pid
			}
			if st.Done && !sup.final.Done {
				sup.final = st
			}
			sup.mu.Unlock()
		}
	}()
}

// result waits up to grace for the status pipe to close (the supervisor
// has exited) and returns the outcome and the program's pid.
func (sup *supervision) result(grace time.Duration) (supervisorStatus, int) {
	select {
	case <-sup.done:
	case <-time.After(grace):
	}
	sup.statusR.Close()
	<-sup.done
	sup.mu.Lock()
	defer sup.mu.Unlock()
	return sup.final, sup.pid
}

// runSupervisor is the supervisor process: it starts the program through
// the exec stage, owns every process below it, and reports on fd 3.
func runSupervisor(specJSON string) int {
	syscall.CloseOnExec(3)
	status := os.NewFile(3, "status")
	report := func(st supervisorStatus) {
		b, _ := json.Marshal(st)
		_, _ = status.Write(append(b, '\n'))
	}
	fail := func(format string, args ...any) int {
		report(supervisorStatus{Done: true, Exit: -1, Err: fmt.Sprintf(format, args...)})
		return 125
	}
	var spec supervisorSpec
	if err := json.Unmarshal([]byte(specJSON), &spec); err != nil {
		return fail("bad supervisor spec: %v", err)
	}
	// Programs may run as the hub's user: they must not read this process's
	// memory or descriptors (the status pipe) through /proc or ptrace.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fail("prctl PR_SET_DUMPABLE: %v", err)
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fail("prctl PR_SET_CHILD_SUBREAPER: %v", err)
	}
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	chld := make(chan os.Signal, 1)
	signal.Notify(chld, syscall.SIGCHLD)
	// The parent-death signal was set before exec: if the hub died before
	// then, this process already has another parent and must not start.
	if os.Getppid() != spec.Parent {
		return fail("the hub (pid %d) is gone", spec.Parent)
	}

	stage, err := json.Marshal(supervisorSpec{Parent: os.Getpid(), Path: spec.Path, MaxMemory: spec.MaxMemory, MaxCPU: spec.MaxCPU, User: spec.User})
	if err != nil {
		return fail("%v", err)
	}
	env := withoutEnv(os.Environ(), supervisorEnv)
	errR, errW, err := os.Pipe()
	if err != nil {
		return fail("pipe: %v", err)
	}
	pid, err := syscall.ForkExec("/proc/self/exe", append([]string{"hub-proc-exec"}, os.Args[1:]...), &syscall.ProcAttr{
		Env:   append(env, execStageEnv+"="+string(stage)),
		Files: []uintptr{0, 1, 2, errW.Fd()},
		Sys:   &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL},
	})
	errW.Close()
	if err != nil {
		errR.Close()
		return fail("start the exec stage: %v", err)
	}
	var errno [4]byte
	n, _ := errR.Read(errno[:])
	errR.Close()
	if n == len(errno) {
		killTree(0)
		report(supervisorStatus{Done: true, Exit: -1, StartErrno: int(binary.LittleEndian.Uint32(errno[:])), Mode: modeSubreaper})
		return 127
	}
	report(supervisorStatus{Pid: pid, Mode: modeSubreaper})

	tick := time.NewTicker(supervisorPoll)
	defer tick.Stop()
	var main *unix.WaitStatus
	limit := ""
loop:
	for {
		if ws, ok := reapChildren(pid); ok {
			main = &ws
			break
		}
		wake := tick.C
		if spec.MaxProcs > 0 {
			n := len(descendants(os.Getpid()))
			if n > spec.MaxProcs {
				limit = "processes"
				break
			}
			if 2*n > spec.MaxProcs { // close to the limit: look again sooner
				wake = time.After(supervisorPoll / 5)
			}
		}
		select {
		case <-term:
			break loop
		case <-chld:
		case <-wake:
		}
	}
	if ws, ok := killTree(pid); ok && main == nil {
		main = &ws
	}
	st := supervisorStatus{Done: true, Exit: -1, Limit: limit, Mode: modeSubreaper}
	code := 128 + int(syscall.SIGKILL)
	if main != nil {
		switch {
		case main.Exited():
			st.Exit, code = main.ExitStatus(), main.ExitStatus()
		case main.Signaled():
			code = 128 + int(main.Signal())
			if main.Signal() == syscall.SIGXCPU && limit == "" {
				st.Limit = "cpu"
			}
		}
	}
	switch st.Limit {
	case "processes":
		fmt.Fprintf(os.Stderr, "\n[proc.run: stopped: more than %d processes at once (verbs.proc.max_procs)]\n", spec.MaxProcs)
	case "cpu":
		fmt.Fprintf(os.Stderr, "\n[proc.run: stopped: CPU time limit of %d s reached (verbs.proc.max_cpu_seconds)]\n", spec.MaxCPU)
	}
	report(st)
	return code
}

// reapChildren reaps every child that has ended, without blocking, and
// returns main's status when main was among them.
func reapChildren(main int) (unix.WaitStatus, bool) {
	var mainWS unix.WaitStatus
	found := false
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil || pid <= 0 {
			return mainWS, found
		}
		if pid == main {
			mainWS, found = ws, true
		}
	}
}

// killTree kills every process below this one until none is left, reaping
// them (orphans come to this process, the subreaper), and returns main's
// status if main (0 for none) was reaped here. A process forked while the tree is being
// killed is seen on the next round: the loop ends only when this process
// has no child left, hence no descendant.
func killTree(main int) (unix.WaitStatus, bool) {
	var mainWS unix.WaitStatus
	found := false
	self := os.Getpid()
	for {
		for _, p := range descendants(self) {
			_ = unix.Kill(p, unix.SIGKILL)
		}
		for {
			var ws unix.WaitStatus
			pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
			if errors.Is(err, syscall.EINTR) {
				continue
			}
			if errors.Is(err, syscall.ECHILD) {
				return mainWS, found
			}
			if err != nil || pid <= 0 {
				break
			}
			if pid == main {
				mainWS, found = ws, true
			}
		}
		time.Sleep(time.Millisecond)
	}
}

var childrenFiles = sync.OnceValue(func() bool {
	_, err := os.Stat(fmt.Sprintf("/proc/self/task/%d/children", unix.Gettid()))
	return err == nil
})

// descendants lists the processes below root (zombies included), from the
// kernel's per-thread children lists, or from a /proc scan when the kernel
// has none.
func descendants(root int) []int {
	if !childrenFiles() {
		return scanDescendants(root)
	}
	var out []int
	queue := []int{root}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		dir := "/proc/" + strconv.Itoa(p) + "/task/"
		tasks, err := os.ReadDir(dir)
		if err != nil {
			continue // gone
		}
		for _, t := range tasks {
			b, err := os.ReadFile(dir + t.Name() + "/children")
			if err != nil {
				continue
			}
			for _, f := range strings.Fields(string(b)) {
				if c, err := strconv.Atoi(f); err == nil {
					out = append(out, c)
					queue = append(queue, c)
				}
			}
		}
	}
	return out
}

// scanDescendants reads every process's parent from /proc/<pid>/stat.
func scanDescendants(root int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	kids := map[int][]int{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:]) // state, ppid, …
		if len(f) < 2 {
			continue
		}
		if ppid, err := strconv.Atoi(f[1]); err == nil {
			kids[ppid] = append(kids[ppid], pid)
		}
	}
	var out []int
	queue := []int{root}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		out = append(out, kids[p]...)
		queue = append(queue, kids[p]...)
	}
	return out
}

// runExecStage is the supervisor's child: it lowers its own limits, which
// the program inherits, changes to the program's user when there is one,
// and becomes the program. A failure is reported as an errno on fd 3,
// which closes on a successful exec.
func runExecStage(specJSON string) int {
	// The parent-death signal is a thread's, and the program keeps the one
	// of the thread that calls exec: this goroutine stays on one thread,
	// which sets it just before exec (keepParentDeathSignal).
	runtime.LockOSThread()
	syscall.CloseOnExec(3)
	report := func(err error) int {
		errno := syscall.EINVAL
		var e syscall.Errno
		if errors.As(err, &e) {
			errno = e
		}
		var b [4]byte
		binary.LittleEndian.PutUint32(b[:], uint32(errno))
		_, _ = syscall.Write(3, b[:])
		return 127
	}
	var spec supervisorSpec
	if err := json.Unmarshal([]byte(specJSON), &spec); err != nil {
		return report(err)
	}
	if spec.MaxMemory > 0 {
		if err := lowerLimit(unix.RLIMIT_AS, uint64(spec.MaxMemory), uint64(spec.MaxMemory)); err != nil {
			return report(err)
		}
	}
	if spec.MaxCPU > 0 {
		// SIGXCPU at the soft limit, SIGKILL a second later.
		if err := lowerLimit(unix.RLIMIT_CPU, uint64(spec.MaxCPU), uint64(spec.MaxCPU)+1); err != nil {
			return report(err)
		}
	}
	if spec.User != nil {
		if err := becomeUser(spec.User); err != nil {
			return report(err)
		}
	}
	if err := keepParentDeathSignal(spec.Parent); err != nil {
		return report(err)
	}
	return report(syscall.Exec(spec.Path, os.Args[1:], withoutEnv(os.Environ(), execStageEnv)))
}

// becomeUser drops this process's root privileges for u's: no
// supplementary group, u's primary gid, u's uid (for every thread). The
// kernel clears the parent-death signal when the credentials change;
// keepParentDeathSignal sets it again.
func becomeUser(u *User) error {
	if err := syscall.Setgroups(nil); err != nil {
		return err
	}
	if err := syscall.Setgid(int(u.GID)); err != nil {
		return err
	}
	return syscall.Setuid(int(u.UID))
}

// keepParentDeathSignal sets SIGKILL as the parent-death signal of the
// calling thread, the one that then calls exec: the kernel gives each
// thread its own (a thread the runtime started has none) and clears it
// when the credentials change. The supervisor (parent) must still be
// there, since its death before then would not have been signalled.
func keepParentDeathSignal(parent int) error {
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(unix.SIGKILL), 0, 0, 0); err != nil {
		return err
	}
	if os.Getppid() != parent {
		return syscall.ESRCH
	}
	return nil
}

// lowerLimit sets resource r to at most cur (soft) and max (hard), never
// raising what is already lower.
func lowerLimit(r int, cur, max uint64) error {
	var old unix.Rlimit
	if err := unix.Getrlimit(r, &old); err != nil {
		return err
	}
	lim := unix.Rlimit{Cur: min(cur, old.Max), Max: min(max, old.Max)}
	lim.Cur = min(lim.Cur, lim.Max)
	return unix.Setrlimit(r, &lim)
}

func withoutEnv(env []string, name string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return out
}

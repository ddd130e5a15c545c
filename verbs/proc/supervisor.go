package proc

import (
	"sync/atomic"
)

// Run starts every program through a supervisor: the hub's own executable
// started again with supervisorEnv set. The supervisor owns the program's
// whole process tree (it is the tree's subreaper), applies the limits, and
// kills every descendant when the program exits, when the hub asks
// (timeout, cancellation, hub stop) or when the hub dies. A binary whose
// main never calls MaybeRunSupervisor (another package's tests) runs
// programs directly instead, as a plain process group.

// Environment markers of the hidden modes; neither reaches the program.
const (
	supervisorEnv = "HERMES_HUB_PROC_SUPERVISOR" // the per-call supervisor
	execStageEnv  = "HERMES_HUB_PROC_EXEC"       // applies the limits, then execs the program
)

// supervisorReady is set once MaybeRunSupervisor has returned in this
// process: its executable can serve as a supervisor.
var supervisorReady atomic.Bool

// MaybeRunSupervisor must be called first thing in main (and in TestMain of
// tests that run programs). In a process started as Run's supervisor it
// does that job and exits; otherwise it returns at once and lets Run use
// this executable as its supervisor.
func MaybeRunSupervisor() {
	runHiddenMode() // exits when this process was started in a hidden mode
	supervisorReady.Store(supervisorSupported)
}

// supervisorStatus is one line the supervisor writes on its status pipe:
// first the program's pid, last its outcome.
type supervisorStatus struct {
	Pid        int    `json:"pid,omitempty"`
	Done       bool   `json:"done,omitempty"`
	Exit       int    `json:"exit"`                 // exit status, -1 for a signal
	StartErrno int    `json:"startErrno,omitempty"` // the program could not be started
	Limit      string `json:"limit,omitempty"`      // which limit stopped it
	Mode       string `json:"mode,omitempty"`       // how the tree was owned
	Err        string `json:"err,omitempty"`        // the supervisor itself failed
}

// supervisorSpec is what the hub tells the supervisor, in supervisorEnv.
type supervisorSpec struct {
	Parent    int    `json:"parent"` // the pid of the process that started this one
	Path      string `json:"path"`   // the program's file
	MaxProcs  int    `json:"maxProcs,omitempty"`
	MaxMemory int64  `json:"maxMemory,omitempty"` // bytes of address space per process
	MaxCPU    int64  `json:"maxCPU,omitempty"`    // CPU seconds per process
	// User is whom the program runs as (nil: the hub's user). The exec
	// stage changes to it last, after the limits; the supervisor keeps the
	// hub's user, so the program can neither signal it nor read it.
	User *User `json:"user,omitempty"`
}

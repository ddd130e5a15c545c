//go:build unix

package proc

import (
	"errors"
	"os/exec"
	"syscall"
)

// procTree is the process tree proc.run starts: on Unix, the program's own
// process group.
type procTree struct{ cmd *exec.Cmd }

// newProcTree makes cmd lead a new process group.
func newProcTree(cmd *exec.Cmd) (*procTree, error) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return &procTree{cmd: cmd}, nil
}

// runAs makes cmd (prepared by newProcTree) start as u: its uid, its
// primary gid and no supplementary group. Without the supervisor the
// program enters its working directory as u, so u must be able to reach
// it (the supervisor enters it as the hub).
func runAs(cmd *exec.Cmd, u *User) error {
	cmd.SysProcAttr.Credential = &syscall.Credential{Uid: u.UID, Gid: u.GID, Groups: []uint32{}}
	return nil
}

// started is called once cmd has started; the group exists already.
func (t *procTree) started() error { return nil }

// kill sends SIGKILL to the whole group.
func (t *procTree) kill() error {
	if t.cmd.Process == nil {
		return nil
	}
	return killGroup(t.cmd.Process.Pid)
}

func (t *procTree) close() {}

// killGroup sends SIGKILL to the whole process group led by pid.
func killGroup(pid int) error {
	if pid <= 0 {
		return nil
	}
	err := syscall.Kill(-pid, syscall.SIGKILL)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

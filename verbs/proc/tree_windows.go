//go:build windows

package proc

import (
	"errors"
	"fmt"
	"os/exec"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"
)

// procTree is the process tree proc.run starts: on Windows, a job object
// the program is placed in before it runs a single instruction (it starts
// suspended), so everything it starts is in the job too. Killing the job
// kills the tree, and closing the last handle to it does the same
// (JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE), so a hub that dies takes the tree
// with it.
type procTree struct {
	cmd *exec.Cmd
	job windows.Handle
}

// newProcTree creates the job and makes cmd start suspended.
func newProcTree(cmd *exec.Cmd) (*procTree, error) {
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return nil, fmt.Errorf("create a job object: %w", err)
	}
	info := windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION{
		BasicLimitInformation: windows.JOBOBJECT_BASIC_LIMIT_INFORMATION{
			LimitFlags: windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
		},
	}
	if _, err := windows.SetInformationJobObject(job, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		windows.CloseHandle(job)
		return nil, fmt.Errorf("make the job kill its processes when closed: %w", err)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		CreationFlags: windows.CREATE_SUSPENDED | windows.CREATE_NEW_PROCESS_GROUP,
	}
	return &procTree{cmd: cmd, job: job}, nil
}

// runAs fails: ChooseUser never picks another user on Windows, where
// the hub does not run as root.
func runAs(_ *exec.Cmd, u *User) error {
	return fmt.Errorf("running programs as %s needs a Unix system", u)
}

// started puts the suspended program in the job and lets it run. When it
// cannot be put there, it is killed and never runs.
func (t *procTree) started() error {
	pid := uint32(t.cmd.Process.Pid)
	h, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE, false, pid)
	if err == nil {
		err = windows.AssignProcessToJobObject(t.job, h)
		windows.CloseHandle(h)
	}
	if err == nil {
		err = resumeThreads(pid)
	}
	if err != nil {
		_ = t.cmd.Process.Kill()
		_ = t.cmd.Wait()
		return fmt.Errorf("place the program in its job object: %w", err)
	}
	return nil
}

// resumeThreads resumes the threads of the suspended process pid.
func resumeThreads(pid uint32) error {
	snap, err := windows.CreateToolhelp32Snapshot(windows.TH32CS_SNAPTHREAD, 0)
	if err != nil {
		return err
	}
	defer windows.CloseHandle(snap)
	var te windows.ThreadEntry32
	te.Size = uint32(unsafe.Sizeof(te))
	resumed := 0
	for err = windows.Thread32First(snap, &te); err == nil; err = windows.Thread32Next(snap, &te) {
		if te.OwnerProcessID != pid {
			continue
		}
		th, err := windows.OpenThread(windows.THREAD_SUSPEND_RESUME, false, te.ThreadID)
		if err != nil {
			return err
		}
		_, err = windows.ResumeThread(th)
		windows.CloseHandle(th)
		if err != nil {
			return err
		}
		resumed++
	}
	if resumed == 0 {
		return errors.New("no thread of the program to resume")
	}
	return nil
}

// kill terminates every process in the job.
func (t *procTree) kill() error {
	return windows.TerminateJobObject(t.job, 1)
}

// close releases the job, killing whatever is left in it.
func (t *procTree) close() { windows.CloseHandle(t.job) }

// killGroup terminates the process pid (the supervisor, which exists only
// on Linux, is the one caller left).
func killGroup(pid int) error {
	if pid <= 0 {
		return nil
	}
	h, err := windows.OpenProcess(windows.PROCESS_TERMINATE, false, uint32(pid))
	if err != nil {
		return nil // gone already
	}
	defer windows.CloseHandle(h)
	return windows.TerminateProcess(h, 1)
}

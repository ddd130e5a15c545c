//go:build linux

package lab

import "syscall"

// hubProcAttr makes the hub die with the lab, whatever happens to the lab.
func hubProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

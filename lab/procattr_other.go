//go:build !linux

package lab

import "syscall"

// hubProcAttr: only Linux can tie the hub's life to the lab's
// (PR_SET_PDEATHSIG); elsewhere the lab stops its hubs itself.
func hubProcAttr() *syscall.SysProcAttr { return nil }

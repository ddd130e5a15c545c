package natstest

import "syscall"

// procAttr makes a server die with the test that started it, whatever
// happens to the test.
func procAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} }

//go:build !linux

package natstest

import "syscall"

// procAttr: only Linux kills a child with its parent.
func procAttr() *syscall.SysProcAttr { return nil }

//go:build !linux

package main

// harden has nothing to do where /proc does not expose a process's
// environment to its user's other processes.
func harden() {}

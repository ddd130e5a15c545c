//go:build !linux

package main

import "errors"

// pinToOneCPU needs sched_setaffinity: not on windows or darwin.
func pinToOneCPU() (func() error, error) {
	return nil, errors.New("pinning to one CPU needs sched_setaffinity, which windows and darwin lack")
}

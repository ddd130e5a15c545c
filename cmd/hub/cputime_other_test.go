//go:build !unix

package main

import "time"

// processCPU reports nothing where the system gives no rusage.
func processCPU() (time.Duration, bool) { return 0, false }

//go:build !unix

package main

import (
	"errors"
	"time"
)

// processCPU reports nothing where there is no /proc.
func processCPU(int) (time.Duration, error) { return 0, errors.ErrUnsupported }

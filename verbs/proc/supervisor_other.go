//go:build !linux

package proc

import (
	"errors"
	"os/exec"
	"time"
)

// Elsewhere than Linux, proc.run runs programs as a plain process group.
const supervisorSupported = false

func runHiddenMode() {}

type supervision struct{}

func supervise(*exec.Cmd, supervisorSpec) (*supervision, error) {
	return nil, errors.New("the process supervisor needs Linux")
}

func (*supervision) started(bool) {}

func (*supervision) result(time.Duration) (supervisorStatus, int) { return supervisorStatus{}, 0 }

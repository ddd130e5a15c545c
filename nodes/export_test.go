package nodes

import (
	"time"

	"github.com/a6afc2ce/hermes-hub/clock"
)

func newFakeClock() *clock.Fake { return clock.NewFake(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)) }

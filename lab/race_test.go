//go:build race

package lab

// raceEnabled: the test binary runs with the race detector, so the hub is
// built with it too (unless LAB_HUB_RACE says otherwise).
const raceEnabled = true

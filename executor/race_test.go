//go:build race

package executor

// raceEnabled: the race detector drops pooled values at random and
// allocates on its own, so allocation budgets are checked without it.
const raceEnabled = true

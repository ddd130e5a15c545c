//go:build race

package main

// raceEnabled: the race detector allocates on its own, so allocation
// budgets are checked without it.
const raceEnabled = true

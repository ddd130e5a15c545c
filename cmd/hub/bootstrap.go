package main

import "github.com/a6afc2ce/hermes-hub/verbs"

// bootstrap runs first in main: a process started as proc.run's supervisor
// does that job and exits; the hub then hides its own /proc entries (its
// environment holds tokens) from the programs it runs.
func bootstrap() {
	verbs.MaybeRunSupervisor()
	harden()
}

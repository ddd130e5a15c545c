package verbs

import "testing"

// WithoutSupervisor makes proc.run start programs directly for the rest of
// t, as in a binary that never calls MaybeRunSupervisor.
func WithoutSupervisor(t testing.TB) {
	was := supervisorReady.Swap(false)
	t.Cleanup(func() { supervisorReady.Store(was) })
}

package proc

import "testing"

// WithoutSupervisor makes Run start programs directly for the rest of t,
// as in a binary that never calls MaybeRunSupervisor.
func WithoutSupervisor(t testing.TB) {
	was := supervisorReady.Swap(false)
	t.Cleanup(func() { supervisorReady.Store(was) })
}

// ChooseUserFor is ChooseUser for a hub running as euid, with lookup
// resolving users; LookupUser is the real lookup.
var (
	ChooseUserFor = chooseUser
	LookupUser    = lookupUser
)

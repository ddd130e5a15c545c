package hub

import "context"

// PruneContext is the context the runtime's ledger prunes run with.
func PruneContext(rt *Runtime) context.Context { return rt.prune.ctx }

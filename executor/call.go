package executor

import "context"

// Call carries who asked for a verb and on whose behalf, for verbs that need
// it: proc.run names its output directory after TurnID, session workspaces
// are chosen by Session.
type Call struct {
	// TurnID identifies the turn (docs/architecture.md, "Glossary"); it
	// contains no ':' or '/'.
	TurnID string
	// Session names the conversation for session workspaces (a chat key or an
	// API caller's explicit session); empty means the host workspace.
	Session string
	// Workspace is the name of the configured workspace the call acts in
	// (resolved by the hub); empty means "default".
	Workspace string
	// Identity is the caller, such as "telegram:123" or "web".
	Identity string
}

// DefaultWorkspace is the name of the workspace every hub has: the
// top-level workspace directory.
const DefaultWorkspace = "default"

type callKey struct{}

// WithCall returns a context carrying c.
func WithCall(ctx context.Context, c Call) context.Context {
	return &callCtx{Context: ctx, call: c}
}

// callCtx is context.WithValue(ctx, callKey{}, c) in one allocation instead
// of two (the value context and c boxed): its Value hands out a pointer to
// its own copy of c, which only CallFrom reads, copying it.
type callCtx struct {
	context.Context
	call Call
}

func (c *callCtx) Value(key any) any {
	if key == (callKey{}) {
		return &c.call
	}
	return c.Context.Value(key)
}

// CallFrom returns the Call stored in ctx, or the zero Call.
func CallFrom(ctx context.Context) Call {
	if c, ok := ctx.Value(callKey{}).(*Call); ok {
		return *c
	}
	return Call{}
}
